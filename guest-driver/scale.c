// SPDX-License-Identifier: GPL-2.0-only
/*
 * virtio_freqhint: kHz <-> capacity, pure (KUnit-tested).  Capacity is
 * 0..1024 of the vCPU's cpuinfo_max_freq; u64 intermediates, so no kHz
 * value the device may send (up to VIRTIO_FREQHINT_MAX_KHZ) overflows.
 */
#include <kunit/visibility.h>
#include <linux/export.h>
#include <linux/math64.h>
#include <linux/minmax.h>
#include <linux/string.h>

#include "cpufreq.h"
#include "freqhint.h"

/* Without a host class: 1000 kHz per capacity unit, 1000..1024000 kHz. */
#define FH_KHZ_PER_UNIT		1000

void vfh_freq_synthetic(struct vfh_freq *f)
{
	memset(f, 0, sizeof(*f));
	f->min_khz = FH_KHZ_PER_UNIT;
	f->max_khz = VIRTIO_FREQHINT_SCALE * FH_KHZ_PER_UNIT;
}
EXPORT_SYMBOL_IF_KUNIT(vfh_freq_synthetic);

/*
 * The highest frequency a policy with @f shows: the top of its table
 * (ascending, checked by event.c), which may be below max_khz, else
 * max_khz.  Where a new policy's cur starts.
 */
unsigned int vfh_freq_top(const struct vfh_freq *f)
{
	return f->n ? f->khz[f->n - 1] : f->max_khz;
}
EXPORT_SYMBOL_IF_KUNIT(vfh_freq_top);

/* A limit in capacity units as a frequency within the policy's range. */
unsigned int vfh_cap_to_khz(const struct vfh_freq *f, unsigned int cap)
{
	u64 khz = div_u64((u64)cap * f->max_khz, VIRTIO_FREQHINT_SCALE);

	return clamp_t(u64, khz, f->min_khz, f->max_khz);
}
EXPORT_SYMBOL_IF_KUNIT(vfh_cap_to_khz);

/* A requested frequency as perf, 1..1024: a request is never "none". */
unsigned int vfh_khz_to_perf(const struct vfh_freq *f, unsigned int khz)
{
	u64 perf = div_u64((u64)khz * VIRTIO_FREQHINT_SCALE, f->max_khz);

	return clamp_t(u64, perf, 1, VIRTIO_FREQHINT_SCALE);
}
EXPORT_SYMBOL_IF_KUNIT(vfh_khz_to_perf);

/* Capacity thresholds of a class's table (see window.c). */
void vfh_freq_levels(const struct vfh_freq *f, u16 step, struct vfh_levels *l)
{
	unsigned int i;

	memset(l, 0, sizeof(*l));
	l->step = step;
	l->n = f->n;
	for (i = 0; i < f->n; i++)
		l->thr[i] = min_t(u64, div_u64((u64)f->khz[i] *
					       VIRTIO_FREQHINT_SCALE, f->max_khz),
				  VIRTIO_FREQHINT_SCALE);
}
EXPORT_SYMBOL_IF_KUNIT(vfh_freq_levels);
