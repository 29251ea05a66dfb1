# Broadcast TLB invalidation (AMD INVLPGB) on Debian's 6.12, tested in QEMU.
#
#   make demo     boot the patched kernel and show it working
#   make check    build everything and run the test suite in the guest
#
# Every target installs what it needs first (make deps, through a stamp).

SHELL := /bin/bash
BUILD := build
DEPS_STAMP := $(BUILD)/.deps-stamp
INITRAMFS := $(BUILD)/guest/initramfs.cpio.gz

.PHONY: all deps tree kernel kernel-vanilla guest tools check demo \
	check-series clean help

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

guest: $(INITRAMFS)

$(INITRAMFS): guest-image/init guest-image/build-initramfs $(DEPS_STAMP)
	guest-image/build-initramfs $@

tools: kernel
	$(MAKE) -s -C tools

check: kernel guest tools
	tests/check

demo: kernel guest tools
	scripts/demo

check-series: tree
	scripts/check-series

clean:
	rm -rf $(BUILD)
