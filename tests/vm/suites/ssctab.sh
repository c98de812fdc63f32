# SPDX-License-Identifier: GPL-2.0
# /etc/ssctab and hcctl assemble/disassemble (ssctab(5)): volumes created from
# the file, idempotent runs, noauto, --device/--listed (the udev rule's
# questions), clean retirement, and every refusal that protects a cache: a
# device listed twice, one a live volume uses, a cache formatted for another
# origin, a blank device without format=blank, a device holding something
# else, an ssc superblock whose CRC fails; two assembles at once.
# Devices: nullb0 16 MiB cache A, nullb1 64 MiB origin A, nullb2 16 MiB cache B,
# nullb3 64 MiB origin B, nullb4 128 MiB origin of another size, nullb5 16 MiB
# blank, nullb6 and nullb7 16 MiB (a cache reused for bcache). /dev/disk/by-id
# links are made by hand (no udev in here).

check "modprobe dm-ssc" modprobe dm-ssc
for mb in 16 64 16 64 128 16 16 16; do
	check "null_blk device of $mb MiB" null_blk_add "$mb"
done
mkdir -p /dev/disk/by-id
ln -sf ../../nullb0 /dev/disk/by-id/test-cache-a
ln -sf ../../nullb1 /dev/disk/by-id/test-origin-a

T=/tmp/ssctab
# says WHAT PATTERN CMD...: ok if CMD's output (stdout and stderr) matches PATTERN
says() {
	w=$1 p=$2
	shift 2
	o=$("$@" 2>&1)
	if printf '%s\n' "$o" | grep -qE "$p"; then
		ok "$w"
	else
		not_ok "$w"
		printf '%s\n' "$o" | tail -n 5 | sed 's/^/# /'
	fi
}

cat > $T <<'EOF'
# test volumes
a  /dev/disk/by-id/test-cache-a  /dev/disk/by-id/test-origin-a  writeback  format=blank,segment-size=128K,dirty-high=40,dirty-low=20

b  /dev/nullb2  /dev/nullb3  writethrough  noauto,format=blank,segment-size=128K,admit=all
EOF

# --- first assemble: formats the blank cache, skips noauto ---------------------
says "--check: would format a" '^a: would format /dev/nullb0 over /dev/nullb1 \(writeback\)' \
	hcctl assemble --file $T --check
check_fails "--check created nothing" dmsetup info a
says "assemble formats and creates a" '^a: assembled \(formatted /dev/nullb0 over /dev/nullb1\)' \
	hcctl assemble --file $T
check_eq "a's table: the line's mode and options, by-id paths resolved" \
	"$(cat /sys/block/nullb0/dev) $(cat /sys/block/nullb1/dev) 8 11 writeback segment_size 256 dirty_high 40 dirty_low 20 sequential_threshold 0 admit reuse" \
	"$(dmsetup table a | cut -d' ' -f4-)"
check_fails "noauto: b not created by a plain assemble" dmsetup info b
t1=$(dmsetup table a)
says "assemble again: a is already there" '^a: already assembled' hcctl assemble --file $T
check_eq "assemble again: exit 0" 0 "$(rc hcctl assemble --file $T)"
check_eq "assemble again: table unchanged" "$t1" "$(dmsetup table a)"
check_eq "assemble b by name (noauto)" 0 "$(rc hcctl assemble --file $T b)"
check_eq "b's table has its options" "writethrough segment_size 256 dirty_high 20 dirty_low 10 sequential_threshold 0 admit all" \
	"$(dmsetup table b | cut -d' ' -f8-)"

# --- data survives disassemble / assemble ----------------------------------------
dd if=/dev/urandom of=/tmp/data bs=4k count=256 2>/dev/null
check "write 1 MiB to a" dd if=/tmp/data of=/dev/mapper/a bs=4k oflag=direct conv=fsync
dirty=$(ssc_stat a dirty)
check "a holds dirty blocks" test "${dirty:-0}" -gt 0
says "disassemble removes both" '^a: disassembled' hcctl disassemble --file $T
check_fails "a is gone" dmsetup info a
check_fails "b is gone" dmsetup info b
check_eq "disassemble with nothing live: exit 0" 0 "$(rc hcctl disassemble --file $T)"
says "assemble loads a's cache, no format" '^a: assembled \(/dev/nullb0 over' hcctl assemble --file $T
check_eq "the dirty blocks are still dirty" "$dirty" "$(ssc_stat a dirty)"
check "the data reads back" sh -c "dd if=/dev/mapper/a bs=4k count=256 iflag=direct 2>/dev/null | cmp - /tmp/data"

