# SPDX-License-Identifier: GPL-2.0
# HashCache against a hostile device and careless callers (issue 22's review):
#  - the device written under an attached index: LogLRU's spill entries crafted
#    (a group run past the prefetch buffer, a log block past the log): ignored
#    and counted, never a read past a buffer or the log;
#  - BufferHash's blocks rewritten with valid CRCs (a record's key or value
#    length, a block's fill, its generation): never a wrong value or an error;
#  - Cascade's T2 index blocks zeroed, a record's value changed: lookups fail
#    (EIO) or miss, never an older value; an attach rebuilds the index;
#  - a buffered reader of LOOKUP's offset after an overwrite in place (Basic)
#    and after the log wrapped over the record: never the bytes of before;
#  - the checkpoint rewritten with valid CRCs (tests/tools/hc-ckcraft.c): used
#    only when every word is in range, else a scan; never a wrong object;
#  - ids never reused across detach and attach;
#  - a PUT or GET whose buffer faults slowly (userfaultfd: tests/tools/hc-stall.c)
#    holds up no other caller of the index;
#  - format requests whose size arithmetic wraps, or whose RAM part kvmalloc
#    cannot take: refused with a clear error, the old index intact;
#  - an overwrite torn by a power cut at every crash point (dm-log-writes,
#    replay-log): the key holds its old or its new value, never nothing.
# Whether the kernel stayed healthy (no KASAN report, no WARN) is the
# harness's console scan. Devices: nullb0 = 16 MiB under dm-linear "hx" (the
# index device; nullb0 is the same bytes, written behind the index's back),
# nullb1 = 24 MiB under dm-log-writes, nullb2 = its log, nullb3 = the replay,
# nullb4 = the copy each crash point checks.

check "modprobe hashcache" modprobe hashcache
check "null_blk index device" null_blk_add 16
RAW=/dev/nullb0
check "dm-linear hx over it" dmsetup create hx --table "0 $(sectors $RAW) linear $RAW 0"
D=/dev/mapper/hx
st() { hcctl --json index stats "$1" | jq -r ".$2"; }
# entries FILE VALUE-BYTES: a 4 KiB spill block of 512 entries, each the 8 bytes
# given as printf escapes (little-endian)
entries() { for _ in $(seq 512); do printf "$2"; done > "$1"; }

diag "at $(cut -d" " -f1 /proc/uptime)s: crafted spill entries"
# --- LogLRU's spill region, written under the attached index ---------------------
# 4 sets of 8 ways, 4 ways' log blocks in RAM: 32 objects put (the hash seed
# fixed, so the same of them fit every run), and the other ways' entries are in
# the spill region once attach has rebuilt it
check "loglru with prefetch, 4 sets" hcctl index format --policy loglru --prefetch --sets 4 --seed 7 $D
check "attach" hcctl index attach $D
check "32 puts" mput_keys $D s 32 val-
check "detach and attach: the spill region written" sh -c "hcctl index detach $D && hcctl index attach $D"
SPILL=$((8192 + $(hcctl --json index info $D | jq -r .log_bytes)))
N=$(st $D objects)
diag "$N objects of the 32 kept"
# mget_clean: no wrong value, and mget exits 0 or 5 (keys missing: the ways of
# refused entries are free) with no failed ioctl (stderr "line N: ...")
mget_clean() {
	keys s 32 | hcctl index mget $D > /tmp/mg.out 2> /tmp/mg.err
	rc=$?
	set -- $(tally s val- < /tmp/mg.out)
	echo "wrong $2, exit $rc, errors $(grep -c 'line [0-9]*:' /tmp/mg.err)"
}
check "the spill region holds entries" sh -c \
	"dd if=$RAW bs=4096 skip=$((SPILL / 4096)) count=1 iflag=direct 2>/dev/null | od -An -tx8 | grep -q '8[0-9a-f]\{15\}'"
# hc-spillcraft seals entries as the kernel does: the region's own entries
# written again by it (the low 48 bits of each) are the same bytes
dd if=$RAW bs=4096 skip=$((SPILL / 4096)) count=1 iflag=direct 2>/dev/null > /tmp/spill-before
slot=0 same=0
for h in $(od -An -v -tx8 -w8 /tmp/spill-before); do
	case $h in [89a-f]*) hc-spillcraft $RAW $slot 1 $((0x$h & 0xffffffffffff)) && same=$((same + 1)) ;; esac
	slot=$((slot + 1))
