# SPDX-License-Identifier: GPL-2.0
# dm-ssc netlink events seen through `hcctl monitor`, and the dm_ssc family
# fuzzed with malformed requests (tests/tools/nl-fuzz.c).
# Each event is caused for real: write-back done by hcctl flush, a mode change
# by a table reload, recovery by a power cut (dm-flakey drop_writes under the
# cache device), degradation by failing writes (dm-flakey error_writes), GC
# stalls by writers outrunning garbage collection on a small cache.
# Devices: nullb0 = 64 MiB cache behind dm-flakey "fc", nullb1 = 256 MiB origin,
# nullb2 = 16 MiB cache for the stall test.

# --- no module: a clear error ----------------------------------------------
rmmod dm_ssc 2>/dev/null
check_eq "monitor without the module: exit 1" 1 "$(hcctl monitor --timeout 1 > /dev/null 2>&1; echo $?)"
check "monitor without the module: says to load it" sh -c \
	"hcctl monitor --timeout 1 2>&1 | grep -q 'is the dm-ssc module loaded'"
check_eq "monitor: bad --count: exit 2" 2 "$(hcctl monitor --count x > /dev/null 2>&1; echo $?)"
check_eq "monitor: two volumes: exit 2" 2 "$(hcctl monitor a b > /dev/null 2>&1; echo $?)"

flaky_cache_setup 64 256
check "null_blk small cache" null_blk_add 16
mk() { dmsetup create v --table "0 $LEN ssc $CACHE $ORIGIN 8 1 $1"; }
mkf() { dmsetup create v --table "0 $LEN ssc $CACHE $ORIGIN 8 2 format $1"; }
cut_power() { flaky_set drop_writes; }
restore_power() { flaky_set up; }

# start_monitor FILE [ARGS]: hcctl --json monitor in the background, once it listens
start_monitor() {
	f=$1
	shift
	hcctl --json monitor "$@" > "$f" 2> "$f.err" &
	MON_PID=$!
	for _ in $(seq 100); do
		grep -q 'monitoring dm-ssc events' "$f.err" 2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}
# wait_event FILE JQ-CONDITION: wait up to 30 s for an event matching it,
# then print that event (the last such one)
wait_event() {
	for _ in $(seq 300); do
		e=$(jq -c "select($2)" "$1" 2>/dev/null | tail -n1)
		[ -n "$e" ] && { echo "$e"; return 0; }
		sleep 0.1
	done
	return 1
}
# count_events FILE JQ-CONDITION
count_events() { jq -c "select($2)" "$1" | wc -l; }

check "monitor listens" start_monitor /tmp/ev --timeout 1200
MON=$MON_PID
hcctl monitor --timeout 1200 v > /tmp/evh 2> /tmp/evh.err &
HMON=$!
start_monitor /tmp/ev-other --count 1 --timeout 1200 other
OTHER=$MON_PID

# --- write-back done ----------------------------------------------------------
check "create writeback" mkf writeback
check "write 4 MiB dirty" dd if=/dev/urandom of=/dev/mapper/v bs=4k count=1024 oflag=direct conv=fsync
d=$(ssc_stat v dirty)
check "hcctl flush" hcctl flush v
e=$(wait_event /tmp/ev '.event == "writeback_done" and .volume == "v"')
check "a writeback_done event" test -n "$e"
diag "$e"
check_eq "writeback_done: blocks = the dirty blocks before the flush" "$d" "$(echo "$e" | jq .blocks)"
check "writeback_done: a duration" test "$(echo "$e" | jq .duration_us)" -gt 0
check_eq "writeback_done: the volume's device" "$(dmsetup info -c --noheadings -o major,minor --separator : v)" \
	"$(echo "$e" | jq -r .dev)"
