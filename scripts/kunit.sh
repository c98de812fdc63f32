#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Run the dm-ssc and hashcache KUnit tests on UML, in the shared linux-source-6.12 tree.
#
# kernel/ssc and kernel/hashcache are linked into the tree as drivers/md/ssc and
# drivers/md/hashcache and hooked into drivers/md/{Kconfig,Makefile}. Writes the KTAP to $SSC_OUT/kunit-uml.ktap
# and the parsed results to $SSC_OUT/kunit-uml.json. The last line printed is
# "kunit: N passed, N failed" (leaf test cases); the exit status is non-zero
# if the build failed, any test failed or crashed, or no test ran.
# Extra arguments go to kunit.py (e.g. a filter glob such as 'ssc_smap.*').
set -euo pipefail
# shellcheck source=scripts/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"

src=$(linux_src)
build="$SSC_CACHE/kunit-uml"
ktap="$SSC_OUT/kunit-uml.ktap"
json="$SSC_OUT/kunit-uml.json"

hook_ssc_into_tree "$src"

mkdir -p "$build"
rm -f "$ktap" "$json" "$build/test.log"
log "kunit: building and running UML in $build"
rc=0
# the dm-ssc metadata fuzzer draws from make check's seed (SSC_SEED), so a failure replays
seed=()
[ -n "${SSC_SEED:-}" ] && seed=(--kernel_args="dm_ssc.kunit_seed=$SSC_SEED")
(cd "$src" && python3 tools/testing/kunit/kunit.py run \
	--kunitconfig="$SSC_TOP/tests/kunit/.kunitconfig" \
	--build_dir="$build" --jobs="$(nproc)" --json="$json" "${seed[@]}" "$@") || rc=$?

# the raw kernel log is teed to test.log; keep just the KTAP
if [ -s "$build/test.log" ]; then
	(cd "$src" && python3 tools/testing/kunit/kunit.py parse --raw_output=kunit \
		"$build/test.log") >"$ktap" || true
fi
if [ -s "$ktap" ]; then
	grep -o 'ssc_smap: bytes_per_entry=.*' "$ktap" || true
fi

counts=$(python3 - "$json" <<'PY'
import json, sys
passed = failed = skipped = 0
def walk(g):
	global passed, failed, skipped
	for c in g.get("test_cases", []):
		if c["status"] == "PASS":
			passed += 1
		elif c["status"] == "SKIP":
			skipped += 1
		else:
			failed += 1
	for s in g.get("sub_groups", []):
		walk(s)
try:
	with open(sys.argv[1]) as f:
		walk(json.load(f))
except (OSError, ValueError):
	pass
print(passed, failed, skipped)
PY
)
read -r passed failed skipped <<<"$counts"
[ "$skipped" -eq 0 ] || echo "kunit: $skipped skipped"
[ "$rc" -eq 0 ] || echo "kunit: kunit.py exited with status $rc (build failure, crash or test failure)"
[ "$passed" -gt 0 ] || [ "$failed" -gt 0 ] || echo "kunit: no test ran"
echo "kunit: $passed passed, $failed failed"
[ "$rc" -eq 0 ] && [ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
