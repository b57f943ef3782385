#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The real host path on a stock hypervisor (issue 39, "The real host path,
# stock QEMU"), nested: an outer TCG guest is the host.  It runs Debian's
# stock 6.12 kernel with vhost_vsock loaded, Debian bookworm's own
# qemu-system-x86_64 (the qemu-system-x86 package, unpacked from the cache
# of tests/harness/fetch-debs.sh, never installed), freqhintd with the
# cpufreq backend on the fixture host of tests/agent/mkfixture.sh, and
# freqhint-vsockd on AF_VSOCK port 853.  Debian's QEMU starts the inner
# guest there, itself under TCG, with -device vhost-vsock-pci,guest-cid=3:
# the project's x86 test kernel (uclamp, CONFIG_VIRTIO_VSOCKETS=y) and
# virtio_freqhint transport=vsock, which connects to the host, CID 2.
# freqhintd knows the inner VM from the host side only: a [vm] section with
# vsock_cid=3 and the pidfile the outer test gave QEMU (VS-13).  What the
# checks are: outer.sh (the host) and inner.sh (the guest).
#
#   run.sh [--log FILE] [--timeout S] [--probe]
#          FREQHINTD FREQHINTCTL FREQHINT_VSOCKD FH_VSOCK_PEER
#
#   --probe   the inner guest runs nothing but its init (inner-probe.sh)
#             and the outer test only times its boot: the feasibility
#             measurement, kept to repeat it
#
# The host binaries come from the main (ASan) build: their libraries,
# libasan's among them, go into the outer guest as tests/vsock-guest/run.sh
# carries them, so the daemons run there under the sanitizers they are
# tested with everywhere else.  Debian's QEMU runs with its own loader and
# the libraries of its own package's dependencies (the same fetch), not the
# host's.
#
# What it proves: Debian's unmodified QEMU and kernel carry the module's
# hints and the host's feedback through vhost-vsock; the outer freqhintd
# serves the connection as VM "inner" from its own record (CID 3 from the
# kernel via the front end, the vCPU threads "CPU N/TCG" of the pidfile's
# process); the inner guest's cpufreq shows the host's 3.2 GHz and the
# granted 2.4 GHz ceiling; a uclampset -m 1024 task on inner vCPU 1 reaches
# freqhintd as vCPU 1's clamp (min 1024 in its hint) and raises the
# fixture's policy2 floor (vCPU 1 placed on CPU 2), and its exit lowers
# it; rmmod ends the VM's connection.  The inner console is judged like
# any guest's (run-guest.sh --judge-log) after the outer run.
#
# Measured on 2 cores shared with other helpers' builds and TCG guests:
#  - passing run: 13 min 19 s wall (outer guest 685 s; 9 min 57 s of CPU,
#    nearly all the outer QEMU) at load 7-12; the inner guest reached
#    /init at 337 s of its uptime, its QEMU exited 636 s after starting;
#    through meson after the last changes: 13 min 24 s at load 6-8 (inner
#    /init at 407 s, its QEMU exited at 725 s).
#  - --probe (inner boot only), load 14-17, the outer QEMU at 40-50 % of
#    one core: inner kernel's first line 55 s after its QEMU started,
#    /init at 766 s (gunzip of its 2 MB initramfs alone 140 s, hence the
#    uncompressed one now), poweroff at 829 s; 888 s for the outer run.
# So it runs in suite 'all' (scripts/test.sh all), not in the default run:
# a nested TCG guest boots in minutes, not seconds, and its time swings
# with the machine's load by a factor of two.
set -euo pipefail

here=$(cd "$(dirname "$0")/../.." && pwd)
. "$here/scripts/lib.sh"
trap 'log "error: $0:$LINENO: $BASH_COMMAND failed"' ERR

tdir=$here/tests/nested-vsock
log='' timeout=3000 probe=0
while [ $# -gt 0 ]; do
	case "$1" in
		--log) log=${2:?}; shift ;;
		--timeout) timeout=${2:?}; shift ;;
		--probe) probe=1 ;;
		-*) die "unknown option $1 (see the comment at the top of $0)" ;;
		*) break ;;
	esac
	shift
