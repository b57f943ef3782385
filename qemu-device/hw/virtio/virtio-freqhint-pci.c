/*
 * Virtio frequency hint device: PCI bindings
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"

#include "hw/virtio/virtio-pci.h"
#include "hw/virtio/virtio-freqhint.h"
#include "hw/qdev-properties.h"
#include "qapi/error.h"
#include "qemu/module.h"
#include "qom/object.h"

typedef struct VirtIOFreqHintPCI VirtIOFreqHintPCI;

#define TYPE_VIRTIO_FREQHINT_PCI "virtio-freqhint-pci-base"
DECLARE_INSTANCE_CHECKER(VirtIOFreqHintPCI, VIRTIO_FREQHINT_PCI,
                         TYPE_VIRTIO_FREQHINT_PCI)

struct VirtIOFreqHintPCI {
    VirtIOPCIProxy parent_obj;
    VirtIOFreqHint vdev;
};

static const Property virtio_freqhint_pci_properties[] = {
    DEFINE_PROP_UINT32("vectors", VirtIOPCIProxy, nvectors,
                       DEV_NVECTORS_UNSPECIFIED),
};

static void virtio_freqhint_pci_realize(VirtIOPCIProxy *vpci_dev, Error **errp)
{
    VirtIOFreqHintPCI *dev = VIRTIO_FREQHINT_PCI(vpci_dev);
    DeviceState *vdev = DEVICE(&dev->vdev);

    if (vpci_dev->nvectors == DEV_NVECTORS_UNSPECIFIED) {
        /* The configuration change, the hint queue and the event queue. */
        vpci_dev->nvectors = 3;
    }
    /* Device ID 56 has no legacy (transitional) PCI device ID. */
    virtio_pci_force_virtio_1(vpci_dev);
    qdev_realize(vdev, BUS(&vpci_dev->bus), errp);
}

static void virtio_freqhint_pci_class_init(ObjectClass *klass, void *data)
{
    DeviceClass *dc = DEVICE_CLASS(klass);
    VirtioPCIClass *k = VIRTIO_PCI_CLASS(klass);
    PCIDeviceClass *pcidev_k = PCI_DEVICE_CLASS(klass);

    k->realize = virtio_freqhint_pci_realize;
    set_bit(DEVICE_CATEGORY_MISC, dc->categories);
    pcidev_k->class_id = PCI_CLASS_OTHERS;
    device_class_set_props(dc, virtio_freqhint_pci_properties);
}

static void virtio_freqhint_pci_instance_init(Object *obj)
{
    VirtIOFreqHintPCI *dev = VIRTIO_FREQHINT_PCI(obj);

    virtio_instance_init_common(obj, &dev->vdev, sizeof(dev->vdev),
                                TYPE_VIRTIO_FREQHINT);
}

static const VirtioPCIDeviceTypeInfo virtio_freqhint_pci_info = {
    .base_name     = TYPE_VIRTIO_FREQHINT_PCI,
    .generic_name  = "virtio-freqhint-pci",
    .instance_size = sizeof(VirtIOFreqHintPCI),
    .instance_init = virtio_freqhint_pci_instance_init,
    .class_init    = virtio_freqhint_pci_class_init,
};

static void virtio_freqhint_pci_register(void)
{
    virtio_pci_types_register(&virtio_freqhint_pci_info);
}

type_init(virtio_freqhint_pci_register)
