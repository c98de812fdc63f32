#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The deb stage of make check: the Debian packages, on this host, as an admin uses them.
#   - make deb (scripts/deb.sh) builds ssc-dkms, hcctl, libssdalloc0 and
#     libssdalloc-dev; lintian is clean
#   - dpkg -i of both: DKMS builds and installs the modules for Debian's 6.12 kernel
#     (no flashvm: no hooks there); hcctl, its manual pages, completion and the
#     boot-time assembly files are in place, /etc/ssctab a conffile
#   - a kernel upgrade: the hook a kernel package runs (/etc/kernel/postinst.d/dkms)
#     builds and installs them for Debian's 6.1 kernel too
#   - the 6.12 modules DKMS built are copied to out/deb/dkms-ko/6.12/ (uncompressed),
#     with dm-ssc's srcversion and build ID beside them, for a VM to load exactly those
#   - a program builds against libssdalloc-dev (pkg-config) and runs on libssdalloc0
#   - dpkg --purge of all leaves nothing: no file the packages listed, no DKMS tree,
#     source or module, no enablement link, no conffile
# The host is left as it was found, whatever fails: a trap purges the packages (and
# removes the DKMS signing key DKMS made, if there was none before).
#
# The 6.1 headers are installed on this host, and the packages' postinst (dkms's
# common.postinst) builds for every kernel in /lib/modules when the running one has no
# headers there (this host runs a kernel of its own). dpkg -i therefore runs in a
# private mount namespace where every /lib/modules/<release> but 6.12's is an empty
# directory: 6.1 looks like a kernel whose headers are not installed yet, is skipped,
# and is built once, by the upgrade hook, as after a real kernel upgrade.
#
# Prints "ok"/"not ok" lines and "deb: N passed, N failed".

# the checks are functions run through t(), which shellcheck takes for unreachable
# shellcheck disable=SC2317
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=common.sh
. "$(dirname "$0")/common.sh"

deb=$SSC_OUT/deb
pkgs=(ssc-dkms hcctl libssdalloc0 libssdalloc-dev)
p=0 f=0

