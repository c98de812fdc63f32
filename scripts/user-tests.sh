#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Host-side tests of the user tools: hcctl builds warning-free, the trace tools'
# unit tests (tests/user/test_*.py) and SSDAlloc's (scripts/ssdalloc-tests.sh, whose
# lines count here). Prints "ok"/"not ok" lines and "user: N passed, N failed".
set -uo pipefail
. "$(dirname "$0")/common.sh"

p=0 f=0
# SSDAlloc's tests take the longest: they run beside the ones below (two jobs of their
# own; the rest here is light), and their lines are counted at the end
sd_log=$(mktemp)
"$SSC_TOP/scripts/ssdalloc-tests.sh" > "$sd_log" 2>&1 &
sd_pid=$!
# t WHAT CMD...: one check
t() {
	local what=$1 out
	shift
	if out=$("$@" 2>&1); then
		echo "ok - user: $what"
		p=$((p + 1))
	else
		echo "not ok - user: $what"
		sed 's/^/# /' <<<"$out" | tail -n 10
		f=$((f + 1))
	fi
}
t "hcctl builds with -Wall -Wextra -Werror" make -s -C "$SSC_TOP/user" clean all
# groff -ww prints every warning; a clean page prints nothing
t "man page renders without warnings" bash -c \
	'w=$(LC_ALL=C groff -man -ww -z "$0" 2>&1) && [ -z "$w" ] || { echo "$w"; false; }' "$SSC_TOP/user/man/hcctl.8"
complete_words() { # complete_words WORD...: what the completion offers for the last word
	bash -c '. "$0"; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _hcctl; echo "${COMPREPLY[*]}"' \
		"$SSC_TOP/user/hcctl.bash-completion" "$@"
}
t "bash completion: commands" test "$(complete_words hcctl st)" = status
t "bash completion: create options" test "$(complete_words hcctl create v --mo)" = --mode
t "bash completion: modes" test "$(complete_words hcctl create v --mode writeb)" = writeback
t "bash completion: monitor options" test "$(complete_words hcctl monitor --cou)" = --count
t "bash completion: index subcommands" test "$(complete_words hcctl index loo)" = lookup
t "bash completion: index policies" test "$(complete_words hcctl index format --policy setmeml)" = setmemlru
t "bash completion: index batch subcommands" test "$(complete_words hcctl index mg)" = mget
t "bash completion: swap subcommands" test "$(complete_words hcctl swap tu)" = tune
t "bash completion: assemble options" test "$(complete_words hcctl assemble --che)" = --check
t "man page ssctab(5) renders without warnings" bash -c \
	'w=$(LC_ALL=C groff -man -ww -z "$0" 2>&1) && [ -z "$w" ] || { echo "$w"; false; }' "$SSC_TOP/user/man/ssctab.5"
