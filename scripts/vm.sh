#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Boot a kernel under QEMU (TCG) with our modules and run VM suites, or give a shell.
#
#   vm.sh --kernel 6.12|6.1|debug|bench --suites a,b [--name TAG] [--mem MB] [--timeout S]
#         [--ko PATH]... [--env NAME=VALUE]... [--kill-after ERE [--kill-delay S]]
#         [--root DEV] [--on ERE MONITOR-COMMAND]... [-- extra qemu args]
#   vm.sh --kernel 6.12 --shell
#
# --kill-after: kill QEMU (SIGKILL, the guest gets no warning) S seconds (default 0)
# after the guest printed a line matching ERE on the results port: a crash at a
# point the guest chose, mid-write. The run then passes only if the guest was killed
# before its end marker; its checks and the console scan count as usual.
#
# --root DEV: the initramfs switches to the root file system on DEV (a Debian image
# with systemd, scripts/debian-image.sh, given as a drive after --), whose
# ssc-test.service runs the suites (tests/vm/init's ssc.root= mode).
# --on ERE CMD: send CMD to the QEMU monitor (HMP, e.g. device_add ...: a disk
# hot-plugged) once, when the guest printed a line matching ERE on the results port.
#
# Results: one "ok/not ok" line per check, written by the guest to a second serial
# port (never mixed with kernel messages), turned into TAP at
# $SSC_OUT/results/<name>.tap. The run fails on any failed check, on a kernel
# splat in the console log (oops, BUG, WARN, KASAN, lockdep, hung task, panic),
# and when the guest never reached its end marker (crash, hang, timeout).
# Last line: "<name>: N passed, N failed". Exit status 0 only if nothing failed.
set -euo pipefail
. "$(dirname "$0")/common.sh"

flavor=6.12 suites='' shell='' name='' mem=1024 tmo=900 kos=() env='' kill_re='' kill_delay=0
root='' on_re=() on_cmd=()
while [ $# -gt 0 ]; do
	case $1 in
	--kernel) flavor=$2; shift 2 ;;
	--suites) suites=$2; shift 2 ;;
	--shell) shell=1; shift ;;
	--name) name=$2; shift 2 ;;
	--mem) mem=$2; shift 2 ;;
	--timeout) tmo=$2; shift 2 ;;
	--ko) kos+=("$2"); shift 2 ;;
	--env) env="$env ssc.env.$2"; shift 2 ;;
	--kill-after) kill_re=$2; shift 2 ;;
	--kill-delay) kill_delay=$2; shift 2 ;;
	--root) root=$2; shift 2 ;;
	--on) on_re+=("$2"); on_cmd+=("$3"); shift 3 ;;
	--) shift; break ;;
	*) die "vm.sh: unknown argument '$1'" ;;
	esac
done
[ -n "$suites" ] || [ -n "$shell" ] || die "vm.sh: need --suites or --shell"
# make check's seed for every sampled or random test, and check-full's switch (first:
# an --env of the same name, later on the command line, wins)
for v in SSC_SEED SSC_FULL; do
	if [ -n "${!v:-}" ]; then env=" ssc.env.$v=${!v}$env"; fi
done
name=${name:-vm-$flavor}

eval "$("$SSC_TOP/scripts/kernel.sh" "$flavor")"
# make check runs VMs side by side: one at a time builds the modules, hcctl and the
# test tools (shared outputs), and packs its initramfs; the boots then overlap
mkdir -p "$SSC_TOP/out"
exec 8>"$SSC_TOP/out/.vm-prepare.lock"
flock 8
log "$name: kernel $KVER, building modules"
make -s -C "$SSC_TOP" modules KDIR="$KDIR" >"$SSC_OUT/$name.build.log" 2>&1 ||
	{ cat "$SSC_OUT/$name.build.log" >&2; die "module build failed for $KVER"; }
