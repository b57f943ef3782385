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

test_script='' kdir='' out=''
adds=() modules=()
while [ $# -gt 0 ]; do
	case "$1" in
		--test) test_script=${2:?}; shift ;;
		--kernel) kdir=${2:?}; shift ;;
		--module) modules+=("${2:?}"); shift ;;
		--add) adds+=("${2:?}"); shift ;;
		-o) out=${2:?}; shift ;;
		*) die "usage: $0 --test SCRIPT [--kernel DIR] [--module KO]... [--add HOST:GUEST]... [-o FILE]" ;;
	esac
	shift
done
[ -n "$test_script" ] || die "--test SCRIPT is required"
[ -r "$test_script" ] || die "test script $test_script not found"

BUSYBOX=/bin/busybox
UCLAMPSET=/usr/bin/uclampset
CPUPOWER=/usr/bin/cpupower
if ! [ -x "$BUSYBOX" ] || ! file -L "$BUSYBOX" | grep 'statically linked' >/dev/null; then
	die "$BUSYBOX is not a static busybox (install busybox-static)"
fi
[ -x "$UCLAMPSET" ] || die "$UCLAMPSET not found (install util-linux)"
[ -x "$CPUPOWER" ] || die "$CPUPOWER not found (install linux-cpupower)"

# shared_libs BIN: the libraries (and loader) BIN needs, as host paths.
shared_libs() {
	ldd "$1" | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }'
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
key=$(
	{
		sha256sum "$0" "$here/tests/harness/test-lib.sh" "$BUSYBOX" "$UCLAMPSET" "$CPUPOWER" \
			"${libs[@]}" "$test_script"
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
	cp "$BUSYBOX" "$root/bin/busybox"
	local applet
	for applet in $("$BUSYBOX" --list-full); do
		[ -e "$root/$applet" ] || ln -s /bin/busybox "$root/$applet"
	done
	# Binaries and their libraries at the paths the loader expects.
	install -D -m 755 "$UCLAMPSET" "$root$UCLAMPSET"
	install -D -m 755 "$CPUPOWER" "$root$CPUPOWER"
	local f
	for f in "${libs[@]}"; do
		install -D -m 755 "$(readlink -f "$f")" "$root$f"
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
