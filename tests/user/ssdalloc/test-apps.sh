#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Host test of SSDAlloc's applications (user/ssdalloc/apps): ssd-microbench,
# ssd-btree, ssd-hashcache (with a checkpoint and a restore in a second process)
# and memcached on SSDAlloc, driven by Debian's memcaslap (data verified) and
# memccapable (protocol conformance). Each runs at a small size in malloc mode,
# and in mp and opp modes when libssdalloc builds (on a file, with a RAM budget
# far smaller than the data, so objects do go to the file and come back). Every
# app verifies what it reads against an oracle; --corrupt runs show that the
# verification catches a changed byte.
#
# Prints "ok - apps: ..." / "not ok - apps: ..." lines and "apps: N passed, N failed";
# exits non-zero if any failed.
# APPS_NO_MEMCACHED=1 skips memcached (its first build fetches Debian's source).
# APPS_LIB=libssdalloc.a APPS_BIN=DIR: use that library and the apps already built in
# DIR (scripts/ssdalloc-tests.sh builds them once for every test) instead of building.
# Sizes: a quarter in make check; SSC_FULL=1 (make check-full) runs them whole.
set -uo pipefail

top=$(cd "$(dirname "$0")/../../.." && pwd)
src=$top/user/ssdalloc
# the stores are files in a tmpfs where there is one (O_DIRECT works there since
# Linux 6.6; a disk only adds waiting)
wd=/tmp
[ -w /dev/shm ] && [ "$(stat -f -c %T /dev/shm)" = tmpfs ] && wd=/dev/shm
work=$(mktemp -d "$wd/ssd-apps.XXXXXX")
mc_pid=
cleanup() {
	[ -n "$mc_pid" ] && kill "$mc_pid" 2>/dev/null && wait "$mc_pid" 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT

p=0 f=0
# t WHAT CMD...: one check; its output is kept in $work/out
t() {
	local what=$1 t0=$SECONDS
	shift
	if "$@" > "$work/out" 2>&1; then
		echo "ok - apps: $what # $((SECONDS - t0)) s"
		p=$((p + 1))
	else
		echo "not ok - apps: $what # $((SECONDS - t0)) s"
		sed 's/^/# /' "$work/out" | tail -n 15
		f=$((f + 1))
	fi
}

# kv LINE KEY: a value of the key=value result line
kv() { tr ' ' '\n' <<<"$1" | sed -n "s/^$2=//p" | head -n1; }

# run_app EXPECT KEY=VALUE... -- CMD...: runs CMD; its exit status must be EXPECT
# (0, 1, or 137 for a SIGKILL) and its last stdout line must hold each KEY=VALUE (VALUE '+': a number > 0)
run_app() {
	local expect=$1 line rc k v got kv_pair
	shift
	local checks=()
	while [ "$1" != -- ]; do checks+=("$1"); shift; done
	shift
	"$@" > "$work/app.out" 2> "$work/app.err"
	rc=$?
	cat "$work/app.err"
	line=$(tail -n 1 "$work/app.out")
	echo "$line"
	[ "$rc" -eq "$expect" ] || { echo "exit status $rc, expected $expect"; return 1; }
	for kv_pair in "${checks[@]}"; do
		k=${kv_pair%%=*}
		v=${kv_pair#*=}
		got=$(kv "$line" "$k")
		if [ "$v" = + ]; then
			if ! [[ $got =~ ^[0-9]+$ ]] || [ "$got" -eq 0 ]; then
				echo "$k=$got, expected > 0"
				return 1
			fi
		elif [ "$got" != "$v" ]; then
			echo "$k=$got, expected $v"
			return 1
		fi
	done
}

# n COUNT: a count at this run's depth
div=4
[ "${SSC_FULL:-0}" = 1 ] && div=1
n() { echo $(($1 / div)); }

# the library, and the apps against it; without it the apps' malloc mode only
lib=
if [ -n "${APPS_LIB:-}" ] && [ -n "${APPS_BIN:-}" ]; then
	lib=$APPS_LIB
	modes="malloc mp opp"
	[ -x "$APPS_BIN/ssd-microbench" ] && [ -x "$APPS_BIN/ssd-btree" ] && [ -x "$APPS_BIN/ssd-hashcache" ] ||
		{ echo "not ok - apps: APPS_BIN=$APPS_BIN has the apps"; exit 1; }
elif make -s -C "$src" O="$work/lib" > "$work/lib.log" 2>&1; then
	lib=$work/lib/libssdalloc.a
	modes="malloc mp opp"
	echo "ok - apps: libssdalloc builds"
	p=$((p + 1))
else
	echo "not ok - apps: libssdalloc builds (testing the apps' malloc mode only)"
	tail -n 10 "$work/lib.log" | sed 's/^/# /'
	f=$((f + 1))
	make -s -C "$src/apps" O="$work/apps" nolib > /dev/null 2>&1
	lib=$work/apps/libssdalloc-nolib.a
	modes=malloc
fi
if [ -n "${APPS_BIN:-}" ]; then
	bin=$APPS_BIN
else
	t "the apps build with -Wall -Wextra -Werror" make -s -C "$src/apps" O="$work/apps" LIB="$lib" all
	bin=$work/apps
fi

# SSDAlloc on a file: 64 MiB of store, a 1 MiB RAM budget (256 KiB Page Buffer),
# each app's data more than that
# (a quarter of that at a quarter of the sizes, so the data still does not fit)
ram=1M pb=256K
[ $div = 4 ] && ram=384K pb=64K
ssd_env() {
	rm -f "$work/ssd.img"
	env SSDALLOC_DEVICE="$work/ssd.img" SSDALLOC_SIZE=64M SSDALLOC_RAM=$ram \
		SSDALLOC_PAGE_BUFFER=$pb "$@"
}
# in mp and opp the data (several MiB) must have gone through the file
ssd_checks() {
	[ "$1" = malloc ] || echo "faults=+ ssd_write_bytes=+ object_bytes_written=+"
}

for m in $modes; do
	# shellcheck disable=SC2046
	t "microbench $m: $(n 20000) objects of 128 B, $(n 20000) ops, every read verified" \
		run_app 0 verify_failures=0 ops=$(n 20000) $(ssd_checks "$m") -- ssd_env \
		"$bin/ssd-microbench" --mode "$m" --objects $(n 20000) --size 128 --ops $(n 20000) --seed 7
	# shellcheck disable=SC2046
	t "microbench $m: 1000 objects of 3000 B, $(n 5000) ops, 90% writes" \
		run_app 0 verify_failures=0 ops=$(n 5000) $(ssd_checks "$m") -- ssd_env \
		"$bin/ssd-microbench" --mode "$m" --objects 1000 --size 3000 --ops $(n 5000) \
		--write-pct 90 --seed 8
	# shellcheck disable=SC2046
	t "btree $m: $(n 50000) inserts, $(n 2000) deletes, $(n 20000) lookups, scans verified" \
		run_app 0 verify_failures=0 found=+ absent=+ $(ssd_checks "$m") -- ssd_env \
		"$bin/ssd-btree" --mode "$m" --inserts $(n 50000) --deletes $(n 2000) --lookups $(n 20000) \
		--scans 100 --node-size 512 --seed 3
	# shellcheck disable=SC2046
	t "hashcache $m: $(n 20000) sets, $(n 20000) ops, every set against the oracle" \
		run_app 0 verify_failures=0 hits=+ $(ssd_checks "$m") -- ssd_env \
		"$bin/ssd-hashcache" --mode "$m" --sets $(n 20000) --ops $(n 20000) --keys $(n 20000) \
		--sample 1 --seed 5
done

# the mprotect + SIGSEGV fallback (SSDALLOC_NO_UFFD=1) for the apps' own accesses
for m in $modes; do
	[ "$m" = malloc ] && continue
	# shellcheck disable=SC2046
	t "microbench $m, mprotect + SIGSEGV: $(n 20000) objects, $(n 20000) ops, verified" \
		run_app 0 verify_failures=0 uffd=0 $(ssd_checks "$m") -- ssd_env SSDALLOC_NO_UFFD=1 \
		"$bin/ssd-microbench" --mode "$m" --objects $(n 20000) --size 128 --ops $(n 20000) --seed 9
	# shellcheck disable=SC2046
	t "btree $m, mprotect + SIGSEGV: $(n 50000) inserts, $(n 5000) lookups, verified" \
		run_app 0 verify_failures=0 uffd=0 $(ssd_checks "$m") -- ssd_env SSDALLOC_NO_UFFD=1 \
		"$bin/ssd-btree" --mode "$m" --inserts $(n 50000) --lookups $(n 5000) --scans 50 --seed 4
done

# the verification's own tests: a byte changed behind the oracle's back is caught
t "microbench --corrupt fails verification" \
	run_app 1 verify_failures=1 -- "$bin/ssd-microbench" --objects 1000 --ops 1000 --corrupt
t "btree --corrupt fails verification" \
	run_app 1 verify_failures=+ -- "$bin/ssd-btree" --inserts 5000 --lookups 20000 --corrupt
t "hashcache --corrupt fails verification" \
	run_app 1 verify_failures=+ -- "$bin/ssd-hashcache" --sets 100 --ops 10000 --sample 1 --corrupt
t "hashcache refuses --checkpoint outside opp" \
	run_app 1 -- "$bin/ssd-hashcache" --sets 100 --checkpoint "$work/x"

if [[ " $modes " == *" opp "* ]]; then
	# two processes on one file: the second finds every key the first checkpointed
	ck_env() {
		env SSDALLOC_DEVICE="$work/ck.img" SSDALLOC_SIZE=64M SSDALLOC_RAM=1M \
			SSDALLOC_PAGE_BUFFER=256K "$@"
	}
	rm -f "$work/ck.img"
	t "hashcache opp: $(n 10000) sets, $(n 20000) ops, then ssd_checkpoint" \
		run_app 0 verify_failures=0 checkpointed=1 checkpoints=1 -- ck_env \
		"$bin/ssd-hashcache" --mode opp --sets $(n 10000) --ops $(n 20000) --keys $(n 20000) --sample 1 \
		--seed 11 --checkpoint "$work/ck"
	t "hashcache opp: a new process restores it, every key found, $(n 10000) more ops" \
		run_app 0 verify_failures=0 restored=1 restored_keys_verified=+ -- ck_env \
		"$bin/ssd-hashcache" --mode opp --ops $(n 10000) --restore "$work/ck" --checkpoint "$work/ck"
	t "hashcache opp: and once more after the second checkpoint" \
		run_app 0 verify_failures=0 restored=1 restored_keys_verified=+ -- ck_env \
		"$bin/ssd-hashcache" --mode opp --ops 1000 --restore "$work/ck"
	# a crash after the checkpoint, the cleaner moving live objects in between (a
	# 6 MiB store): the restore finds the index exactly as it was checkpointed
	gc_env() {
		env SSDALLOC_DEVICE="$work/gc.img" SSDALLOC_SIZE=6M SSDALLOC_RAM=1M \
			SSDALLOC_PAGE_BUFFER=256K "$@"
	}
	t "hashcache opp: checkpoint after 5000 ops, 40000 more with the cleaner running, SIGKILL" \
		run_app 137 verify_failures=0 checkpointed=1 gc_runs=+ -- gc_env \
		"$bin/ssd-hashcache" --mode opp --sets 5000 --ops 45000 --sample 1 --seed 13 \
		--checkpoint "$work/gc" --checkpoint-at 5000 --kill
	t "hashcache opp: after the crash, the restore finds the checkpointed index" \
		run_app 0 verify_failures=0 restored=1 restored_keys_verified=+ -- gc_env \
		"$bin/ssd-hashcache" --mode opp --ops 5000 --restore "$work/gc"

	# a description that does not match what the store holds is refused, not trusted
	bad_root() {
		cp "$work/ck.app" "$work/bad.app" && cp "$work/ck" "$work/bad" || return 1
		printf 'XXXXXXXX' | dd of="$work/bad.app" bs=1 seek=8 conv=notrunc status=none
		run_app 1 -- ck_env "$bin/ssd-hashcache" --mode opp --ops 10 --restore "$work/bad" &&
			grep -q 'is not mapped after ssd_restore' "$work/app.err"
	}
	t "hashcache opp: a restore whose root is wrong fails cleanly" bad_root
fi

# memcached on SSDAlloc
mc_run() { # mc_run MODE: memcached in the background on a free port ($mc_port)
	local m=$1
	for _ in $(seq 20); do
		mc_port=$((20000 + RANDOM % 20000))
		(exec 3<>"/dev/tcp/127.0.0.1/$mc_port") 2>/dev/null || break
	done
	rm -f "$work/mc.img"
	SSDALLOC_DEVICE="$work/mc.img" SSDALLOC_SIZE=128M SSDALLOC_RAM=8M SSDALLOC_PAGE_BUFFER=2M \
		"$work/memcached-ssdalloc" -u root -l 127.0.0.1 -p "$mc_port" -U 0 -m 16 -t 2 \
		-o "ssdalloc=$m,slab_chunk_max=16384" > "$work/mc.log" 2>&1 &
	mc_pid=$!
	for _ in $(seq 50); do
		(exec 3<>"/dev/tcp/127.0.0.1/$mc_port") 2>/dev/null && return 0
		kill -0 "$mc_pid" 2>/dev/null || break
		sleep 0.1
	done
	cat "$work/mc.log"
	return 1
}
mc_stop() {
	[ -n "$mc_pid" ] || return 0
	kill "$mc_pid" 2>/dev/null
	wait "$mc_pid" 2>/dev/null
	mc_pid=
}
mc_stat() { # mc_stat NAME: one value of "stats"
	local line
	exec 3<>"/dev/tcp/127.0.0.1/$mc_port" || return 1
	printf 'stats\r\nquit\r\n' >&3
	while IFS= read -r -t 5 line <&3; do
		line=${line%$'\r'}
		case $line in "STAT $1 "*) echo "${line#"STAT $1 "}" ;; END) break ;; esac
	done
	exec 3<&-
}
mc_ssd_stats() { # "stats" has SSDAlloc's counters, and memcached's items are objects there
	local v
	v=$(mc_stat ssd_objects)
	echo "STAT ssd_objects $v"
	[[ $v =~ ^[1-9][0-9]*$ ]]
}
mc_capable() {
	timeout 120 memccapable -h 127.0.0.1 -p "$mc_port" -a && timeout 120 memccapable -h 127.0.0.1 -p "$mc_port" -b
}

