#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Run every freqhint test tier on this machine, from nothing: installs what
# is missing (scripts/setup.sh, idempotent), builds, runs the meson suites,
# and ends with one line "N passed, N failed".  Exit status is non-zero on
# any failure.  Run as root.
#
#   scripts/test.sh                 everything
#   scripts/test.sh SUITE...        only these meson suites (unit, integration,
#                                   compile, qtest, guest, e2e, libvirt,
#                                   packages, deploy, fuzz, fresh)
#   scripts/test.sh all             everything, and the tests too slow for
#                                   the default run (meson suite 'all': the
#                                   nested vsock test, tests/nested-vsock/)
#
# The builds live outside the clone, in a directory of this clone's own
# (FREQHINT_BUILD, default: clone_builds in scripts/lib.sh), locked for the
# run: a second run from the same clone waits, one from another clone uses
# its own builds.  Each meson test invocation writes its own log, and the
# closing line counts from those logs alone.
set -uo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/scripts/lib.sh"

suites=("$@")
# "all": every suite, suite 'all' (the slow tests) among them.
slow=0
if [[ " ${suites[*]} " == *" all "* ]]; then
	suites=()
	slow=1
fi
: "${FREQHINT_BUILD:=$(clone_builds)}"

# The main build and the fuzz build (scripts/lib.sh).
declare -A builds=([main]="$MAIN_BUILD_OPTS" [fuzz]="$FUZZ_BUILD_OPTS")
declare -A build_env=([main]="CC=gcc" [fuzz]="CC=clang")
# How many arm64 guest tests run: FREQHINT_ARM64 (scripts/lib.sh).
arm64=$(arm64_mode) || exit 1
builds[main]+=" -Darm64=$arm64"

setup_build() {
	local name=$1 dir=$FREQHINT_BUILD/$1
	# A build directory is a cache: one meson cannot reconfigure (an
	# option whose type changed, say) is set up afresh.
	if [ -f "$dir/build.ninja" ] &&
		! meson setup --reconfigure $2 "$dir" "$here" >"$dir.setup.log" 2>&1; then
		log "build '$name': reconfiguring failed ($(grep -m1 ERROR "$dir.setup.log")); setting it up afresh"
		rm -rf "$dir"
	fi
	if [ ! -f "$dir/build.ninja" ]; then
		mkdir -p "$FREQHINT_BUILD"
		env ${build_env[$name]} meson setup $2 "$dir" "$here" >"$dir.setup.log" 2>&1 ||
			{ cat "$dir.setup.log"; return 1; }
	fi
	meson compile -C "$dir" || return 1
}

# run_suites NAME LOGBASE SUITE...: meson test in build NAME, its log
# under meson-logs/LOGBASE.{json,txt}, this invocation's alone.
run_suites() {
	local dir=$FREQHINT_BUILD/$1 logbase=$2; shift 2
	local args=(--print-errorlogs --num-processes 2 --logbase "$logbase")
	# The fuzz suite runs from the clang build only.
	[ "$dir" = "$FREQHINT_BUILD/fuzz" ] || args+=(--no-suite fuzz)
	for s in "$@"; do args+=(--suite "$s"); done
	# The default run leaves the slow tests out.
	[ "$slow" = 1 ] || [ $# -gt 0 ] || args+=(--no-suite all)
	meson test -C "$dir" "${args[@]}"
}

# failed_tests JSON: one line per test in a meson test log that did not
# pass or skip: its name and result.
failed_tests() {
	jq -r -s '.[] | select(.result != "OK" and .result != "EXPECTEDFAIL" and .result != "SKIP") |
		"\(.name) (\(.result))"' "$1"
}

main() {
	bash "$here/scripts/setup.sh" || die "setup failed"

	mkdir -p "$FREQHINT_BUILD"
	exec 8>"$FREQHINT_BUILD/.lock"
	flock -n 8 || { log "another run uses $FREQHINT_BUILD; waiting"; flock 8; }

	local build_failed=0 passed=0 failed=0 skipped=0 name want s p f log_json rc
	local logbase failures=()
	logbase=run-$(date +%Y%m%d-%H%M%S)-$$
	for name in main fuzz; do
		# The suites this build runs; a build none of them needs is not made.
		want=()
		if [ ${#suites[@]} -gt 0 ]; then
			for s in "${suites[@]}"; do
				case $name:$s in
				fuzz:fuzz | main:*) [ "$name:$s" = main:fuzz ] || want+=("$s") ;;
				esac
			done
			[ ${#want[@]} -gt 0 ] || continue
		elif [ "$name" = fuzz ]; then
			want=(fuzz)
		fi
		if ! setup_build "$name" "${builds[$name]}"; then
			log "build '$name' failed"
			build_failed=$((build_failed + 1))
			failures+=("build '$name' (log: $FREQHINT_BUILD/$name.setup.log, $FREQHINT_BUILD/$name/meson-logs/meson-log.txt)")
			continue
		fi
		run_suites "$name" "$logbase" "${want[@]}"
		rc=$?
		log_json=$FREQHINT_BUILD/$name/meson-logs/$logbase.json
		if [ ! -f "$log_json" ]; then
			# meson test itself failed before any test ran (a suite name
			# it does not know, say): a failure, never a silent pass.
			failed=$((failed + 1))
			failures+=("meson test in build '$name' exited $rc with no log")
			continue
		fi
		p=$(jq -s '[.[] | select(.result == "OK" or .result == "EXPECTEDFAIL")] | length' "$log_json")
		f=$(jq -s '[.[] | select(.result != "OK" and .result != "EXPECTEDFAIL" and .result != "SKIP")] | length' "$log_json")
		s=$(jq -s '[.[] | select(.result == "SKIP")] | length' "$log_json")
		passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + s))
		while IFS= read -r t; do
			[ -n "$t" ] && failures+=("$t (log: ${log_json%.json}.txt)")
		done < <(failed_tests "$log_json")
		# meson's own verdict and the log must agree: a non-zero exit with
		# no failure in the log is still a failure.
		if [ "$rc" != 0 ] && [ "$f" = 0 ]; then
			failed=$((failed + 1))
			failures+=("meson test in build '$name' exited $rc (log: ${log_json%.json}.txt)")
		fi
	done

	# A build that does not build is a failure of every test it holds; count it.
	failed=$((failed + build_failed))
	# A skipped test is a test that did not run: report it, and fail the run.
	[ "$skipped" -eq 0 ] || log "$skipped test(s) skipped: treated as failure"
	# Each failure by name, with where its whole output is (the test's own
	# lines there say where the guest console and daemon logs were kept).
	for f in "${failures[@]}"; do log "FAILED: $f"; done
	echo "$passed passed, $failed failed, $skipped skipped"
	[ "$failed" -eq 0 ] && [ "$skipped" -eq 0 ]
}

# bash reads a script as it runs it: parsed whole as one function, an edit
# of this file during a run (a checkout, a merge) cannot reach the running copy.
main
exit
