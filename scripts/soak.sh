#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Run the test command N times in a row and say how each run went: the
# check that "scripts/test.sh passes every time" is a figure, not a hope.
#
#   scripts/soak.sh N [--load] [SUITE...]
#     N        how many runs of scripts/test.sh [SUITE...]
#     --load   a CPU hog on every core (stress-ng --cpu $(nproc)) for the
#              whole soak, so timing-dependent tests meet a busy machine
#
# One line per run (result, pass/fail/skip counts, duration, failing test
# names), then a summary; exit status non-zero if any run failed.  Each
# run's output and meson test logs are kept in its own directory under
# $FREQHINT_SOAK_DIR (default $FREQHINT_CACHE/soak/<date-time>/), named in
# the first line; a run's TMPDIR is there too, so the work directories a
# failed test keeps (guest console, freqhintd log, fixture tree) land next
# to its log.  Build and QEMU cache come from the environment as for
# scripts/test.sh (FREQHINT_BUILD, FREQHINT_QEMU_CACHE, ...).
set -uo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/scripts/lib.sh"

usage() { die "usage: $0 N [--load] [SUITE...]"; }

main() {
	local n=${1:-} load=0 suites=()
	[[ "$n" =~ ^[1-9][0-9]*$ ]] || usage
	shift
	while [ $# -gt 0 ]; do
		case $1 in
		--load) load=1 ;;
		-*) usage ;;
		*) suites+=("$1") ;;
		esac
		shift
	done
	: "${FREQHINT_BUILD:=$(clone_builds)}"
	export FREQHINT_BUILD

	local top
	top=${FREQHINT_SOAK_DIR:-$FREQHINT_CACHE/soak}/$(date +%Y%m%d-%H%M%S)
	mkdir -p "$top" || die "cannot make $top"
	local what="scripts/test.sh${suites[*]:+ ${suites[*]}}"
	log "soak: $n x $what$([ $load = 1 ] && echo ", under stress-ng --cpu $(nproc)"); logs in $top"

	# Install once before the clock starts (setup.sh is idempotent;
	# test.sh calls it again, which then costs seconds).
	bash "$here/scripts/setup.sh" >"$top/setup.log" 2>&1 ||
		die "setup failed (log: $top/setup.log)"

	local hog=
	if [ "$load" = 1 ]; then
		command -v stress-ng >/dev/null || die "stress-ng is not installed (scripts/setup.sh installs it)"
		stress-ng --cpu "$(nproc)" --quiet >"$top/stress-ng.log" 2>&1 &
		hog=$!
		# shellcheck disable=SC2064  # the pid is known now
		trap "kill $hog 2>/dev/null; wait $hog 2>/dev/null" EXIT
	fi

	local i dir t0 t1 secs rc counts fails ok=0 durations=() failed_names=()
	for i in $(seq "$n"); do
		dir=$top/run-$(printf '%02d' "$i")
		mkdir -p "$dir/tmp"
		t0=$(date +%s)
		TMPDIR=$dir/tmp bash "$here/scripts/test.sh" "${suites[@]}" >"$dir/test.out" 2>&1
		rc=$?
		t1=$(date +%s)
		secs=$((t1 - t0))
		durations+=("$secs")
		# Keep the meson logs of this run (the next run overwrites them).
		local b
		for b in main fuzz; do
			local ml=$FREQHINT_BUILD/$b/meson-logs
			[ -f "$ml/testlog.json" ] && [ "$(stat -c %Y "$ml/testlog.json")" -ge "$t0" ] || continue
			mkdir -p "$dir/meson-logs-$b"
			cp "$ml"/testlog.* "$dir/meson-logs-$b/" 2>/dev/null
		done
		counts=$(grep -E '^[0-9]+ passed, [0-9]+ failed, [0-9]+ skipped$' "$dir/test.out" | tail -n1)
		# "FAILED: SUITE / TEST (RESULT) ..." or "FAILED: build 'NAME' ...": the test's name
		fails=$(sed -n -e 's/^\[[0-9:]*\] FAILED: [^ ]* \/ \([^ ]*\) .*/\1/p' -e t \
			-e "s/^\[[0-9:]*\] FAILED: build '\([^']*\)'.*/build-\1/p" "$dir/test.out" | paste -sd ' ')
		# An empty work dir means nothing was kept.
		rmdir "$dir/tmp" 2>/dev/null
		if [ "$rc" = 0 ]; then
			ok=$((ok + 1))
			printf 'run %d/%d: PASS  %s  %ds\n' "$i" "$n" "${counts:-?}" "$secs"
		else
			# No FAILED: line: test.sh itself stopped (setup, a signal).
			[ -n "$fails" ] || fails="test.sh(exit-$rc)"
			failed_names+=($fails)
			printf 'run %d/%d: FAIL  %s  %ds  failed: %s  logs: %s\n' "$i" "$n" \
				"${counts:-no count line}" "$secs" "$fails" "$dir"
		fi
	done

	local sorted
	sorted=($(printf '%s\n' "${durations[@]}" | sort -n))
	printf 'soak: %d/%d runs passed (%s%s); duration min %ds, median %ds, max %ds; logs in %s\n' \
		"$ok" "$n" "$what" "$([ $load = 1 ] && echo ", stress-ng --cpu $(nproc)")" \
		"${sorted[0]}" "${sorted[$((${#sorted[@]} / 2))]}" "${sorted[-1]}" "$top"
	if [ ${#failed_names[@]} -gt 0 ]; then
		printf 'soak: failures by test: %s\n' \
			"$(printf '%s\n' "${failed_names[@]}" | sort | uniq -c | awk '{ printf "%s%s x%d", sep, $2, $1; sep = ", " }')"
	fi
	[ "$ok" = "$n" ]
}

# Parsed whole before it runs: editing the tree during a long soak cannot
# change the running copy.
main "$@"
exit