done
dd if=$RAW bs=4096 skip=$((SPILL / 4096)) count=1 iflag=direct 2>/dev/null > /tmp/spill-after
check "hc-spillcraft seals as the kernel does ($same entries written again: the same bytes)" \
	sh -c "test $same -gt 0 && cmp -s /tmp/spill-before /tmp/spill-after"
# bit 63, a group run of 255 records (2 MiB at 8 KiB: the prefetch buffer is
# 256 KiB), log block 0, pass 0, each with its slot's check bits
# (tests/tools/hc-spillcraft): a read of 256 records into the buffer, before
check "spill entries crafted, checked: group run 255" hc-spillcraft $RAW 0 512 $((255 << 36))
r=$(mget_clean)
case $r in "wrong 0, exit "[05]", errors 0") ok "lookups after the crafted runs: no wrong value, no error ($r)" ;;
*) not_ok "lookups after the crafted runs: no wrong value, no error # $r" ;; esac
b1=$(st $D bad_entries)
check "the crafted entries were refused and counted ($b1)" test "$b1" -gt 0
# the ways whose entries were refused are free now: an index that refused an
# entry leaves no checkpoint, so the attach scans, finds their records in the
# log and writes the spill region again
check "detach and attach: a scan, the spill region rewritten" sh -c \
	"hcctl index detach $D && hcctl --json index attach $D | jq -e '.checkpoint == false'"
check_eq "every object back from the log" "$N" "$(st $D objects)"
# bit 63, log block 2^32 - 1, pass 15: the pass before this one (the log has
# not wrapped), so the block counts as live if past the log's end: a read
# 32 TiB into a 16 MiB device, before
check "spill entries crafted, checked: log block past the log" hc-spillcraft $RAW 0 512 $((0xfffffffff))
r=$(mget_clean)
case $r in "wrong 0, exit "[05]", errors 0") ok "lookups after the crafted blocks: no wrong value, no error ($r)" ;;
*) not_ok "lookups after the crafted blocks: no wrong value, no error # $r" ;; esac
# (counters start again at every attach)
check "refused and counted again ($(st $D bad_entries))" test "$(st $D bad_entries)" -gt 0
check "the kernel log says what it ignored" sh -c "dmesg | grep -q 'spill entry of slot .* fails its checks'"
# in range (log block 0, pass 0) but without the check bits of its slot, as
# bits changed on the device or an entry written to another slot leave it:
# refused too (before the check bits, taken)
check "detach and attach: a scan again" sh -c \
	"hcctl index detach $D && hcctl --json index attach $D | jq -e '.checkpoint == false'"
entries /tmp/spill-raw '\x00\x00\x00\x00\x00\x00\x00\x80'
check "spill entries crafted: in range, no check bits" \
	dd if=/tmp/spill-raw of=$RAW bs=4096 seek=$((SPILL / 4096)) oflag=direct conv=notrunc
r=$(mget_clean)
case $r in "wrong 0, exit "[05]", errors 0") ok "lookups after the unchecked entries: no wrong value, no error ($r)" ;;
*) not_ok "lookups after the unchecked entries: no wrong value, no error # $r" ;; esac
check "refused and counted ($(st $D bad_entries))" test "$(st $D bad_entries)" -gt 0
check "puts and gets go on" sh -c "hcctl index put $D after ok && test \"\$(hcctl index get $D after)\" = ok"
check "detach" hcctl index detach $D

diag "at $(cut -d" " -f1 /proc/uptime)s: crafted BufferHash blocks"
# --- BufferHash's blocks, rewritten with valid CRCs (tests/tools/hc-bhcraft) -------
# 2 super tables of 4 incarnations of 8 KiB (2 blocks of 4 KiB): 300 puts of
# 100-byte values rotate each buffer some 5 times
check "bufferhash, small incarnations" hcctl index format --policy bufferhash --sets 2 --ways 4 \
	--buffer-size 8K --block-size 4K --seed 7 $D
check "bufferhash: attach" hcctl index attach $D
check "bufferhash: 300 puts" sh -c "awk 'BEGIN { for (i = 0; i < 300; i++) printf \"b%d bv-%0100d\\n\", i, i }' |
	hcctl index mput $D"
