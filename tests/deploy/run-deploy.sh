#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The Debian packages under real systemd: boot a TCG guest whose init is
# systemd, from the Debian bookworm rootfs of tests/harness/build-rootfs.sh
# (a virtio-blk disk, snapshot=on) and Debian's stock 6.12 kernel; install
# the freqhint package built from this tree there and check the sockets,
# freqhintctl as a monitoring user, the metrics endpoint and that
# `systemctl stop` restores the limits (guest-test.sh says what exactly).
#
#   run-deploy.sh --testclient FH_TESTCLIENT
#
# The packages (scripts/build-packages.sh --no-qemu) are cached in
# $FREQHINT_CACHE/deploy-packages/<hash of the files that go into them>/.  A small
# busybox initramfs loads virtio_blk and ext4 (modules in Debian's kernel),
# mounts the disk, lays the test in and switches to systemd.  run-guest.sh
# judges the console.  FREQHINT_KEEP=1 keeps the work directory.
set -uo pipefail

here=$(cd "$(dirname "$0")/../.." && pwd)
. "$here/scripts/lib.sh"

testclient=
while [ $# -gt 0 ]; do
	case "$1" in
		--testclient) testclient=${2:?}; shift ;;
		*) die "usage: $0 --testclient FH_TESTCLIENT" ;;
	esac
	shift
done
[ -x "$testclient" ] || die "--testclient: $testclient is not an executable"

W=$(mktemp -d "${TMPDIR:-/tmp}/fh-deploy.XXXXXX")
ok=0
cleanup() {
	if [ "$ok" = 1 ] && [ "${FREQHINT_KEEP:-0}" != 1 ]; then
		rm -rf "$W"
	else
		log "work directory kept: $W (console.log, packages, initramfs tree)"
	fi
}
trap cleanup EXIT
fail() { log "FAIL: $*"; exit 1; }

rootfs=$("$here/tests/harness/build-rootfs.sh" --print-dir) || fail "no systemd rootfs"
kdir=$("$here/tests/harness/fetch-stock-kernel.sh" --print-dir) || fail "no stock kernel"
release=$(cat "$kdir/release")

# packages: build-packages.sh's output for this tree, cached by the content
# of what goes into the packages: every file but tests, benchmarks and
# Markdown documents (a change to the tests does not rebuild them; the
# `packages` suite builds them from the whole tree every time).
packages() {
	local key dir
	key=$(cd "$here" && git ls-files -z --cached --others --exclude-standard -- \
		. ':!tests/' ':!bench/' ':!*.md' |
		sort -z | xargs -0 sha256sum 2>/dev/null | cache_key)
	dir=$FREQHINT_CACHE/deploy-packages/$key
	# Other trees' packages go when unused.
	cache_prune "$FREQHINT_CACHE/deploy-packages" "$dir"
	if [ -f "$dir/.done" ]; then
		touch "$dir"
	else
		rm -rf "$dir"
		"$here/scripts/build-packages.sh" --no-qemu "$dir" >"$W/build-packages.log" 2>&1 || {
			tail -n 40 "$W/build-packages.log" >&2
			return 1
		}
		touch "$dir/.done"
	fi
	echo "$dir"
}
t0=$SECONDS
debs=$(packages) || fail "scripts/build-packages.sh --no-qemu failed"
log "packages: $debs ($((SECONDS - t0)) s)"

# The initramfs: busybox, the disk's modules, the test payload, /init.
R=$W/initramfs
mkdir -p "$R"/{bin,dev,proc,sys,newroot,lib/kmod} "$R/payload/debs"
cp /bin/busybox "$R/bin/busybox"
file -L "$R/bin/busybox" | grep -q 'statically linked' || fail "/bin/busybox is not busybox-static"
for m in virtio_blk crc32c_generic ext4; do
	modprobe --show-depends -S "$release" "$m" | awk '$1 == "insmod" { print $2 }'
done | awk '!seen[$0]++ && !/crc32c-intel/' >"$W/modules"   # (TCG's CPU model lacks SSE4.2)
while read -r ko; do
	b=$(basename "$ko")
	case "$b" in
		*.ko.xz) xz -dc "$ko" >"$R/lib/kmod/${b%.xz}" ;;
		*.ko.zst) zstd -qdc "$ko" >"$R/lib/kmod/${b%.zst}" ;;
		*.ko) cp "$ko" "$R/lib/kmod/$b" ;;
		*) fail "unknown module file $ko" ;;
	esac
	basename "${b%.xz}" .zst >>"$R/lib/kmod/load-order"
done <"$W/modules"
[ -s "$R/lib/kmod/load-order" ] || fail "no modules found for $release (virtio_blk, ext4)"
cp "$debs"/freqhint_*.deb "$R/payload/debs/" || fail "no freqhint_*.deb in $debs"
install -m 755 "$here/tests/deploy/guest-test.sh" "$R/payload/guest-test.sh"
install -m 644 "$here/tests/harness/test-lib.sh" "$R/payload/test-lib.sh"
install -m 755 "$here/tests/agent/mkfixture.sh" "$R/payload/mkfixture.sh"
install -m 755 "$testclient" "$R/payload/fh-testclient"
cat >"$R/payload/freqhint-deploy-test.service" <<'EOF'
[Unit]
Description=freqhint deploy test (tests/deploy/guest-test.sh)
After=multi-user.target

[Service]
Type=oneshot
ExecStart=/opt/freqhint-test/guest-test.sh
StandardInput=null
StandardOutput=tty
StandardError=tty
TTYPath=/dev/console
TTYReset=no
TTYVHangup=no
EOF
cat >"$R/init" <<'EOF'
#!/bin/busybox sh
# Mount the rootfs disk, lay the test in, hand over to systemd.
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
exec </dev/console >/dev/console 2>&1
say() { echo "FREQHINT-INIT: $*"; }
stop() { say "$*"; echo "FREQHINT-TEST-RESULT: FAIL ($*)"; poweroff -f; }
while read -r m; do
	insmod "/lib/kmod/$m" || say "insmod $m failed"
done </lib/kmod/load-order
i=0
while [ ! -b /dev/vda ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
mount -t ext4 /dev/vda /newroot || stop "cannot mount /dev/vda"
mkdir -p /newroot/opt/freqhint-test /newroot/etc/systemd/system/multi-user.target.wants
cp -a /payload/. /newroot/opt/freqhint-test/
mv /newroot/opt/freqhint-test/freqhint-deploy-test.service /newroot/etc/systemd/system/
ln -s ../freqhint-deploy-test.service /newroot/etc/systemd/system/multi-user.target.wants/
say "switching to systemd, uptime $(cut -d' ' -f1 /proc/uptime)"
umount /proc /sys /dev
exec switch_root /newroot /lib/systemd/systemd
EOF
chmod 755 "$R/init"
mknod -m 600 "$R/dev/console" c 5 1
(cd "$R" && find . -print0 | cpio --null -o -H newc --owner=0:0 --quiet) | gzip -1 >"$W/initrd.gz"

# systemd.show_status=error: keep the console for the test's own lines.
"$here/tests/harness/run-guest.sh" --kernel "$kdir" --initrd "$W/initrd.gz" \
	--smp 2 --mem 1G --timeout "${DEPLOY_TIMEOUT:-900}" --log "$W/console.log" --quiet \
	--append "systemd.show_status=error" \
	-- -drive "file=$rootfs/rootfs.img,format=raw,if=virtio,snapshot=on" || fail "guest run failed"
grep '^FREQHINT-CHECKS:' "$W/console.log" | tr -d '\r'
ok=1
echo "PASS: deploy under systemd"
