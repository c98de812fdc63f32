# SPDX-License-Identifier: GPL-2.0
# The README demo: hcctl creates a cached volume over an emulated slow disk,
# fio replays a synthetic block trace against it, hcctl shows its status and
# the events hcctl monitor saw, then writes everything back.
say() { echo "demo: $*"; }
run() { say "\$ $*"; "$@" 2>&1 | sed 's/^/demo:   /'; }

check "null_blk: 256 MiB flash (nullb0) and 512 MiB disk (nullb1)" null_blk_setup 2 512
modprobe dm-delay
check "modprobe dm-ssc" modprobe dm-ssc
LEN=$(sectors /dev/nullb1)
say "slow disk: dm-delay adds 2 ms to every I/O of nullb1"
run dmsetup create slowdisk --table "0 $LEN delay /dev/nullb1 0 2"
hcctl monitor > /tmp/demo-events 2> /tmp/demo-events.err &
MON=$!
for _ in $(seq 50); do grep -q monitoring /tmp/demo-events.err && break; sleep 0.1; done
say "events: hcctl monitor runs in the background"
run hcctl create cached --cache /dev/nullb0 --origin /dev/mapper/slowdisk --mode writeback --format
run dmsetup table cached
for pass in 1 2; do
	say "replay $pass: the zipf-read trace (20,000 requests, hot blocks read again and again)"
	fio --name=replay --read_iolog=/ssc/traces/zipf-read.iolog --replay_redirect=/dev/mapper/cached \
		--ioengine=libaio --iodepth=16 --direct=1 --eta=never --output-format=terse \
		--terse-version=3 --output=/tmp/fio.terse > /dev/null 2>&1
	awk -F';' -v p=$pass '{printf "demo:   replay %s: read %s IOPS, write %s IOPS (TCG: compare, do not quote)\n", p, $8, $49}' /tmp/fio.terse
done
say "replay: the write-heavy trace (about 90 % writes)"
fio --name=replay --read_iolog=/ssc/traces/write-heavy.iolog --replay_redirect=/dev/mapper/cached \
	--ioengine=libaio --iodepth=16 --direct=1 > /dev/null 2>&1
run hcctl status cached
h=$(ssc_stat cached read_hits)
[ "${h:-0}" -gt 0 ] && ok "reads hit the cache ($h)" || not_ok "reads hit the cache # '$h'"
say "retire: write everything back"
say "\$ hcctl flush cached    (progress lines every 0.2 s; the first and last shown)"
hcctl flush cached > /tmp/flush.out 2>&1
sed -n '1p;$p' /tmp/flush.out | sed 's/^/demo:   /'
check_eq "all dirty data written back" 0 "$(ssc_stat cached dirty)"
sleep 1
kill $MON
wait $MON
say "what hcctl monitor saw:"
sed 's/^/demo:   /' /tmp/demo-events
check "monitor saw the write-back finish" grep -q 'cached .* writeback_done' /tmp/demo-events
check "remove" hcctl remove cached
check "remove slowdisk" dmsetup remove slowdisk
check "null_blk teardown" null_blk_teardown