done
[ $# = 4 ] || die "usage: $0 [options] FREQHINTD FREQHINTCTL FREQHINT_VSOCKD FH_VSOCK_PEER"
for b in "$@"; do
	[ -x "$b" ] || die "$b is not an executable"
done
[ -n "$log" ] || log=$(mktemp "${TMPDIR:-/tmp}/fh-nested.XXXXXX.log")

# Debian bookworm's QEMU: the x86 system emulator, its TCG accelerator
# module (qemu-system-common), SeaBIOS and the option ROMs for -kernel, and
# the packages of every library the binary and the module need (ldd of
# this package's binary; checked below, so a new dependency fails loudly).
QEMU_DEBS=(
	qemu-system-x86 qemu-system-common qemu-system-data:all seabios:all
	libaio1 libblkid1 libbpf1 libc6 libcapstone4 libdaxctl1 libelf1 libfdt1
	libffi8 libfuse3-3 libgcc-s1 libglib2.0-0 libgmp10 libgnutls30 libhogweed6
	libibverbs1 libidn2-0 libjpeg62-turbo libkmod2 liblzma5 libmount1
	libndctl6 libnettle8 libnl-3-200 libnl-route-3-200 libnuma1 libp11-kit0
	libpcre2-8-0 libpixman-1-0 libpmem1 libpng16-16 librdmacm1 libsasl2-2
	libseccomp2 libselinux1 libslirp0 libssl3 libtasn1-6 libudev1
	libunistring2 liburing2 libuuid1 libvdeplug2 libzstd1 zlib1g
)
# The outer kernel's vhost-vsock host side, dependencies first.
HOST_KMODS=(vsock vmw_vsock_virtio_transport_common vhost_iotlb vhost vhost_vsock)

T=$(mktemp -d "${TMPDIR:-/tmp}/fh-nested.XXXXXX")
trap 'rm -rf "$T"' EXIT
mkdir -p "$T/fh/lib" "$T/fh/kmod" "$T/qemu/bin" "$T/qemu/lib" "$T/qemu/modules" \
	"$T/qemu/share" "$T/inner"

# qemu_tree ROOT: Debian's QEMU from the unpacked packages at ROOT into
# $T/qemu: bin/, lib/ (its loader and the closure of its NEEDED libraries,
# found in ROOT only), modules/ (accel-tcg-x86_64.so), share/ (firmware).
qemu_tree() {
	local root=$1 f lib d found todo seen=' '
	local libdirs=(lib/x86_64-linux-gnu usr/lib/x86_64-linux-gnu)
	cp "$root/usr/bin/qemu-system-x86_64" "$T/qemu/bin/"
	cp "$root/usr/lib/x86_64-linux-gnu/qemu/accel-tcg-x86_64.so" "$T/qemu/modules/"
	cp -L "$root/lib64/ld-linux-x86-64.so.2" "$T/qemu/lib/"
	todo=("$T/qemu/bin/qemu-system-x86_64" "$T/qemu/modules/accel-tcg-x86_64.so")
	while [ ${#todo[@]} -gt 0 ]; do
		f=${todo[0]}
		todo=("${todo[@]:1}")
		for lib in $(readelf -dW "$f" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
			case "$seen" in *" $lib "*) continue ;; esac
			seen+="$lib "
			found=
			for d in "${libdirs[@]}"; do
				[ -e "$root/$d/$lib" ] && { found=$root/$d/$lib; break; }
			done
			[ -n "$found" ] || die "$lib (needed by $(basename "$f")) is in none of Debian's packages fetched: add its package to QEMU_DEBS"
			cp -L "$found" "$T/qemu/lib/$lib"
			todo+=("$T/qemu/lib/$lib")
		done
	done
	for f in usr/share/seabios/bios-256k.bin usr/share/qemu/linuxboot_dma.bin \
		usr/share/qemu/kvmvapic.bin; do
		cp -L "$root/$f" "$T/qemu/share/"
	done
	cat >"$T/qemu/qemu-system-x86_64" <<'EOF'
#!/bin/sh
# Debian's qemu-system-x86_64 with its own loader, libraries and modules.
Q=/opt/qemu
QEMU_MODULE_DIR=$Q/modules exec $Q/lib/ld-linux-x86-64.so.2 --library-path $Q/lib \
	$Q/bin/qemu-system-x86_64 -L $Q/share "$@"
EOF
	chmod 755 "$T/qemu/qemu-system-x86_64"
	cp "$root/../versions" "$T/qemu/versions"
}

debs=$("$here/tests/harness/fetch-debs.sh" amd64 "${QEMU_DEBS[@]}")
qemu_tree "$debs/root"

outer_k=$("$here/tests/harness/fetch-stock-kernel.sh" --print-dir) ||
	die "no stock kernel entry (tests/harness/fetch-stock-kernel.sh)"
inner_k=$("$here/tests/harness/build-kernel.sh" --print-dir) ||
	die "building the test kernel failed"
grep -q '^CONFIG_VIRTIO_VSOCKETS=y' "$inner_k/build/.config" ||
	die "the test kernel $inner_k has no virtio vsock transport"

rel=$(cat "$outer_k/release")
for m in "${HOST_KMODS[@]}"; do
	f=$(find "/lib/modules/$rel/kernel" -name "$m.ko*" | head -n1)
	[ -n "$f" ] || die "$m.ko* not in /lib/modules/$rel (the linux-image-$rel package installs it)"
	case "$f" in
		*.xz) xz -dc "$f" >"$T/fh/kmod/$m.ko" ;;
		*.zst) zstd -qdc "$f" >"$T/fh/kmod/$m.ko" ;;
		*) cp "$f" "$T/fh/kmod/$m.ko" ;;
	esac
	echo "$m.ko" >>"$T/fh/kmod/load-order"