check "writeback_done: a timestamp" sh -c "echo '$e' | jq -e '.time | test(\"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+$\")'"
check "hcctl flush of a clean volume: another writeback_done, 0 blocks" hcctl flush v
check "(it came)" wait_event /tmp/ev '.event == "writeback_done" and .blocks == 0'

# --- mode change --------------------------------------------------------------
reload() { dmsetup reload v --table "$(dmsetup table v | sed "s/ $1 / $2 /")" && dmsetup resume v; }
check "reload writeback -> writethrough" reload writeback writethrough
e=$(wait_event /tmp/ev '.event == "mode"')
check_eq "mode event: writeback -> writethrough" "writeback writethrough" \
	"$(echo "$e" | jq -r '.old_mode + " " + .mode')"
check "reload with the same table" sh -c "dmsetup reload v --table \"\$(dmsetup table v)\" && dmsetup resume v"
check "suspend and resume" sh -c "dmsetup suspend v && dmsetup resume v"
check "reload writethrough -> writeback" reload writethrough writeback
check "mode event: writethrough -> writeback" \
	wait_event /tmp/ev '.event == "mode" and .old_mode == "writethrough" and .mode == "writeback"'
check_eq "no mode event for a reload or resume that kept the mode" 2 "$(count_events /tmp/ev '.event == "mode"')"

# --- recovery -----------------------------------------------------------------
check "write 2 MiB dirty + fsync" dd if=/dev/urandom of=/dev/mapper/v bs=4k count=512 oflag=direct conv=fsync
check "power cut on the cache device" cut_power
check "remove (its shutdown checkpoint is lost)" dmsetup remove v
check "power back" restore_power
check "create after the crash" mk writeback
e=$(wait_event /tmp/ev '.event == "recovery"')
check "a recovery event" test -n "$e"
diag "$e"
check "recovery: log records replayed" test "$(echo "$e" | jq .replayed)" -gt 0
check_eq "recovery: its replayed count is the status's" "$(ssc_stat v replayed)" "$(echo "$e" | jq .replayed)"
check_eq "recovery: dirty blocks as in the status" "$(ssc_stat v dirty)" "$(echo "$e" | jq .dirty)"
check "recovery: a duration" test "$(echo "$e" | jq .duration_us)" -gt 0
check "suspend and resume" sh -c "dmsetup suspend v && dmsetup resume v"
check_eq "one recovery event: none for a clean load or a resume" 1 "$(count_events /tmp/ev '.event == "recovery"')"

# --- degradation, and back ------------------------------------------------------
check "cache device fails writes" flaky_set error_writes
check_fails "a write to a new block fails" \
	dd if=/dev/urandom of=/dev/mapper/v bs=4k count=1 seek=40000 oflag=direct conv=fsync
e=$(wait_event /tmp/ev '.event == "state"')
check_eq "state event: read_only, EIO" "read_only 5" "$(echo "$e" | jq -r '.state + " " + (.error|tostring)')"
check "cache device back" flaky_set up
check "reload the volume" sh -c "dmsetup reload v --table \"\$(dmsetup table v)\" && dmsetup resume v"
check_eq "state: ok again" ok "$(ssc_stat v state)"
check "state event: ok" wait_event /tmp/ev '.event == "state" and .state == "ok"'
check "hcctl flush" hcctl flush v
check "remove" dmsetup remove v

# --- GC stalls: writers wait for garbage collection ------------------------------
SMALL=/dev/nullb2
check "small writethrough volume" dmsetup create s --table \
	"0 $LEN ssc $SMALL $ORIGIN 8 4 format writethrough segment_size 256"
# the writers stop at the first event (a stall ended): on the debug kernel the whole
# 64 MiB took 2-3 minutes, and nothing below needs more than one stall
fio --name=stall --filename=/dev/mapper/s --ioengine=libaio --direct=1 --rw=randwrite --bs=4k \
	--iodepth=32 --numjobs=2 --size=200m --io_size=64m --group_reporting > /dev/null 2>&1 &