# hcctl assemble --check on the host: a malformed /etc/ssctab is reported line by line
# and nothing is created (no device of it exists here)
ssctab_check() {
	local d r
	d=$(mktemp -d)
	printf '%s\n' '# comment' 'a /dev/null /dev/zero writeback' 'b only-two' \
		'c /dev/x1 /dev/x2 writefast' 'd /dev/x1 /dev/x2 writeback format=sometimes' \
		'e /dev/x3 /dev/x4 writeback frob' 'f FOO=bar /dev/x5 writeback' \
		'g /dev/x6 /dev/x7 writeback noauto,block-size=8K' 'g /dev/x8 /dev/x9 writeback' \
		'h /dev/x6 /dev/x10 writethrough' 'i PARTUUID=0123ABCD-01 /dev/x11 writeback' \
		'j /dev/x12 /dev/x13 writeback admit=all,admit=reuse' 'k /dev/x14 /dev/x15 writeback dirty-high=30' \
		'l /dev/x16 /dev/x17 writeback dirty-high=80,dirty-low=10' 'm UUID=1234 /dev/x18 writeback' > "$d/tab"
	"$SSC_TOP/user/hcctl" assemble --check --file "$d/tab" > "$d/out" 2>&1
	r=$?
	cat "$d/out"
	[ $r -eq 1 ] &&
	grep -q 'tab:2: a: /dev/null is not a block device' "$d/out" &&
	grep -q 'tab:3: want NAME CACHE ORIGIN MODE \[OPTIONS\], found 2 fields' "$d/out" &&
	grep -q "tab:4: c: bad mode 'writefast'" "$d/out" &&
	grep -q 'tab:5: d: format=sometimes: want never or blank' "$d/out" &&
	grep -q "tab:6: e: unknown option 'frob'" "$d/out" &&
	grep -q "tab:7: f: device 'FOO=bar': want an absolute path, PARTUUID= or PARTLABEL=" "$d/out" &&
	grep -q 'tab:9: g: the name is already listed on line 8 (g): neither line is used' "$d/out" &&
	grep -q 'tab:10: h: a device is already listed on line 8 (g): neither line is used' "$d/out" &&
	! grep -q '^g:' "$d/out" &&
	grep -q '^i: waiting for cache device PARTUUID=0123ABCD-01' "$d/out" &&
	grep -q "tab:12: j: option admit given twice" "$d/out" &&
	grep -q "tab:13: k: want dirty-high and dirty-low together" "$d/out" &&
	grep -q "tab:14: l: dirty-high=80: want a percentage from 0 to 75" "$d/out" &&
	grep -q "tab:15: m: device 'UUID=1234': want an absolute path, PARTUUID= or PARTLABEL=" "$d/out"
	r=$?
	rm -rf "$d"
	return $r
}
t "hcctl assemble --check: each bad ssctab line named, with its line number" ssctab_check
t "hcctl assemble --listed: a device in no file is not listed" bash -c \
	'! "$0/user/hcctl" assemble --file /nonexistent --listed /dev/null' "$SSC_TOP"
t "bash completion: swap tunables" test "$(complete_words hcctl swap tune stri)" = stride_pages=
t "hcctl swap tune: an unknown tunable is a usage error" bash -c \
	'"$0/user/hcctl" swap tune frob=1 2>&1 | grep -q "no tunable .frob."; [ "${PIPESTATUS[0]}" -eq 2 ]' "$SSC_TOP"
t "build-flashvm-kernel.sh --config-only: Debian's config with the hooks" bash -c \
	'c=$("$0/scripts/build-flashvm-kernel.sh" --config-only --out "$1/fvk") && grep -qx CONFIG_SWAP_POLICY_HOOKS=y "$c"' \
	"$SSC_TOP" "$SSC_CACHE"
t "make install puts hcctl, man page, completion in place" bash -c \
	'd=$(mktemp -d) && make -s -C "$0/user" install DESTDIR="$d" PREFIX=/usr &&
	 test -x "$d/usr/sbin/hcctl" && test -f "$d/usr/share/man/man8/hcctl.8" &&
	 test -f "$d/usr/share/bash-completion/completions/hcctl"; r=$?; rm -rf "$d"; exit $r' "$SSC_TOP"