check "bufferhash: flush" hcctl index flush $D
# block B of super table T's incarnation S
bhoff() { echo $((8192 + ($1 * 4 + $2) * 8192 + $3 * 4096)); }
bh_clean() {
	awk 'BEGIN { for (i = 0; i < 300; i++) print "b" i }' | hcctl index mget $D > /tmp/bm.out 2> /tmp/bm.err
	rc=$?
	w=$(awk -F'\t' 'NF > 1 && $2 != sprintf("bv-%0100d", substr($1, 2)) { n++ } END { print n + 0 }' /tmp/bm.out)
	f=$(awk -F'\t' 'NF > 1 { n++ } END { print n + 0 }' /tmp/bm.out)
	echo "wrong $w, exit $rc, errors $(grep -c 'line [0-9]*:' /tmp/bm.err), found $f"
}
bh_expect() {
	case $2 in "wrong 0, exit "[05]", errors 0, found "*) ok "bufferhash: $1: no wrong value, no error ($2)" ;;
	*) not_ok "bufferhash: $1: no wrong value, no error # $2" ;; esac
}
before=$(bh_clean)
bh_expect "before any crafting" "$before"
check "bufferhash: incarnations on the device" hc-bhcraft $RAW $(bhoff 0 1 0) show
# every incarnation but the buffer's: a record's key length past the limit,
# a value past the block, a block's fill past its end, another generation
for s in 0 1 2 3; do
	hc-bhcraft $RAW $(bhoff 0 $s 0) klen 300 > /dev/null 2>&1
	hc-bhcraft $RAW $(bhoff 1 $s 0) vlen 1000000 > /dev/null 2>&1
	hc-bhcraft $RAW $(bhoff 0 $s 1) used 4096 > /dev/null 2>&1
	hc-bhcraft $RAW $(bhoff 1 $s 1) gen 99999 > /dev/null 2>&1
done
check "bufferhash: blocks were crafted" sh -c "hc-bhcraft $RAW $(bhoff 1 0 1) show | grep -q 'gen 99999'"
r=$(bh_clean)
bh_expect "lookups over the crafted blocks" "$r"
diag "bufferhash: before $before; after crafting $r"
check "bufferhash: some records are gone with their blocks" test "${r##*found }" -lt "${before##*found }"
# attach trusts nothing of it either: the buffers it takes back, the ring order
check "bufferhash: detach and attach over the crafted blocks" sh -c "hcctl index detach $D && hcctl index attach $D"
bh_expect "lookups after the attach" "$(bh_clean)"
check "bufferhash: puts after the attach" hcctl index put $D after-craft yes
check "bufferhash: a new buffer's worth of puts" sh -c "awk 'BEGIN { for (i = 0; i < 100; i++) print \"n\" i, \"nv\" i }' |
	hcctl index mput $D"
check_eq "bufferhash: found after them" yes "$(hcctl index get $D after-craft)"
check_eq "bufferhash: the last of them too" nv99 "$(hcctl index get $D n99)"
check "bufferhash: detach" hcctl index detach $D

diag "at $(cut -d" " -f1 /proc/uptime)s: Cascade's index and records written under it"
# --- Cascade: what the tiers and slabs hold, changed under the attached index -----
# T1 of 64 mappings in 2 partitions, T2 rings of 2 blocks: of 3000 keys most
# mappings are in T2 and T3. T2's region zeroed behind the index's back: a
# mapping there may have been a key's newest (a tombstone, a newer value than
# T3's), so the first lookup that reads it fails (EIO: exit 1), never
# answers from below, and so does every lookup and put after it; the next
# attach (no checkpoint: the detach writes none) rebuilds the index from the
# slabs, and finds all
C=cascade
check "$C: format, small tiers" hcctl index format --policy $C --resident-sets 64 --ram-ways 2 \
	--ways 2 --block-size 4K $D
check "$C: attach" hcctl index attach $D
check "$C: 3000 puts" mput_keys $D K 3000 kv-
check "$C: T2's rings zeroed (bytes 8192 to 24575)" dd if=/dev/zero of=$RAW bs=4096 seek=2 count=4 \
	oflag=direct conv=notrunc status=none
