#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Every test of the project (what `make check` runs), in stages:
#   deps      install what is missing (Debian packages)
#   lint      checkpatch --strict, sparse, W=1 on both kernels (scripts/lint.sh)
#   kunit     KUnit on UML: pure logic such as the sparse hash map (scripts/kunit.sh)
#   user      host tests of the user tools: hcctl builds, trace tools, SSDAlloc's library
#             and tests, plain and under ASan + UBSan (scripts/user-tests.sh,
#             scripts/ssdalloc-tests.sh)
#   deb       make deb's packages on this host: built, lintian clean, installed (DKMS
#             builds the modules for 6.12, and for 6.1 at a simulated kernel upgrade),
#             purged without a trace (scripts/deb-test.sh)
#   vm-6.12   every VM suite on Debian's 6.12 LTS kernel, and ssc-nbd (an origin over
#             NBD) and ssctab (hcctl assemble), which run on 6.12 only
#   vm-6.1    a smoke subset on Debian 12's 6.1 kernel at the small sizes (every suite
#             at full size with --full)
#   vm-debug  in-kernel KUnit, every VM suite (the slow ones at small sizes) and the
#             flashvm suite on a KASAN + lockdep kernel built from linux-source-6.12 with
#             the FlashVM swap policy hooks (cached; ~5 min to build on a fresh machine,
#             in the lint stage)
#   bench     each benchmark (make bench, bench-traces, bench-hashcache, bench-flashvm)
#             at a tiny size: its table is produced and sane (scripts/bench-smoke.sh)
#   boot      /etc/ssctab's volume comes back: two boots of the 6.12 VM over disks on
#             host files, QEMU killed mid-write between them, loading the module the
#             deb stage's DKMS built (scripts/boot-test.sh)
#   harness   the harness's own guarantees: a failing check, a WARN and an oops
#             each fail a VM run; a boot that dies before its init is booted once
#             more (two in a row fail it)
#   boot-systemd  (--full only) /etc/ssctab's volumes at boot under the real systemd
#             and udev of a Debian 12 guest built with debootstrap (cached), from the
#             hcctl package: the boot unit, the udev rule on a hot-plugged disk, a
#             kill mid-write and the recovery (scripts/boot-test.sh --systemd)
# The host stages run first, one after the other; then the VM stages run in two lanes
# side by side: deb (on the host), vm-debug, boot and harness in one, vm-6.12,
# vm-6.1 and bench in the other (with --full, bench and boot-systemd go to
# the first too);
# CHECK_JOBS=1 runs them one after the other.
# CHECK_STAGES="lint kunit" limits the run.
#
# Sampled and random tests (the crash-point sample, the ioctl and netlink fuzzers) draw
# from SSC_SEED, printed at the start; by default it is derived from the commit and the
# date, so successive runs cover different points. SSC_SEED=N make check draws the same.
#
# --full (make check-full): the depth of a release check: every crash point on both
# Debian kernels, every suite on 6.1, the debug kernel at the suites' full sizes.
#
# Each stage's full output is in out/logs/<stage>.log, the time table in
# out/logs/times.md. The last line is "N passed, N failed"; exit 0 iff 0 failed.
set -uo pipefail
. "$(dirname "$0")/common.sh"

