#!/usr/bin/env bash
# boot: default
# The guest has what every other test relies on.
. "$(dirname "$0")/../lib.sh"

want=${GUEST_CPUS:-8}
got=$(grep -c '^processor' /proc/cpuinfo)
expect_eq "the guest has $want CPUs" "$want" "$got"
check "the kernel exposes BTF" test -s /sys/kernel/btf/vmlinux
check "tracefs is mounted with the tlb events" test -d /sys/kernel/tracing/events/tlb/tlb_flush
if [ "$(stat -f -c %T /sys/fs/bpf 2>/dev/null)" = bpf_fs ]; then
	pass "bpffs is mounted"
else
	fail "bpffs is mounted" "/sys/fs/bpf is $(stat -f -c %T /sys/fs/bpf 2>&1)"
fi
check "debugfs is mounted" test -d /sys/kernel/debug/x86
check "cgroup2 has the memory controller" grep -qw memory /sys/fs/cgroup/cgroup.controllers
check "the root filesystem is read-only" sh -c '! touch /usr/.guest-rw-probe 2>/dev/null'
check "the caller's directory is writable" sh -c 'f=.guest-rw-$$; echo x >"$f" && rm "$f"'
check "/tmp is writable" sh -c 'echo x >/tmp/probe && rm /tmp/probe'

out=$(bpftrace -e 'BEGIN { printf("bpftrace-ok %d\n", 7); exit(); }' 2>&1)
case $out in
*"bpftrace-ok 7"*) pass "bpftrace runs a program" ;;
*) fail "bpftrace runs a program" "$out" ;;
esac

out=$(perf stat -x, -e tlb:tlb_flush -- sh -c 'for i in 1 2 3; do true; done' 2>&1)
case $out in
*tlb:tlb_flush*) pass "perf stat counts a tracepoint" ;;
*) fail "perf stat counts a tracepoint" "$out" ;;
esac

check "bpftool lists programs" bpftool prog list
check "/proc/config.gz is there (IKCONFIG)" test -s /proc/config.gz