build="$SSC_TOP/out/build/$(basename "$(realpath "$KDIR")")"
initrd="$SSC_OUT/initramfs-$name.cpio"
"$SSC_TOP/scripts/mkinitramfs.sh" "$initrd" "$KVER" "$MODROOT" "$build"/*/*.ko ${kos[@]+"${kos[@]}"}
flock -u 8
exec 8>&-

# shellcheck disable=SC2054 # the commas are QEMU option syntax
qemu=(qemu-system-x86_64 -M pc -accel tcg,thread=multi,tb-size=256 -cpu max -smp 2 -m "$mem"
      -nodefaults -display none -no-reboot -kernel "$KIMAGE" -initrd "$initrd")
kargs="console=ttyS0 panic=-1 oops=panic loglevel=5 rdinit=/init$env"
# The debug kernel's modules carry their KUnit cases, which would run at every modprobe
# of every suite (minutes under KASAN): a glob that matches no suite keeps them quiet,
# and the kunit suite opens it (/sys/module/kunit/parameters/filter_glob) for its own load.
# Lock statistics (CONFIG_LOCK_STAT) are collected only while bench-locks measures.
if [ "$flavor" = debug ]; then
	kargs="$kargs kunit.filter_glob=ssc-kunit-on-demand-only sysctl.kernel.lock_stat=0"
fi
# SSC_VM_KARGS: more kernel arguments, for a debugging run (e.g. ignore_loglevel to see
# the KUnit output on the console); last, so they win over the ones above
kargs="$kargs${SSC_VM_KARGS:+ $SSC_VM_KARGS}"
[ -z "$root" ] || kargs="$kargs ssc.root=$root"

if [ -n "$shell" ]; then
	exec "${qemu[@]}" -serial mon:stdio -serial null -append "$kargs ssc.shell=1" "$@"
fi

mkdir -p "$SSC_OUT/results"
console="$SSC_OUT/results/$name.console.log"
raw="$SSC_OUT/results/$name.raw"
tap="$SSC_OUT/results/$name.tap"
rm -f "$console" "$raw" "$tap"	# a run that dies early must not show the last run's results
mon="$SSC_OUT/results/$name.monitor"
rm -f "$mon"
[ ${#on_re[@]} -eq 0 ] || set -- -monitor "unix:$mon,server=on,wait=off" "$@"
# monitor CMD: one HMP command to the running QEMU; its answer to the log
monitor() {
	python3 - "$mon" "$1" <<'PY' >&2
import socket, sys, time
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.sendall((sys.argv[2] + "\n").encode())
time.sleep(1)
s.setblocking(False)
try:
    print(s.recv(65536).decode(errors="replace").replace("\r", ""))
except BlockingIOError:
    pass
PY
}
log "$name: booting, suites: $suites"
start=$SECONDS
qrc=0
killed=0
# A guest that died before its kernel ran init (nothing on the suites' serial, no
# "Run ... as init process" on the console: TCG has oopsed now and then in early
# boot, before any module of ours is loaded) is booted once more; the TAP says so,
# and the first console is kept beside the second. SSC_VM_BREAK_BOOTS=N (the
# harness's self-test): the first N boots get an init that does not exist.
reboots=0 breaks=${SSC_VM_BREAK_BOOTS:-0}
early_death() {
	[ ! -s "$raw" ] && ! grep -qaE 'Run .* as init process' "$console" 2>/dev/null
}
if [ -z "$kill_re" ] && [ ${#on_re[@]} -eq 0 ]; then
	while :; do
		bk=''
		[ "$breaks" -gt 0 ] && bk=' rdinit=/ssc-no-such-init' && breaks=$((breaks - 1))
		qrc=0
		timeout -k 10 "$tmo" "${qemu[@]}" -serial "file:$console" -serial "file:$raw" \
			-append "$kargs ssc.suites=$suites$bk" "$@" </dev/null || qrc=$?
		if ! early_death || [ "$reboots" = 1 ]; then
			break
		fi
		reboots=1
		mv "$console" "$console.boot1"
		log "$name: the guest died before its init ran (qemu exit $qrc): booting again"
		rm -f "$raw"
	done
else
	"${qemu[@]}" -serial "file:$console" -serial "file:$raw" \
		-append "$kargs ssc.suites=$suites" "$@" </dev/null &
	qpid=$!
	while kill -0 "$qpid" 2>/dev/null; do
		for i in "${!on_re[@]}"; do
			[ -n "${on_re[$i]}" ] && grep -qaE "${on_re[$i]}" "$raw" 2>/dev/null || continue
			log "$name: /${on_re[$i]}/: monitor: ${on_cmd[$i]}"
			monitor "${on_cmd[$i]}" || log "$name: monitor command failed"
			on_re[$i]=''
		done
		if [ -n "$kill_re" ] && grep -qaE "$kill_re" "$raw" 2>/dev/null; then
			sleep "$kill_delay"
			kill -KILL "$qpid" 2>/dev/null && killed=1
			break
		fi
		if [ $((SECONDS - start)) -ge "$tmo" ]; then
			kill -KILL "$qpid" 2>/dev/null
			break
		fi
		sleep 0.1
	done
	wait "$qpid" || qrc=$?
fi
elapsed=$((SECONDS - start))

pass=0 fail=0 n=0
emit() { # emit ok|not_ok description
	n=$((n + 1))
	if [ "$1" = ok ]; then
		pass=$((pass + 1)); echo "ok $n - $2"
	else
		fail=$((fail + 1)); echo "not ok $n - $2"
	fi
}
{
	echo "TAP version 13"
	echo "# $name: kernel $KVER, suites $suites, qemu exit $qrc, ${elapsed}s"
	if [ "$reboots" = 1 ]; then
		echo "# $name: booted again: the first boot died before its init ran (its console: $console.boot1)"
		grep -aE -m 2 ' (RIP:|Comm:)|Kernel panic' "$console.boot1" | sed 's/^/#   /'
	fi
	while IFS= read -r line; do
		case $line in
		"ok "*) emit ok "${line#ok }" ;;
		"not ok "*) emit not_ok "${line#not ok }" ;;
		*) echo "# $line" ;;
		esac
	done < <(tr -d '\r' < "$raw" 2>/dev/null)
	# The host's own look at the console: independent of anything the guest said.
	if grep -qaEf "$SSC_TOP/tests/vm/splat.re" "$console"; then
		emit not_ok "$name: console free of kernel splats"
		# where, first: a summary shows the first few lines only
		grep -aE -m 2 ' (RIP:|Comm:) ' "$console" | sed 's/^/# /'
		grep -aEf "$SSC_TOP/tests/vm/splat.re" -m 5 -A 15 "$console" | sed 's/^/# /'
	else
		emit ok "$name: console free of kernel splats"
	fi
	if [ -n "$kill_re" ]; then
		if [ "$killed" = 1 ] && ! grep -q '^@@END' "$raw" 2>/dev/null; then
			emit ok "$name: VM killed mid-run, ${kill_delay}s after /$kill_re/"
		else
			emit not_ok "$name: VM killed mid-run # never saw /$kill_re/ before the guest ended or ${tmo}s passed (qemu exit $qrc after ${elapsed}s)"
			tail -n 40 "$console" | sed 's/^/# /'
		fi
	elif grep -q '^@@END' "$raw" 2>/dev/null; then
		emit ok "$name: VM ran every suite to the end"
	else
		emit not_ok "$name: VM ran every suite to the end # no end marker: crash, panic or timeout (qemu exit $qrc after ${elapsed}s)"
		echo "# the guest's last words: $(tr -d '\r' < "$raw" 2>/dev/null | grep -E '^(not )?ok ' | tail -n 1)"
		tail -n 40 "$console" | sed 's/^/# /'
	fi
	echo "1..$n"
	echo "# $name: $pass passed, $fail failed"
} > "$tap"
cat "$tap"
# the counts, as the last line, from the TAP file itself
p=$(grep -c '^ok ' "$tap" || true)
f=$(grep -c '^not ok ' "$tap" || true)
echo "$name: $p passed, $f failed"
[ "$f" -eq 0 ] && [ "$p" -gt 0 ]
