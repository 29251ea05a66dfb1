# Broadcast TLB invalidation (AMD INVLPGB) on Debian's 6.12, tested in QEMU.
#
#   make demo     boot the patched kernel on emulated INVLPGB hardware and
#                 with the software model, and show it working
#   make check    build everything and run the test suite in the guest
#   make compare  vanilla against the series: table and plots in build/results
#   make bench-overhead  what tlbtop, bpftrace and perf record cost
#   make check-series    every step of the series builds; checkpatch; W=1
#   make check-debug     the guest tests on the debug kernel (lockdep, DEBUG_VM)
#   make check-long      vanilla against the series (short), and the long
#                        stress, churn, hotplug and soak tests
#   make check-emulator  the emulated CPU's PCID, INVPCID, INVLPGB (build/qemu)
#   make check-mutants   seeded bugs: which ones the guest tests catch
#   make qemu     QEMU with PCID, INVPCID and INVLPGB (qemu/patches) in build/qemu
#   make kernel-upstream  sid's newest linux-source-7.x, built with the guest's
#                 config without the series (build/obj/upstream)
#   make distro-kernel    Debian's own built sid kernel and its modules
#                 (build/distro), for the distro profiles
#   make check-upstream   the guest tests that run on upstream kernels, on
#                 the upstream and distro flavors
#
# Every target installs what it needs first (make deps, through a stamp).

SHELL := /bin/bash
BUILD := build
DEPS_STAMP := $(BUILD)/.deps-stamp
INITRAMFS := $(BUILD)/guest/initramfs.cpio.gz

.PHONY: all deps tree kernel kernel-vanilla guest tools check demo \
	compare bench-overhead check-series kernel-debug check-debug \
	check-long qemu check-mutants check-emulator clean help \
	kernel-upstream distro-kernel check-upstream

all: kernel guest tools

help:
	@sed -n 's/^#   //p' Makefile

deps: $(DEPS_STAMP)

$(DEPS_STAMP): scripts/deps scripts/versions
	scripts/deps $@

tree: $(DEPS_STAMP)
	scripts/kernel-tree

kernel: tree
	scripts/build-kernel patched

kernel-vanilla: tree
	scripts/build-kernel vanilla

kernel-debug: tree
	scripts/build-kernel debug

# The QEMU build is a heavy one: it takes the CPU lock.
qemu: $(DEPS_STAMP)
	scripts/qemu-source
	flock $(BUILD)/.cpu.lock scripts/build-qemu

# sid's source and Debian's built kernel come through a private apt list
# under build/sid; nothing is installed on the host.
kernel-upstream: $(DEPS_STAMP)
	scripts/upstream-source source
	scripts/kernel-tree --upstream
	scripts/build-kernel upstream

distro-kernel: $(DEPS_STAMP)
	scripts/upstream-source distro

guest: $(INITRAMFS)

$(INITRAMFS): guest-image/init guest-image/build-initramfs $(DEPS_STAMP)
	guest-image/build-initramfs $@

tools: kernel
	$(MAKE) -s -C tools

check: kernel guest tools qemu
	tests/check

check-upstream: kernel-upstream distro-kernel guest tools qemu
	tests/check --guest-only --flavors upstream,distro

check-debug: kernel kernel-debug guest tools qemu
	tests/check --guest-only --kernel $(BUILD)/obj/debug/arch/x86/boot/bzImage

check-long: kernel kernel-vanilla guest tools
	tests/check --long
	$(MAKE) check-upstream

# No kernel: a freestanding program tests the CPU that build/qemu emulates.
check-emulator: qemu
	scripts/check-emulator

check-mutants: kernel guest tools
	scripts/check-mutants

compare: kernel kernel-vanilla guest tools
	scripts/compare

bench-overhead: kernel guest tools
	scripts/bench-overhead

demo: kernel guest tools qemu
	scripts/demo

check-series: tree
	scripts/check-series

clean:
	rm -rf $(BUILD)