# make bench-traces' report from a fixture: ratios to the fastest peer of each trace
# (never a failed one), the crashed pair's row, a failed replay's row (no figure of it
# anywhere), the later-boot note, each target's geometry, the table of traces, a PNG
bt_report() {
	local d
	d=$(mktemp -d) && mkdir -p "$d/bench-traces" &&
	cp "$SSC_TOP/tests/user/data/bench-traces-raw.tap" "$d/bench-traces/raw.tap" &&
	SSC_OUT=$d "$SSC_TOP/scripts/bench-traces.sh" --report > "$d/out" 2>&1 &&
	grep -qxF '| t1 | ssc_wb | 90.0 % | 50.0 % / 80.0 % | 300 | 1.50 | 1.250 | 2.500 | 0.100 | 0.000 | 100 | 20.0 | 12.5 | 250 | 4 KiB blocks, 10 segments of 256 KiB |' "$d/out" &&
	grep -q '^| t1 | dmcache | 50.0 % | - / - | 200 | 1.00 | .* | 32 | 32 KiB blocks |$' "$d/out" &&
	grep -q '^| t1 | bcache | 40.0 % | - / - | 150 | 0.75 |' "$d/out" &&
	grep -q '^| t2 | ssc_wb | 25.0 % | - / - | 50 | 0.12 |' "$d/out" &&
	grep -q '^| t2 | dmcache | \*\*crashed the kernel\*\* (list del corruption; boot1) |' "$d/out" &&
	grep -qxF '| t2 | writecache | **failed replay** (replay 2 of 2: fio exit 1, read 8192 of 16384 B, written 0 of 33554432 B) | | | | | | | | | | | | |' "$d/out" &&
	! grep -q 999 "$d/out" && grep -qx 't2 0.12 0.2500 NaN NaN NaN NaN 1.00 0.7500 NaN NaN NaN NaN' "$d/bench-traces/results.dat" &&
	grep -q 'Measured in a later boot: t2/bcache (boot2)$' "$d/out" &&
	grep -qxF '| t1 | 100 / 20 | 0.4 / 0.2 | 2560 (10.0) | 16 MiB | 16 MiB | 1 MiB: 10 % of the footprint |' "$d/out" &&
	grep -qxF '| t2 | 1 / 32 | 0.0 / 32.0 | 8196 (32.0) | 65544 KiB (64.0 MiB) (squeezed from 1048576 MiB) | 64 MiB **smaller than the extent** | 26 MiB: 26M |' "$d/out" &&
	[ "$(head -c 8 "$d/bench-traces/results.png" | od -An -tx1 | tr -d ' ')" = 89504e470d0a1a0a ]
	local r=$?
	[ $r -eq 0 ] || cat "$d/out"
	rm -rf "$d"
	return $r
}
t "bench-traces --report: table and plot from a fixture" bt_report
# make bench-traces' planning, on the host (BT_PLAN=1: no VM): conversion, names, sizes
# and each target's geometry. bt_plan DIR [make args...]: the plan in DIR/out, and its
# value of KEY for trace NAME by bt_val DIR NAME KEY
bt_plan() {
	local d=$1
	shift
	SSC_OUT=$d BT_PLAN=1 make -s -C "$SSC_TOP" bench-traces "$@" > "$d/plan" 2> "$d/err" || { cat "$d/err"; return 1; }
}
bt_val() { sed -n "s/^# # BTRACE plan $2 trace $3 //p" "$1/plan"; }
# TRACE= a file in a directory with a space, named with a space and parentheses: its
# base name made safe; CACHE=10% of its footprint; ORIGIN= as given
bt_plan_file() {
	local d r=1 f c
	d=$(mktemp -d) && mkdir -p "$d/my traces" &&
	"$SSC_TOP/scripts/gentrace.py" write-heavy --blocks 16384 --requests 3000 -o "$d/my traces/web 01 (a).csv" &&
	bt_plan "$d" TRACE="$d/my traces/web 01 (a).csv" CACHE=10% ORIGIN=96M &&
	f=$(bt_val "$d" 'web_01__a_.csv' footprint_4k) && c=$(bt_val "$d" 'web_01__a_.csv' cache_b) &&
	[ "$f" -gt 1000 ] && [ "$c" = $((f / 10 * 4096)) ] &&
	[ "$(bt_val "$d" 'web_01__a_.csv' origin_b)" = $((96 << 20)) ] &&
	[ "$(bt_val "$d" 'web_01__a_.csv' requests)" = 306/2694 ] &&
	grep -qx "OSECT=$((96 << 11)) CSECT=$((c / 512)) MSECT=16384" "$d/bench-traces/traces/web_01__a_.csv.bt" && r=0
	[ $r -eq 0 ] || cat "$d/plan" "$d/err"
	rm -rf "$d"
	return $r
}
# every cache size gives each target a geometry it takes: bcache a bucket of a power of
# two with 1,024 buckets (4 KiB ones below 4 MiB), dm-cache a block of a multiple of
# 32 KiB with at most 2^20 of them, ssc segments of 128 or 256 KiB, 32 of them where
# they fit; the older BT_CACHE_MB=26 a bucket of 16 KiB (26 KiB was refused)
bt_geometry() {
	# shellcheck disable=SC2034 # all of them set by the plan it sources, some checked
	local d r=0 size OSECT CSECT MSECT FLASH_MB ONULL_MB SSC_SEG DMC_BLOCK BC_BUCKET WANT_R WANT_W
	d=$(mktemp -d)
	for size in 1M 3M 5M 13M 26M 100M 1000M 3G 37G 100G; do
		bt_plan "$d" TRACE="$SSC_TOP/tests/user/data/blktrace-nullb0.bin.gz" CACHE=$size || { r=1; break; }
		. "$d/bench-traces/traces/blktrace-nullb0.bin.bt"
		if [ $((BC_BUCKET & (BC_BUCKET - 1))) -ne 0 ] || [ "$BC_BUCKET" -lt 8 ] || [ "$BC_BUCKET" -gt 1024 ] ||
			{ [ $((CSECT / BC_BUCKET)) -lt 1024 ] && [ "$BC_BUCKET" -ne 8 ]; } ||
			{ [ $((CSECT / BC_BUCKET / 2)) -ge 1024 ] && [ "$BC_BUCKET" -lt 1024 ]; } ||
			[ $((DMC_BLOCK % 64)) -ne 0 ] || [ $((CSECT / DMC_BLOCK)) -gt 1048576 ] ||
			{ [ "$SSC_SEG" != 256 ] && [ "$SSC_SEG" != 512 ]; } ||
			{ [ "$SSC_SEG" = 256 ] && [ $(( (CSECT - 8192) / 512 )) -ge 32 ]; } ||
			{ [ "$SSC_SEG" = 512 ] && [ $(( (CSECT - 8192) / 512 )) -lt 32 ]; } || [ "$MSECT" -lt 16384 ] ||
			[ $((MSECT / 2048)) -lt $(( (4 * 1048576 + CSECT / DMC_BLOCK * 128) / 1048576 )) ]; then
			echo "CACHE=$size: $(cat "$d/bench-traces/traces/blktrace-nullb0.bin.bt")"
			r=1
		fi
	done
	SSC_OUT=$d BT_PLAN=1 BT_CACHE_MB=26 "$SSC_TOP/scripts/bench-traces.sh" --trace "$SSC_TOP/tests/user/data/blktrace-nullb0.bin.gz" \
		> /dev/null 2>&1 && grep -q ' BC_BUCKET=32$' "$d/bench-traces/traces/blktrace-nullb0.bin.bt" || r=1
	rm -rf "$d"
	return $r
}
# built-in traces as the replay suite has them (mkinitramfs.sh); a blktrace capture as
# blkparse counts it; a fio iolog as it is, and squeezed (the MiB it never touches cut
# out) when its extent is above BT_ORIGIN_MAX
bt_sources() {
	local d r=1
	d=$(mktemp -d) &&
	bt_plan "$d" BT_TRACES=zipf-read,scan && [ "$(bt_val "$d" zipf-read requests)" = 17986/2014 ] &&
	[ "$(bt_val "$d" zipf-read user_b)" = 73670656/8249344 ] && [ "$(bt_val "$d" zipf-read cache_rule)" = '32M_(the_default)' ] &&
	[ "$(bt_val "$d" scan origin_b)" = $((64 << 20)) ] &&
	bt_plan "$d" TRACE="$SSC_TOP/tests/user/data/blktrace-nullb0.bin.gz" CACHE=2M &&
	[ "$(bt_val "$d" blktrace-nullb0.bin requests)" = 204/324 ] &&
	[ "$(bt_val "$d" blktrace-nullb0.bin user_b)" = 835584/2310144 ] &&
	bt_plan "$d" TRACE="$SSC_TOP/tests/user/data/fio-seqwrite.iolog.gz" CACHE=2M BT_ORIGIN_MAX=8M &&
	[ "$(bt_val "$d" fio-seqwrite.iolog extent_b)" = 1048576 ] &&
	[ "$(bt_val "$d" fio-seqwrite.iolog squeezed_from_b)" = 34603008 ] &&
	[ "$(bt_val "$d" fio-seqwrite.iolog requests)" = 0/16 ] &&
	[ "$(awk '$3 == "write" { print $4 + $5 }' "$d/bench-traces/traces/fio-seqwrite.iolog.iolog" | sort -n | tail -n1)" = 1048576 ] &&
	r=0
	[ $r -eq 0 ] || cat "$d/plan" "$d/err"
	rm -rf "$d"
	return $r
}
# what it cannot do it says, before any VM
bt_refuses() {
	local d r=0 a
	d=$(mktemp -d)
	for a in CACHE=12Q CACHE=0.1% ORIGIN=1000 BT_TRACES=zipf TRACE=/nonexistent; do
		if bt_plan "$d" TRACE="$SSC_TOP/tests/user/data/blktrace-nullb0.bin.gz" CACHE=2M "$a" > /dev/null; then
			echo "$a: planned"
			r=1
		fi
	done
	rm -rf "$d"
	return $r
}
t "bench-traces plan: a trace file named with spaces, CACHE=10%, ORIGIN=" bt_plan_file
t "bench-traces plan: a legal geometry for every target at odd cache sizes" bt_geometry
t "bench-traces plan: built-in traces, blktrace, fio iologs (squeezed)" bt_sources
t "bench-traces plan: bad sizes and unknown traces refused" bt_refuses
# the bench stage's sanity checks of each table: a real table passes, a broken one fails
smoke_check() { # smoke_check NAME SED-EDIT: 0 iff the edited fixture passes the check
	local d r
	d=$(mktemp -d)
	sed "$2" "$SSC_TOP/tests/user/data/smoke-$1.md" > "$d/t.md"
	SSC_OUT=$d "$SSC_TOP/scripts/bench-smoke.sh" --check "$1" "$d/t.md" > "$d/out" 2>&1
	r=$?
	[ $r -eq 0 ] || cat "$d/out"
	rm -rf "$d"
	return $r
}
smoke_fails() { ! smoke_check "$@" > /dev/null; }
for n in bench bench-traces bench-hashcache bench-flashvm bench-locks; do
	t "bench-smoke --check $n: the table of a real run is sane" smoke_check $n ''
