# SPDX-License-Identifier: GPL-2.0
# KUnit suites compiled into dm-ssc.ko and hashcache.ko (kernels with CONFIG_KUNIT, i.e. the debug
# kernel) run when the module loads; read their KTAP back from debugfs.
if [ ! -d /sys/kernel/debug/kunit ]; then
	not_ok "kernel has KUnit # /sys/kernel/debug/kunit missing: run this suite on the debug kernel"
	return 0
fi
# The harness boots the debug kernel with a KUnit filter that matches nothing, so the
# other suites' loads do not run the cases again; open it for these two loads.
GLOB=/sys/module/kunit/parameters/filter_glob
quiet=$(cat $GLOB)
[ "$quiet" = "(null)" ] && quiet='*'	# booted without a filter: every suite runs anyway
check "the filter keeps every other load quiet: modprobe dm-ssc runs no KUnit case" sh -c \
	'modprobe dm-ssc && ! ls -d /sys/kernel/debug/kunit/*/results > /dev/null 2>&1 && rmmod dm_ssc'
# (printf: a charp parameter keeps a trailing newline, and a glob with one matches nothing)
check "KUnit filter opened for this suite's loads" sh -c "printf '*' > $GLOB"
# the metadata fuzzer draws from the run's seed, so a failure replays with SSC_SEED
# kunit_load WHAT MODULE ARGS...: modprobe that runs a module's KUnit suites, watched.
# A case that never ends (KUnit's own 300 s timeout cannot stop a thread that
# does not return) would hold the load, and every later one, until the VM is
# killed, with nothing said: after KUNIT_WATCH seconds the cases run so far and
# the CPUs' and blocked tasks' stacks go to the results and the console, and the
# VM ends here (the harness then says it did not reach its end).
KUNIT_WATCH=${KUNIT_WATCH:-600}
kunit_load() {
	what=$1 mod=$2
	shift 2
	now_cs
	t_check=$NOW
	modprobe "$mod" "$@" > /tmp/kunit-load.out 2>&1 &
	pid=$!
	waited=0
	while kill -0 $pid 2> /dev/null && [ $waited -lt "$KUNIT_WATCH" ]; do
		sleep 1
		waited=$((waited + 1))
	done
	if kill -0 $pid 2> /dev/null; then
		not_ok "$what # still running after $waited s: a case that does not end"
		# the cases that ended so far: the one after the last of them does not
		dmesg | grep -E '# Subtest|    (not )?ok ' | tail -n 8 | sed 's/^/# /'
		echo 1 > /proc/sys/kernel/sysrq
		echo l > /proc/sysrq-trigger	# the CPUs' stacks
		echo w > /proc/sysrq-trigger	# the blocked tasks' stacks
		sleep 2
		dmesg | tail -n 120 | sed 's/^/# /'
		echo "@@KUNIT_HANG"
		sleep 1	# let the serial lines out
		poweroff -f
	fi
	if wait $pid; then
		ok "$what"
	else
		not_ok "$what"
		tail -n 20 /tmp/kunit-load.out | sed 's/^/# /'
	fi
	slow "$what" "$t_check"
}
# make check skips the cases marked slow (KUNIT_CASE_SLOW: ssc_smap_test_million, a
# million entries) on this kernel: the host's kunit stage runs them on UML every time,
# and KASAN adds nothing a thousand entries do not show; make check-full runs them here too
# (the filter stays: the closed glob below keeps later loads quiet anyway)
ATTR=/sys/module/kunit/parameters
if ! is_full; then
	check "slow cases skipped (make check-full runs them)" sh -c \
		"printf 'speed>slow' > $ATTR/filter && printf skip > $ATTR/filter_action"
fi
kunit_load "modprobe dm-ssc runs its KUnit suites" dm-ssc ${SSC_SEED:+kunit_seed=$SSC_SEED}
kunit_load "modprobe hashcache runs its KUnit suites" hashcache
check "KUnit filter closed again" sh -c "printf '%s' '$quiet' > $GLOB"
# where the time went: every case of 2 s or more, from the kernel log's timestamps
# (a case's time: from the line before its result to its result)
dmesg | awk '{ t = substr($0, 2, index($0, "]") - 2) + 0 }
	/    (not )?ok [0-9]+ / && prev && t - prev >= 2 {
		n = $0; sub(/.*ok [0-9]+ /, "", n); printf "# case %s: %d s\n", n, t - prev }
	/ # Subtest: |    (not )?ok [0-9]+ / { prev = t }'
cases=0
for results in /sys/kernel/debug/kunit/*/results; do
	s=${results%/results}
	s=${s##*/}
	# test cases are the lines indented one level below their suite
	while read -r line; do
		case $line in
		*"# SKIP"*) diag "skipped: $s $line" ;;
		"ok "*) set -- $line; ok "$s.$3"; cases=$((cases + 1)) ;;
		"not ok "*) set -- $line; not_ok "$s.$4"; cases=$((cases + 1)) ;;
		esac
	done <<-EOT
	$(grep -E '^    (not )?ok [0-9]+ ' "$results")
	EOT
	grep -E '^    (not )?ok|# ' "$results" | grep -v '^    ok' | sed 's/^/# /'
done
[ "$cases" -gt 0 ] && ok "KUnit ran $cases test cases" || not_ok "KUnit ran test cases # none found"
check "rmmod dm-ssc" rmmod dm_ssc
check "rmmod hashcache" rmmod hashcache
