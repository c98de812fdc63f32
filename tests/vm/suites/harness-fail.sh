# SPDX-License-Identifier: GPL-2.0
# Harness self-test, run only by scripts/check.sh: one check that must fail.
check_eq "deliberately wrong expectation" "1" "2"
