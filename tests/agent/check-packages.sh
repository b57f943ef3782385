#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Build the Debian packages (scripts/build-packages.sh: dpkg-buildpackage +
# lintian) and check what they hold: the units, sysusers/tmpfiles, the
# AppArmor snippet, the schema and monitoring files; the DKMS tree; and that
# the packaged QEMU, unpacked anywhere, runs and has the device.
#   check-packages.sh SRCDIR [--no-qemu]
set -uo pipefail
src=$1; shift
fail() { echo "FAIL: $*" >&2; exit 1; }
T=$(mktemp -d "${TMPDIR:-/tmp}/fh-pkgtest.XXXXXX"); trap 'rm -rf "$T"' EXIT
"$src/scripts/build-packages.sh" "$@" "$T/out" || fail "build-packages.sh failed"
has() { dpkg-deb -c "$1" | awk '{print $6}' | grep -x "./$2" >/dev/null || fail "$(basename "$1") lacks /$2"; }
d=$(ls "$T"/out/freqhint_*.deb) || fail "no freqhint package"
for f in usr/sbin/freqhintd usr/bin/freqhintctl etc/freqhint/freqhintd.conf \
	lib/systemd/system/freqhintd.service lib/systemd/system/freqhintd-device.socket \
	lib/systemd/system/freqhintd-control.socket usr/lib/sysusers.d/freqhint.conf \
	usr/lib/tmpfiles.d/freqhint.conf etc/apparmor.d/abstractions/libvirt-qemu.d/freqhint \
	usr/share/freqhint/freqhint-metadata.rng usr/share/freqhint/monitoring/freqhint-rules.yml \
	usr/share/freqhint/monitoring/grafana/freqhint-dashboard.json usr/share/man/man1/freqhintctl.1.gz \
	usr/sbin/freqhint-vsockd lib/systemd/system/freqhint-vsockd.service \
	lib/systemd/system/freqhint-vsockd.socket usr/share/man/man8/freqhint-vsockd.8.gz; do
	has "$d" "$f"
done
dpkg-deb -e "$d" "$T/ctl"
grep -q 'systemd-sysusers.*freqhint.conf' "$T/ctl/postinst" || fail "postinst does not create the groups"
[ "$(grep -n 'systemd-sysusers' "$T/ctl/postinst" | head -1 | cut -d: -f1)" -lt \
	"$(grep -n "deb-systemd-helper enable 'freqhintd-device.socket'" "$T/ctl/postinst" | cut -d: -f1)" ] ||
	fail "groups must exist before the socket units are enabled"
grep -q '/etc/freqhint/freqhintd.conf' "$T/ctl/conffiles" || fail "config is not a conffile"
k=$(ls "$T"/out/freqhint-dkms_*.deb) || fail "no freqhint-dkms package"
has "$k" usr/src/virtio_freqhint-0.1.0/dkms.conf
has "$k" usr/src/virtio_freqhint-0.1.0/include/linux/virtio_freqhint.h
dpkg-deb -e "$k" "$T/kctl"
grep -q 'dkms' "$T/kctl/postinst" || fail "freqhint-dkms postinst does not call dkms"
if [ "${1:-}" != --no-qemu ]; then
	q=$(ls "$T"/out/freqhint-qemu_*.deb) || fail "no freqhint-qemu package"
	has "$q" usr/lib/freqhint/qemu/bin/qemu-system-x86_64
	dpkg-deb -x "$q" "$T/root"
	# relocatable: from an unpacked tree, not from its build directory
	"$T/root/usr/lib/freqhint/qemu/bin/qemu-system-x86_64" -device help 2>&1 |
		grep -q '"virtio-freqhint-pci"' || fail "packaged QEMU lacks virtio-freqhint-pci"
	[ -L "$T/root/usr/lib/freqhint/qemu/share/qemu/bios-256k.bin" ] || fail "no SeaBIOS link"
fi
echo "PASS: packages"
