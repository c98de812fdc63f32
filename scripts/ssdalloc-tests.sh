#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# SSDAlloc's host tests (part of the user stage of make check): the library, its tests
# and its applications built twice, plain and with ASan + UBSan (separate output
# directories under $SSC_OUT/ssdalloc), then every test run:
#   unit tests      tests/user/ssdalloc/test-*.c with a "/* link: ... */" line, under ASan
#                   (SSC_FULL=1, make check-full: plain too)
#   test-oracle     random objects against a shadow copy, evicting and collecting all the
#                   time, checkpoint and restore in new processes: one thread, four
#                   threads, and the mprotect + SIGSEGV fallback (smaller under ASan)
#   test-crash      kill -9 after and inside a checkpoint, restore in a new process
#   test-misuse     each misuse refused, one line per case, both flavours
#   test-apps.sh    the applications (user/ssdalloc/apps), plain; memcached only with
#                   SSC_FULL=1 or SSDALLOC_APPS_MEMCACHED=1
# Two at a time (SSDALLOC_TEST_JOBS) beside test-apps.sh, each under a timeout. Seeded by SSC_SEED (printed;
# the same seed draws the same samples). Prints "ok - ssdalloc: ..." / "not ok - ssdalloc:
# ..." lines and "ssdalloc: N passed, N failed"; exit 0 iff none failed.
set -uo pipefail
. "$(dirname "$0")/common.sh"

if [ -z "${SSC_SEED:-}" ]; then
	SSC_SEED=$(( $(date +%s) % 1000000 ))
fi
export SSC_SEED
jobs_max=${SSDALLOC_TEST_JOBS:-2}
out="$SSC_OUT/ssdalloc"
tdir="$SSC_TOP/tests/user/ssdalloc"
mkdir -p "$out"
run=$(mktemp -d "$out/run.XXXXXX")
trap 'rm -rf "$run"' EXIT
echo "# ssdalloc: seed $SSC_SEED (SSC_SEED=$SSC_SEED draws the same samples)"
t0=$SECONDS

full=${SSC_FULL:-0}
apps_pid=
p=0 f=0
pass() { echo "ok - ssdalloc: $1"; p=$((p + 1)); }
flunk() { # flunk WHAT [OUTPUT-FILE]
	echo "not ok - ssdalloc: $1"
	[ -n "${2:-}" ] && [ -e "$2" ] && tail -n 25 "$2" | sed 's/^/# /'
	f=$((f + 1))
}

# --- builds: the library, the tests, the applications, per flavour ---------------------
declare -A built
for flav in plain asan; do
	san=0
	[ $flav = asan ] && san=1
	o="$out/$flav"
	log="$run/build-$flav.log"
	if make -s -j"$jobs_max" -C "$SSC_TOP/user/ssdalloc" O="$o/lib" SANITIZE=$san all > "$log" 2>&1; then
		pass "$flav: library builds with -Wall -Wextra -Werror (static and shared)"
	else
		flunk "$flav: library builds with -Wall -Wextra -Werror (static and shared)" "$log"
		continue
	fi
	if make -s -j"$jobs_max" -C "$tdir" O="$o" SANITIZE=$san all > "$log" 2>&1; then
		pass "$flav: tests build ($(cat "$o/unit.list" "$o/api.list" | paste -sd' '))"
		built[$flav]=1
	else
		flunk "$flav: tests build" "$log"
	fi
done
apps="$out/plain/apps"
if [ -e "$SSC_TOP/user/ssdalloc/apps/Makefile" ] && [ -n "${built[plain]:-}" ]; then
	if make -s -j"$jobs_max" -C "$SSC_TOP/user/ssdalloc/apps" O="$apps" \
		LIB="$out/plain/lib/libssdalloc.a" > "$run/build-apps.log" 2>&1; then
		pass "plain: applications build"
	else
		flunk "plain: applications build" "$run/build-apps.log"
	fi
fi
echo "# ssdalloc: builds took $((SECONDS - t0)) s"

