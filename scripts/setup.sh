#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Prepare a Debian 12 (bookworm) machine for building and testing freqhint.
# Idempotent; run as root.  Heavy artifacts (QEMU source and build, guest
# kernels, initramfs images) live in $FREQHINT_CACHE, outside the clone, keyed
# by their inputs, so a second run costs seconds.
#
#   scripts/setup.sh            what scripts/test.sh needs: packages +
#                               sources + QEMU + guest kernels + the systemd
#                               guest's Debian rootfs (+ arm64 pieces,
#                               FREQHINT_ARM64)
#   scripts/setup.sh packages   only apt work, for all of that
#   scripts/setup.sh demo [--arch x86_64|arm64] [--stage STAGE]
#                               only what scripts/demo.sh needs: the build
#                               and guest packages (Debian's backports
#                               kernel among them), QEMU's target for the
#                               arch, Debian's stock kernel for that arch
#                               and its uclamp kernel.  The demo runs in two
#                               stages and sets them up apart (STAGE):
#                                 packages  the packages alone, but for
#                                           the kernel's
#                                 stock     packages, QEMU's target and the
#                                           stock kernel (its packages
#                                           installed beside QEMU's
#                                           build): the first story
#                                 uclamp    packages and the uclamp kernel:
#                                           with stock's QEMU, the second
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/scripts/lib.sh"

[ "$(id -u)" = 0 ] || die "run as root (apt, /var/cache)"
trap 'log "error: $0:$LINENO: $BASH_COMMAND failed"' ERR

add_backports_sources() {
	# Derive bookworm-backports and deb-src from the stanza the machine
	# already has, so no mirror name is written down here.
	local src=/etc/apt/sources.list.d/debian.sources
	local dst=/etc/apt/sources.list.d/freqhint-backports.sources
	[ -r "$src" ] || die "$src not found: cannot derive backports sources"
	local uris signed
	uris=$(awk '/^URIs:/ && $2 !~ /security/ { print $2; exit }' "$src")
	signed=$(awk '/^Signed-By:/ { print $2; exit }' "$src")
	[ -n "$uris" ] || die "no main URIs: line in $src"
	local want
	want=$(printf 'Types: deb deb-src\nURIs: %s\nSuites: bookworm-backports\nComponents: main\nSigned-By: %s\n\nTypes: deb-src\nURIs: %s\nSuites: bookworm bookworm-updates\nComponents: main\nSigned-By: %s\n' \
		"$uris" "$signed" "$uris" "$signed")
	if [ ! -f "$dst" ] || [ "$(cat "$dst")" != "$want" ]; then
		printf '%s\n' "$want" >"$dst"
	fi
}

# lists_fresh: apt's lists hold every suite and architecture setup asks
# for.  Read off apt's own state, not a marker file: a marker kept in the
# cache would travel with a copied cache to a machine whose lists lack them.
lists_fresh() {
	local l=/var/lib/apt/lists a
	compgen -G "$l/*_dists_bookworm-backports_main_binary-amd64_Packages*" >/dev/null &&
		compgen -G "$l/*_dists_bookworm-backports_main_source_Sources*" >/dev/null &&
		compgen -G "$l/*_dists_bookworm_main_source_Sources*" >/dev/null || return 1
	for a in "${FOREIGN_ARCHES[@]}"; do
		compgen -G "$l/*_dists_bookworm_main_binary-${a}_Packages*" >/dev/null || return 1
	done
}

# What the demo needs: the agent's build, QEMU's build, the uclamp kernel's
# build and the guest's initramfs userland.  From bookworm itself.
DEMO_PKGS=(
	build-essential pkg-config ninja-build ccache git curl ca-certificates
	xz-utils cpio gzip zstd dpkg-dev file procps
	libglib2.0-dev libjson-glib-dev libmicrohttpd-dev libvirt-glib-1.0-dev libxml2-dev
	busybox-static util-linux linux-cpupower socat jq
	flex bison bc libelf-dev libssl-dev dwarves kmod
	libfdt-dev libpixman-1-dev zlib1g-dev python3-venv gcc-multilib seabios ipxe-qemu
)
# What the tests need beside: Debian's own QEMU (libvirt-stock runs a
# domain on it: the stock device set), the fuzz build, valgrind, promtool,
# the libvirt daemon, packaging, the stock kernels, the rootfs builder.
TEST_PKGS=(
	qemu-system-x86
	clang libclang-rt-14-dev llvm valgrind libxml2-utils gnuplot-nox
	prometheus stress-ng systemd debhelper dh-dkms dkms lintian
	linux-headers-6.1.0-*-amd64
	mmdebstrap e2fsprogs
)
# Packages that must come from bookworm-backports, pinned one by one: a
# blanket -t bookworm-backports would drag systemd along.
DEMO_BPO_PKGS=(meson python3-pycotap libvirt-dev libvirt0)
TEST_BPO_PKGS=(
	libvirt-daemon libvirt-daemon-driver-qemu
	libvirt-clients libvirt-daemon-common libvirt-common
)
# Debian's 6.12 kernel and headers: the stock guest kernel of the tests and
# of the demo's first stage (fetch-stock-kernel.sh; the arm64 one takes its
# release and kbuild from them).  Installing the image builds its
# initramfs, twice (its own hook, then initramfs-tools' trigger): minutes
# of a cold demo, so the demo's stock stage installs them beside QEMU's
# build, not before it.
STOCK_BPO_PKGS=(linux-image-amd64 linux-headers-amd64)

