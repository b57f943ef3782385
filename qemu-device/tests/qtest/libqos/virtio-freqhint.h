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

typedef struct QVirtioFreqHint QVirtioFreqHint;
typedef struct QVirtioFreqHintPCI QVirtioFreqHintPCI;

struct QVirtioFreqHint {
    QVirtioDevice *vdev;
    QVirtQueue *hintq;
    QGuestAllocator *alloc;
};

struct QVirtioFreqHintPCI {
    QVirtioPCIDevice pci_vdev;
    QVirtioFreqHint freqhint;
};

#endif