# --- the udev rule's questions -----------------------------------------------------
check_eq "--listed: a's origin is listed" 0 "$(rc hcctl assemble --file $T --listed /dev/nullb1)"
check_eq "--listed: by its by-id link too" 0 "$(rc hcctl assemble --file $T --listed /dev/disk/by-id/test-cache-a)"
check_eq "--listed: noauto b's device is not" 1 "$(rc hcctl assemble --file $T --listed /dev/nullb2)"
check_eq "--listed: another device is not" 1 "$(rc hcctl assemble --file $T --listed /dev/nullb4)"
check_eq "--listed: a device that is gone is not" 1 "$(rc hcctl assemble --file $T --listed /dev/nullb99)"
hcctl disassemble --file $T > /dev/null
check "disassemble marks a down" test -e /run/ssc/a.down
says "--device of a's origin: a was taken down by hand, left down" 'a: disassembled by hand: not assembled' \
	hcctl assemble --file $T --device /dev/nullb1
check_fails "... a not created" dmsetup info a
rm -f /run/ssc/a.down	# what a reboot does (/run is a tmpfs)
check_eq "--device of another disk creates nothing" 0 "$(rc hcctl assemble --file $T --device /dev/nullb4)"
check_fails "... a not created" dmsetup info a
check_eq "--device of a's origin creates a" 0 "$(rc hcctl assemble --file $T --device /dev/nullb1)"
check "... a is live" dmsetup info a
hcctl disassemble --file $T a > /dev/null
check_eq "an assemble by hand brings a back after a disassemble" 0 "$(rc hcctl assemble --file $T a)"
check_fails "... and clears the mark" test -e /run/ssc/a.down
hcctl disassemble --file $T a > /dev/null
rm -f /run/ssc/a.down
# a line without segment-size or block-size: both come from the superblock
echo "a  /dev/nullb0  /dev/nullb1  writeback" > /tmp/ssctab.plain
check_eq "a line without sizes loads a cache formatted with 128 KiB segments" 0 \
	"$(rc hcctl assemble --file /tmp/ssctab.plain)"
check_eq "... its table has them" "8 11 writeback segment_size 256" "$(dmsetup table a | cut -d' ' -f6-10)"
hcctl disassemble --file /tmp/ssctab.plain > /dev/null
rm -f /run/ssc/a.down
echo "a  /dev/nullb0  /dev/nullb1  writeback  segment-size=1M" > /tmp/ssctab.plain
says "a segment-size that is not the superblock's: refused" 'formatted with 131072-byte segments, not segment-size=1048576' \
	hcctl assemble --file /tmp/ssctab.plain
echo "s  /dev/nullb1  /dev/nullb0  writeback" > /tmp/ssctab.swapped
says "cache and origin swapped: refused (the origin holds an ssc superblock)" 'origin device /dev/nullb0 holds an ssc cache superblock: are cache and origin swapped' \
	hcctl assemble --file /tmp/ssctab.swapped
check_fails "... nothing created" dmsetup info s
check_eq "a comes back for the tests below" 0 "$(rc hcctl assemble --file $T --device /dev/nullb1)"

# --- refusals ---------------------------------------------------------------------
cat > /tmp/ssctab.twice <<'EOF'
a  /dev/nullb0  /dev/nullb1  writeback
c  /dev/disk/by-id/test-cache-a  /dev/nullb3  writeback
EOF
says "a device listed twice (by two names): refused" 'c: a device it uses is also listed for a on line 1' \
	hcctl assemble --file /tmp/ssctab.twice
check_eq "... exit 1" 1 "$(rc hcctl assemble --file /tmp/ssctab.twice)"
check_fails "... c not created" dmsetup info c
echo "c  /dev/nullb0  /dev/nullb3  writeback" > /tmp/ssctab.c
says "a cache a live volume uses: refused" 'cache device /dev/nullb0 belongs to live volume a' \
	hcctl assemble --file /tmp/ssctab.c
check_fails "... c not created" dmsetup info c
dmsetup create holder --table "0 8 linear /dev/nullb5 0"
echo "h  /dev/nullb5  /dev/nullb3  writeback  format=blank" > /tmp/ssctab.h
says "a cache held by another device: refused, the holder named" 'held by holder' \
	hcctl assemble --file /tmp/ssctab.h
dmsetup remove holder
hcctl disassemble --file $T > /dev/null
echo "c  /dev/nullb0  /dev/nullb4  writeback" > /tmp/ssctab.c
says "a cache formatted for another origin: refused" 'formatted for an origin of 16384 blocks, and /dev/nullb4 has 32768: it belongs to another volume' \
	hcctl assemble --file /tmp/ssctab.c
check_fails "... c not created" dmsetup info c
# an ssc cache whose metadata a bcache superblock now covers (a device reused):
# its ssc superblock still checks, but it is no ssc cache any more
check "a cache formatted on nullb6" sh -c \
	"hcctl create r --cache /dev/nullb6 --origin /dev/nullb3 --format --segment-size 128K >/dev/null && dmsetup remove r"
