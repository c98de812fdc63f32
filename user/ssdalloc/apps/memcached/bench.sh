#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# One memcached-on-SSDAlloc run: starts memcached-ssdalloc (build.sh) with
# -o ssdalloc=MODE on a free loopback port, drives it with Debian's memcaslap
# (libmemcached-tools; every get verified), stops it, and prints one line of
# key=value results: ops, ops_done, seconds, ops_per_s, verify_failed,
# get_misses, server_errors, evictions, and in mp/opp the SSDAlloc counters memcached
# printed at exit (SSDALLOC_STATS=1). SSDAlloc is configured by the caller's
# environment (SSDALLOC_DEVICE, SSDALLOC_SIZE, SSDALLOC_RAM, ...). Exit 1 when
# a get returned wrong data, a store failed, memcaslap did not do every
# operation (memcached dropped connections), or memcached died.
#
#   bench.sh --mode malloc|mp|opp [--binary PATH] [--ops N] [--mem MIB]
#            [--value-size BYTES] [--set-pct P] [--threads T] [--conns C]
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
bin=$here/../memcached-ssdalloc
mode='' ops=50000 mem=16 vsize=2000 setpct=50 threads=2 conns=8
usage() {
	sed -n 's/^#   //p' "$0" >&2
	exit 2
}
while [ $# -gt 0 ]; do
	[ $# -ge 2 ] || usage
	case $1 in
	--mode) mode=$2 ;;
	--binary) bin=$2 ;;
	--ops) ops=$2 ;;
	--mem) mem=$2 ;;
	--value-size) vsize=$2 ;;
	--set-pct) setpct=$2 ;;
	--threads) threads=$2 ;;
	--conns) conns=$2 ;;
	*) usage ;;
	esac
	shift 2
done
die() { echo "memcached/bench.sh: $*" >&2; exit 1; }
case $mode in malloc | mp | opp) ;; *) usage ;; esac
for v in "$ops" "$mem" "$vsize" "$setpct" "$threads" "$conns"; do
	[[ $v =~ ^[0-9]+$ ]] || die "'$v' is not a number"
done
[ "$setpct" -le 100 ] || die "--set-pct must be 0..100"
[ -x "$bin" ] || die "$bin is not built (make -C $(dirname "$here") memcached)"
command -v memcaslap > /dev/null || die "memcaslap is missing (apt-get install libmemcached-tools)"

work=$(mktemp -d /tmp/mc-bench.XXXXXX)
pid=
cleanup() {
	[ -n "$pid" ] && kill "$pid" 2> /dev/null && wait "$pid" 2> /dev/null
	rm -rf "$work"
}
trap cleanup EXIT

for _ in $(seq 20); do
	port=$((20000 + RANDOM % 20000))
	(exec 3<> "/dev/tcp/127.0.0.1/$port") 2> /dev/null || break
done
SSDALLOC_STATS=1 "$bin" -u root -l 127.0.0.1 -p "$port" -U 0 -m "$mem" -t "$threads" \
	-o "ssdalloc=$mode,slab_chunk_max=16384" > "$work/server.log" 2>&1 &
pid=$!
up=0
for _ in $(seq 100); do
	if (exec 3<> "/dev/tcp/127.0.0.1/$port") 2> /dev/null; then
		up=1
		break
	fi
	kill -0 "$pid" 2> /dev/null || break
	sleep 0.1
done
[ $up = 1 ] || die "memcached did not start: $(tail -n 5 "$work/server.log")"

# memcaslap's distribution file: 64 B keys, fixed-size values, sets and gets
printf '%s\n' key '64 64 1' value "$vsize $vsize 1" cmd \
	"$(awk -v p="$setpct" 'BEGIN { printf "0 %.2f\n1 %.2f", p / 100, 1 - p / 100 }')" > "$work/cfg"
t0=$(date +%s.%N)
memcaslap -s "127.0.0.1:$port" -T "$threads" -c "$conns" -x "$ops" -F "$work/cfg" -v 1.0 \
	> "$work/load.log" 2>&1
load_rc=$?
t1=$(date +%s.%N)

stat() { # stat NAME: one value of memcached's "stats"
	local line
	exec 3<> "/dev/tcp/127.0.0.1/$port" || return 0
	printf 'stats\r\nquit\r\n' >&3
	while IFS= read -r -t 5 line <&3; do
		line=${line%$'\r'}
		case $line in "STAT $1 "*) echo "${line#"STAT $1 "}" ;; END) break ;; esac
	done
	exec 3<&-
}
evictions=$(stat evictions)
items=$(stat curr_items)
alive=1
kill -0 "$pid" 2> /dev/null || alive=0
# SIGTERM: memcached exits through exit(), and SSDAlloc prints its counters
kill "$pid" 2> /dev/null
wait "$pid" 2> /dev/null
pid=

field() { sed -n "s/^$1: *\([0-9]*\).*/\1/p" "$work/load.log" | tail -n 1; }
verify_failed=$(field verify_failed)
get_misses=$(field get_misses)
server_errors=$(grep -c 'SERVER_ERROR' "$work/load.log")
# memcaslap stops early, and still exits 0, when memcached drops its connections
done_ops=$(sed -n 's/.*Ops: *\([0-9]*\).*/\1/p' "$work/load.log" | tail -n 1)
line="app=memcached mode=$mode ops=$ops ops_done=${done_ops:-none} value_size=$vsize set_pct=$setpct mem_mib=$mem"
line+=" threads=$threads conns=$conns"
line+=" $(awk -v a="$t0" -v b="$t1" -v n="${done_ops:-0}" 'BEGIN { printf "seconds=%.6f ops_per_s=%.0f", b - a, n / (b - a) }')"
line+=" verify_failed=${verify_failed:-none} get_misses=${get_misses:-none}"
line+=" server_errors=$server_errors evictions=${evictions:-none} curr_items=${items:-none}"
if [ "$mode" != malloc ]; then
	line+=$(awk '$1 ~ /^[a-z_]+$/ && $2 ~ /^[0-9]+$/ && NF == 2 {
			v[$1] = $2; o[n++] = $1
		} END {
			if (n) printf " faults=%d", v["faults_read"] + v["faults_write"]
			for (i = 0; i < n; i++) printf " %s=%s", o[i], v[o[i]]
		}' "$work/server.log")
fi
echo "$line"
if [ $load_rc -ne 0 ] || [ "${verify_failed:-x}" != 0 ] || [ "$server_errors" != 0 ] ||
	[ "${done_ops:-x}" != "$ops" ] || [ $alive = 0 ]; then
	echo "memcached/bench.sh: memcaslap exit $load_rc, ${done_ops:-no} of $ops ops done," \
		"verify_failed=${verify_failed:-none}, server_errors=$server_errors," \
		"memcached alive=$alive" >&2
	tail -n 20 "$work/load.log" "$work/server.log" >&2
	exit 1
fi
