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
	SUITE=$suite sh -c ". /ssc/lib.sh; . /ssc/suites/$suite.sh"
	rc=$?
	[ $rc -eq 0 ] || echo "not ok $suite: suite ran to completion # exit status $rc"
	kernel_log_check "$suite"
done
echo "@@END"