done
t "bench-smoke --check bench: a missing target row fails" smoke_fails bench '/^| writecache | 4096 /d'
t "bench-smoke --check bench: nothing cached fails" smoke_fails bench 's#| 4096/119340 #| 0/119340 #'
t "bench-smoke --check bench: a recovery not measured fails" smoke_fails bench 's#^\(| 32 | [0-9]* | [0-9]* | [0-9]* | \)[0-9]* |#\1- |#'
t "bench-smoke --check bench: a missing recovery size fails" smoke_fails bench '/^| 24 | /d'
t "bench-smoke --check bench: a missing full-cache RAM row fails" smoke_fails bench '/^| ssc_wb_full | 32 /d'
t "bench-smoke --check bench: a cache not filled for the RAM figure fails" smoke_fails bench 's#^| ssc_wt_full | 24 | 0.520 #| ssc_wt_full | 24 | 0.100 #'
t "bench-smoke --check bench: no origin I/Os of writethrough's zipf mix fails" smoke_fails bench 's#^| ssc_wt | 0.000 / - / 372.652 |#| ssc_wt | 0.000 / - / 0.000 |#'
t "bench-smoke --check bench: a missing origin I/O row fails" smoke_fails bench '/^| writecache | 0.000 \/ /d'
t "bench-smoke --check bench: a missing NBD origin row fails" smoke_fails bench '/^| ssc_wb\/nbd | /d'
t "bench-smoke --check bench: nothing cached over NBD fails" smoke_fails bench 's#^| ssc_wt/nbd | 4096/7650 |#| ssc_wt/nbd | 0/7650 |#'
t "bench-smoke --check bench-traces: a crashed target fails" smoke_fails bench-traces 's#^| web_01.csv | bcache | .*#| web_01.csv | bcache | **crashed the kernel** (x; boot1) | | | | | | | | | | | | |#'
t "bench-smoke --check bench-traces: a missing target row fails" smoke_fails bench-traces '/^| web_01.csv | writecache /d'
t "bench-smoke --check bench-traces: a failed replay of a measured trace fails" smoke_fails bench-traces 's#^| zipf-read | ssc_wb | [^|]*|#| zipf-read | ssc_wb | **failed replay** (replay 2 of 2: fio exit 1, read 1 of 2 B, written 0 of 0 B) |#'
t "bench-smoke --check bench-traces: a short replay shown as a figure fails" smoke_fails bench-traces 's#^| short_by_8K.csv | dmcache | [*][*]failed replay[*][*] ([^)]*)#| short_by_8K.csv | dmcache | 50.0 %#'
t "bench-smoke --check bench-traces: bcache with fewer than 1,024 buckets fails" smoke_fails bench-traces 's#| 1115 | 8 KiB buckets#| 600 | 8 KiB buckets#'
t "bench-smoke --check bench-traces: a row without its geometry fails" smoke_fails bench-traces 's#| 278 | 32 KiB blocks |$#| - | - |#'
t "bench-smoke --check bench-traces: a cache not of the size asked fails" smoke_fails bench-traces 's#(8.7 MiB): 80 % of#(8.7 MiB): 10 % of#'
t "bench-smoke --check bench-hashcache: a missing policy fails" smoke_fails bench-hashcache '/^| loglru+prefetch /d'
t "bench-smoke --check bench-hashcache: no I/Os per hit fails" smoke_fails bench-hashcache 's#^| set | 0.0 (0) | 1.000#| set | 0.0 (0) | 0.000#'
t "bench-smoke --check bench-hashcache: a missing workload row fails" smoke_fails bench-hashcache '/^| bufferhash | ycsb zipfian /d'
t "bench-smoke --check bench-hashcache: a YCSB run without hits fails" smoke_fails bench-hashcache 's#^\(| log | ycsb normal |.*| \)968 / 0 |#\10 / 968 |#'
t "bench-smoke --check bench-hashcache: no goal line fails" smoke_fails bench-hashcache '/^goal /d'
t "bench-smoke --check bench-hashcache: a GC mode missing fails" smoke_fails bench-hashcache '/^| space | [0-9.]* % /d'
t "bench-smoke --check bench-hashcache: hit mode copying nothing fails" smoke_fails bench-hashcache 's#^| hit | 79.3 % | 0.020 #| hit | 79.3 % | 0.000 #'
t "bench-smoke --check bench-hashcache: space mode copying fails" smoke_fails bench-hashcache 's#^| space | 78.3 % | 0.000 #| space | 78.3 % | 0.010 #'
t "bench-smoke --check bench-hashcache: a missing attach row fails" smoke_fails bench-hashcache '/^| setmem | 256 MiB /d'
t "bench-smoke --check bench-hashcache: cascade's tier shares not adding up fail" smoke_fails bench-hashcache 's#^| hotspot | 29.6 / 70.4 / 0.0 |#| hotspot | 29.6 / 0.4 / 0.0 |#'
t "bench-smoke --check bench-hashcache: a missing tier row fails" smoke_fails bench-hashcache '/^| zipfian | [0-9.]* \/ /d'
t "bench-smoke --check bench-hashcache: a checkpoint that reads as much as the scan fails" smoke_fails bench-hashcache 's#^\(| log | 64 MiB |.*| \)0\.[0-9]* |\( [0-9]* |\)$#\11.0000 |\2#'
t "bench-smoke --check bench-flashvm: a missing workload fails" smoke_fails bench-flashvm '/^| all | stride /d'
t "bench-smoke --check bench-flashvm: no major faults fails" smoke_fails bench-flashvm 's#^| stock | random | [0-9]* #| stock | random | 0 #'
t "bench-smoke --check bench-flashvm: no discard requests fails" smoke_fails bench-flashvm 's#^| flashvm merged | [0-9]* #| flashvm merged | 0 #'
t "bench-smoke --check bench-flashvm: a missing config fails" smoke_fails bench-flashvm '/^| preclean | kv /d'
t "bench-smoke --check bench-flashvm: no pages written fails" smoke_fails bench-flashvm 's#^| clustering | seq | \([0-9]*\) | \([^|]*\) | [0-9]* #| clustering | seq | \1 | \2 | 0 #'
t "bench-smoke --check bench-flashvm: B pages next to live ones with clustering fails" smoke_fails bench-flashvm 's#^| flashvm clustering | 320 | 0 |#| flashvm clustering | 320 | 5 |#'
t "bench-smoke --check bench-flashvm: a missing probe row fails" smoke_fails bench-flashvm '/^| stock | 320 | /d'
t "bench-smoke --check bench-locks: a missing target row fails" smoke_fails bench-locks '/^| writecache /d'
t "bench-smoke --check bench-locks: no lock acquisitions fails" smoke_fails bench-locks 's#^\(| ssc_wt | [0-9]* | [0-9]* | [0-9]* | \)[0-9.]* |#\10.00 |#'
# one line per test case: "test_x (module.Class...) ... ok|FAIL|ERROR"
out=$(cd "$SSC_TOP" && python3 -m unittest -v tests/user/test_*.py 2>&1)
while read -r line; do
	case $line in
	*" ... ok") echo "ok - user: ${line% ... ok}"; p=$((p + 1)) ;;
	*" ... FAIL" | *" ... ERROR") echo "not ok - user: $line"; f=$((f + 1)) ;;
	*" ... skipped"*) echo "not ok - user: $line # a skip is not a pass"; f=$((f + 1)) ;;
	esac
done <<<"$out"
if ! grep -q '^OK$' <<<"$out"; then
	sed 's/^/# /' <<<"$out" | tail -n 40
	[ "$f" -gt 0 ] || { echo "not ok - user: unittest did not report OK"; f=$((f + 1)); }
fi
# SSDAlloc (started at the top): each of its ok / not ok lines counts in this stage,
# and a script that died without saying "not ok" counts as one failure
wait "$sd_pid"
sd_rc=$?
sd_out=$(cat "$sd_log")
rm -f "$sd_log"
sd_f=0
while IFS= read -r line; do
	case $line in
	"ok - "*) echo "$line"; p=$((p + 1)) ;;
	"not ok - "*) echo "$line"; f=$((f + 1)); sd_f=$((sd_f + 1)) ;;
	"ssdalloc: "*" passed, "*) echo "# $line" ;;	# not the stage's own count line
	*) echo "$line" ;;
	esac
done <<<"$sd_out"
if [ "$sd_rc" -ne 0 ] && [ "$sd_f" -eq 0 ]; then
	echo "not ok - user: scripts/ssdalloc-tests.sh exited $sd_rc without a failed test"
	f=$((f + 1))
fi
echo "user: $p passed, $f failed"
[ "$f" -eq 0 ]
