# SPDX-License-Identifier: GPL-2.0
# Harness self-test, run only by scripts/check.sh: an oops must fail the run.
insmod /lib/modules/$(uname -r)/extra/ssc-harness-splat.ko mode=oops
ok "survived an oops (must never print)"
