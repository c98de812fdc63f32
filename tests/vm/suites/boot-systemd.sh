# SPDX-License-Identifier: GPL-2.0
# One boot of scripts/boot-test.sh --systemd: the boot-time assembly of
# /etc/ssctab under the real systemd and udev of a Debian 12 guest
# (scripts/debian-image.sh; tests/vm/init switched to it). The hcctl package
# was installed with dpkg -i at the run's first boot: its ssc-assemble.service
# and 69-ssc.rules are the ones under test. This suite runs from
# ssc-test.service, ordered after ssc-assemble.service.
#   BOOT=1  the unit assembled "data" (formatting its blank cache) before this
#           service started; "late", whose origin is not plugged in, is left for
#           later; the host hot-plugs that disk (QEMU device_add) and the udev
#           rule assembles "late"; then crash-io writes to "data" (each write
#           durable before it is acknowledged) until the host kills the VM,
#           BOOT_K acknowledged writes in
#   BOOT=2  the unit assembled both again; the kernel recovered "data"; every
#           write acknowledged before the kill reads back; systemctl stop
#           ssc-assemble.service disassembles both
# Disks (virtio, serial numbers, so udev links /dev/disk/by-id/virtio-<serial>):
# ssc-cache 64 MiB, ssc-origin 128 MiB (filled with crash-io's version 0 by the
# host), ssc-ack 4 KiB (the number of the last acknowledged write, as in
# boot-assemble), ssc-lcache 32 MiB, ssc-lorig 64 MiB (hot-plugged in boot 1).
# DKMS_SRCVERSION, DKMS_BUILD_ID (when the host built the packages): those of the
# dm-ssc.ko DKMS built, which must be the module loaded.

NBLK=8192	# crash-io's blocks: the first 32 MiB
NOPS=1000000	# more than a run reaches before the kill
SEED=${SSC_SEED:-1}
ID=/dev/disk/by-id/virtio-ssc
ACK=$ID-ack
HOTPLUG_WAIT=90	# seconds for the hot-plugged disk's volume to appear

# first, before anything could have made it: the volume the unit assembled
if [ -b /dev/mapper/data ]; then
	ok "boot $BOOT: /dev/mapper/data is there when a service ordered after ssc-assemble.service starts"
else
	not_ok "boot $BOOT: /dev/mapper/data is there when a service ordered after ssc-assemble.service starts"
	diag "dmsetup ls: $(dmsetup ls 2>&1 | tr '\n' '|')"
	journalctl -b -o short-monotonic --no-pager 2>&1 |
		grep -iE 'hcctl|ssc-assemble|ssc volumes|dm-ssc|vd[a-z]|udev' | tail -n 40 | sed 's/^/# /'
fi

check_eq "PID 1 is systemd" systemd "$(cat /proc/1/comm)"
check_eq "the hcctl package is installed (dpkg -i at the first boot)" "install ok installed" \
	"$(dpkg-query -W -f='${Status}' hcctl 2>&1)"
check_eq "ssc-assemble.service is the packaged unit" /lib/systemd/system/ssc-assemble.service \
	"$(systemctl show -P FragmentPath ssc-assemble.service)"
check_eq "ssc-assemble.service is enabled (by the package's postinst)" enabled \
	"$(systemctl is-enabled ssc-assemble.service 2>&1)"
check_eq "ssc-assemble.service is active" active "$(systemctl is-active ssc-assemble.service 2>&1)"
check "udev's 69-ssc.rules is installed" test -f /lib/udev/rules.d/69-ssc.rules
links() {
	for n in cache origin ack lcache; do test -L "$ID-$n" || { echo "no $ID-$n"; return 1; }; done
}
now_cs
t0=$NOW
check "udevadm settle" udevadm settle --timeout=120
slow "udevadm settle" "$t0"
check "udev linked the disks by serial (/dev/disk/by-id/virtio-ssc-*)" links
# ordering: the unit was active before this service started
t_unit=$(systemctl show -P ActiveEnterTimestampMonotonic ssc-assemble.service)
t_test=$(systemctl show -P ExecMainStartTimestampMonotonic ssc-test.service)
if [ -n "$t_unit" ] && [ -n "$t_test" ] && [ "$t_unit" -gt 0 ] && [ "$t_unit" -le "$t_test" ]; then
	ok "ssc-assemble.service was active before ssc-test.service started"
else
	not_ok "ssc-assemble.service was active before ssc-test.service started # $t_unit vs $t_test"
fi
diag "boot $BOOT: ssc-assemble.service active at $((t_unit / 1000)) ms, ssc-test.service started at $((t_test / 1000)) ms (uptime)"
unit_log=$(journalctl -b -u ssc-assemble.service -o cat --no-pager 2>&1)
diag "ssc-assemble.service said: $(printf '%s' "$unit_log" | tr '\n' '|')"
# the boot unit or the udev rule (for a device udev got to first): hcctl said it
hcctl_log=$(journalctl -b -t hcctl -o cat --no-pager 2>&1)
if [ "$BOOT" = 1 ]; then
	want='^data: assembled \(formatted '
else
	want='^data: assembled \(/dev/vd'
fi
if printf '%s\n' "$hcctl_log" | grep -qE "$want"; then
	ok "boot $BOOT: hcctl assemble (the unit's or the udev rule's) says /$want/"
