# SPDX-License-Identifier: GPL-2.0
# Harness self-test, run only by scripts/check.sh: a kernel WARN must fail the run.
insmod /lib/modules/$(uname -r)/extra/ssc-harness-splat.ko mode=warn
ok "module with a WARN loaded"