full=0
unset SSC_FULL	# only --full sets it: the guests' depth follows the stages' timeouts
case ${1:-} in
--full) full=1; export SSC_FULL=1 ;;
"") ;;
*) die "usage: check.sh [--full]" ;;
esac
STAGES=${CHECK_STAGES:-"deps lint kunit user deb vm-6.12 vm-6.1 vm-debug bench boot harness$([ "$full" = 1 ] && echo " boot-systemd")"}
JOBS=${CHECK_JOBS:-2}
VM_SUITES=ssc-table,ssc-io,ssc-persist,ssc-errors,ssc-crash,ssc-torture,ssc-gc,hcctl,monitor,replay,hashcache,hashcache-hostile,ssdalloc
SMOKE_6_1=ssc-table,ssc-io,hashcache
# the origin across the network: on 6.12, and on 6.1 with --full; not on the debug
# kernel (no time to spare in its lane, and its config has no INET, NET_NS, VETH, NBD)
# on 6.12 only (and 6.1 with --full): the debug kernel has no networking for the NBD
# origin, and ssctab tests hcctl more than the kernel
EXTRA_6_12=ssc-nbd,ssctab
logs="$SSC_OUT/logs"
mkdir -p "$logs"
rm -f "$logs"/*.count "$logs"/*.time
if [ -z "${SSC_SEED:-}" ]; then
	SSC_SEED=$(printf '%s %s' "$(git -C "$SSC_TOP" rev-parse HEAD 2>/dev/null)" "$(date +%F)" |
		cksum | cut -d' ' -f1)
fi
[[ $SSC_SEED =~ ^[0-9]{1,18}$ ]] || die "SSC_SEED must be a decimal number, not '$SSC_SEED'"
SSC_SEED=$((10#$SSC_SEED))	# no leading zero: the tools would read it as octal
export SSC_SEED
echo "check: seed $SSC_SEED (SSC_SEED=$SSC_SEED make check draws the same samples)"
[ "$full" = 1 ] && echo "check: --full: every crash point, every suite on 6.1, full sizes on the debug kernel"
t_start=$SECONDS

# run_stage NAME CMD...: run a stage whose last "N passed, N failed" line is its count;
# its summary goes to stdout in one piece (lanes run side by side), its count and time
# to $logs/NAME.count and $logs/NAME.time
run_stage() {
	local name=$1 rc line p f t0=$SECONDS sum
	shift
	log "stage $name: $*"
	"$@" > "$logs/$name.log" 2>&1
	rc=$?
	sum=$(
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
	echo "$p $f" > "$logs/$name.count"
	)
	printf '%s\n' "$sum" > "$logs/$name.sum"
	echo "$((SECONDS - t0))" > "$logs/$name.time"
	printf '%s\n' "$sum"
	log "stage $name done: $(tail -n1 <<<"$sum")"
}

# The harness must fail a run for each of these; each is one test here.
harness_selftest() {
	local kd p=0 f=0 out
	eval "$("$SSC_TOP/scripts/kernel.sh" 6.12)"
	# not under out/build/<kdir>/: vm.sh packs every .ko there, and the other lane's
	# 6.12 VMs pack theirs while this one builds
	kd="$SSC_TOP/out/harness-splat/$(basename "$(realpath "$KDIR")")"
	mkdir -p "$kd"
	rsync -a "$SSC_TOP/tests/harness/splat/" "$kd/"
	make -s -C "$KDIR" M="$kd" modules || { echo "not ok - harness: splat module builds"; echo "0 passed, 1 failed"; return 1; }
	expect() { # expect WHAT SUITE passes|fails TAP-PATTERN: the run's verdict, and why
		local rc=0
		out=$("$SSC_TOP/scripts/vm.sh" --kernel 6.12 --name "$2" --suites "$2" \
			--timeout 300 --ko "$kd/ssc-harness-splat.ko" 2>&1) || rc=1
		if [ "$rc$3" = 0fails ] || [ "$rc$3" = 1passes ]; then
			echo "not ok - harness: $1 # the run $([ $rc = 0 ] && echo passed || echo failed)"
			sed 's/^/# /' <<<"$out" | tail -n 20
			f=$((f + 1))
		elif grep -qE "$4" <<<"$out"; then
			echo "ok - harness: $1"
			p=$((p + 1))
		else
			echo "not ok - harness: $1 # $3, but not as expected (/$4/)"
			sed 's/^/# /' <<<"$out" | tail -n 20
			f=$((f + 1))
		fi
	}
	expect "a failing check fails the run" harness-fail fails \
		'^not ok [0-9]+ - harness-fail: deliberately wrong expectation'
	expect "a kernel WARN fails the run" harness-warn fails \
		'^not ok [0-9]+ - harness-warn: console free of kernel splats'
	expect "an oops fails the run" harness-oops fails \
		'^not ok [0-9]+ - harness-oops: VM ran every suite to the end'
	# a boot that dies before its init (early TCG oopses) is booted once more, and
	# says so; two in a row fail the run
	SSC_VM_BREAK_BOOTS=1 expect "a boot that dies before its init is booted again, and the TAP says so" \
		harness-pass passes '^# harness-pass: booted again: the first boot died before its init ran'
	SSC_VM_BREAK_BOOTS=2 expect "two boots that die before their init fail the run" harness-pass fails \
		'^not ok [0-9]+ - harness-pass: VM ran every suite to the end'
	echo "harness: $p passed, $f failed"
	[ "$f" -eq 0 ]
}

vm_stage() { # vm_stage STAGE: the VM suites of one kernel
	local k=${1#vm-} suites=$VM_SUITES tmo=1500 env=() drawn s
	case $1 in
	# the smoke at the small sizes (SSC_SMALL: what the debug kernel runs); its
	# lighter suites (hashcache-hostile, ssdalloc) only in make check-full
	vm-6.1) if [ "$full" = 1 ]; then suites="$suites,$EXTRA_6_12" tmo=2400
		else suites="$SMOKE_6_1" env=(--env SSC_SMALL=1); fi ;;
	vm-6.12) suites="$suites,$EXTRA_6_12"; [ "$full" = 1 ] && tmo=2400 ;;
	# KASAN + lockdep under TCG is ~4x slower; only this kernel has KUnit and the swap
	# policy hooks flashvm.ko needs
	# ssdalloc is a user-space library: the host runs it under ASan + UBSan, and its
	# kernel side (userfaultfd, O_DIRECT, io_uring) is Debian's 6.12 and 6.1; it is
	# left out of this lane, which has no time to spare. For the same reason it runs 1 of
	# the 5 suites that are mostly user tools and error paths, drawn by the seed (all 5
	# on 6.12, and in make check-full)
	vm-debug) suites="kunit,${VM_SUITES//,ssdalloc/},flashvm" tmo=2400
		if [ "$full" = 1 ]; then tmo=4800; else
			drawn=" $(pick 1 ssc-errors hcctl monitor replay hashcache-hostile) "
			for s in ssc-errors hcctl monitor replay hashcache-hostile; do
				[[ $drawn == *" $s "* ]] || suites=${suites/,$s,/,}
			done
		fi ;;
	esac
	run_stage "$1" "$SSC_TOP/scripts/vm.sh" --kernel "$k" --timeout "$tmo" --suites "$suites" ${env[@]+"${env[@]}"}
}

one_stage() {
	case $1 in
	deps)	run_stage deps bash -c '"$0" && echo "deps: 1 passed, 0 failed"' "$SSC_TOP/scripts/deps.sh" ;;
	lint)	run_stage lint "$SSC_TOP/scripts/lint.sh" ;;
	kunit)	run_stage kunit "$SSC_TOP/scripts/kunit.sh" ;;
	user)	run_stage user "$SSC_TOP/scripts/user-tests.sh" ;;
	deb)	run_stage deb "$SSC_TOP/scripts/deb-test.sh" ;;
	vm-*)	vm_stage "$1" ;;
	bench)	run_stage bench "$SSC_TOP/scripts/bench-smoke.sh" ;;
	harness) run_stage harness harness_selftest ;;
	boot)	run_stage boot "$SSC_TOP/scripts/boot-test.sh" ;;
	boot-systemd) run_stage boot-systemd "$SSC_TOP/scripts/boot-test.sh" --systemd ;;
	*)	echo "not ok - unknown stage $1" | tee "$logs/$1.sum"; echo "0 1" > "$logs/$1.count" ;;
	esac
}

# host stages first (they build what the VMs use); then the VM lanes
lane_a=() lane_b=()
for stage in $STAGES; do
	case $stage in
	deps|lint|kunit|user) one_stage "$stage" ;;
	# balanced by the measured times (testing.rst): vm-debug is the longest stage.
	# deb (a host stage) starts lane a, before vm-debug; boot, which loads the
	# module deb's DKMS built, and harness (three short VMs) end it.
	deb|vm-debug|boot|boot-systemd|harness) lane_a+=("$stage") ;;
	# at full depth 6.1 runs every suite and every crash point: bench changes lanes
	bench) if [ "$full" = 1 ]; then lane_a+=("$stage"); else lane_b+=("$stage"); fi ;;
	*) lane_b+=("$stage") ;;
	esac
done
if [ "$JOBS" -ge 2 ] && [ ${#lane_a[@]} -gt 0 ] && [ ${#lane_b[@]} -gt 0 ]; then
	# fetch or build each guest kernel the stages need once, before the lanes could
	# race to do it
	need=" ${lane_a[*]} ${lane_b[*]} "
	ks=()
	[[ $need =~ \ (vm-6.12|bench|harness|boot|boot-systemd)\  ]] && ks+=(6.12)
	[[ $need =~ \ vm-6.1\  ]] && ks+=(6.1)
	[[ $need =~ \ (vm-debug|bench)\  ]] && ks+=(debug)
	for k in ${ks[@]+"${ks[@]}"}; do
		"$SSC_TOP/scripts/kernel.sh" "$k" > "$logs/kernel-$k.log" 2>&1 ||
			log "kernel $k not ready (its stage will say why): $(tail -n 1 "$logs/kernel-$k.log")"
	done
	log "VM stages in two lanes: [${lane_a[*]}] and [${lane_b[*]}]"
	# an interrupted check stops both lanes (timeout passes the signal on to QEMU)
	trap 'trap - INT TERM; log "interrupted: stopping the lanes"; kill 0; exit 130' INT TERM
	( for stage in "${lane_a[@]}"; do one_stage "$stage"; done ) &
	pid_a=$!
	( for stage in "${lane_b[@]}"; do one_stage "$stage"; done ) &
	pid_b=$!
	wait "$pid_a" "$pid_b"
	trap - INT TERM
else
	# one after the other in the listed order (deb before boot, which loads its module)
	for stage in $STAGES; do
		case $stage in deps|lint|kunit|user) ;; *) one_stage "$stage" ;; esac
	done
fi

# a stage that never reported (its lane died) is a failure, not a silence
for stage in $STAGES; do
	if [ ! -e "$logs/$stage.count" ]; then
		echo "not ok - $stage: stage did not finish" | tee "$logs/$stage.sum"
		echo "0 1" > "$logs/$stage.count"
	fi
done
total_pass=0 total_fail=0
for c in "$logs"/*.count; do
	[ -e "$c" ] || continue
	read -r p f < "$c"
	if ! [[ ${p:-} =~ ^[0-9]+$ && ${f:-} =~ ^[0-9]+$ ]]; then
		echo "not ok - $(basename "$c" .count): unreadable count '$(cat "$c")'"
		p=0 f=1
	fi
	total_pass=$((total_pass + p))
	total_fail=$((total_fail + f))
done
if [ "$total_pass" -eq 0 ] && [ "$total_fail" -eq 0 ]; then
	echo "not ok - check: no stage ran (CHECK_STAGES='$STAGES')"
	total_fail=1
fi
wall=$((SECONDS - t_start))

# the time table: each stage, and each suite of the VM stages (the guest's own clock)
{
	echo "| stage | s |"
	echo "|---|---|"
	for stage in $STAGES; do
		[ -e "$logs/$stage.time" ] && echo "| $stage | $(cat "$logs/$stage.time") |"
	done
	echo "| **wall** (VM lanes side by side) | $wall |"
	echo
	echo "| suite | $(echo "$STAGES" | tr ' ' '\n' | grep '^vm-' | paste -sd'|' | sed 's/|/ | /g') |"
	echo "|---$(echo "$STAGES" | tr ' ' '\n' | grep '^vm-' | sed 's/.*/|---/' | tr -d '\n')|"
	for suite in kunit ${VM_SUITES//,/ } ${EXTRA_6_12//,/ } flashvm; do
		row="| $suite"
		for stage in $STAGES; do
			case $stage in vm-*) ;; *) continue ;; esac
			t=$(sed -nE "s/^# # @@TIME $suite ([0-9]+)$/\1/p" "$SSC_OUT/results/$stage.tap" 2>/dev/null)
			row="$row | ${t:--}"
		done
		echo "$row |"
	done
	echo
	echo "The slowest checks (3 s or more each; all of them are in the TAP files as @@SLOW):"
	echo
	echo "| stage | s | check |"
	echo "|---|---|---|"
	for stage in $STAGES; do
		case $stage in vm-*) ;; *) continue ;; esac
		sed -nE "s/^# # @@SLOW ([0-9]+) s: (.*)$/\1\t$stage\t\2/p" "$SSC_OUT/results/$stage.tap" 2>/dev/null
	done | sort -t"$(printf '\t')" -k1,1nr | head -n 15 | awk -F'\t' '{ printf "| %s | %s | %s |\n", $2, $1, $3 }'
} > "$logs/times.md"
cat "$logs/times.md"
# the failures again at the end, where a reader of only the tail of the output looks
# (a stage's own checks, and what run_stage says of a stage that died)
# Each with the first lines of its diagnosis (a splat's first lines, the end of the
# console of a VM that died): often all a reader of a CI summary gets to see.
fails=$(for stage in $STAGES; do
	for f in "$logs/$stage.log" "$logs/$stage.sum"; do
		[ -e "$f" ] && awk -v st="[$stage] " '
			/^not ok/ { print st $0; n = 10; next }
			n > 0 && /^# / { print st "  " $0; n--; next }
			{ n = 0 }' "$f"
	done
done)
if [ -n "$fails" ]; then
	nf=$(grep -c '^\[[^]]*\] not ok' <<<"$fails")
	echo
	echo "failed checks: $nf (with the start of each diagnosis; at most 80 lines); the whole logs are in $logs:"
	head -n 80 <<<"$fails"
fi
echo "check time: $wall s of a 2,400 s budget"
echo "check: seed $SSC_SEED"
echo "$total_pass passed, $total_fail failed"
[ "$total_fail" -eq 0 ]
