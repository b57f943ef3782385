#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Build a gzip'd cpio initramfs that runs one test script in a guest and
# powers off, whatever happens.  Prints the image path on stdout.
#
#   mkinitramfs.sh --test SCRIPT [options]
#     --test SCRIPT        run as /test.sh by /init (required)
#     --kernel DIR         a build-kernel.sh / fetch-stock-kernel.sh entry:
#                          its modules/load-order (virtio transport modules
#                          the kernel does not build in) is carried and
#                          loaded by /init before the test
#     --module FILE.ko     carry FILE.ko as /modules/FILE.ko (the test loads it)
#     --add HOST:GUEST     carry a file (or directory) at GUEST
#     -o FILE              also copy the image to FILE
#     --arch x86_64|arm64  the guest's architecture (default x86_64).  arm64
#                          takes busybox-static, util-linux, linux-cpupower
#                          and their libraries from Debian's arm64 packages
#                          (tests/harness/fetch-debs.sh, dpkg multiarch)
#     --fetch-only         only fetch what --arch needs (scripts/setup.sh)
# Images are cached in $FREQHINT_CACHE/initramfs/<input hash>.cpio.gz
# (unused for a week: removed).
#
# Inside: static busybox with its applet links, util-linux uclampset and
# cpupower (linux-cpupower) with the shared libraries they need,
# /lib/freqhint/test-lib.sh (helpers for tests), and an /init that mounts
# proc, sysfs, devtmpfs, debugfs, tmpfs /tmp and cgroup2 on /sys/fs/cgroup
# (with +cpu enabled for child groups when the kernel has the cpu
# controller), runs /test.sh, and prints on the serial console, one marker
# a line:
#   FREQHINT-INIT: <what happened>
#   FREQHINT-TEST-RESULT: PASS | FAIL (exit N)
#   FREQHINT-KMEMLEAK: clean | <n> leaks   (kernel cmdline freqhint.kmemleak=1)
# then `poweroff -f`.  run-guest.sh turns these into its exit status.
set -euo pipefail

here=$(cd "$(dirname "$0")/../.." && pwd)
. "$here/scripts/lib.sh"
# set -e exits without a word; say where.
trap 'log "error: $0:$LINENO: $BASH_COMMAND failed"' ERR

test_script='' kdir='' out='' arch=x86_64 fetch_only=0
adds=() modules=()
while [ $# -gt 0 ]; do
	case "$1" in
		--test) test_script=${2:?}; shift ;;
		--kernel) kdir=${2:?}; shift ;;
		--module) modules+=("${2:?}"); shift ;;
		--add) adds+=("${2:?}"); shift ;;
		-o) out=${2:?}; shift ;;
		--arch) arch=${2:?}; shift ;;
		--fetch-only) fetch_only=1 ;;
		*) die "usage: $0 --test SCRIPT [--arch x86_64|arm64] [--kernel DIR] [--module KO]... [--add HOST:GUEST]... [-o FILE]" ;;
	esac
	shift
done

# The guest's userland comes from $sysroot: the host itself for x86_64,
# Debian's arm64 packages unpacked for arm64.  Paths below are the guest's;
# $sysroot$path is where the file is on the host.
case "$arch" in
	x86_64) sysroot= ;;
	arm64)
		sysroot=$("$here/tests/harness/fetch-debs.sh" arm64 busybox-static \
			util-linux linux-cpupower libcpupower1 libc6)/root ;;
	*) die "--arch x86_64|arm64, not '$arch'" ;;
esac
[ "$fetch_only" = 1 ] && exit 0
[ -n "$test_script" ] || die "--test SCRIPT is required"
[ -r "$test_script" ] || die "test script $test_script not found"

BUSYBOX=/bin/busybox
UCLAMPSET=/usr/bin/uclampset
CPUPOWER=/usr/bin/cpupower
if ! [ -x "$sysroot$BUSYBOX" ] || ! file -L "$sysroot$BUSYBOX" | grep 'statically linked' >/dev/null; then
	die "$sysroot$BUSYBOX is not a static busybox (install busybox-static)"
