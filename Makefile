# SPDX-License-Identifier: GPL-2.0
#
#   make               build the kernel modules (against KDIR) and the user tools
#   make check         every test in 40 minutes: lint, KUnit (UML), VM suites on 6.12, a smoke
#                      subset on 6.1, small sizes on the debug kernel, each benchmark at a tiny size
#   make check-full    the release check: every crash point, every suite on 6.1, full sizes on
#                      the debug kernel (SSC_SEED=N replays a run's samples, for either)
#   make check-ssdalloc  SSDAlloc's host tests alone (a part of make check's user stage): the
#                      library, its tests and applications, plain and under ASan + UBSan
#   make lint          checkpatch --strict and sparse over kernel/
#   make demo          boot a VM, create an ssc volume with hcctl, replay a trace, show status and events
#   make bench         dm-ssc against raw flash, dm-cache and dm-writecache in one VM run
#   make bench-traces  replay traces against dm-ssc, dm-cache, dm-writecache, bcache: the synthetic
#                      ones, or TRACE=<file> (msr, fiu, csv, blktrace, fio iolog) [CACHE=<size>|<N>%]
#                      [ORIGIN=<size>] (Documentation/traces.rst)
#   make bench-hashcache  every HashCache policy: I/Os per operation, RAM bits, ops/s
#   make bench-flashvm  stock swap, zswap and each flashvm mechanism on the patched bench kernel
#   make bench-ssdalloc  SSDAlloc (MP, OPP) against malloc over stock and FlashVM-tuned swap:
#                      same flash device, same RAM limit (Documentation/ssdalloc.rst)
#   make bench-locks   lock contentions of read hits, dm-ssc against dm-writecache (debug kernel)
#   make vm-shell      a shell in the VM with the modules loaded (KFLAVOR=6.12|6.1|debug)
#   make deps          install what all of the above needs (Debian packages)
#   make install       install hcctl, its man pages, bash completion and the boot-time assembly
#                      of /etc/ssctab (systemd unit, udev rules, initramfs hooks) (PREFIX=/usr/local)
#   make deb           Debian packages ssc-dkms and hcctl in out/deb/, checked by lintian
#                      (Documentation/install.rst)
#
# Modules are built out of place in out/build/<kernel release>/, so builds for
# several kernels can sit side by side and kernel/ stays free of objects.

KDIR	?= $(lastword $(sort $(wildcard /usr/src/linux-headers-6.12.*+deb12-amd64)))
# named after the KDIR (Debian's 6.1 headers call themselves 6.1.NNN, not the ABI)
BUILD	?= $(CURDIR)/out/build/$(notdir $(abspath $(KDIR)))

# Out-of-tree builds have no Kconfig: say which options we build, and turn the
# KUnit tests and the injection points on when the target kernel has KUnit (the
# debug kernel does).
MODCFG	:= CONFIG_DM_SSC=m CONFIG_HASHCACHE=m
ifneq ($(shell grep -s '^CONFIG_KUNIT=y' $(KDIR)/.config),)
MODCFG	+= CONFIG_DM_SSC_KUNIT_TEST=y CONFIG_HASHCACHE_KUNIT_TEST=y CONFIG_DM_SSC_DEBUG=y
endif

MODDIRS	:= ssc hashcache

# flashvm.ko needs the swap policy hooks of kernel/flashvm/patches, which only a
# patched kernel has (the debug kernel, or one built by scripts/build-flashvm-kernel.sh)
ifneq ($(shell grep -s '^CONFIG_SWAP_POLICY_HOOKS=y' $(KDIR)/.config),)
MODCFG	+= CONFIG_FLASHVM=m
MODDIRS	+= flashvm
endif

.PHONY: all modules user clean check check-full check-ssdalloc lint demo vm-shell deps bench bench-traces bench-hashcache bench-flashvm bench-ssdalloc bench-locks install deb

all: modules user

modules:
	@test -n "$(KDIR)" -a -d "$(KDIR)" || { echo "KDIR not found: run 'make deps' or set KDIR" >&2; exit 1; }
	@mkdir -p $(BUILD)
	@for d in $(MODDIRS); do \
		rsync -a --delete --exclude='*.o' --exclude='*.ko' --exclude='.*.cmd' \
			--exclude='*.mod*' --exclude='Module.symvers' --exclude='modules.order' --exclude=patches \
			kernel/$$d/ $(BUILD)/$$d/ || exit 1; \
		$(MAKE) -C $(KDIR) M=$(BUILD)/$$d $(MODCFG) SSC_UAPI=$(CURDIR)/include/uapi modules || exit 1; \
	done

user:
	$(MAKE) -C user
	$(MAKE) -C user/ssdalloc

install:
	$(MAKE) -C user install
	$(MAKE) -C user/ssdalloc install

deb:
	scripts/deb.sh

clean:
	rm -rf out
	$(MAKE) -C user clean
	$(MAKE) -C user/ssdalloc clean

deps:
	scripts/deps.sh

check:
	scripts/check.sh

check-full:
	scripts/check.sh --full

check-ssdalloc:
	scripts/ssdalloc-tests.sh

lint:
	scripts/lint.sh

demo:
	scripts/demo.sh

# TRACE, CACHE and ORIGIN reach the script as its BT_TRACE_FILE, BT_CACHE and BT_ORIGIN
# (exported as they are: a file name with spaces stays one)
bench-traces: export BT_TRACE_FILE := $(or $(TRACE),$(BT_TRACE_FILE))
bench-traces: export BT_CACHE := $(or $(CACHE),$(BT_CACHE))
bench-traces: export BT_ORIGIN := $(or $(ORIGIN),$(BT_ORIGIN))
bench-traces:
	scripts/bench-traces.sh

bench:
	scripts/bench.sh
	scripts/bench-locks.sh

bench-hashcache:
	scripts/bench-hashcache.sh

bench-flashvm:
	scripts/bench-flashvm.sh

bench-ssdalloc:
	scripts/bench-ssdalloc.sh

bench-locks:
	scripts/bench-locks.sh

vm-shell:
	scripts/vm.sh --kernel $(or $(KFLAVOR),6.12) --shell
