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
    qvirtio_set_features(fh->vdev, features);
    fh->hintq = qvirtqueue_setup(fh->vdev, fh->alloc, 0);
    qvirtio_set_driver_ok(fh->vdev);
}

static void qvirtio_freqhint_pci_destructor(QOSGraphObject *obj)
{
    QVirtioFreqHintPCI *dev = (QVirtioFreqHintPCI *)obj;
    QVirtioFreqHint *fh = &dev->freqhint;

    if (fh->hintq) {
        qvirtqueue_cleanup(fh->vdev->bus, fh->hintq, fh->alloc);
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
