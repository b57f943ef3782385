#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# check-schema.sh RNG METADATA-CHECK SAMPLES-DIR
#
# The RELAX NG schema and the agent's parser must agree on every sample:
#   good-*         both accept
#   bad-*          both refuse
#   schema-only-*  the schema accepts, the parser refuses (floor above
#                  ceiling: the one rule RELAX NG cannot state, LM-6)
# plus: the capacity-unit mistake gets an error that says "percent".
set -u
rng=$1 check=$2 dir=$3
command -v xmllint >/dev/null || { echo "xmllint not installed (libxml2-utils)"; exit 1; }
fail=0 n=0
verdict() { if "$@" >/dev/null 2>&1; then echo accept; else echo refuse; fi; }
for f in "$dir"/*.xml; do
	name=$(basename "$f" .xml)
	case $name in
	good-*) want_rng=accept want_parser=accept ;;
	bad-*) want_rng=refuse want_parser=refuse ;;
	schema-only-*) want_rng=accept want_parser=refuse ;;
	*) echo "unexpected sample $name"; fail=1; continue ;;
	esac
	got_rng=$(verdict xmllint --noout --relaxng "$rng" "$f")
	got_parser=$(verdict "$check" "$f")
	n=$((n + 1))
	if [ "$got_rng" != "$want_rng" ] || [ "$got_parser" != "$want_parser" ]; then
		echo "FAIL $name: schema ${got_rng}s (want $want_rng), parser ${got_parser}s (want $want_parser)"
		"$check" "$f"
		fail=1
	else
		echo "ok   $name: schema ${got_rng}s, parser ${got_parser}s"
	fi
done
msg=$("$check" "$dir/bad-capacity-units.xml")
case $msg in
*percent*) echo "ok   capacity-unit error says percent: $msg" ;;
*) echo "FAIL capacity-unit error does not say percent: $msg"; fail=1 ;;
esac
[ "$n" -ge 10 ] || { echo "FAIL only $n samples found in $dir"; fail=1; }
exit $fail