check_eq "$C: an old key's lookup: an error (exit 1), no value" "1 " "$(v=$(hcctl index get $D K0 2>/dev/null); echo "$? $v")"
check "$C: ... and the kernel log says why" sh -c "dmesg | tail -n 5 | grep -q 'index block is not what the index wrote'"
check_eq "$C: so is the newest key's, in T1" 1 "$(rc hcctl index get $D K2999)"
check_eq "$C: and puts (exit 1)" 1 "$(rc hcctl index put $D K1 x)"
check "$C: detach (the slabs are flushed)" hcctl index detach $D
a=$(hcctl --json index attach $D)
check_eq "$C: attach: no checkpoint, a rebuild" false "$(printf '%s' "$a" | jq -r .checkpoint)"
set -- $(keys K 3000 | hcctl index mget $D | tally K kv-)
check_eq "$C: all 3000 found after it, none wrong" "3000 0" "$1 $2"
check "$C: detach" hcctl index detach $D
# a key's newest record changed on the device: its lookup misses, and never
# returns the older value whose mapping is still in a tier below (T1 of 4
# mappings pushes both versions' down; 60 puts of 1000 bytes close their slab)
check "$C: format, T1 of 4, slabs of 16 KiB" hcctl index format --policy $C --resident-sets 4 \
	--ram-ways 1 --ways 2 --buffer-size 16K --block-size 4K $D
check "$C: attach" hcctl index attach $D
check "$C: K put" hcctl index put $D K old-value
check "$C: 8 others" mput_keys $D o 8 ov-
check "$C: K put again" hcctl index put $D K new-value
check "$C: 60 more of 1000 bytes" mput_keys $D b 60 "$(printf '%01000d' 0)"
check_eq "$C: K is new-value" new-value "$(hcctl index get $D K)"
set -- $(hcctl index lookup $D K)
check "$C: K's record changed where LOOKUP says its value is" sh -c \
	"printf X | dd of=$RAW bs=1 seek=$1 conv=notrunc,fsync status=none"
check_eq "$C: K now: missing (exit 5), never old-value" "5 " "$(v=$(hcctl index get $D K); echo "$? $v")"
check "$C: counted" test "$(st $D bad_entries)" -ge 1
check "$C: detach" hcctl index detach $D

diag "at $(cut -d" " -f1 /proc/uptime)s: crafted checkpoints"
# --- the checkpoint, rewritten with valid CRCs (tests/tools/hc-ckcraft) ---------
# 300 objects, a clean detach: the checkpoint holds the RAM part. Rewritten and
# sealed again, it is used only if the superblock names it and every word is
# one a scan could have made (ranks, log blocks and group runs in range, the
# log's end inside it); else the attach scans, and finds all 300. Never a
# wrong object; an emptied checkpoint hides the objects (as a device writer
# could), no more.
# ck_try CRAFT...: craft, attach, look up the 300, detach: "checkpoint found wrong missing"
ck_try() {
	hc-ckcraft $D "$@" > /dev/null || { echo "craft-failed"; return; }
	_c=$(hcctl --json index attach $D | jq -r .checkpoint)
	_t=$(keys ck 300 | hcctl index mget $D | tally ck ckv-)
	hcctl index detach $D > /dev/null || _t="$_t detach-failed"
	echo $_c $_t
}
CK_SEED=${SSC_SEED:-1}
# 3 of the 5 policies on 6.12, 1 on the debug kernel (and 6.1, small), drawn by the seed
# (SSC_FULL=1: all)
CK_POLS="setmem log+prefetch loglru bufferhash cascade"
if is_small || case $(uname -r) in 6.1.*) true ;; *) false ;; esac; then
	CK_POLS=$(pick 1 $CK_POLS)
else
	CK_POLS=$(pick 3 $CK_POLS)
