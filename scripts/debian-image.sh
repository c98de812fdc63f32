#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# A small Debian 12 (bookworm) root file system with systemd and udev, for the test
# VM to switch into (tests/vm/init's ssc.root= mode): the boot-time assembly of
# /etc/ssctab tested under the real systemd and udev (scripts/boot-test.sh --systemd).
# Prints the path of the image, an ext4 file system in a raw file.
#
# Built once with debootstrap (minbase) from deb.debian.org and cached under
# $SSC_CACHE/debian-image/, keyed by a hash of the package list and of this script;
# the file system is made from the directory by mkfs.ext4 -d, never mounted on the
# host. A run takes a cheap copy (it writes to it) and adds what it tests.
#
# In the image: no network, no login; a serial console (kernel and systemd messages
# on ttyS0), the units that only slow a boot under TCG masked, and
# ssc-test.service: after ssc-assemble.service (when the hcctl package installed
# it), runs the VM suites the kernel command line names (ssc.suites=, ssc.env.*,
# as tests/vm/init does) with results on ttyS1, then powers the machine off.
set -euo pipefail
. "$(dirname "$0")/common.sh"

SUITE=bookworm
MIRROR=http://deb.debian.org/debian
# systemd and udev, hcctl's run-time libraries (its package's Depends), and what the
# suites use (dmsetup; util-linux and procps are in minbase already, named to be sure)
PKGS="systemd systemd-sysv udev kmod dmsetup libdevmapper1.02.1 libjson-c5 libnl-3-200
	libnl-genl-3-200 libblkid1 util-linux procps"
SIZE=1G
# slow or useless in a test VM without network or terminal
MASK="getty.target getty@tty1.service serial-getty@ttyS0.service console-getty.service
	systemd-firstboot.service systemd-timesyncd.service systemd-logind.service
	apt-daily.timer apt-daily-upgrade.timer dpkg-db-backup.timer e2scrub_all.timer
	e2scrub_reap.service fstrim.timer systemd-tmpfiles-clean.timer systemd-pstore.service
	systemd-networkd.service systemd-networkd-wait-online.service systemd-resolved.service
	systemd-journal-flush.service systemd-hwdb-update.service systemd-update-utmp.service
	systemd-update-utmp-runlevel.service ldconfig.service"

key=$( { echo "$SUITE $MIRROR $SIZE $PKGS"; cat "$0"; } | sha256sum | cut -c1-12)
dir="$SSC_CACHE/debian-image/$SUITE-$key"
img="$dir/root.img"

mkdir -p "$SSC_CACHE/debian-image"
exec 9>"$SSC_CACHE/debian-image/.lock"
flock 9
if [ -e "$dir/.done" ]; then
	echo "$img"
	exit 0
fi
command -v debootstrap >/dev/null || die "debootstrap is not installed (run scripts/deps.sh)"
t0=$SECONDS
log "debian-image: debootstrap $SUITE (minbase + $(echo $PKGS | wc -w) packages) into $dir"
rm -rf "$dir"
mkdir -p "$dir"
root="$dir/rootfs"
# shellcheck disable=SC2086 # the list, comma-separated
debootstrap --variant=minbase --include="$(echo $PKGS | tr ' ' ,)" "$SUITE" "$root" "$MIRROR" \
	>"$dir/debootstrap.log" 2>&1 || { tail -n 30 "$dir/debootstrap.log" >&2; die "debootstrap failed ($dir/debootstrap.log)"; }
log "debian-image: debootstrap done in $((SECONDS - t0))s"