# The mode (all, packages, demo), the demo's architecture and stage; parsed
# here because the package lists and foreign architectures depend on them.
usage="usage: $0 [packages | demo [--arch x86_64|arm64] [--stage packages|stock|uclamp]]"
mode=${1:-all} demo_arch=x86_64 demo_stage=all
case "$mode" in
all | packages) [ $# -le 1 ] || die "$usage" ;;
demo)
	shift
	while [ $# -gt 0 ]; do
		case "$1" in
		--arch) demo_arch=${2:?$usage}; shift ;;
		--stage) demo_stage=${2:?$usage}; shift ;;
		*) die "$usage" ;;
		esac
		shift
	done
	case "$demo_stage" in
	all | packages | stock | uclamp) ;;
	*) die "demo --stage packages|stock|uclamp, not '$demo_stage'" ;;
	esac
	# The demo's arch alone decides whether arm64 pieces are set up.
	case "$demo_arch" in
	x86_64) export FREQHINT_ARM64=none ;;
	arm64) export FREQHINT_ARM64=core ;;
	*) die "demo --arch x86_64|arm64, not '$demo_arch'" ;;
	esac
	;;
*) die "$usage" ;;
esac
if [ "$mode" = demo ]; then
	BASE_PKGS=("${DEMO_PKGS[@]}") BPO_PKGS=("${DEMO_BPO_PKGS[@]}")
	if [ "$demo_stage" = all ]; then BPO_PKGS+=("${STOCK_BPO_PKGS[@]}"); fi
else
	BASE_PKGS=("${DEMO_PKGS[@]}" "${TEST_PKGS[@]}")
	BPO_PKGS=("${DEMO_BPO_PKGS[@]}" "${TEST_BPO_PKGS[@]}" "${STOCK_BPO_PKGS[@]}")
fi

# Foreign architectures for the arm64 guests: their kernel, headers and
# userland are Debian's arm64 packages, fetched (never installed) with
# apt-get download through dpkg multiarch (tests/harness/fetch-debs.sh).
FOREIGN_ARCHES=()
arm64_enabled && FOREIGN_ARCHES=(arm64)
# The cross binutils are installed, not unpacked: their programs load
# libbfd/libopcodes for the target from the system's library path, which an
# unpacked tree is not on (cross-gcc.sh unpacks only the compiler, which
# conflicts with gcc-multilib when installed).
arm64_enabled && BASE_PKGS+=(binutils-aarch64-linux-gnu)

# foreign_arches_ok: dpkg knows every FOREIGN_ARCHES already.
foreign_arches_ok() {
	local have a
	have=$(dpkg --print-foreign-architectures)
	for a in "${FOREIGN_ARCHES[@]}"; do
		grep -qx "$a" <<<"$have" || return 1
	done
}

add_foreign_arches() {
	foreign_arches_ok && return 0
	local a
	for a in "${FOREIGN_ARCHES[@]}"; do dpkg --add-architecture "$a"; done
}

# all_installed PKG...: true when dpkg has every PKG (an optional
# /suite suffix ignored) installed; nothing is changed.
all_installed() {
	local names=("${@%%/*}") status
	# One query for all: dpkg-query fails if it knows one of them not at all.
	status=$(dpkg-query -W -f='${db:Status-Status}\n' "${names[@]}" 2>/dev/null) || return 1
	[ "$(grep -cx installed <<<"$status")" = "${#names[@]}" ]
}

version_at_least() {
	dpkg --compare-versions "$(dpkg-query -W -f='${Version}' "$1" 2>/dev/null)" ge "$2"
}

