# SPDX-License-Identifier: GPL-2.0
# Sourced by the harness scripts: paths and small helpers shared by all of them.
# shellcheck shell=bash

SSC_TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# Everything fetched, extracted or built for the harness lives here, outside the repo,
# so a warm machine does not redo it. Safe to delete at any time.
SSC_CACHE=${SSC_CACHE:-/var/cache/ssc-harness}
SSC_OUT=${SSC_OUT:-$SSC_TOP/out}
mkdir -p "$SSC_CACHE" "$SSC_OUT"

log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }
# pick N WORD...: N of the words, drawn by SSC_SEED, in the order drawn; all of them
# under SSC_FULL. The algorithm of pick() of tests/vm/lib.sh, but the host's awk is
# not the guest's busybox awk: the same seed may draw other words there.
pick() {
	local n=$1
	shift
	if [ "${SSC_FULL:-0}" = 1 ] || [ "$n" -ge $# ]; then
		echo "$@"
		return
	fi
	echo "$@" | awk -v n="$n" -v s="${SSC_SEED:-1}" '{
		srand(s % 2147483647)
		for (i = 1; i <= NF; i++) w[i] = $i
		for (i = NF; i > 1; i--) { j = int(rand() * i) + 1; t = w[i]; w[i] = w[j]; w[j] = t }
		for (i = 1; i <= n; i++) printf "%s%s", w[i], i < n ? " " : "\n" }'
}

# linux_src: print the path of an extracted, pristine-plus-our-hooks linux-source-6.12
# tree (extracted once from Debian's linux-source-6.12 tarball).
linux_src() {
	local tarball ver dir
	tarball=$(ls /usr/src/linux-source-6.12.tar.* 2>/dev/null | head -n1)
	[ -n "$tarball" ] || die "linux-source-6.12 is not installed (run scripts/deps.sh)"
	ver=$(dpkg-query -W -f='${Version}' linux-source-6.12)
	dir="$SSC_CACHE/src/linux-source-$ver"
	if [ ! -e "$dir/.extracted" ]; then
		log "extracting $tarball"
		rm -rf "$dir"
		mkdir -p "$dir"
		tar -xf "$tarball" -C "$dir" --strip-components=1
		touch "$dir/.extracted"
	fi
	echo "$dir"
}

# flashvm_src: print the path of linux-source-6.12 with the swap policy hook series
# (kernel/flashvm/patches, in the order of its "series" file) applied. The tree is a
# hard-linked copy of linux_src's: patch(1) writes each file it changes anew, which breaks
# that file's link, so the pristine tree is never touched. One tree per series content.
flashvm_src() {
	local src pdir hash dir p
	src=$(linux_src)
	pdir=$SSC_TOP/kernel/flashvm/patches
	[ -r "$pdir/series" ] || die "missing $pdir/series"
	hash=$(cd "$pdir" && xargs cat series <series | sha256sum | cut -c1-12)
	dir="$SSC_CACHE/src/linux-flashvm-${src##*/linux-source-}-$hash"
	if [ ! -e "$dir/.patched" ]; then
		log "flashvm: applying $(wc -l <"$pdir/series") patches to a copy of $src"
		rm -rf "$dir"
		cp -al "$src" "$dir"
		rm -f "$dir/.extracted"
		while read -r p; do
			# -F0: the series must apply as it is, without fuzz
			patch -d "$dir" -p1 -F0 -N -s --no-backup-if-mismatch <"$pdir/$p" >&2 ||
				die "flashvm: $p does not apply cleanly to ${src##*/}"
		done <"$pdir/series"
		# hook_ssc_into_tree appends to these two: give the copy its own files
		for p in drivers/md/Kconfig drivers/md/Makefile; do
			cp "$dir/$p" "$dir/$p.new" && mv "$dir/$p.new" "$dir/$p"
		done
		touch "$dir/.patched"
	fi
	echo "$dir"
}

# hook_ssc_into_tree SRC: link kernel/ssc and kernel/hashcache into the tree as
# drivers/md/ssc and drivers/md/hashcache and hook them into drivers/md/{Kconfig,Makefile}.
# The links are re-pointed every time: the repo may have moved (CI clones it elsewhere),
# and a dangling link breaks every Kconfig run in the tree.
hook_ssc_into_tree() {
	local src=$1 last d sym
	for d in ssc:DM_SSC hashcache:HASHCACHE; do
		sym=${d#*:}
		d=${d%%:*}
		ln -sfn "$SSC_TOP/kernel/$d" "$src/drivers/md/$d"
		if ! grep -q "^source \"drivers/md/$d/Kconfig\"" "$src/drivers/md/Kconfig"; then
			# before the final endif (of "if MD")
			last=$(grep -n '^endif' "$src/drivers/md/Kconfig" | tail -n1 | cut -d: -f1)
			[ -n "$last" ] || die "no endif in $src/drivers/md/Kconfig"
			sed -i "${last}i source \"drivers/md/$d/Kconfig\"\n" "$src/drivers/md/Kconfig"
		fi
		grep -q "^obj-\$(CONFIG_$sym)" "$src/drivers/md/Makefile" ||
			printf '\nobj-$(CONFIG_%s)\t\t+= %s/\n' "$sym" "$d" >>"$src/drivers/md/Makefile"
	done
}