check "a bcache superblock made on nullb7" make-bcache --bucket 64k -C /dev/nullb7
dd if=/dev/nullb7 of=/dev/nullb6 bs=4096 skip=1 seek=1 count=1 conv=notrunc oflag=direct 2>/dev/null
echo "r  /dev/nullb6  /dev/nullb3  writeback" > /tmp/ssctab.r
says "another signature over an ssc cache's metadata: refused" 'holds a bcache signature over an ssc superblock.s metadata' \
	hcctl assemble --file /tmp/ssctab.r
check_fails "... nothing created" dmsetup info r
echo "n  /dev/nullb5  /dev/nullb3  writeback" > /tmp/ssctab.n
says "a blank cache without format=blank: refused" 'is blank: add format=blank' \
	hcctl assemble --file /tmp/ssctab.n
dd if=/dev/urandom of=/dev/nullb5 bs=4k count=1 seek=100 oflag=direct 2>/dev/null
echo "n  /dev/nullb5  /dev/nullb3  writeback  format=blank" > /tmp/ssctab.n
says "format=blank, but data in its first MiB: refused" 'holds something else, not an ssc cache' \
	hcctl assemble --file /tmp/ssctab.n
dd if=/dev/zero of=/dev/nullb5 bs=4k count=256 oflag=direct 2>/dev/null
# an ssc superblock's magic ("SSCS", little endian) with a CRC that does not match
printf 'XXXXSCSS' | dd of=/dev/nullb5 bs=8 count=1 conv=notrunc 2>/dev/null
blockdev --flushbufs /dev/nullb5
says "an ssc superblock failing its CRC: refused, never formatted" 'fails its CRC' \
	hcctl assemble --file /tmp/ssctab.n
check_eq "... its bytes untouched" "XXXXSCSS" "$(dd if=/dev/nullb5 bs=8 count=1 2>/dev/null)"
check_fails "nothing created by the refusals" dmsetup info n
says "a still assembles after all that, its data intact" '^a: assembled' hcctl assemble --file $T a
check "... the data reads back" sh -c "dd if=/dev/mapper/a bs=4k count=256 iflag=direct 2>/dev/null | cmp - /tmp/data"

# --- bad lines, missing devices ----------------------------------------------------
cat > /tmp/ssctab.bad <<'EOF'
x /dev/nullb2
y /dev/nullb2 /dev/nullb3 writefast
z /dev/nullb2 /dev/nullb3 writethrough frobnicate
w /dev/nullb2 /dev/nullb3 writethrough format=blank,segment-size=128K
gone /dev/disk/by-id/not-there /dev/nullb4 writethrough
EOF
o=$(hcctl assemble --file /tmp/ssctab.bad 2>&1)
rcb=$?
check_eq "a file with bad lines: exit 1" 1 "$rcb"
for p in 'ssctab.bad:1: want NAME CACHE ORIGIN MODE' "ssctab.bad:2: y: bad mode 'writefast'" \
	"ssctab.bad:3: z: unknown option 'frobnicate'" '^gone: waiting for cache device /dev/disk/by-id/not-there'; do
	if printf '%s\n' "$o" | grep -qE "$p"; then ok "bad file: says /$p/"; else not_ok "bad file: says /$p/"; diag "$o"; fi
done
check "bad file: the good line is still assembled" dmsetup info w
check_eq "a named volume whose device is missing: exit 1" 1 "$(rc hcctl assemble --file /tmp/ssctab.bad gone)"
check_eq "a name not listed: exit 3" 3 "$(rc hcctl assemble --file $T nosuch)"
check_eq "no such file, nothing named: nothing to do, exit 0" 0 "$(rc hcctl assemble --file /tmp/none)"
hcctl disassemble --file /tmp/ssctab.bad > /dev/null 2>&1
hcctl disassemble --file $T > /dev/null

# --- two at once (the boot unit and a udev run): the lock makes one wait ----------
dd if=/dev/zero of=/dev/nullb2 bs=1M count=1 oflag=direct 2>/dev/null
hcctl assemble --file $T b > /tmp/as1 2>&1 &
p1=$!
hcctl assemble --file $T b > /tmp/as2 2>&1 &
p2=$!
wait $p1; r1=$?
wait $p2; r2=$?
check_eq "two assembles at once: both exit 0" "0 0" "$r1 $r2"
check_eq "... one formats and creates, one finds it there" "1 1" \
	"$(cat /tmp/as1 /tmp/as2 | grep -c '^b: assembled (formatted') $(cat /tmp/as1 /tmp/as2 | grep -c '^b: already assembled')"
hcctl disassemble --file $T > /dev/null
check_fails "disassemble: b gone" dmsetup info b
null_blk_teardown
