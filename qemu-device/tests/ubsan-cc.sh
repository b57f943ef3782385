#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The C compiler of the UBSan variant (ubsan-qtest.sh): "ccache gcc", with
# -fsanitize=undefined for the device's own files only and the UBSan
# runtime on the link of the qemu-system binaries.  Every other file gets
# the normal build's arguments, so it comes out of the shared ccache; a
# QEMU built with --enable-ubsan throughout shares no object with it.
ub=false link=false
prev=
for a in "$@"; do
	case "$a" in
	*/hw/virtio/virtio-freqhint*.c | */backends/freqhint*.c) ub=true ;;
	# meson links through a response file named after the binary
	@qemu-system-*.rsp) link=true ;;
	esac
	case "$prev" in -o) case "$a" in qemu-system-*) link=true ;; esac ;; esac
	prev=$a
done
if $ub; then
	set -- "$@" -fsanitize=undefined -fno-sanitize-recover=undefined
fi
if $link; then
	set -- "$@" -fsanitize=undefined
fi
exec ccache gcc "$@"
