#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# What a kernel reviewer runs first, over kernel/ (and the uapi headers):
#   checkpatch.pl --strict --no-tree (from linux-source-6.12), per file
#   sparse (make C=2) against the 6.12 headers
#   a W=1 build against the 6.12 and the 6.1 headers, which must print no warning
#   checkpatch of the FlashVM patch series, which must apply to linux-source-6.12, and
#   W=1 and sparse of flashvm.ko against the patched debug kernel
# Prints one ok/not ok line per check and "lint: N passed, N failed".
set -uo pipefail
. "$(dirname "$0")/common.sh"

src=$(linux_src) || exit 1
pass=0 fail=0
result() { # result ok|fail WHAT [LOGFILE]
	if [ "$1" = ok ]; then
		pass=$((pass + 1)); echo "ok - lint: $2"
	else
		fail=$((fail + 1)); echo "not ok - lint: $2"
		[ -n "${3:-}" ] && sed 's/^/#   /' "$3" | head -n 40
	fi
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

cd "$SSC_TOP" || exit 1
mapfile -t files < <(git ls-files -co --exclude-standard 'kernel/*.c' 'kernel/*.h' 'include/uapi/*.h' | sort)
[ ${#files[@]} -gt 0 ] || { result fail "no kernel sources found"; echo "lint: $pass passed, $fail failed"; exit 1; }
for f in "${files[@]}"; do
	if perl "$src/scripts/checkpatch.pl" --strict --no-tree --no-summary --terse --show-types \
		-f "$f" > "$tmp/cp" 2>&1; then
		result ok "checkpatch --strict $f"
	else
		result fail "checkpatch --strict $f" "$tmp/cp"
	fi
done

# the FlashVM swap policy series: each patch as a patch (a new file needs no MAINTAINERS
# entry out of tree), and the whole series onto Debian's linux-source-6.12 without fuzz
# (run from the patches' directory: from the top, checkpatch takes a patch under kernel/
# for a source file and checks the patch's own context lines)
for f in kernel/flashvm/patches/*.patch; do
	if (cd "$(dirname "$f")" && perl "$src/scripts/checkpatch.pl" --strict --no-tree --no-summary \
		--terse --show-types --ignore FILE_PATH_CHANGES "$(basename "$f")") > "$tmp/cp" 2>&1; then
		result ok "checkpatch --strict $f"
	else
		result fail "checkpatch --strict $f" "$tmp/cp"
	fi
done
if (flashvm_src) > "$tmp/fs" 2>&1; then
	result ok "kernel/flashvm/patches apply to $(basename "$src") without fuzz"
else
	result fail "kernel/flashvm/patches apply to $(basename "$src") without fuzz" "$tmp/fs"
fi

kdir_of() { ls -d /usr/src/linux-headers-"$1"*-amd64 2>/dev/null | sort -V | tail -n1; }
build() { # build KDIR DIR EXTRA...: all modules, from scratch in DIR; output in $tmp/log
	local kdir=$1 dir=$2
	shift 2
	rm -rf "$dir"
	make -C "$SSC_TOP" modules KDIR="$kdir" BUILD="$dir" "$@" > "$tmp/log" 2>&1
}
for kv in 6.12 6.1; do
	kdir=$(kdir_of "$kv.")
	if [ -z "$kdir" ]; then
		result fail "W=1 build on $kv: no linux-headers-$kv (run scripts/deps.sh)"
		continue
	fi
	if build "$kdir" "$tmp/w1-$kv" W=1 && ! grep -E 'warning:|error:' "$tmp/log" > "$tmp/w"; then
		result ok "W=1 build, no warnings, $(basename "$kdir")"
	else
		result fail "W=1 build, no warnings, $(basename "$kdir")" "$tmp/log"
	fi
done
kdir=$(kdir_of 6.12.)
if [ -n "$kdir" ] && build "$kdir" "$tmp/sparse" C=2 && ! grep -E 'warning:|error:' "$tmp/log" > "$tmp/w"; then
	result ok "sparse (C=2) clean, $(basename "$kdir")"
else
	result fail "sparse (C=2) clean" "$tmp/log"
fi

# flashvm.ko builds only against a kernel with the hooks: the debug kernel (built here
# on a fresh machine, about 8 minutes, then cached for the vm-debug stage). Only flashvm:
# the other modules' KUnit cases, under KASAN, have stack frames over W=1's limit.
if kdir=$("$SSC_TOP/scripts/build-debug-kernel.sh" 2> "$tmp/dk"); then
	if build "$kdir" "$tmp/w1-fvm" W=1 MODDIRS=flashvm && [ -e "$tmp/w1-fvm/flashvm/flashvm.ko" ] &&
		! grep -E 'warning:|error:' "$tmp/log" > "$tmp/w"; then
		result ok "W=1 build of flashvm, no warnings, patched $(basename "$kdir")"
	else
		result fail "W=1 build of flashvm, no warnings, patched $(basename "$kdir")" "$tmp/log"
	fi
	if build "$kdir" "$tmp/sparse-fvm" C=2 MODDIRS=flashvm && ! grep -E 'warning:|error:' "$tmp/log" > "$tmp/w"; then
		result ok "sparse (C=2) clean, patched $(basename "$kdir")"
	else
		result fail "sparse (C=2) clean, patched $(basename "$kdir")" "$tmp/log"
	fi
else
	result fail "the patched debug kernel builds" "$tmp/dk"
fi

# the harness scripts (bash); the guest's busybox sh scripts are left out
if command -v shellcheck > /dev/null; then
	if shellcheck -x -P "$SSC_TOP/scripts" -S warning scripts/*.sh .ci/run > "$tmp/sc" 2>&1; then
		result ok "shellcheck scripts/ .ci/run"
	else
		result fail "shellcheck scripts/ .ci/run" "$tmp/sc"
	fi
else
	result fail "shellcheck is not installed (run scripts/deps.sh)"
fi

echo "lint: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
