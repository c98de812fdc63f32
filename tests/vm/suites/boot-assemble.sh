# SPDX-License-Identifier: GPL-2.0
# One boot of scripts/boot-test.sh: a write-back volume from /etc/ssctab over
# disks on host files, assembled the way the boot unit does it (the
# ExecStartPre/ExecStart lines of user/system/ssc-assemble.service, run as
# written), that comes back after the VM is killed mid-write.
#   BOOT=1  fill the origin, assemble (formats the blank cache), verify a fio
#           region, then crash-io writes (each durable: fdatasync or FUA) until
#           the host kills the VM, BOOT_K acknowledged writes in
#   BOOT=2  assemble again (no format; the kernel recovers), every write
#           acknowledged before the kill reads back, the fio region too; then
#           idempotence and the unit's ExecStop
# Disks (virtio, serial numbers): ssc-cache 64 MiB, ssc-origin 128 MiB, ssc-ack
# 4 KiB: the number of the last acknowledged write, written O_DIRECT after each
# acknowledgment (QEMU has written a guest write to the host file before it
# completes, so what boot 2 reads there is exact).
# DKMS_SRCVERSION, DKMS_BUILD_ID (when the host built the packages): those of the
# dm-ssc.ko DKMS built, which must be the module loaded.

NBLK=8192	# crash-io's blocks: the first 32 MiB
NOPS=1000000	# more than a run reaches before the kill
SEED=${SSC_SEED:-1}
UNIT=/ssc/system/ssc-assemble.service
FIO_REGION="--offset=64M --size=16M"

modprobe virtio_pci 2>/dev/null
modprobe virtio_blk 2>/dev/null
# what udev's 60-persistent-storage rules would link: virtio-<serial>
mkdir -p /dev/disk/by-id
for s in /sys/block/vd*/serial; do
	[ -e "$s" ] || continue
	d=${s%/serial}
	ln -sf "../../${d##*/}" "/dev/disk/by-id/virtio-$(cat "$s")"
done
for n in cache origin ack; do
	check "disk ssc-$n is there (by-id)" test -b /dev/disk/by-id/virtio-ssc-$n
done
ACK=/dev/disk/by-id/virtio-ssc-ack

cat > /etc/ssctab <<'EOF'
# written by the boot-assemble suite, the same in both boots
data  /dev/disk/by-id/virtio-ssc-cache  /dev/disk/by-id/virtio-ssc-origin  writeback  format=blank,segment-size=128K,dirty-high=20,dirty-low=5
EOF

# unit_run KEY: run the unit file's KEY= lines as systemd would (a leading "-"
# ignores the exit status)
unit_run() {
	sed -n "s/^$1=//p" "$UNIT" | while read -r cmd; do
		case $cmd in
		-*) sh -c "${cmd#-}" || true ;;
		*) sh -c "$cmd" || exit 1 ;;
		esac
	done
}

if [ "${BOOT:-1}" = 1 ]; then
	check "fill the origin (crash-io's version 0)" crash-io fill /dev/disk/by-id/virtio-ssc-origin $NBLK
	dd if=/dev/zero of=$ACK bs=4096 count=1 oflag=direct 2>/dev/null
fi

check "the unit's ExecStartPre and ExecStart assemble /etc/ssctab" unit_run ExecStartPre
out=$(unit_run ExecStart 2>&1)
if [ "${BOOT:-1}" = 1 ]; then
	want='^data: assembled \(formatted '
else
	want='^data: assembled \(/dev/vd'
fi
if printf '%s\n' "$out" | grep -qE "$want"; then
	ok "boot $BOOT: assemble says /$want/"
else
	not_ok "boot $BOOT: assemble says /$want/"
	diag "$out"
fi
check_eq "data is a write-back ssc volume" writeback "$(ssc_stat data mode)"
if [ -n "${DKMS_SRCVERSION:-}" ]; then
	check_eq "the dm-ssc loaded is the one DKMS built (srcversion)" "$DKMS_SRCVERSION" \
		"$(cat /sys/module/dm_ssc/srcversion 2>/dev/null)"
	# the ELF note: 12 bytes of header, "GNU\0", then the ID
	check_eq "... and exactly that binary (build ID)" "$DKMS_BUILD_ID" \
		"$(od -An -tx1 -j16 /sys/module/dm_ssc/notes/.note.gnu.build-id 2>/dev/null | tr -d ' \n')"
fi

if [ "${BOOT:-1}" = 1 ]; then
	check "fio writes and verifies a region" fio --name=region --filename=/dev/mapper/data \
		--rw=randwrite --bs=4k $FIO_REGION --direct=1 --ioengine=psync --verify=crc32c \
		--randseed="$SEED" --do_verify=1
	check_eq "recovered is 0 on a fresh cache" 0 "$(ssc_stat data recovered)"
	crash_until_killed /dev/mapper/data "$ACK"
else
	acked=$(ack_read "$ACK")
	diag "boot 2: the last acknowledged op of boot 1 was ${acked:-none}"
	check "boot 1 acknowledged writes before the kill" test "${acked:-0}" -gt 0
	check_eq "recovery ran (unclean shutdown)" 1 "$(ssc_stat data recovered)"
	diag "status after recovery: $(dmsetup status data)"
	check "every write acknowledged before the kill reads back (crash-io check)" \
		crash-io check /dev/mapper/data $NBLK $NOPS "$SEED" "${acked:-0}"
	check "the fio region of boot 1 verifies" fio --name=region --filename=/dev/mapper/data \
		--rw=randwrite --bs=4k $FIO_REGION --direct=1 --ioengine=psync --verify=crc32c \
		--randseed="$SEED" --verify_only=1
	out=$(unit_run ExecStart 2>&1)
	check_eq "assemble again: already assembled" "data: already assembled" "$out"
	check "the unit's ExecStop disassembles" unit_run ExecStop
	check_fails "data is gone" dmsetup info data
	check "assemble after a clean disassemble" unit_run ExecStart
	check_eq "... needs no recovery" 0 "$(ssc_stat data recovered)"
	check "... and every acknowledged write is still there" \
		crash-io check /dev/mapper/data $NBLK $NOPS "$SEED" "${acked:-0}"
	check "hcctl disassemble --flush writes back and removes" hcctl disassemble --flush
	check_fails "data is gone" dmsetup info data
	check "the origin alone holds every acknowledged write" \
		crash-io check /dev/disk/by-id/virtio-ssc-origin $NBLK $NOPS "$SEED" "${acked:-0}"
fi
