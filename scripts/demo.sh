#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Boot Debian's 6.12 kernel under QEMU; hcctl creates a cached volume over an emulated
# slow disk, fio replays synthetic traces against it, hcctl shows its status and the
# events it saw (tests/vm/suites/demo.sh).
set -euo pipefail
. "$(dirname "$0")/common.sh"
"$SSC_TOP/scripts/deps.sh" >&2
rc=0
out=$("$SSC_TOP/scripts/vm.sh" --kernel "${KFLAVOR:-6.12}" --name demo --suites demo) || rc=$?
grep -E '^# demo:' <<<"$out" | sed 's/^# demo: //'
grep -E '^not ok' <<<"$out" || true
tail -n1 <<<"$out"
exit $rc
