#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Host-side tests of the user tools: hcctl builds warning-free, and the trace
# tools' unit tests (tests/user/test_*.py). Prints "ok"/"not ok" lines and
# "user: N passed, N failed".
set -uo pipefail
. "$(dirname "$0")/common.sh"

p=0 f=0
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
# make bench-traces' report from a fixture: ratios to the fastest peer of each
# trace, the crashed pair's row, the later-boot note, a PNG
bt_report() {
	local d
	d=$(mktemp -d) && mkdir -p "$d/bench-traces" &&
	cp "$SSC_TOP/tests/user/data/bench-traces-raw.tap" "$d/bench-traces/raw.tap" &&
	SSC_OUT=$d "$SSC_TOP/scripts/bench-traces.sh" --report > "$d/out" 2>&1 &&
	grep -qx '| t1 | ssc_wb | 90.0 % | 50.0 % / 80.0 % | 300 | 1.50 | 1.250 | 0.100 | 0.000 | 100 | 20.0 | 12.5 |' "$d/out" &&
	grep -q '^| t1 | dmcache | 50.0 % | - / - | 200 | 1.00 |' "$d/out" &&
	grep -q '^| t1 | bcache | 40.0 % | - / - | 150 | 0.75 |' "$d/out" &&
	grep -q '^| t2 | ssc_wb | 25.0 % | - / - | 50 | 0.12 |' "$d/out" &&
	grep -q '^| t2 | dmcache | \*\*crashed the kernel\*\* (list del corruption; boot1) |' "$d/out" &&
	grep -q 'Measured in a later boot: t2/bcache (boot2)$' "$d/out" &&
	[ "$(head -c 8 "$d/bench-traces/results.png" | od -An -tx1 | tr -d ' ')" = 89504e470d0a1a0a ]
	local r=$?
	[ $r -eq 0 ] || cat "$d/out"
	rm -rf "$d"
	return $r
}
t "bench-traces --report: table and plot from a fixture" bt_report
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
t "bench-smoke --check bench-traces: a crashed target fails" smoke_fails bench-traces 's#^| zipf-read | bcache | .*#| zipf-read | bcache | **crashed the kernel** (x; boot1) | | | | | | | | | |#'
t "bench-smoke --check bench-hashcache: a missing policy fails" smoke_fails bench-hashcache '/^| loglru+prefetch /d'
t "bench-smoke --check bench-hashcache: no I/Os per hit fails" smoke_fails bench-hashcache 's#^| set | 0.0 (0) | 1.000#| set | 0.0 (0) | 0.000#'
t "bench-smoke --check bench-flashvm: a missing workload fails" smoke_fails bench-flashvm '/^| all | stride /d'
t "bench-smoke --check bench-flashvm: no major faults fails" smoke_fails bench-flashvm 's#^| stock | random | [0-9]* #| stock | random | 0 #'
t "bench-smoke --check bench-flashvm: no discard requests fails" smoke_fails bench-flashvm 's#^| flashvm merged | [0-9]* #| flashvm merged | 0 #'
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
echo "user: $p passed, $f failed"
[ "$f" -eq 0 ]