# The applications' own test is the longest job: it starts now, with the library and
# the applications just built, beside the queue below (a third job for a while).
# Memcached only in make check-full (its first build fetches Debian's source) or with
# SSDALLOC_APPS_MEMCACHED=1.
if [ -e "$tdir/test-apps.sh" ]; then
	mc=1
	[ "$full" = 1 ] || [ "${SSDALLOC_APPS_MEMCACHED:-0}" = 1 ] && mc=0
	appenv=()
	[ -x "$apps/ssd-microbench" ] && appenv=(APPS_LIB="$out/plain/lib/libssdalloc.a" APPS_BIN="$apps")
	(
		s=$SECONDS
		env "${appenv[@]}" APPS_NO_MEMCACHED=$mc timeout -k 5 400 bash "$tdir/test-apps.sh" > "$run/apps.out" 2>&1
		echo "$? $((SECONDS - s))" > "$run/apps.rc"
	) &
	apps_pid=$!
fi

# --- the tests, queued, then run jobs_max at a time -------------------------------------
names=() cmds=()
q() { # q NAME CMD...
	names+=("$1")
	shift
	cmds+=("$(printf '%q ' "$@")")
}
# ASan: a test's own SIGSEGV (the use-after-free case, the mprotect fallback's faults)
# must reach the program, not ASan's report; leaks are reported at exit
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
uffd=()
[ "$(id -u)" = 0 ] && uffd=(--expect-uffd 1)	# root may use userfaultfd with WP here
# the devices are files in a tmpfs when there is one (O_DIRECT works there since Linux
# 6.6; a disk only adds waiting), else under $SSC_OUT; SSDALLOC_TEST_ARGS: more options
# for test-oracle and test-crash (e.g. --no-zero-check)
wd=$out
if [ -d /dev/shm ] && [ -w /dev/shm ] && [ "$(stat -f -c %T /dev/shm)" = tmpfs ]; then
	wd=/dev/shm
fi
work=$(mktemp -d "$wd/ssdalloc-tests.XXXXXX")
trap 'rm -rf "$run" "$work"' EXIT
read -r -a extra <<<"${SSDALLOC_TEST_ARGS:-}"
n=0
wdir() { n=$((n + 1)); W=$work/$n; mkdir -p "$W"; }	# W: a fresh directory
# The longest first (the unit tests), so that the lanes end together. Unit tests run
# under ASan + UBSan (built -O2 like the plain ones, which add little but time); make
# check-full (SSC_FULL=1) runs them plain too.
for flav in asan plain; do
	[ -n "${built[$flav]:-}" ] || continue
	[ $flav = asan ] || [ "$full" = 1 ] || continue
	while read -r u; do
		[ -n "$u" ] && q "$flav: $u (unit test)" timeout -k 5 200 "$out/$flav/$u"
	done < "$out/$flav/unit.list"
done
for flav in plain asan; do
	[ -n "${built[$flav]:-}" ] || continue
	o="$out/$flav"
	tmo="timeout -k 5 150"
	# plain: 8 MiB live over 2 MiB of RAM (512 KiB page buffer) on 24 MiB; ASan: half
	if [ $flav = plain ]; then
		sz=(--ram 2M --page-buffer 512K --live 8M --dev-size 24M) ops=40000 nu=(--live 6M --ops 20000) rounds=2
	else
		sz=(--ram 1M --page-buffer 256K --live 4M --dev-size 16M) ops=16000 nu=(--live 3M --ops 8000) rounds=1
	fi
	wdir
	q "$flav: test-crash: kill -9 after a checkpoint and inside one, $rounds round(s) each" \
		$tmo "$o/test-crash" --dir "$W" --rounds $rounds ${extra[@]+"${extra[@]}"}
	wdir
	q "$flav: test-oracle: 4 threads with shared objects under a mutex; checkpoint and restores" \
		$tmo "$o/test-oracle" --dir "$W" "${uffd[@]}" --threads 4 "${sz[@]}" --ops $ops ${extra[@]+"${extra[@]}"}
	wdir
	q "$flav: test-oracle: 1 thread, ${sz[5]} live over ${sz[1]} of RAM, GC; checkpoint, restore, change, checkpoint, restore" \
		$tmo "$o/test-oracle" --dir "$W" "${uffd[@]}" "${sz[@]}" --ops $ops ${extra[@]+"${extra[@]}"}
	wdir
	q "$flav: test-oracle: the mprotect + SIGSEGV fallback (SSD_NO_UFFD)" \
		$tmo "$o/test-oracle" --dir "$W" --no-uffd --expect-uffd 0 "${sz[@]}" "${nu[@]}" ${extra[@]+"${extra[@]}"}
	# one line per case; under ASan its SEGV handler would turn the expected SIGSEGV
	# of a use after free into a report and exit 1
	wdir
	q "$flav: misuse" env ASAN_OPTIONS="$ASAN_OPTIONS:handle_segv=0" $tmo "$o/test-misuse" --dir "$W"