fi
diag "policies through the crafted checkpoints: $CK_POLS (seed $CK_SEED)"
for tok in $CK_POLS; do
	spec=$(echo "$tok" | sed 's/+prefetch/ --prefetch/')
	p=${spec%% *}
	check "$p: format" hcctl index format --policy $spec $D
	check "$p: attach" hcctl index attach $D
	check "$p: 300 puts" mput_keys $D ck 300 ckv-
	check "$p: a clean detach" hcctl index detach $D
	check "$p: the checkpoint is there, its CRC good" sh -c "hc-ckcraft $D show | grep -q 'crc good'"
	check_eq "$p: attached from it, all 300 there" "true 300 0 0" "$(ck_try show)"
	check_eq "$p: a broken CRC: scanned, all 300 there" "false 300 0 0" "$(ck_try crc)"
	check_eq "$p: another superblock's seq: scanned" "false 300 0 0" "$(ck_try seq 1)"
	check_eq "$p: a detach's marked periodic: a clean attach scans" "false 300 0 0" "$(ck_try kind periodic)"
	check_eq "$p: every byte 0xff (ranks repeated, blocks past the log, heads past the ring): scanned" \
		"false 300 0 0" "$(ck_try fill 255)"
	check "$p: ... and the kernel log says why" sh -c "dmesg | tail -n 20 | grep -q 'holds what no index could'"
	if [ $p = setmem ]; then
		check_eq "$p: a state word it has none of: scanned" "false 300 0 0" "$(ck_try state 0 4294967295)"
	elif [ $p = bufferhash ]; then
		check_eq "$p: a next generation of 0: scanned" "false 300 0 0" "$(ck_try state 0 0)"
		check_eq "$p: a next generation of 2^62 - 1: scanned" "false 300 0 0" \
			"$(ck_try state 0 4611686018427387903)"
		check_eq "$p: a state word it has none of: scanned" "false 300 0 0" "$(ck_try state 1 99)"
	elif [ $p = cascade ]; then
		check_eq "$p: no open slab (sequence number 0): scanned" "false 300 0 0" "$(ck_try state 0 0)"
		check_eq "$p: an epoch newer than the superblock: scanned" "false 300 0 0" \
			"$(ck_try state 1 1099511627776)"
		check_eq "$p: T3's head past its log: scanned" "false 300 0 0" "$(ck_try state 3 4294967295)"
		check_eq "$p: a state word it has none of: scanned" "false 300 0 0" "$(ck_try state 4 99)"
	else
		check_eq "$p: the log's end past the log: scanned" "false 300 0 0" "$(ck_try state 0 4294967295)"
		check_eq "$p: a pass over 15: scanned" "false 300 0 0" "$(ck_try state 1 99)"
	fi
	# a write counter below the newest record's: refused where the newest
	# record is read anyway (Log's end, BufferHash's buffers); a table
	# policy's is not checked (Documentation/hashcache.rst says what follows);
	# Cascade orders records by where they are, not by it (one no record
	# could carry is refused)
	if [ $p = setmem ]; then
		check_eq "$p: a write counter of 1: used" "true 300 0 0" "$(ck_try wseq 1)"
	elif [ $p = cascade ]; then
		check_eq "$p: a write counter of 1: used" "true 300 0 0" "$(ck_try wseq 1)"
		check_eq "$p: a write counter of 2^62: scanned" "false 300 0 0" "$(ck_try wseq 4611686018427387904)"
	else
		check_eq "$p: a write counter of 1: scanned" "false 300 0 0" "$(ck_try wseq 1)"
		check_eq "$p: a write counter of 2^62: scanned" "false 300 0 0" "$(ck_try wseq 4611686018427387904)"
	fi
	for nb in 1 4 40; do
		set -- $(ck_try flip $nb $((CK_SEED + nb)))
		check_eq "$p: $nb random bits flipped (seed $((CK_SEED + nb)), attached from it: $1): no wrong object" 0 "$3"
	done
	if [ $p = bufferhash ] || [ $p = cascade ]; then
		# a head incarnation not in use, an open slab 0, is not what a scan leaves
		check_eq "$p: every byte 0: scanned" "false 300 0 0" "$(ck_try fill 0)"
	else
		check_eq "$p: every byte 0: an empty index, the objects hidden, none wrong" "true 0 0 300" "$(ck_try fill 0)"
	fi
	check "$p: puts and gets on it" sh -c "hcctl index attach $D && hcctl index put $D after v &&
		test \"\$(hcctl index get $D after)\" = v && hcctl index detach $D"
done