echo ssc-debian >"$root/etc/hostname"
printf '127.0.0.1\tlocalhost\n127.0.1.1\tssc-debian\n' >"$root/etc/hosts"
# the root file system: tests/vm/init mounted it read-write already; no fsck of a
# mounted file system
printf '/dev/vda\t/\text4\trw,noatime,errors=remount-ro\t0\t0\n' >"$root/etc/fstab"
# a machine ID (no first-boot setup), the same in every copy
echo 5dc5ca0e5dc5ca0e5dc5ca0e5dc5ca0e >"$root/etc/machine-id"
: >"$root/etc/resolv.conf"
# the journal in memory only: nothing to flush, less to write
mkdir -p "$root/etc/systemd/journald.conf.d"
printf '[Journal]\nStorage=volatile\nRuntimeMaxUse=16M\n' >"$root/etc/systemd/journald.conf.d/ssc.conf"
# status lines on the console (the serial one), kept short
mkdir -p "$root/etc/systemd/system.conf.d"
printf '[Manager]\nShowStatus=yes\nStatusUnitFormat=name\nDefaultTimeoutStartSec=120s\nDefaultTimeoutStopSec=30s\n' \
	>"$root/etc/systemd/system.conf.d/ssc.conf"

cat >"$root/usr/local/sbin/ssc-test-run" <<'EOF'
#!/bin/sh
# ssc-test.service: the VM suites of ssc.suites= (kernel command line), results on
# ttyS1 (what scripts/vm.sh reads), then power off. The suites come from
# tests/vm (tests/vm/init copies them to /ssc before it switches root).
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
suites=
for arg in $(cat /proc/cmdline); do
	case $arg in
	ssc.suites=*) suites=$(echo "${arg#ssc.suites=}" | tr , ' ') ;;
	ssc.env.*=*) a=${arg#ssc.env.}; export "${a%%=*}=${a#*=}" ;;
	esac
done
echo "@@SYSTEMD_OK uptime=$(cut -d' ' -f1 /proc/uptime)" > /dev/console
if [ -x /ssc/run-suites.sh ] && [ -n "$suites" ]; then
	/ssc/run-suites.sh $suites > /dev/ttyS1 2>&1
else
	echo "not ok ssc-test: /ssc/run-suites.sh and ssc.suites= are there" > /dev/ttyS1
	echo "@@END" > /dev/ttyS1
fi
sync
systemctl --no-block poweroff
EOF
chmod 755 "$root/usr/local/sbin/ssc-test-run"
cat >"$root/etc/systemd/system/ssc-test.service" <<'EOF'
[Unit]
Description=ssc test suites (results on ttyS1)
After=ssc-assemble.service basic.target systemd-udevd.service
ConditionPathExists=/ssc/run-suites.sh

[Service]
Type=oneshot
ExecStart=/usr/local/sbin/ssc-test-run
StandardOutput=journal+console
TimeoutStartSec=infinity

[Install]
WantedBy=multi-user.target
EOF

# shellcheck disable=SC2086
chroot "$root" /bin/sh -c "systemctl set-default multi-user.target >/dev/null &&
	systemctl enable ssc-test.service 2>/dev/null &&
	systemctl mask $(echo $MASK) >/dev/null 2>&1"
# smaller: no package cache or lists, no documentation, no locales but C
rm -rf "$root"/var/cache/apt/*.bin "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/* \
	"$root"/usr/share/doc/* "$root"/usr/share/man/* "$root"/usr/share/info/* "$root"/usr/share/locale/* \
	"$root"/var/log/*.log "$root"/var/log/apt/*
log "debian-image: $(du -sm "$root" | cut -f1) MiB, making $img ($SIZE, ext4)"
mkfs.ext4 -q -F -L ssc-debian -d "$root" "$img" "$SIZE" >"$dir/mkfs.log" 2>&1 ||
	{ cat "$dir/mkfs.log" >&2; die "mkfs.ext4 -d failed"; }
rm -rf "$root"
echo "$PKGS" | tr -s ' \t' '\n\n' >"$dir/packages"
echo "$((SECONDS - t0))" >"$dir/build-seconds"
touch "$dir/.done"
log "debian-image: built in $((SECONDS - t0))s"
echo "$img"
