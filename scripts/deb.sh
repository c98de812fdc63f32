#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# make deb: the Debian packages ssc-dkms (the modules' source, built by DKMS on the
# target machine) and hcctl, built as a Debian developer builds them
# (dpkg-buildpackage, debhelper with dh-dkms) and checked by lintian at its default
# level. The packaging is scripts/deb/debian/ (the project has no top-level debian/).
#
# The source tree is assembled in out/deb/build/ssc-<version>/ from the work tree as it
# is: the files git tracks, with their uncommitted changes, and new files not yet
# added, but none that .gitignore names (build products). A developer's `make deb`
# thus packages what they are testing, not the last commit (`git archive HEAD`
# would), and never a stale object. Outside a git checkout, the directories are
# copied whole.
#
# Leaves in out/deb/: the .debs (and hcctl's -dbgsym), the .changes and .buildinfo,
# build.log and lintian.txt. They are built in out/deb/build/ and moved into place at
# the end, so a reader of out/deb/ never sees half a build; two runs at once take
# turns (a lock). Exit 0 if the packages were built and lintian printed no error or
# warning (E: or W:; its I: and P: lines are fine), 3 if only lintian complained,
# 1 if the build failed (and no package is left in out/deb/ to look like this build's).
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=common.sh
. "$(dirname "$0")/common.sh"

deb=$SSC_OUT/deb
ver=$(dpkg-parsechangelog -l "$SSC_TOP/scripts/deb/debian/changelog" -S Version)
stage=$deb/build
src=$stage/ssc-$ver
parts=(Makefile README kernel include user Documentation)
# the previous build's products (dkms-ko/ of deb-test.sh and the like stay)
rm_products() { rm -f "$deb"/*.deb "$deb"/*.changes "$deb"/*.buildinfo "$deb"/build.log "$deb"/lintian.txt; }

mkdir -p "$deb"
exec 9>"$deb/.lock"
flock 9

rm -rf "$stage"
mkdir -p "$src"
if git -C "$SSC_TOP" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
	# a file deleted in the work tree but not in the index is listed, and skipped
	git -C "$SSC_TOP" ls-files -z --cached --others --exclude-standard -- "${parts[@]}" |
		(cd "$SSC_TOP" && while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done) |
		rsync -a --from0 --files-from=- "$SSC_TOP/" "$src/"
else
	(cd "$SSC_TOP" && cp -a "${parts[@]}" "$src/")
	make -s -C "$src/user" clean
fi
cp -a "$SSC_TOP/scripts/deb/debian" "$src/debian"

log "deb: building ssc $ver in $src"
if ! (cd "$src" && dpkg-buildpackage -us -uc -b) >"$stage/build.log" 2>&1; then
	rm_products
	mv "$stage/build.log" "$deb/build.log"
	tail -n 30 "$deb/build.log" >&2
	die "dpkg-buildpackage failed (the whole log: $deb/build.log)"
fi

# lintian exits 0 even with warnings unless told; its output is the verdict
changes=$(ls "$stage"/ssc_"$ver"_*.changes)
log "deb: lintian ${changes##*/}"
lintian --fail-on none "$changes" >"$stage/lintian.txt" 2>&1 || true

rm_products
mv "$stage"/*.deb "$stage"/*.changes "$stage"/*.buildinfo "$stage/build.log" "$stage/lintian.txt" "$deb/"
rm -rf "$stage"
ls "$deb"/*.deb
cat "$deb/lintian.txt"
if grep -qE '^[EW]: ' "$deb/lintian.txt"; then
	echo "error: lintian: $(grep -cE '^[EW]: ' "$deb/lintian.txt") errors or warnings ($deb/lintian.txt)" >&2
	exit 3
fi
echo "deb: ssc-dkms and hcctl $ver built in $deb, lintian clean"
