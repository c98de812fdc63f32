#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Every test of the project (what `make check` runs), in stages:
#   deps      install what is missing (Debian packages)
#   lint      checkpatch --strict, sparse, W=1 on both kernels (scripts/lint.sh)
#   kunit     KUnit on UML: pure logic such as the sparse hash map (scripts/kunit.sh)
#   user      host tests of the user tools: hcctl builds, trace tools (scripts/user-tests.sh)
#   vm-6.12   VM suites on Debian's 6.12 LTS kernel
#   vm-6.1    VM suites on Debian 12's 6.1 kernel
#   vm-debug  VM suites + in-kernel KUnit + the flashvm suite on a KASAN + lockdep
#             kernel built from linux-source-6.12 with the FlashVM swap policy
#             hooks (cached; ~8 min to build on a fresh machine, in the lint stage)
#   harness   the harness's own guarantees: a failing check, a WARN and an oops
#             each fail a VM run
# CHECK_STAGES="lint kunit" limits the run. Each stage's full output is in
# out/logs/<stage>.log. The last line is "N passed, N failed"; exit 0 iff 0 failed.
set -uo pipefail
. "$(dirname "$0")/common.sh"

STAGES=${CHECK_STAGES:-"deps lint kunit user vm-6.12 vm-6.1 vm-debug harness"}
VM_SUITES=ssc-table,ssc-io,ssc-persist,ssc-errors,ssc-crash,hcctl,monitor,replay,hashcache
logs="$SSC_OUT/logs"
mkdir -p "$logs"
total_pass=0 total_fail=0

count() { # count PASS FAIL: add to the totals
	total_pass=$((total_pass + $1))
	total_fail=$((total_fail + $2))
}

# run_stage NAME CMD...: run a stage whose last "N passed, N failed" line is its count
run_stage() {
	local name=$1 rc line p f t0=$SECONDS
	shift
	log "stage $name: $*"
	"$@" > "$logs/$name.log" 2>&1
	rc=$?
	line=$(grep -oE '[0-9]+ passed, [0-9]+ failed' "$logs/$name.log" | tail -n1)
	if [ -z "$line" ]; then
		p=0 f=1
		echo "not ok - $name: stage produced no result (exit $rc)"
	else
		read -r p _ f _ <<<"${line//,/}"
		if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
			f=1
			echo "not ok - $name: stage exited $rc with no failed test"
		fi
	fi
	grep -E '^not ok' "$logs/$name.log" | sed "s/^/  [$name] /"
	if [ "$f" -ne 0 ]; then
		echo "  [$name] last lines of $logs/$name.log:"
		tail -n 25 "$logs/$name.log" | sed "s/^/  [$name] | /"
	fi
	echo "stage $name: $p passed, $f failed ($((SECONDS - t0))s)"
	count "$p" "$f"
}

# The harness must fail a run for each of these; each is one test here.
harness_selftest() {
	local kd p=0 f=0 out
	eval "$("$SSC_TOP/scripts/kernel.sh" 6.12)"
	kd="$SSC_TOP/out/build/$(basename "$(realpath "$KDIR")")/harness-splat"
	mkdir -p "$kd"
	rsync -a "$SSC_TOP/tests/harness/splat/" "$kd/"
	make -s -C "$KDIR" M="$kd" modules || { echo "not ok - harness: splat module builds"; echo "0 passed, 1 failed"; return 1; }
	expect() { # expect WHAT SUITE TAP-PATTERN
		if out=$("$SSC_TOP/scripts/vm.sh" --kernel 6.12 --name "$2" --suites "$2" \
			--timeout 300 --ko "$kd/ssc-harness-splat.ko" 2>&1); then
			echo "not ok - harness: $1 # the run passed"
			f=$((f + 1))
		elif grep -qE "$3" <<<"$out"; then
			echo "ok - harness: $1"
			p=$((p + 1))
		else
			echo "not ok - harness: $1 # failed, but not as expected (/$3/)"
			sed 's/^/# /' <<<"$out" | tail -n 20
			f=$((f + 1))
		fi
	}
	expect "a failing check fails the run" harness-fail \
		'^not ok [0-9]+ - harness-fail: deliberately wrong expectation'
	expect "a kernel WARN fails the run" harness-warn \
		'^not ok [0-9]+ - harness-warn: console free of kernel splats'
	expect "an oops fails the run" harness-oops \
		'^not ok [0-9]+ - harness-oops: VM ran every suite to the end'
	echo "harness: $p passed, $f failed"
	[ "$f" -eq 0 ]
}

for stage in $STAGES; do
	case $stage in
	deps)	run_stage deps bash -c '"$0" && echo "deps: 1 passed, 0 failed"' "$SSC_TOP/scripts/deps.sh" ;;
	lint)	run_stage lint "$SSC_TOP/scripts/lint.sh" ;;
	kunit)	run_stage kunit "$SSC_TOP/scripts/kunit.sh" ;;
	user)	run_stage user "$SSC_TOP/scripts/user-tests.sh" ;;
	vm-6.12|vm-6.1)
		run_stage "$stage" "$SSC_TOP/scripts/vm.sh" --kernel "${stage#vm-}" --timeout 2400 \
			--suites "$VM_SUITES" ;;
	vm-debug)
		# KASAN + lockdep under TCG is ~4x slower: more time, same suites, plus KUnit;
		# only this kernel has the swap policy hooks flashvm.ko needs
		run_stage "$stage" "$SSC_TOP/scripts/vm.sh" --kernel debug --timeout 3300 \
			--suites "kunit,$VM_SUITES,flashvm" ;;
	harness) run_stage harness harness_selftest ;;
	*)	echo "not ok - unknown stage $stage"; count 0 1 ;;
	esac
done

echo "$total_pass passed, $total_fail failed"
[ "$total_fail" -eq 0 ]
