# SPDX-License-Identifier: GPL-2.0-or-later
# Shared shell helpers for freqhint's scripts.  Source, do not execute.

: "${FREQHINT_CACHE:=/var/cache/freqhint}"
export FREQHINT_CACHE

log() { printf '[%s] %s\n' "$(date +%T)" "$*" >&2; }
die() { log "error: $*"; exit 1; }

# hash_inputs FILE...: a short stable key for a cache entry built from FILEs.
hash_inputs() { cat "$@" | sha256sum | cut -c1-16; }

# Debian's python3, not whatever a pyenv shim puts first in PATH.
PYTHON3=/usr/bin/python3