install_packages() {
	local hdr61 pkgs bpo=()
	for p in "${BPO_PKGS[@]}"; do bpo+=("$p/bookworm-backports"); done
	# A machine that has everything is left as it is: no sources rewritten,
	# no apt run (so concurrent test runs never contend for dpkg's lock).
	# dpkg-query fails when no package matches (a fresh machine): that is
	# an empty answer here, not an error for set -e and pipefail.
	hdr61=$({ dpkg-query -W -f='${Package}\n' 'linux-headers-6.1.0-*-amd64' 2>/dev/null || :; } |
		awk '/^linux-headers-6\.1\.0-[0-9]+-amd64$/' | sort -V | tail -n1)
	# Without 6.1 headers installed, a name no package has: not all installed.
	pkgs=("${BASE_PKGS[@]/linux-headers-6.1.0-\*-amd64/${hdr61:-linux-headers-6.1.0-none-amd64}}")
	# Installed is not enough for backports packages: bookworm's own
	# meson, libvirt or kernel are too old.
	if all_installed "${pkgs[@]}" "${bpo[@]}" && foreign_arches_ok &&
		version_at_least meson 1.5 && version_at_least libvirt0 11 &&
		{ [[ " ${BPO_PKGS[*]} " != *" linux-image-amd64 "* ]] ||
			version_at_least linux-image-amd64 6.12; }; then
		return 0
	fi
	add_backports_sources
	add_foreign_arches
	lists_fresh || apt-get update -q
	export DEBIAN_FRONTEND=noninteractive
	# The 6.1 headers package name carries the ABI number; ask apt for it.
	hdr61=$(apt-cache search --names-only '^linux-headers-6\.1\.0-[0-9]+-amd64$' |
		awk '{print $1}' | sort -V | tail -n1)
	pkgs=("${BASE_PKGS[@]/linux-headers-6.1.0-\*-amd64/$hdr61}")
	apt-get install -y -q --no-install-recommends "${pkgs[@]}" "${bpo[@]}"
}

# arm64_guest_userland: what an arm64 guest's initramfs and static guest
# programs are made of (Debian's arm64 packages, the cross C library).
arm64_guest_userland() {
	"$here/tests/harness/mkinitramfs.sh" --arch arm64 --fetch-only
	"$here/tests/harness/cross-gcc.sh" arm64 --libc >/dev/null
}

# in_parallel FUNC...: run each FUNC as its own job and wait for all of
# them; fails if any failed.  QEMU and a kernel are each built with as
# many jobs as CPUs, but each has serial stretches (configure, source
# unpacking, the final links, modpost) and downloads that leave the CPUs
# idle; run side by side, one fills the other's gaps.  The jobs share
# nothing but caches, each of which takes its own lock.
in_parallel() {
	local f pids=() rc=0 p
	for f in "$@"; do
		"$f" &
		pids+=($!)
	done
	for p in "${pids[@]}"; do
		wait "$p" || rc=1
	done
	[ "$rc" = 0 ] || die "a setup job failed (its error is above)"
}

# The demo's pieces: QEMU's one target, Debian's stock kernel (the first
# story's guest, fetched) and the uclamp kernel (the second's, built);
# an arm64 guest of either also needs its userland and cross compiler.
demo_qemu() { "$here/qemu-device/build-qemu.sh" --arch "$demo_arch" --only; }
demo_stock() {
	if [ "$demo_stage" = stock ]; then
		# Only the kernel packages are missing here (see STOCK_BPO_PKGS).
		local BASE_PKGS=() BPO_PKGS=("${STOCK_BPO_PKGS[@]}")
		install_packages
	fi
	"$here/tests/harness/fetch-stock-kernel.sh" --arch "$demo_arch"
	if [ "$demo_arch" = arm64 ]; then arm64_guest_userland; fi
}
demo_guest() {
	"$here/tests/harness/build-kernel.sh" --arch "$demo_arch"
	if [ "$demo_arch" = arm64 ]; then arm64_guest_userland; fi
}

# What scripts/test.sh needs, as three jobs: compiling QEMU, compiling the
# uclamp kernels, and fetching the rest.
all_qemu() { "$here/qemu-device/build-qemu.sh"; }
# arm64 guests boot the same uclamp kernel cross-compiled (with Debian's
# cross gcc unpacked by cross-gcc.sh: installed, it would remove
# gcc-multilib).  QEMU's aarch64 target is part of QEMU's build.
all_kernels() {
	"$here/tests/harness/build-kernel.sh"
	if arm64_enabled; then "$here/tests/harness/build-kernel.sh" --arch arm64; fi
}
# Debian's stock kernels and headers, the systemd guest's rootfs, the arm64
# initramfs userland and the cross C library for the e2e story's static
# guest programs.
all_downloads() {
	"$here/tests/harness/fetch-stock-kernel.sh"
	"$here/tests/harness/build-rootfs.sh"
	if arm64_enabled; then
		"$here/tests/harness/fetch-stock-kernel.sh" --arch arm64
		arm64_guest_userland
	fi
}

main() {
	mkdir -p "$FREQHINT_CACHE"
	install_packages
	case "$mode" in
	packages) return 0 ;;
	demo)
		case "$demo_stage" in
		packages) ;;
		stock) in_parallel demo_qemu demo_stock ;;
		uclamp) demo_guest ;;
		all) in_parallel demo_qemu demo_stock demo_guest ;;
		esac
		log "demo setup ($demo_stage) complete; cache in $FREQHINT_CACHE"
		return 0
		;;
	esac

	in_parallel all_qemu all_kernels all_downloads
	log "setup complete; cache in $FREQHINT_CACHE"
}

# bash reads a script as it runs it: a checkout that rewrites this file
# during a long build would make the rest of the run parse garbage.  Parsed
# whole as one function, the edit cannot reach the running copy.
main
exit
