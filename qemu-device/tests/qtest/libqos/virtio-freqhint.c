/*
 * libqos driver for virtio-freqhint-pci
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "../libqtest.h"
#include "qemu/module.h"
#include "qgraph.h"
#include "virtio-freqhint.h"
#include "standard-headers/linux/virtio_ring.h"
#include "standard-headers/linux/virtio_freqhint.h"

static void *qvirtio_freqhint_get_driver(QVirtioFreqHint *fh,
                                         const char *interface)
{
    if (!g_strcmp0(interface, "virtio-freqhint")) {
        return fh;
    }
    if (!g_strcmp0(interface, "virtio")) {
        return fh->vdev;
    }

    fprintf(stderr, "%s not present in virtio-freqhint\n", interface);
    g_assert_not_reached();
}

static void *qvirtio_freqhint_pci_get_driver(void *object,
                                             const char *interface)
{
    QVirtioFreqHintPCI *dev = object;

    if (!g_strcmp0(interface, "pci-device")) {
        return dev->pci_vdev.pdev;
    }
    return qvirtio_freqhint_get_driver(&dev->freqhint, interface);
}

void qvirtio_freqhint_post_event(QVirtioFreqHint *fh, uint32_t len)
{
    QTestState *qts = fh->pci_bus->qts;
    uint64_t addr = guest_alloc(fh->alloc, len);
    uint32_t head;

    qtest_memset(qts, addr, 0, len);
    head = qvirtqueue_add(qts, fh->eventq, addr, len, true, false);
    g_assert_cmpuint(head, <, QVIRTIO_FREQHINT_QUEUE_SIZE);
    fh->event_addr[head] = addr;
    qvirtqueue_kick(qts, fh->vdev, fh->eventq, head);
}

void qvirtio_freqhint_init(QVirtioFreqHint *fh, uint64_t features,
                           unsigned int event_bufs, uint32_t event_len)
{
    QVirtioDevice *vdev = fh->vdev;

    if (fh->hintq) {
        qvirtqueue_cleanup(vdev->bus, fh->hintq, fh->alloc);
        fh->hintq = NULL;
    }
    if (fh->eventq) {
        qvirtqueue_cleanup(vdev->bus, fh->eventq, fh->alloc);
        fh->eventq = NULL;
    }
    qvirtio_set_features(vdev, features);
    fh->event_buf_size = qvirtio_config_readl(vdev, 12);
    fh->hintq = qvirtqueue_setup(vdev, fh->alloc, VIRTIO_FREQHINT_VQ_HINT);
    if (features & ((1ull << VIRTIO_FREQHINT_F_FEEDBACK) |
                    (1ull << VIRTIO_FREQHINT_F_CPU_ID))) {
        fh->eventq = qvirtqueue_setup(vdev, fh->alloc,
                                      VIRTIO_FREQHINT_VQ_EVENT);
        /* Receive buffers go in before DRIVER_OK, like virtio-net rx. */
        for (unsigned int i = 0; i < event_bufs; i++) {
            qvirtio_freqhint_post_event(fh, event_len ? event_len :
                                        fh->event_buf_size);
        }
    }
    qvirtio_set_driver_ok(vdev);
}

static void qvirtio_freqhint_pci_start_hw(QOSGraphObject *obj)
{
    QVirtioFreqHintPCI *dev = (QVirtioFreqHintPCI *)obj;
    QVirtioFreqHint *fh = &dev->freqhint;
    uint64_t features;

    qvirtio_pci_start_hw(&dev->pci_vdev.obj);
    features = qvirtio_get_features(fh->vdev);
    features &= ~(QVIRTIO_F_BAD_FEATURE |
                  (1ull << VIRTIO_RING_F_INDIRECT_DESC) |
                  (1ull << VIRTIO_RING_F_EVENT_IDX));
    qvirtio_freqhint_init(fh, features, QVIRTIO_FREQHINT_EVENT_BUFS, 0);
}

static void qvirtio_freqhint_pci_destructor(QOSGraphObject *obj)
{
    QVirtioFreqHintPCI *dev = (QVirtioFreqHintPCI *)obj;
    QVirtioFreqHint *fh = &dev->freqhint;

    if (fh->hintq) {
        qvirtqueue_cleanup(fh->vdev->bus, fh->hintq, fh->alloc);
    }
    if (fh->eventq) {
        qvirtqueue_cleanup(fh->vdev->bus, fh->eventq, fh->alloc);
    }
    qvirtio_pci_destructor(&dev->pci_vdev.obj);
}

static void *virtio_freqhint_pci_create(void *pci_bus, QGuestAllocator *alloc,
                                        void *addr)
{
    QVirtioFreqHintPCI *dev = g_new0(QVirtioFreqHintPCI, 1);
    QOSGraphObject *obj = &dev->pci_vdev.obj;

    virtio_pci_init(&dev->pci_vdev, pci_bus, addr);
    dev->freqhint.vdev = &dev->pci_vdev.vdev;
    dev->freqhint.alloc = alloc;
    dev->freqhint.pci_bus = pci_bus;

    obj->get_driver = qvirtio_freqhint_pci_get_driver;
    obj->start_hw = qvirtio_freqhint_pci_start_hw;
    obj->destructor = qvirtio_freqhint_pci_destructor;
    return obj;
}

static void virtio_freqhint_register_nodes(void)
{
    QPCIAddress addr = {
        .devfn = QPCI_DEVFN(4, 0),
    };
    QOSGraphEdgeOptions opts = {
        .extra_device_opts = "addr=04.0,id=" QVIRTIO_FREQHINT_ID,
    };

    add_qpci_address(&opts, &addr);
    qos_node_create_driver("virtio-freqhint-pci", virtio_freqhint_pci_create);
    qos_node_consumes("virtio-freqhint-pci", "pci-bus", &opts);
    qos_node_produces("virtio-freqhint-pci", "pci-device");
    qos_node_produces("virtio-freqhint-pci", "virtio");
    qos_node_produces("virtio-freqhint-pci", "virtio-freqhint");
}

libqos_init(virtio_freqhint_register_nodes);
