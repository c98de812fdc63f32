#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Run the named suites in the VM. Output (to the results port) is one line per check:
#   ok <suite>: <what>        not ok <suite>: <what>        # <diagnostic>
# and a final "@@END". The host treats a missing @@END as a crashed or hung VM.
. /ssc/lib.sh

for suite in "$@"; do
	echo "# suite $suite"
	if [ ! -f "/ssc/suites/$suite.sh" ]; then
		echo "not ok $suite: suite exists"
		continue
	fi
	dmesg -c > /dev/null
	now_cs
	t0=$NOW
	SUITE=$suite sh -c ". /ssc/lib.sh; . /ssc/suites/$suite.sh"
	rc=$?
	# the host collects these into the per-suite time table of make check
	now_cs
	echo "# @@TIME $suite $(((NOW - t0) / 100))"
	[ $rc -eq 0 ] || echo "not ok $suite: suite ran to completion # exit status $rc"
	kernel_log_check "$suite"
	# the next suite starts on a clean machine: what one leaves behind is its failure
	left=$(dmsetup ls 2>/dev/null | awk '$1 != "No" { printf "%s ", $1 }')
	left="$left$(ls /sys/kernel/config/nullb 2>/dev/null | tr '\n' ' ')"
	if [ -n "$left" ]; then
		echo "not ok $suite: left no devices behind # $left"
		dmsetup remove_all --force > /dev/null 2>&1
		[ -d /sys/kernel/config/nullb ] && null_blk_teardown > /dev/null 2>&1
	else
		echo "ok $suite: left no devices behind"
	fi
done
echo "@@END"
