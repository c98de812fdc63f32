# SPDX-License-Identifier: GPL-2.0
# Not part of any test run: makes the real blktrace fixture of the user stage
# (tests/user/data/, see its README). blktrace records a known fio workload on
# a null_blk disk while fio logs what it submitted (--write_iolog); the binary
# dump (blkparse -d) and both fio logs are printed gzip'ed and base64'ed as
# "B64 <file>" lines:
#   scripts/vm.sh --kernel 6.12 --name cap --suites capture > cap.out
#   grep '^# # B64 cap.bin ' cap.out | sed 's/^# # B64 cap.bin //' | base64 -d > blktrace-nullb0.bin.gz
check "null_blk disk" null_blk_add 64
blktrace -d /dev/nullb0 -o /tmp/cap > /tmp/bt.log 2>&1 &
BT=$!
sleep 2
check "fio: 2 MiB of random 4 KiB reads (40 %) and writes" \
	fio --name=cap --filename=/dev/nullb0 --ioengine=psync --direct=1 --rw=randrw --rwmixread=40 \
	--bs=4k --size=16m --io_size=2m --randseed=11 --write_iolog=/tmp/fio.iolog
check "fio: 1 MiB of sequential 64 KiB writes" \
	fio --name=cap2 --filename=/dev/nullb0 --ioengine=psync --direct=1 --rw=write --bs=64k \
	--offset=32m --size=1m --write_iolog=/tmp/fio2.iolog
sleep 1
kill -INT $BT
wait $BT
sed 's/^/# blktrace: /' /tmp/bt.log
check "blkparse -d" sh -c "blkparse -i /tmp/cap -d /tmp/cap.bin -O > /dev/null"
blkparse -i /tmp/cap | grep -E 'Queued|Events' | sed 's/^/# blkparse: /'
for f in cap.bin fio.iolog fio2.iolog; do
	gzip -9 -c /tmp/$f | base64 | sed "s/^/B64 $f /" | while read -r l; do diag "$l"; done
done
check "null_blk teardown" null_blk_teardown