else
	not_ok "boot $BOOT: hcctl assemble (the unit's or the udev rule's) says /$want/"
	diag "hcctl said: $(printf '%s' "$hcctl_log" | tr '\n' '|')"
fi
check_eq "data is a write-back ssc volume" writeback "$(ssc_stat data mode)"
kver=$(uname -r)
check_eq "dm-ssc is loaded from /lib/modules/$kver/updates" "/lib/modules/$kver/updates/dm-ssc.ko" \
	"$(modinfo -n dm-ssc 2>&1)"
if [ -n "${DKMS_SRCVERSION:-}" ]; then
	check_eq "the dm-ssc loaded is the one DKMS built" "$DKMS_SRCVERSION" \
		"$(cat /sys/module/dm_ssc/srcversion 2>/dev/null)"
fi
if [ -n "${DKMS_BUILD_ID:-}" ]; then
	# the ELF note: 12 bytes of header, "GNU\0", then the ID
	check_eq "... and exactly that binary (build ID)" "$DKMS_BUILD_ID" \
		"$(od -An -tx1 -j16 /sys/module/dm_ssc/notes/.note.gnu.build-id 2>/dev/null | tr -d ' \n')"
fi

# wait_for NAME SECONDS: NAME's device-mapper device and its /dev/mapper node appear
wait_for() {
	i=0
	while [ $i -lt "$2" ]; do
		dmsetup info "$1" >/dev/null 2>&1 && [ -b "/dev/mapper/$1" ] && return 0
		sleep 1
		i=$((i + 1))
	done
	return 1
}

if [ "$BOOT" = 1 ]; then
	check_fails "late is not assembled: its origin is not plugged in" dmsetup info late
	check "... and not there: $ID-lorig" test ! -e "$ID-lorig"
	now_cs
	t0=$NOW
	echo "@@HOTPLUG ssc-lorig"
	if wait_for late $HOTPLUG_WAIT; then
		now_cs
		ok "the hot-plugged disk's volume late is assembled by the udev rule ($(((NOW - t0) / 100)) s after the host's device_add)"
	else
		not_ok "the hot-plugged disk's volume late is assembled by the udev rule (within $HOTPLUG_WAIT s)"
		diag "$(ls -l /dev/disk/by-id/ 2>&1 | tr '\n' '|')"
		diag "$(journalctl -b -o short-monotonic --no-pager 2>&1 | grep -iE 'hcctl|ssc-assemble|ssc volumes|dm-ssc|vd[a-z]|udev' | tail -n 30 | tr '\n' '|')"
	fi
	check_eq "late is a write-through ssc volume" writethrough "$(ssc_stat late mode)"
	late_log=$(journalctl -b -o cat --no-pager 2>&1 | grep -E '^late: ')
	diag "the journal on late: $(printf '%s' "$late_log" | tr '\n' '|')"
	if printf '%s\n' "$late_log" | grep -qE '^late: assembled \(formatted '; then
		ok "late: assembled (formatted) by hcctl assemble --device, run by the udev rule"
	else
		not_ok "late: assembled (formatted) by hcctl assemble --device, run by the udev rule"
	fi

	check_eq "recovered is 0 on a fresh cache" 0 "$(ssc_stat data recovered)"
	crash_until_killed /dev/mapper/data "$ACK"
else
	check_eq "late is assembled by the unit at boot too" writethrough "$(ssc_stat late mode)"
	acked=$(ack_read "$ACK")
	diag "boot 2: the last acknowledged op of boot 1 was ${acked:-none}"
	check "boot 1 acknowledged writes before the kill" test "${acked:-0}" -gt 0
	check_eq "recovery ran (unclean shutdown)" 1 "$(ssc_stat data recovered)"
	diag "status after recovery: $(dmsetup status data)"
	check "every write acknowledged before the kill reads back (crash-io check)" \
		crash-io check /dev/mapper/data $NBLK $NOPS "$SEED" "${acked:-0}"
	check "systemctl stop ssc-assemble.service" systemctl stop ssc-assemble.service
	check_eq "... the unit is inactive" inactive "$(systemctl is-active ssc-assemble.service 2>&1)"
	check_fails "... data is gone" dmsetup info data
	check_fails "... late is gone" dmsetup info late
	check "... /dev/mapper/data and /dev/mapper/late are gone" \
		sh -c '! test -e /dev/mapper/data && ! test -e /dev/mapper/late'
	stop_log=$(journalctl -b -u ssc-assemble.service -o cat --no-pager 2>&1)
	check "... it said 'data: disassembled' and 'late: disassembled'" \
		sh -c 'printf "%s\n" "$1" | grep -qx "data: disassembled" && printf "%s\n" "$1" | grep -qx "late: disassembled"' _ "$stop_log"
	check "systemctl start ssc-assemble.service: assembled again" systemctl start ssc-assemble.service
	check_eq "... after a clean stop, no recovery" 0 "$(ssc_stat data recovered)"
	check "... every acknowledged write is still there" \
		crash-io check /dev/mapper/data $NBLK $NOPS "$SEED" "${acked:-0}"
	check "systemctl stop ssc-assemble.service again" systemctl stop ssc-assemble.service
	check "... nothing of the volumes is left" sh -c '! dmsetup info data && ! dmsetup info late'
fi