STALL=$!
e=
while [ -z "$e" ] && kill -0 $STALL 2>/dev/null; do
	e=$(jq -c 'select(.event == "gc_stall" and .volume == "s")' /tmp/ev 2>/dev/null | tail -n1)
	[ -n "$e" ] || sleep 0.2
done
kill $STALL 2>/dev/null
wait $STALL 2>/dev/null
[ -n "$e" ] || e=$(wait_event /tmp/ev '.event == "gc_stall" and .volume == "s"')
check "a gc_stall event" test -n "$e"
diag "$e"
check "gc_stall: a count of stalls" test "$(echo "$e" | jq .stalls)" -gt 0
check "gc_stall: longest <= total" test "$(echo "$e" | jq .max_wait_us)" -le "$(echo "$e" | jq .duration_us)"
check "gc_stall: writes or fills went around the cache" test "$(echo "$e" | jq .bypassed)" -gt 0
n=$(count_events /tmp/ev '.event == "gc_stall"')
diag "gc_stall events: $n"
vsz=32m
is_small && vsz=16m
fio_verify "fio verify on the stalling volume" /dev/mapper/s $vsz
check "remove" dmsetup remove s

# --- listeners ---------------------------------------------------------------------
check "human output: the write-back line" \
	grep -qE '^[0-9-]+T[0-9:.]+ v \([0-9]+:[0-9]+\) writeback_done: [0-9]+ blocks written back in [0-9]+ us$' /tmp/evh
check "human output: the mode line" grep -q ' v (.*) mode: writeback -> writethrough$' /tmp/evh
check "human output: only volume v" sh -c "! grep -q ' s (' /tmp/evh"
check_eq "a monitor of another volume saw nothing" 0 "$(wc -c < /tmp/ev-other)"
check "every JSON line parses" jq -e . /tmp/ev > /dev/null
kill $OTHER
wait $OTHER
o=$?
check_eq "monitor --count: interrupted before the count" 0 "$o"
start_monitor /tmp/ev2 --count 2 --timeout 120
C2=$MON_PID
mkf writethrough
dmsetup reload v --table "$(dmsetup table v | sed 's/ writethrough / writeback /')" && dmsetup resume v
hcctl flush v > /dev/null
wait $C2
check_eq "monitor --count 2: exit 0 after two events" "0 2" "$? $(wc -l < /tmp/ev2)"
check_eq "monitor --timeout with no event: exit 4" 4 "$(hcctl monitor --timeout 1 --count 1 nothing > /dev/null 2>&1; echo $?)"

# --- fuzzing ------------------------------------------------------------------------
# the random requests are drawn by make check's seed (printed; SSC_SEED=N replays it)
FZ_SEED=${SSC_SEED:-7}
check "nl-fuzz (seed $FZ_SEED)" sh -c "nl-fuzz v 3000 $FZ_SEED > /tmp/fuzz.out 2>&1"
sed 's/^/# /' /tmp/fuzz.out
check_eq "nl-fuzz: every check passed (seed $FZ_SEED)" 0 "$(grep -c '^not ok' /tmp/fuzz.out)"
fio_verify "the volume still works after fuzzing (fio verify)" /dev/mapper/v 16m
check "hcctl status still works" sh -c "hcctl --json status v | jq -e '.volumes[0].state == \"ok\"'"

kill "$MON" "$HMON" 2>/dev/null
wait "$MON" "$HMON" 2>/dev/null
check "remove" dmsetup remove v
check "remove fc" dmsetup remove fc
check "unload the module (the netlink family goes with it)" rmmod dm_ssc
diag "events seen: $(jq -r .event /tmp/ev | sort | uniq -c | tr -s ' \n' ' ')"
check_eq "and the family is gone" 1 "$(hcctl monitor --timeout 1 > /dev/null 2>&1; echo $?)"
check "load it again" modprobe dm-ssc
check "null_blk teardown" null_blk_teardown
