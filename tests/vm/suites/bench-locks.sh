# SPDX-License-Identifier: GPL-2.0
# make bench-locks (not a test: nothing here has a threshold). Lock contention
# on the read-hit path, counted by the debug kernel's lock statistics
# (CONFIG_LOCK_STAT, /proc/lock_stat): per target, a working set is cached,
# the statistics are cleared and switched on, two fio jobs read it at random
# (4 KiB, O_DIRECT) for BENCH_LOCK_RT seconds, and the contentions of every
# lock class are read back. Results are "# BENCH <target> <key> <value>"
# lines; scripts/bench-locks.sh makes the table. Counts, not times: KASAN and
# TCG slow everything, but a contention is a contention.

MB=${BENCH_LOCK_MB:-64}
RT=${BENCH_LOCK_RT:-20}
TARGETS=$(echo "${BENCH_LOCK_TARGETS:-ssc_wt,writecache}" | tr , " ")

if [ ! -e /proc/lock_stat ]; then
	not_ok "kernel has lock statistics # /proc/lock_stat missing: CONFIG_LOCK_STAT"
	return 0 2>/dev/null || exit 0
fi
check "modules" sh -c "modprobe dm-ssc && modprobe dm-writecache"
check "flash null_blk ($((MB + 48)) MiB)" null_blk_add $((MB + 48)) 4096 0 0
check "origin null_blk ($MB MiB)" null_blk_add "$MB" 4096 0 0
FLASH=/dev/nullb0 ORIGIN=/dev/nullb1
OLEN=$(sectors $ORIGIN)

res() { echo "# BENCH $T $1 $2"; }

# contentions, acquisitions and acquisitions that bounced from another CPU
# (acq-bounces) of the lock classes whose names match ERE $1, then
# contentions and acquisitions over every class: "con acq bounces con_all acq_all".
# A spinlock's contention is any acquisition that found it held; a mutex's
# only one that had to sleep (lock_stat does not count optimistic spinning),
# so bounces are the like-for-like figure between the two.
lock_counts() {
	awk -v re="$1" '
		match($0, /: +[0-9]+ +[0-9]+ /) {
			name = substr($0, 1, RSTART - 1); sub(/^ +/, "", name)
			n = split(substr($0, RSTART + 1), f, " ")
			if (n < 8) next
			ca += f[2]; aa += f[8]
			if (name ~ re) { c += f[2]; a += f[8]; b += f[7] }
		}
		END { printf "%d %d %d %d %d\n", c, a, b, ca, aa }' /proc/lock_stat
}

# the classes with the most contentions, as diagnostics
lock_top() {
	awk 'match($0, /: +[0-9]+ +[0-9]+ /) {
			name = substr($0, 1, RSTART - 1); sub(/^ +/, "", name)
			split(substr($0, RSTART + 1), f, " ")
			if (f[2] > 0) print f[2], name
		}' /proc/lock_stat | sort -rn | head -n 5 | sed 's/^/#   /'
}

for T in $TARGETS; do
	case $T in
	ssc_wt)
		RE='^&(sh|e|sc)->'
		dd if=/dev/zero of=$FLASH bs=4k count=1 oflag=direct 2>/dev/null
		check "$T: create" dmsetup create t --table "0 $OLEN ssc $FLASH $ORIGIN 8 2 format writethrough"
		[ -b /dev/mapper/t ] || continue
		# two read passes: the second finds what the first's fills cached
		fio --name=warm --filename=/dev/mapper/t --rw=read --bs=4k --direct=1 --size=${MB}m > /dev/null
		fio --name=warm --filename=/dev/mapper/t --rw=read --bs=4k --direct=1 --size=${MB}m > /dev/null
		hits() { ssc_stat t read_hits; }
		;;
	writecache)
		RE='^&wc->'
		dd if=/dev/zero of=$FLASH bs=4k count=1 oflag=direct 2>/dev/null
		check "$T: create" dmsetup create t --table "0 $OLEN writecache s $ORIGIN $FLASH 4096 4 high_watermark 95 low_watermark 90"
		[ -b /dev/mapper/t ] || continue
		fio --name=warm --filename=/dev/mapper/t --rw=write --bs=64k --direct=1 --size=${MB}m > /dev/null
		hits() { dmsetup status t | awk '{ print $9 }'; }
		;;
	*) not_ok "$T: unknown target"; continue ;;
	esac
	h0=$(hits)
	echo 0 > /proc/lock_stat
	echo 1 > /proc/sys/kernel/lock_stat
	fio --name=hits --filename=/dev/mapper/t --rw=randread --bs=4k --direct=1 \
		--ioengine=libaio --iodepth=8 --numjobs=2 --size=${MB}m --runtime="$RT" \
		--time_based --group_reporting > /dev/null
	echo 0 > /proc/sys/kernel/lock_stat
	h1=$(hits)
	set -- $(lock_counts "$RE")
	diag "$T: contended lock classes (contentions, class):"
	lock_top
	if [ "$((h1 - h0))" -gt 0 ]; then
		ok "$T: read hits counted ($((h1 - h0)))"
		res hits "$((h1 - h0))"
		res contentions "$1"
		res acquisitions "$2"
		res bounces "$3"
		res contentions_all "$4"
		res acquisitions_all "$5"
	else
		not_ok "$T: read hits counted # no read hit during the run"
	fi
	case $T in ssc_wt) dmsetup remove t ;; writecache) dmsetup message t 0 flush; dmsetup remove t ;; esac
done
check "null_blk teardown" null_blk_teardown
