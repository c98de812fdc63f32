#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Host-side tests of the user tools: hcctl builds warning-free, and the trace
# tools' unit tests (tests/user/test_*.py). Prints "ok"/"not ok" lines and
# "user: N passed, N failed".
set -uo pipefail
. "$(dirname "$0")/common.sh"

p=0 f=0
if out=$(make -s -C "$SSC_TOP/user" clean all 2>&1); then
	echo "ok - user: hcctl builds with -Wall -Wextra -Werror"
	p=$((p + 1))
else
	echo "not ok - user: hcctl builds with -Wall -Wextra -Werror"
	sed 's/^/# /' <<<"$out" | tail -n 20
	f=$((f + 1))
fi
# one line per test case: "test_x (module.Class...) ... ok|FAIL|ERROR"
out=$(cd "$SSC_TOP" && python3 -m unittest -v tests/user/test_*.py 2>&1)
while read -r line; do
	case $line in
	*" ... ok") echo "ok - user: ${line% ... ok}"; p=$((p + 1)) ;;
	*" ... FAIL" | *" ... ERROR") echo "not ok - user: $line"; f=$((f + 1)) ;;
	*" ... skipped"*) echo "not ok - user: $line # a skip is not a pass"; f=$((f + 1)) ;;
	esac
done <<<"$out"
if ! grep -q '^OK$' <<<"$out"; then
	sed 's/^/# /' <<<"$out" | tail -n 40
	[ "$f" -gt 0 ] || { echo "not ok - user: unittest did not report OK"; f=$((f + 1)); }
fi
echo "user: $p passed, $f failed"
[ "$f" -eq 0 ]