diag "at $(cut -d" " -f1 /proc/uptime)s: buffered readers of LOOKUP's offset"
# --- the page cache over what the index writes ----------------------------------
# lookup_read KEY: the value at LOOKUP's offset, read through the page cache
lookup_read() {
	set -- $(hcctl index lookup $D "$1")
	dd if=$D bs=4096 iflag=skip_bytes,count_bytes skip="$1" count="$2" 2>/dev/null
}
check "basic" hcctl index format --policy basic $D
check "attach" hcctl index attach $D
head -c 3000 /dev/urandom > /tmp/v1
head -c 3000 /dev/urandom > /tmp/v2
check "put k v1" sh -c "hcctl index put $D k < /tmp/v1"
# same_lookup KEY FILE: the value read through the page cache is FILE's
same_lookup() { lookup_read "$1" | cmp - "$2"; }
check "a buffered read at LOOKUP's offset gives v1 (and caches it)" same_lookup k /tmp/v1
check "put k v2 (in place: Basic has one way)" sh -c "hcctl index put $D k < /tmp/v2"
check "a buffered read there now gives v2, not the cached v1" same_lookup k /tmp/v2
check "detach" hcctl index detach $D
# a log of 64 records (the least: twice the write buffer): 64 more puts wrap it
check "log of 512 KiB" hcctl index format --policy log --log-size 512K $D
check "attach" hcctl index attach $D
check "put w0" hcctl index put $D w0 first
set -- $(hcctl index lookup $D w0)
OFF0=$1
check_eq "a buffered read of w0 (cached)" first "$(lookup_read w0)"
check "64 more puts: the log wraps over w0's record" mput_keys $D x 64 xval-
check "flush" hcctl index flush $D
hit=
for k in $(keys x 64); do
	set -- $(hcctl index lookup $D "$k")
	[ "$1" = "$OFF0" ] && { hit=$k; break; }
done
check "a record now where w0's was" test -n "$hit"
check_eq "a buffered read there gives that record's value" "xval-${hit#x}" \
	"$(lookup_read "${hit:-x0}")"
check "detach" hcctl index detach $D

diag "at $(cut -d" " -f1 /proc/uptime)s: ids"
# --- ids are never reused ------------------------------------------------------
check "format set" hcctl index format --policy set $D
check "attach" hcctl index attach $D
id1=$(hcctl --json index info $D | jq -r .id)
check "detach and attach again" sh -c "hcctl index detach $D && hcctl index attach $D"
id2=$(hcctl --json index info $D | jq -r .id)
check "a new id after detach and attach ($id1, then $id2)" test "$id2" != "$id1"
check "put" hcctl index put $D keep kept
# --- a caller's buffer that faults slowly stalls that caller only ------------------
out=$(hc-stall $D 2>&1)
case $? in
0) ok "hc-stall: PUT and GET with buffers behind userfaultfd stall no other caller"
   diag "hc-stall: $(printf '%s\n' "$out" | grep -c '^ok') checks passed" ;;
3) diag "hc-stall not run: this kernel has no userfaultfd (the 6.12 run has it)" ;;
*) not_ok "hc-stall: PUT and GET with buffers behind userfaultfd stall no other caller"
   printf '%s\n' "$out" | grep -v '^ok' | sed 's/^/# /' ;;
esac
check "detach" hcctl index detach $D

diag "at $(cut -d" " -f1 /proc/uptime)s: format sizes"
# --- format requests that do not fit ---------------------------------------------
# 2^48 sets of 64 KiB: 2^64 bytes, which wraps to 0 in 64 bits
check_eq "format with 2^48 sets of 64 KiB: exit 1" 1 \
	"$(rc hcctl index format --policy set --ways 8 --block-size 8K --sets 281474976710656 $D)"
# (EINVAL: hcctl's exit 2, a request that cannot be; before, kvmalloc's WARN and ENOMEM)
check_eq "format of a log with 2^29 sets of 8 ways (a 24 GiB RAM part): exit 2" 2 \
	"$(rc hcctl index format --policy log --sets 536870911 --ways 8 $D)"
check "the kernel log says why (RAM)" sh -c "dmesg | tail -n 5 | grep -q 'would need .* bytes of RAM'"
check "the index before is intact" sh -c \
	"hcctl index attach $D && test \"\$(hcctl index get $D keep)\" = kept && hcctl index detach $D"