done

"$here/tests/harness/carry-binaries.sh" "$T/fh" "$@"
cp "$here/tests/vsock-guest/vsock-lib.sh" "$T/fh/"
"$here/tests/agent/mkfixture.sh" host "$T/fx"

# The inner guest: the test kernel, the module built for it, its initramfs.
cp "$inner_k/bzImage" "$T/inner/bzImage"
if [ "$probe" = 1 ]; then
	inner_test=$tdir/inner-probe.sh
	inner_args=()
else
	inner_test=$tdir/inner.sh
	"$here/guest-driver/tests/build-module.sh" --cached "$(readlink -f "$inner_k/build")" \
		"$T/virtio_freqhint.ko" >&2
	inner_args=(--module "$T/virtio_freqhint.ko"
		--add "$here/guest-driver/tests/fh-lib.sh:/lib/freqhint/fh-lib.sh"
		--add "$here/tests/harness/step-lib.sh:/lib/freqhint/step-lib.sh")
fi
inner_img=$("$here/tests/harness/mkinitramfs.sh" --kernel "$inner_k" --test "$inner_test" \
	"${inner_args[@]}")
# Uncompressed: gunzip of 2 MB took the nested guest 140 s of its boot.
gzip -dc "$inner_img" >"$T/inner/initrd"
[ "$probe" = 1 ] && touch "$T/inner/probe"

# The outer guest needs no device of the project's: any QEMU runs it.
qemu=${FREQHINT_QEMU:-$(command -v qemu-system-x86_64 || true)}
rc=0
"$here/tests/harness/run-guest.sh" --kernel "$outer_k" ${qemu:+--qemu "$qemu"} \
	--test "$tdir/outer.sh" --add "$T/fh:/opt/fh" --add "$T/qemu:/opt/qemu" \
	--add "$T/inner:/opt/inner" --add "$T/fx:/opt/fx" \
	--smp 2 --mem 2G --timeout "$timeout" --log "$log" || rc=$?
# The inner guest's console (outer.sh prints the whole of it once the inner
# QEMU has exited, each line marked) judged as any guest's: its verdict, its
# poweroff, nothing alarming.
sed -n 's/^inner-log| //p' "$log" >"$log.inner"
"$here/tests/harness/run-guest.sh" --judge-log "$log.inner" --quiet || rc=1
exit $rc
