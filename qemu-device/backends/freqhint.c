/*
 * Virtio frequency hint device: the backend class and the null backend
 *
 * The abstract class is also the null behaviour: a backend that never
 * comes up takes no hints and grants nothing, so the device presents the
 * no-agent defaults.  freqhint-null is that behaviour as an object, for
 * hosts without an agent and for tests; a device given no backend
 * creates one.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/module.h"
#include "qom/object_interfaces.h"
#include "system/freqhint.h"

bool freqhint_backend_attach(FreqHintBackend *b, uint16_t num_vcpus,
                             uint32_t features, bool vm_running,
                             const FreqHintBackendOps *ops, void *opaque,
                             Error **errp)
{
    FreqHintBackendClass *k = FREQHINT_BACKEND_GET_CLASS(b);

    if (b->ops) {
        error_setg(errp, "freqhint backend '%s' is already in use",
                   object_get_canonical_path_component(OBJECT(b)));
        return false;
    }
    b->num_vcpus = num_vcpus;
    b->features = features;
    b->vm_running = vm_running;
    b->ops = ops;
    b->opaque = opaque;
    if (k->attach && !k->attach(b, errp)) {
        b->ops = NULL;
        b->opaque = NULL;
        return false;
    }
    return true;
}

void freqhint_backend_start(FreqHintBackend *b)
{
    FreqHintBackendClass *k = FREQHINT_BACKEND_GET_CLASS(b);

    b->started = true;
    if (k->start) {
        k->start(b);
    }
}

void freqhint_backend_detach(FreqHintBackend *b)
{
    FreqHintBackendClass *k = FREQHINT_BACKEND_GET_CLASS(b);

    if (k->detach) {
        k->detach(b);
    }
    b->started = false;
    b->ops = NULL;
    b->opaque = NULL;
}

bool freqhint_backend_is_up(FreqHintBackend *b)
{
    FreqHintBackendClass *k = FREQHINT_BACKEND_GET_CLASS(b);

    return b->started && k->is_up && k->is_up(b);
}

void freqhint_backend_vm_state(FreqHintBackend *b, bool running)
{
    FreqHintBackendClass *k = FREQHINT_BACKEND_GET_CLASS(b);

    b->vm_running = running;
    if (b->started && k->vm_state) {
        k->vm_state(b, running);
    }
}

bool freqhint_backend_send_hints(FreqHintBackend *b,
                                 const struct virtio_freqhint_record *recs,
                                 unsigned int num, bool full,
                                 int64_t timestamp_ns)
{
    FreqHintBackendClass *k = FREQHINT_BACKEND_GET_CLASS(b);

    assert(num && num <= b->num_vcpus);
    if (!freqhint_backend_is_up(b) || !k->send_hints) {
        return false;
    }
    return k->send_hints(b, recs, num, full, timestamp_ns);
}

const char *virtio_freqhint_check_freq_class(const VirtIOFreqHintClass *c)
{
    uint32_t prev = 0;

    if (c->min_khz == 0 || c->min_khz > c->max_khz ||
        c->max_khz > VIRTIO_FREQHINT_MAX_KHZ) {
        return "bad frequency range";
    }
    if (c->perf_step == 0 || c->perf_step > VIRTIO_FREQHINT_SCALE) {
        return "bad perf_step";
    }
    if (c->num_freqs > VIRTIO_FREQHINT_MAX_FREQS) {
        return "too many frequencies";
    }
    for (int i = 0; i < VIRTIO_FREQHINT_MAX_FREQS; i++) {
        uint32_t f = c->freqs_khz[i];

        if (i >= c->num_freqs ? f != 0 :
            (f < c->min_khz || f > c->max_khz || (i && f <= prev))) {
            return "bad frequency table";
        }
        prev = f;
    }
    return NULL;
}

/* object-del of a backend a device uses is refused (like hostmem's). */
static bool freqhint_backend_can_be_deleted(UserCreatable *uc)
{
    return !FREQHINT_BACKEND(uc)->ops;
}

static void freqhint_backend_class_init(ObjectClass *klass, void *data)
{
    UserCreatableClass *ucc = USER_CREATABLE_CLASS(klass);

    ucc->can_be_deleted = freqhint_backend_can_be_deleted;
}

static const TypeInfo freqhint_backend_types[] = {
    {
        .name = TYPE_FREQHINT_BACKEND,
        .parent = TYPE_OBJECT,
        .abstract = true,
        .instance_size = sizeof(FreqHintBackend),
        .class_size = sizeof(FreqHintBackendClass),
        .class_init = freqhint_backend_class_init,
        .interfaces = (InterfaceInfo[]) {
            { TYPE_USER_CREATABLE },
            { }
        },
    },
    {
        /* The class's defaults: never up, no hints taken, nothing granted. */
        .name = TYPE_FREQHINT_NULL,
        .parent = TYPE_FREQHINT_BACKEND,
    },
};

DEFINE_TYPES(freqhint_backend_types)