done

t1=$SECONDS
for i in "${!cmds[@]}"; do
	# the applications' job (started first) is not one of the queue's
	while [ "$(jobs -rp | grep -vx "${apps_pid:-none}" | wc -l)" -ge "$jobs_max" ]; do wait -n; done
	(
		s=$SECONDS
		cd "$run" && eval "${cmds[$i]}" > "$run/$i.out" 2>&1
		echo "$? $((SECONDS - s))" > "$run/$i.rc"
	) &
done
wait

# --- results, in the order queued ---------------------------------------------------------
report() { # report I: the result of job I
	local i=$1 rc secs name flav nf line
	read -r rc secs < "$run/$i.rc" 2>/dev/null || { rc=255; secs='?'; }
	name=${names[$i]}
	# a program that prints "ok - X" / "not ok - X" lines (test-misuse, test-apps.sh)
	# counts each of them
	if grep -qE '^(not )?ok - ' "$run/$i.out" 2>/dev/null; then
		flav=${name%%:*}
		nf=0
		while IFS= read -r line; do
			case $line in
			"ok - "*"# SKIP"*) echo "# skipped: $flav: ${line#ok - }" ;;	# not a pass
			"ok - "*) pass "$flav: ${line#ok - }" ;;
			"not ok - "*) echo "not ok - ssdalloc: $flav: ${line#not ok - }"; f=$((f + 1)); nf=$((nf + 1)) ;;
			esac
		done < <(grep -E '^(not )?ok - ' "$run/$i.out")
		if [ "$nf" -gt 0 ]; then
			grep -vE '^(not )?ok - ' "$run/$i.out" | tail -n 30 | sed 's/^/# /'
		elif [ "$rc" != 0 ]; then
			flunk "$name: exited $rc" "$run/$i.out"
		fi
		echo "# $name: ${secs} s"
		return
	fi
	if [ "$rc" = 0 ]; then
		pass "$name (${secs} s)"
		grep -E 'seed|stats:|restored|round' "$run/$i.out" | head -n 12 | sed 's/^/# /'
	else
		flunk "$name # exit $rc$([ "$rc" = 124 ] && echo ': timed out') after ${secs} s (SSC_SEED=$SSC_SEED)" "$run/$i.out"
	fi
}
for i in "${!cmds[@]}"; do
	report "$i"
done
if [ -n "$apps_pid" ]; then
	names+=("plain: test-apps.sh")
	cp "$run/apps.out" "$run/${#cmds[@]}.out" 2>/dev/null
	cp "$run/apps.rc" "$run/${#cmds[@]}.rc" 2>/dev/null
	cmds+=(apps)
	report "$((${#cmds[@]} - 1))"
fi
echo "# ssdalloc: tests took $((SECONDS - t1)) s, $((SECONDS - t0)) s in all"
echo "ssdalloc: $p passed, $f failed"
[ "$f" -eq 0 ]
