# SPDX-License-Identifier: GPL-2.0
# Trace replay with fio: the three synthetic traces (scripts/gentrace.py,
# converted by scripts/trace2iolog.py when the initramfs was built) replayed
# against a write-back ssc volume made by hcctl. The volume must see exactly
# the blocks the converter counted, and after hcctl flush the origin must
# equal the volume.
# Devices: nullb0 = 48 MiB cache, nullb1 = 512 MiB origin (128 MiB when small).

# make check on the debug kernel replays the small traces (5,000 requests, not 20,000)
# onto a 128 MiB origin (the traces are mapped into 128 MiB): the final whole-device
# compare reads a quarter as much
SUF= OMB=512
is_small && SUF=-small OMB=128
check "modprobe dm-ssc" modprobe dm-ssc
check "null_blk cache device" null_blk_add 48
check "null_blk origin device" null_blk_add $OMB
check "hcctl create writeback" hcctl create v --cache /dev/nullb0 --origin /dev/nullb1 --mode writeback --format

KINDS="zipf-read$SUF write-heavy$SUF scan$SUF"
# at the small sizes the read hits' zipf and one of the others, drawn by SSC_SEED
is_small && KINDS="zipf-read$SUF $(pick 1 write-heavy$SUF scan$SUF)"
diag "traces replayed: $KINDS"
for kind in $KINDS; do
	read -r want_r want_w < /ssc/traces/$kind.sum
	hits0=$(ssc_stat v read_hits) miss0=$(ssc_stat v read_misses)
	wh0=$(ssc_stat v write_hits) wm0=$(ssc_stat v write_misses)
	# fio's own byte counts miss the last in-flight requests of a replay at
	# iodepth > 1, so the volume's counters are what is checked
	check "$kind: fio replays the trace" fio --name=replay --read_iolog=/ssc/traces/$kind.iolog \
		--replay_redirect=/dev/mapper/v --ioengine=libaio --iodepth=16 --direct=1
	reads=$(( $(ssc_stat v read_hits) - hits0 + $(ssc_stat v read_misses) - miss0 ))
	writes=$(( $(ssc_stat v write_hits) - wh0 + $(ssc_stat v write_misses) - wm0 ))
	# the volume counts 4 KiB blocks: bytes / 4096 of each direction
	check_eq "$kind: the volume served every block read" $((want_r / 4096)) "$reads"
	check_eq "$kind: the volume took every block written" $((want_w / 4096)) "$writes"
	diag "$kind: read hits $(( $(ssc_stat v read_hits) - hits0 )) of $reads, write hits $(( $(ssc_stat v write_hits) - wh0 )) of $writes"
done
hits=$(ssc_stat v read_hits)
[ "$hits" -gt 0 ] && ok "replays hit the cache ($hits read hits)" || not_ok "replays hit the cache # '$hits'"
check "hcctl flush" hcctl flush v
check_eq "flushed: nothing dirty" 0 "$(ssc_stat v dirty)"
check "origin equals the volume" same_data /dev/mapper/v /dev/nullb1
check "hcctl remove" hcctl remove v
check "rmmod dm-ssc" rmmod dm_ssc
check "null_blk teardown" null_blk_teardown