diag "at $(cut -d" " -f1 /proc/uptime)s: torn overwrites"
# --- an overwrite cut at every crash point ---------------------------------------
# A set index under dm-log-writes: k put, then overwritten twice. At every FUA
# point of the log (every slot write is FUA) the replay copy is attached as it
# was, with the write in flight after the point torn (its first half garbage): k
# must hold "old" or "new", and the other keys their values; then k deleted must
# stay deleted, also across a detach and attach (a crash between the two writes
# of an overwrite leaves two copies: the older must not come back).
check "modprobe dm-log-writes" modprobe dm-log-writes
check "index device under the log" null_blk_add 24
check "log device" null_blk_add 64
check "replay device" null_blk_add 24
check "check copy" null_blk_add 24
U=/dev/nullb1 L=/dev/nullb2 R=/dev/nullb3
check "log-writes over it" dmsetup create lw --table "0 $(sectors $U) log-writes $U $L"
check "format set, 2 sets" hcctl index format --policy set --sets 2 /dev/mapper/lw
check "attach" hcctl index attach /dev/mapper/lw
check "6 puts" mput_keys /dev/mapper/lw o 6 oval-
check "k old" hcctl index put /dev/mapper/lw k old
check "flush" hcctl index flush /dev/mapper/lw
check "mark" dmsetup message lw 0 mark over
check "k new, twice" sh -c "hcctl index put /dev/mapper/lw k new && hcctl index put /dev/mapper/lw k new"
check "detach" hcctl index detach /dev/mapper/lw
check "log down" dmsetup remove lw
replay-log list $L > /tmp/hl.txt
cat > /tmp/torn-check.sh <<'EOF'
#!/bin/sh
# A crash point: the copy as the device was, and the next data write of the log,
# if any, half written (its first half garbage: a write torn by the power cut).
# Before the mark: k missing or "old"; after it: "old" or "new", the 6 others there.
set -u
C=/dev/nullb4
ssz=$(sed -n 's/^# sector size \([0-9]*\),.*/\1/p' /tmp/hl.txt)
next=$(awk -v e="$REPLAY_ENTRY" '$1 > e && $2 !~ /[DM]/ && $4 > 0 { print $3, $4; exit }' /tmp/hl.txt)
if [ -n "$next" ]; then
	set -- $next
	half=$(($2 / 2))
	[ "$half" -gt 0 ] && dd if=/dev/urandom of=$C bs="$ssz" seek="$1" count="$half" oflag=direct conv=notrunc 2>/dev/null
fi
if ! hcctl index attach $C > /dev/null 2>&1; then
	[ -z "$REPLAY_MARK" ] && exit 0	# formatting: no superblock yet
	echo "entry $REPLAY_ENTRY: attach failed after the mark"
	exit 1
fi
v=$(hcctl index get $C k 2>/dev/null)
o=$(printf 'o%s\n' 0 1 2 3 4 5 | hcctl index mget $C | awk -F'\t' '$2 == "oval-" substr($1, 2)' | wc -l)
w=$(printf 'o%s\n' 0 1 2 3 4 5 | hcctl index mget $C | awk -F'\t' 'NF > 1 && $2 != "oval-" substr($1, 2)' | wc -l)
d=
if [ -n "$v" ]; then
	hcctl index del $C k > /dev/null 2>&1 || d="the delete failed"
	[ -z "$d" ] && hcctl index get $C k > /dev/null 2>&1 && d="k still there after its delete"
	hcctl index detach $C > /dev/null && hcctl index attach $C > /dev/null || d="${d:-detach and attach after the delete failed}"
	[ -z "$d" ] && u=$(hcctl index get $C k 2>/dev/null) && d="k back after its delete, detach and attach: '$u'"
fi
hcctl index detach $C > /dev/null
[ -z "$d" ] || { echo "entry $REPLAY_ENTRY: $d"; exit 1; }
[ "$w" = 0 ] || { echo "entry $REPLAY_ENTRY: $w wrong values"; exit 1; }
if [ -z "$REPLAY_MARK" ]; then
	case $v in ""|old) exit 0 ;; esac
	echo "entry $REPLAY_ENTRY, before the mark: k is '$v'"
	exit 1
fi
case $v in old|new) ;; *) echo "entry $REPLAY_ENTRY: k is '$v', not old or new"; exit 1 ;; esac
[ "$o" = 6 ] || { echo "entry $REPLAY_ENTRY: $o of the 6 other keys"; exit 1; }
EOF
chmod +x /tmp/torn-check.sh
if replay-log sweep -e 1 -m 3 $L $R /dev/nullb4 /tmp/torn-check.sh > /tmp/torn.out 2>&1; then
	ok "every crash point, the next write torn: k old or new, the others there ($(tail -n 1 /tmp/torn.out))"
else
	not_ok "every crash point, the next write torn: k old or new, the others there"
	tail -n 20 /tmp/torn.out | sed 's/^/# /'
fi
check "remove hx" dmsetup remove hx
check "rmmod hashcache" rmmod hashcache
check "null_blk teardown" null_blk_teardown