ok() { echo "ok - deb: $1"; p=$((p + 1)); }
nok() { # nok WHAT [DETAIL...]: a failed check, its details as comments
	echo "not ok - deb: $1"
	shift
	[ $# -eq 0 ] || printf '%s\n' "$@" | sed 's/^/# /' | tail -n 25
	f=$((f + 1))
}
# t WHAT CMD...: one check, the command's output shown if it fails
t() {
	local what=$1 out
	shift
	if out=$("$@" 2>&1); then ok "$what"; else nok "$what" "$out"; fi
}
finish() {
	echo "deb: $p passed, $f failed"
	exit $((f > 0))
}

# the kernel release a headers meta-package points at (as kernel.sh finds it)
kver_of() {
	local k
	k=$(dpkg-query -W -f='${Depends}' "$1" 2>/dev/null | grep -oE 'linux-headers-[^ ,]+' | head -n1)
	k=${k#linux-headers-}
	[ -n "$k" ] && [ -d "/lib/modules/$k" ] && [ -e "/lib/modules/$k/build/include" ] && echo "$k"
}
k612=$(kver_of linux-headers-6.12-amd64) || { nok "Debian's 6.12 headers are installed (scripts/deps.sh)"; finish; }
k61=$(kver_of linux-headers-amd64) || { nok "Debian's 6.1 headers are installed (scripts/deps.sh)"; finish; }

# one run at a time on this host (the packages are installed system-wide)
exec 9>"$SSC_CACHE/deb-test.lock"
flock 9

# never touch an installation of the admin's own
for pkg in "${pkgs[@]}"; do
	if dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -qv 'not-installed'; then
		nok "$pkg is not installed on this host before the test (dpkg --purge it first)" \
			"$(dpkg-query -W -f='${Package} ${Version} ${Status}' "$pkg")"
		finish
	fi
done
if [ -n "$(dkms status -m ssc 2>/dev/null)" ] || ls -d /usr/src/ssc-* >/dev/null 2>&1; then
	nok "no ssc in DKMS or /usr/src before the test (dkms remove ssc/<version> --all)" \
		"$(dkms status -m ssc 2>&1; ls -d /usr/src/ssc-* 2>&1)"
	finish
fi

# --- build ------------------------------------------------------------------------
out=$("$SSC_TOP/scripts/deb.sh" 2>&1) && rc=0 || rc=$?
ver=$(dpkg-parsechangelog -l "$SSC_TOP/scripts/deb/debian/changelog" -S Version)
arch=$(dpkg --print-architecture)
debs=("$deb/ssc-dkms_${ver}_all.deb" "$deb/hcctl_${ver}_$arch.deb"
	"$deb/libssdalloc0_${ver}_$arch.deb" "$deb/libssdalloc-dev_${ver}_$arch.deb")
# deb.sh exits 3 when only lintian complained: the packages are this build's
if { [ "$rc" -eq 0 ] || [ "$rc" -eq 3 ]; } && ls "${debs[@]}" >/dev/null 2>&1; then
	ok "make deb builds ssc-dkms, hcctl, libssdalloc0 and libssdalloc-dev $ver"
else
	nok "make deb builds ssc-dkms, hcctl, libssdalloc0 and libssdalloc-dev $ver" "$out"
	finish
fi
if [ -f "$deb/lintian.txt" ] && ! grep -qE '^[EW]: ' "$deb/lintian.txt" && [ "$rc" -eq 0 ]; then
	ok "lintian clean (no error, no warning)"
else
	nok "lintian clean (no error, no warning)" "$(cat "$deb/lintian.txt" 2>/dev/null)" "deb.sh exit $rc"
fi

# --- install ----------------------------------------------------------------------
mok_before=$(ls /var/lib/dkms/mok.key /var/lib/dkms/mok.pub 2>/dev/null || true)
cleanup() {
	local left=() pkg
	for pkg in "${pkgs[@]}"; do
		dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -qv 'not-installed' && left+=("$pkg")
	done
	if [ ${#left[@]} -gt 0 ]; then
		log "deb: purging ${left[*]}"
		dpkg --purge "${left[@]}" >/dev/null 2>&1 ||
			dpkg --purge --force-remove-reinstreq "${left[@]}" >/dev/null 2>&1 || true
	fi
	# a package that could not be removed whole leaves no DKMS state behind either
	# (there was none before the test)
	if [ -e /var/lib/dkms/ssc ] || [ -e "/usr/src/ssc-$ver" ]; then
		log "deb: removing what is left of ssc in DKMS"
		dkms remove "ssc/$ver" --all >/dev/null 2>&1 || true
		rm -rf /var/lib/dkms/ssc "/usr/src/ssc-$ver"
		rm -f /lib/modules/"$k612"/updates/dkms/{dm-ssc,hashcache,flashvm}.ko* \
			/lib/modules/"$k61"/updates/dkms/{dm-ssc,hashcache,flashvm}.ko*
		depmod -a "$k612" || true
		depmod -a "$k61" || true
	fi
	# the module signing key DKMS makes on its first build, if this run made it
	if [ -z "$mok_before" ]; then
		rm -f /var/lib/dkms/mok.key /var/lib/dkms/mok.pub
	fi
	[ -z "${hidden:-}" ] || rmdir "$hidden" 2>/dev/null || true
}
trap cleanup EXIT
trap 'exit 130' INT TERM

hidden=$(mktemp -d)
# shellcheck disable=SC2016 # expanded by the inner shell
if unshare --mount --propagation private bash -c '
	set -e
	hidden=$1 keep=$2
	shift 2
	for d in /lib/modules/*/; do
		d=${d%/}
		[ "${d##*/}" = "$keep" ] || mount --bind "$hidden" "$d"
	done
	dpkg -i "$@"' _ "$hidden" "$k612" "${debs[@]}" >"$deb/install.log" 2>&1; then
	ok "dpkg -i ssc-dkms, hcctl, libssdalloc0, libssdalloc-dev"
else
	nok "dpkg -i ssc-dkms, hcctl, libssdalloc0, libssdalloc-dev" "$(cat "$deb/install.log")"
fi

# dkms_installed KVER: dkms status says ssc is built and installed for KVER
dkms_installed() {
	local s
	s=$(dkms status -m ssc -v "$ver" -k "$1")
	echo "$s"
	grep -q ": installed" <<<"$s"
}
t "dkms status: ssc $ver built and installed for $k612" dkms_installed "$k612"

# ours KVER MODULE DESCRIPTION: depmod finds MODULE for KVER in DKMS's updates/dkms, built
# for KVER, with a srcversion
ours() {
	local k=$1 m=$2 desc=$3 fn
	fn=$(modinfo -k "$k" -F filename "$m") || return 1
	modinfo -k "$k" "$m"
	[[ $fn == /lib/modules/$k/updates/dkms/$m.ko* ]] &&
		[[ $(modinfo -k "$k" -F vermagic "$m") == "$k "* ]] &&
		[[ $(modinfo -k "$k" -F description "$m") == *"$desc"* ]] &&
		[ -n "$(modinfo -k "$k" -F srcversion "$m")" ]
}
t "modinfo: dm-ssc for $k612 is DKMS's build of ours" ours "$k612" dm-ssc "solid-state cache (FlashTier SSC) target"
t "modinfo: hashcache for $k612 is DKMS's build of ours" ours "$k612" hashcache "HashCache object index"
no_flashvm() {
	! ls -d "/lib/modules/$1/updates/dkms/flashvm.ko"* "/var/lib/dkms/ssc/$ver/$1/"*/module/flashvm.ko* 2>/dev/null
}
t "flashvm is not built for a kernel without the swap policy hooks" no_flashvm "$k612"

# --- a kernel upgrade -------------------------------------------------------------
if dkms status -m ssc -k "$k61" | grep -qF "$k61"; then
	nok "kernel upgrade: ssc is not built for $k61 before its hook runs" "$(dkms status -m ssc -k "$k61")"
else
	upgrade() { /etc/kernel/postinst.d/dkms "$1" && dkms_installed "$1"; }
	t "kernel upgrade: /etc/kernel/postinst.d/dkms $k61 builds and installs ssc for it" upgrade "$k61"
	t "modinfo: dm-ssc for $k61 is DKMS's build of ours" ours "$k61" dm-ssc "solid-state cache (FlashTier SSC) target"
fi

# --- hcctl --------------------------------------------------------------------------
hcctl_runs() {
	[ "$(dpkg-query -S /usr/sbin/hcctl)" = "hcctl: /usr/sbin/hcctl" ] && /usr/sbin/hcctl --version | grep "^hcctl "
}
t "hcctl from the package runs (/usr/sbin/hcctl --version)" hcctl_runs
# what the source has, the package installs (the files of the boot-time assembly are
# checked where the source has them)
installed_files() {
	local m s missing=()
	for m in "$SSC_TOP"/user/man/*.[1-8]; do
		s=${m##*.}
		[ -f "/usr/share/man/man$s/${m##*/}.gz" ] || missing+=("/usr/share/man/man$s/${m##*/}.gz")
	done
	[ -f /usr/share/bash-completion/completions/hcctl ] || missing+=(bash completion)
	for s in ssc-assemble.service:/lib/systemd/system/ssc-assemble.service \
		69-ssc.rules:/lib/udev/rules.d/69-ssc.rules \
		initramfs-hook:/usr/share/initramfs-tools/hooks/ssc \
		initramfs-local-top:/usr/share/initramfs-tools/scripts/local-top/ssc \
		initramfs-local-top:/usr/share/initramfs-tools/scripts/local-block/ssc; do
		[ -e "$SSC_TOP/user/system/${s%%:*}" ] || continue
		[ -f "${s#*:}" ] || missing+=("${s#*:}")
		case ${s#*:} in */initramfs-tools/*) [ -x "${s#*:}" ] || missing+=("${s#*:} executable") ;; esac
	done
	[ ${#missing[@]} -eq 0 ] || { echo "missing: ${missing[*]}"; return 1; }
}
t "hcctl's manual pages, bash completion and boot-time assembly files are installed" installed_files
if [ -e "$SSC_TOP/user/system/ssctab.example" ]; then
	ssctab_conffile() {
		dpkg-query -W -f='${Conffiles}\n' hcctl | grep -q "^ /etc/ssctab " &&
			! grep -vE '^[[:space:]]*(#|$)' /etc/ssctab
	}
	t "/etc/ssctab is a conffile of hcctl and assembles nothing" ssctab_conffile
fi
if [ -e "$SSC_TOP/user/system/ssc-assemble.service" ]; then
	t "ssc-assemble.service is enabled (and not started by the install)" \
		systemctl is-enabled ssc-assemble.service
fi

if [ -e "$SSC_TOP/user/system/ssc-assemble.service" ]; then
	# systemd's own reading of the unit: syntax, dependencies, ExecStart executable
	t "systemd-analyze verify accepts ssc-assemble.service" \
		systemd-analyze verify --man=no /lib/systemd/system/ssc-assemble.service
fi

# --- the initramfs hook, with initramfs-tools' own mkinitramfs for 6.12 ---------------
# a line with the "initramfs" option brings hcctl, the DKMS-built dm-ssc, /etc/ssctab
# and the boot scripts in; without one, nothing of ssc is added
initramfs_hook() {
	local conf img r=0
	command -v mkinitramfs >/dev/null || { echo "no mkinitramfs (initramfs-tools)"; return 1; }
	conf=$(mktemp -d) img=$(mktemp)
	cp -a /etc/initramfs-tools/. "$conf/"
	sed -i 's/^MODULES=.*/MODULES=list/' "$conf/initramfs.conf"	# small and quick
	cp -p /etc/ssctab "$conf/ssctab.saved"
	mkinitramfs -d "$conf" -o "$img" "$k612" 2>"$img.err" && lsinitramfs "$img" >"$img.none" || r=1
	echo "root /dev/disk/by-id/x-cache /dev/disk/by-id/x-origin writeback initramfs" >>/etc/ssctab
	mkinitramfs -d "$conf" -o "$img" "$k612" 2>>"$img.err" && lsinitramfs "$img" >"$img.list" || r=1
	cp -p "$conf/ssctab.saved" /etc/ssctab
	if [ $r -eq 0 ]; then
		! grep -qE '(^|/)sbin/hcctl$|(^|/)etc/ssctab$|/dm-ssc\.ko' "$img.none" || {
			echo "ssc files in an initramfs whose /etc/ssctab has no initramfs line"; r=1; }
		for want in '(^|/)sbin/hcctl$' '^etc/ssctab$' 'modules/[^/]+/updates/dkms/dm-ssc\.ko' \
			'scripts/local-top/ssc$' 'scripts/local-block/ssc$'; do
			grep -qE "$want" "$img.list" || { echo "missing /$want/ in the initramfs"; r=1; }
		done
	fi
	[ $r -eq 0 ] || cat "$img.err"
	rm -rf "$conf" "$img" "$img.err" "$img.none" "$img.list"
	return $r
}
if [ -e "$SSC_TOP/user/system/initramfs-hook" ]; then
	t "mkinitramfs for $k612: hcctl, dm-ssc, /etc/ssctab and the scripts only with an initramfs line" \
		initramfs_hook
fi

# --- the modules a VM is to load ----------------------------------------------------
# copy KVER DIR: DKMS's modules for KVER, uncompressed, into DIR with dm-ssc's
# srcversion and GNU build ID (what /sys/module/dm_ssc/srcversion and
# /sys/module/dm_ssc/notes/.note.gnu.build-id show once it is loaded)
copy_ko() {
	local k=$1 dir=$2 m src
	rm -rf "$dir"
	mkdir -p "$dir"
	for m in dm-ssc hashcache; do
		src=$(modinfo -k "$k" -F filename "$m") || return 1
		case $src in
		*.ko.xz) xz -dc "$src" >"$dir/$m.ko" ;;
		*.ko.zst) zstd -dcq "$src" >"$dir/$m.ko" ;;
		*.ko.gz) gzip -dc "$src" >"$dir/$m.ko" ;;
		*.ko) cp "$src" "$dir/$m.ko" ;;
		*) echo "unexpected module file $src"; return 1 ;;
		esac
	done
	modinfo -F srcversion "$dir/dm-ssc.ko" >"$dir/srcversion"
	readelf -n "$dir/dm-ssc.ko" | awk '/Build ID:/ { print $3 }' >"$dir/build-id"
	[ -s "$dir/srcversion" ] && [ -s "$dir/build-id" ] &&
		[ "$(cat "$dir/srcversion")" = "$(modinfo -k "$k" -F srcversion dm-ssc)" ] &&
		[[ $(modinfo -F vermagic "$dir/dm-ssc.ko") == "$k "* ]] &&
		ls -l "$dir" && cat "$dir/srcversion" "$dir/build-id"
}
t "DKMS's $k612 modules copied to out/deb/dkms-ko/6.12/ (srcversion $(modinfo -k "$k612" -F srcversion dm-ssc 2>/dev/null))" \
	copy_ko "$k612" "$deb/dkms-ko/6.12"

# --- libssdalloc ------------------------------------------------------------------------
# a user's program: built with what pkg-config says, run on the installed shared
# library, over a store in a file
ssdalloc_app() {
	local d rc out
	d=$(mktemp -d)
	cat > "$d/app.c" <<'APPEND'
#include <ssdalloc.h>
#include <stdio.h>
#include <string.h>
int main(int argc, char **argv)
{
	struct ssd_config c = { .device = argv[1], .device_bytes = 16 << 20,
				.ram_bytes = 4 << 20, .flags = SSD_QUIET };
	char *p;

	if (argc < 2 || ssd_init(&c)) {
		fprintf(stderr, "ssd_init: %s\n", ssd_strerror());
		return 1;
	}
	p = ssd_oalloc(1, 100);
	if (!p)
		return 1;
	strcpy(p, "written through libssdalloc");
	puts(p);
	ssd_free(p);
	ssd_shutdown();
	return 0;
}
APPEND
	# (/lib is /usr/lib on a merged-/usr system: ldd may name either)
	# (pkg-config's flags are words: split them on purpose)
	# shellcheck disable=SC2046
	gcc -o "$d/app" "$d/app.c" $(pkg-config --cflags --libs ssdalloc) &&
		{ ldd "$d/app" | grep -E "libssdalloc.so.0 => (/usr)?/lib/" || { ldd "$d/app"; false; }; } &&
		out=$("$d/app" "$d/store") && echo "$out" && [ "$out" = "written through libssdalloc" ]
	rc=$?
	rm -rf "$d"
	return $rc
}
t "libssdalloc-dev: a program builds with pkg-config and runs on libssdalloc0" ssdalloc_app
t "libssdalloc-dev: a manual page for every call (ssd_oalloc(3), readChunk(3), ...)" bash -c \
	'for m in ssdalloc ssd_oalloc ssd_malloc ssd_free ssd_checkpoint ssd_restore ssd_stats readChunk writeChunk; do
		[ -e /usr/share/man/man3/$m.3.gz ] || { echo "no $m(3)"; exit 1; }; done'

# --- remove, then purge ----------------------------------------------------------------
dpkg -L "${pkgs[@]}" >"$deb/files.list" 2>/dev/null || true
# dpkg -r: the modules and everything but the configuration go (Debian keeps a
# removed package's conffiles, here /etc/ssctab, and the unit's enablement, until
# a purge): the modules are gone from every kernel at once
removed() {
	dpkg -r "${pkgs[@]}" >"$deb/remove.log" 2>&1 || { cat "$deb/remove.log"; return 1; }
	dpkg-query -W -f='${db:Status-Abbrev}' hcctl | grep -q '^rc' || { echo "hcctl not in state rc"; return 1; }
	! dkms status -m ssc | grep . &&
		! find /lib/modules/*/updates \( -name "dm-ssc.ko*" -o -name "hashcache.ko*" \) 2>/dev/null | grep . &&
		[ ! -e /usr/sbin/hcctl ] && [ -e /etc/ssctab ] && [ ! -e /usr/src/ssc-"$ver" ] &&
		! ls /usr/lib/*/libssdalloc* /usr/include/ssdalloc.h 2>/dev/null
}
t "dpkg -r: modules, sources, hcctl and libssdalloc gone, only /etc/ssctab (a conffile) kept" removed
if dpkg --purge "${pkgs[@]}" >"$deb/purge.log" 2>&1; then
	ok "dpkg --purge ${pkgs[*]}"
else
	nok "dpkg --purge ${pkgs[*]}" "$(cat "$deb/purge.log")"
fi
# every file the packages listed is gone; a directory may stay if a package still
# has it (/usr/share/man/man8, /lib/systemd/system, ...), and so may /lib, /sbin
# and the like where they are links to their /usr directory (merged /usr)
files_gone() {
	local path left=() dirs=() owned
	[ -s "$deb/files.list" ] || { echo "no file list"; return 1; }
	while IFS= read -r path; do
		case $path in /. | "") continue ;; esac
		[ -e "$path" ] || [ -L "$path" ] || continue
		if [ -d "$path" ] && [ ! -L "$path" ]; then
			dirs+=("$path")
		elif [ ! -d "$path" ]; then
			left+=("$path")
		fi
	done <"$deb/files.list"
	# one query for every directory still there: "pkg, pkg: /dir" for each owned one
	if [ ${#dirs[@]} -gt 0 ]; then
		owned=$(dpkg-query -S "${dirs[@]}" 2>/dev/null | sed 's/.*: //' || true)
		for path in "${dirs[@]}"; do
			grep -qxF "$path" <<<"$owned" || left+=("$path")
		done
	fi
	[ ${#left[@]} -eq 0 ] || { printf 'left: %s\n' "${left[@]}"; return 1; }
}
t "purged: every file the packages listed is gone" files_gone
t "purged: dkms status shows nothing of ssc" bash -c '! dkms status -m ssc | grep .'
t "purged: no /var/lib/dkms/ssc*, no /usr/src/ssc*" \
	bash -c '! ls -d /var/lib/dkms/ssc* /usr/src/ssc* 2>/dev/null'
t "purged: no dm-ssc, hashcache or flashvm module under /lib/modules, none in modules.dep" \
	bash -c '! find /lib/modules/*/updates /lib/modules/*/extra \( -name "dm-ssc.ko*" -o -name "hashcache.ko*" -o -name "flashvm.ko*" \) 2>/dev/null | grep . &&
		! grep -lE "/(dm-ssc|hashcache|flashvm)\.ko" /lib/modules/*/modules.dep'
# deb-systemd-helper keeps its own record of the links it made
no_unit_left() {
	! ls -d /etc/ssctab 2>/dev/null &&
		! find /etc/systemd /var/lib/systemd/deb-systemd-helper-enabled \
			/var/lib/systemd/deb-systemd-helper-masked -name "ssc-assemble.service*" 2>/dev/null | grep .
}
t "purged: no /etc/ssctab, no ssc-assemble.service link or deb-systemd-helper record" no_unit_left
finish
