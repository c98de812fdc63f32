# SPDX-License-Identifier: GPL-2.0
# Harness self-test, run only by scripts/check.sh: a run that passes (booted
# once more after a first boot made to die before its init).
ok "a check that passes"