fi
[ -x "$sysroot$UCLAMPSET" ] || die "$sysroot$UCLAMPSET not found (install util-linux)"
[ -x "$sysroot$CPUPOWER" ] || die "$sysroot$CPUPOWER not found (install linux-cpupower)"

# in_sysroot PATH: the host file behind the guest's PATH, symlinks
# followed inside $sysroot.
in_sysroot() {
	local p=$sysroot$1 t n=0
	while [ -L "$p" ] && [ $((n += 1)) -lt 20 ]; do
		t=$(readlink "$p")
		case "$t" in
			/*) p=$sysroot$t ;;
			*) p=$(dirname "$p")/$t ;;
		esac
	done
	echo "$p"
}

# shared_libs BIN: the libraries (and loader) BIN needs, as guest paths.
# The host's ldd for the host's binaries; for a foreign sysroot, the ELF
# NEEDED entries resolved in Debian's multiarch directories, recursively.
shared_libs() {
	if [ -z "$sysroot" ]; then
		ldd "$1" | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }'
		return
	fi
	local todo=("$1") f lib d found
	declare -A seen=()
	readelf -lW "$(in_sysroot "$1")" | sed -n 's/.*Requesting program interpreter: \(.*\)\]/\1/p'
	while [ ${#todo[@]} -gt 0 ]; do
		f=${todo[0]}
		todo=("${todo[@]:1}")
		for lib in $(readelf -dW "$(in_sysroot "$f")" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
			[ -n "${seen[$lib]:-}" ] && continue
			seen[$lib]=1
			found=
			for d in /lib/aarch64-linux-gnu /usr/lib/aarch64-linux-gnu /lib /usr/lib; do
				if [ -e "$(in_sysroot "$d/$lib")" ]; then found=$d/$lib; break; fi
			done
			[ -n "$found" ] || die "$lib (needed by $f) is not in $sysroot"
			echo "$found"
			todo+=("$found")
		done
	done
}

kmods=()
if [ -n "$kdir" ]; then
	[ -d "$kdir" ] || die "kernel entry $kdir not found"
	if [ -s "$kdir/modules/load-order" ]; then
		while read -r m; do kmods+=("$kdir/modules/$m"); done <"$kdir/modules/load-order"
	fi
fi

# Everything that goes in, hashed: the image is rebuilt when any changes.
mapfile -t libs < <({ shared_libs "$UCLAMPSET"; shared_libs "$CPUPOWER"; } | sort -u)
lib_files=()
for f in "${libs[@]}"; do lib_files+=("$(in_sysroot "$f")"); done
key=$(
	{
		echo "arch $arch"
		sha256sum "$0" "$here/tests/harness/test-lib.sh" "$sysroot$BUSYBOX" \
			"$sysroot$UCLAMPSET" "$sysroot$CPUPOWER" "${lib_files[@]}" "$test_script"
		for f in "${kmods[@]}" "${modules[@]}"; do sha256sum "$f"; done
		for a in "${adds[@]}"; do
			echo "add ${a#*:}"
			find "${a%%:*}" -type f -print0 | sort -z | xargs -0r sha256sum
		done
		if [ ${#kmods[@]} -gt 0 ]; then cat "$kdir/modules/load-order"; fi
	} | sed 's/  .*\//  /' | cache_key
)
icache="$FREQHINT_CACHE/initramfs"
image="$icache/$key.cpio.gz"

build_image() {
	root=$(mktemp -d "$icache/.stage.XXXXXX")
	trap 'rm -rf "$root"' EXIT
	mkdir -p "$root"/{bin,sbin,usr/bin,usr/sbin,dev,proc,sys,tmp,run,modules,lib/freqhint,lib/kmod,etc}
	cp "$sysroot$BUSYBOX" "$root/bin/busybox"
	# A foreign busybox cannot run here to list its applets: the host's
	# busybox-static (same Debian version and configuration) lists them.
	local applet
	for applet in $("$BUSYBOX" --list-full); do
		[ -e "$root/$applet" ] || ln -s /bin/busybox "$root/$applet"
	done
	# Binaries and their libraries at the paths the loader expects.
	install -D -m 755 "$sysroot$UCLAMPSET" "$root$UCLAMPSET"
	install -D -m 755 "$sysroot$CPUPOWER" "$root$CPUPOWER"
	local f
	for f in "${libs[@]}"; do
		install -D -m 755 "$(in_sysroot "$f")" "$root$f"
	done
	for f in "${kmods[@]}"; do
		cp "$f" "$root/lib/kmod/"
		basename "$f" >>"$root/lib/kmod/load-order"
	done
	for f in "${modules[@]}"; do
		[ -r "$f" ] || die "module $f not found"
		cp "$f" "$root/modules/"
	done
	local a src dst
	for a in "${adds[@]}"; do
		src=${a%%:*} dst=${a#*:}
		if [ "$src" = "$a" ] || [ -z "$dst" ]; then
			die "--add wants HOST:GUEST, got $a"
		fi
		[ -e "$src" ] || die "--add: $src not found"
		mkdir -p "$root$(dirname "$dst")"
		cp -a "$src" "$root$dst"
	done
	install -m 755 "$test_script" "$root/test.sh"
	install -m 644 "$here/tests/harness/test-lib.sh" "$root/lib/freqhint/test-lib.sh"
	# The kernel opens /dev/console for init before anything is mounted.
	mknod -m 600 "$root/dev/console" c 5 1
	mknod -m 666 "$root/dev/null" c 1 3
	write_init >"$root/init"
	chmod 755 "$root/init"
	local part
	part=$(mktemp "$icache/.part.XXXXXX")
	(cd "$root" && find . -print0 | sort -z |
		cpio --null -o -H newc --owner=0:0 --quiet) | gzip -9n >"$part"
	chmod 644 "$part"
	mv "$part" "$image"
	rm -rf "$root"
}

write_init() {
	cat <<'EOF'
#!/bin/sh
# freqhint test guest init (generated by tests/harness/mkinitramfs.sh).
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
exec </dev/console >/dev/console 2>&1
mount -t tmpfs tmpfs /tmp
mount -t tmpfs tmpfs /run
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
say() { echo "FREQHINT-INIT: $*"; }
finish() {
	sync
	say "poweroff"
	poweroff -f
	# Not reached unless poweroff failed; panic=-1 + -no-reboot ends QEMU.
	exit 1
}
say "start, kernel $(uname -r), $(nproc) cpus, uptime $(cut -d" " -f1 /proc/uptime)"
if mount -t cgroup2 none /sys/fs/cgroup; then
	if grep -qw cpu /sys/fs/cgroup/cgroup.controllers; then
		echo +cpu >/sys/fs/cgroup/cgroup.subtree_control ||
			say "cannot enable the cpu controller"
	fi
else
	say "cannot mount cgroup2"
fi
if [ -f /lib/kmod/load-order ]; then
	while read -r m; do
		insmod "/lib/kmod/$m" || say "insmod $m failed"
	done </lib/kmod/load-order
fi
say "running /test.sh"
/bin/sh /test.sh
rc=$?
if [ $rc = 0 ]; then
	echo "FREQHINT-TEST-RESULT: PASS"
else
	echo "FREQHINT-TEST-RESULT: FAIL (exit $rc)"
fi
if grep -qw freqhint.kmemleak=1 /proc/cmdline; then
	if [ -w /sys/kernel/debug/kmemleak ]; then
		# kmemleak reports only objects older than 5 s, found
		# unreferenced by two scans.
		sleep 6
		echo scan >/sys/kernel/debug/kmemleak
		echo scan >/sys/kernel/debug/kmemleak
		n=$(grep -c '^unreferenced object' /sys/kernel/debug/kmemleak)
		if [ "$n" = 0 ]; then
			echo "FREQHINT-KMEMLEAK: clean"
		else
			cat /sys/kernel/debug/kmemleak
			echo "FREQHINT-KMEMLEAK: $n leaks"
		fi
	else
		echo "FREQHINT-KMEMLEAK: unavailable"
	fi
fi
finish
EOF
}

mkdir -p "$icache"
# Every distinct test makes an image; forget the ones no run took lately.
cache_prune "$icache" "$image"
if [ -f "$image" ]; then
	touch "$image"
else
	build_image
fi
[ -n "$out" ] && cp "$image" "$out"
echo "$image"
