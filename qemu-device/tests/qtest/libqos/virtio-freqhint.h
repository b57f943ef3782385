/*
 * libqos driver for virtio-freqhint-pci
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef TESTS_LIBQOS_VIRTIO_FREQHINT_H
#define TESTS_LIBQOS_VIRTIO_FREQHINT_H

#include "qgraph.h"
#include "virtio.h"
#include "virtio-pci.h"

/* QOM id the node gives the device, for qom-get. */
#define QVIRTIO_FREQHINT_ID "fh"

/* Event buffers start_hw posts before DRIVER_OK, and the queue size. */
#define QVIRTIO_FREQHINT_EVENT_BUFS 8
#define QVIRTIO_FREQHINT_QUEUE_SIZE 64

typedef struct QVirtioFreqHint QVirtioFreqHint;
typedef struct QVirtioFreqHintPCI QVirtioFreqHintPCI;

struct QVirtioFreqHint {
    QVirtioDevice *vdev;
    QVirtQueue *hintq;
    QVirtQueue *eventq;         /* NULL without FEEDBACK and CPU_ID */
    QGuestAllocator *alloc;
    QPCIBus *pci_bus;           /* its qts is the QEMU the driver runs in */
    uint32_t event_buf_size;
    /* Guest address of each posted event buffer, by head descriptor. */
    uint64_t event_addr[QVIRTIO_FREQHINT_QUEUE_SIZE];
};

/*
 * Driver initialisation after a reset: negotiate @features, set up the
 * queues, post @event_bufs event buffers of @event_len bytes (0: the size
 * the device asks for), then DRIVER_OK.
 */
void qvirtio_freqhint_init(QVirtioFreqHint *fh, uint64_t features,
                           unsigned int event_bufs, uint32_t event_len);
/* Post one device-writable buffer of @len bytes on the event queue. */
void qvirtio_freqhint_post_event(QVirtioFreqHint *fh, uint32_t len);

struct QVirtioFreqHintPCI {
    QVirtioPCIDevice pci_vdev;
    QVirtioFreqHint freqhint;
};

#endif