if [ "${APPS_NO_MEMCACHED:-0}" = 1 ]; then
	echo "ok - apps: memcached # SKIP APPS_NO_MEMCACHED=1"
elif ! command -v memcaslap > /dev/null || ! command -v memccapable > /dev/null; then
	echo "not ok - apps: memcaslap and memccapable are missing (apt-get install libmemcached-tools)"
	f=$((f + 1))
else
	t "memcached: Debian's source + ssdalloc.patch builds" \
		"$src/apps/memcached/build.sh" --lib "$lib" --out "$work/memcached-ssdalloc"
	if [ -x "$work/memcached-ssdalloc" ]; then
		for m in $modes; do
			if mc_run "$m"; then
				t "memcached $m: memccapable (ascii and binary protocol)" mc_capable
				[ "$m" = malloc ] ||
					t "memcached $m: stats reports SSDAlloc's counters" mc_ssd_stats
			else
				echo "not ok - apps: memcached $m: does not start"
				sed 's/^/# /' "$work/mc.log" | tail -n 10
				f=$((f + 1))
			fi
			mc_stop
			# memcaslap through bench.sh: half sets, half gets of 2000 B values,
			# every get verified; the sets write ~3x memcached's 16 MiB, so the LRU
			# evicts; in mp/opp the items must have gone through SSDAlloc's store
			# (its counters, printed by memcached at exit)
			rm -f "$work/mcb.img"
			# shellcheck disable=SC2046
			t "memcached $m: memcaslap, 50000 ops, every get verified, LRU evicting" \
				run_app 0 verify_failed=0 server_errors=0 evictions=+ \
				$([ "$m" = malloc ] || echo objects_written=+ ssd_write_bytes=+) -- \
				env SSDALLOC_DEVICE="$work/mcb.img" SSDALLOC_SIZE=128M SSDALLOC_RAM=8M \
				SSDALLOC_PAGE_BUFFER=2M "$src/apps/memcached/bench.sh" --mode "$m" \
				--binary "$work/memcached-ssdalloc" --ops 50000
		done
		refuses_bogus() { ! "$work/memcached-ssdalloc" -u root -p 0 -o ssdalloc=bogus; }
		t "memcached: -o ssdalloc=bogus is refused" refuses_bogus
	fi
fi

echo "apps: $p passed, $f failed"
[ "$f" -eq 0 ]
