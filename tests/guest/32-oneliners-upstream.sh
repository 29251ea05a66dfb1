#!/usr/bin/env bash
# boot: distro-hw distro upstream-hw upstream
# The bpftrace one-liners for upstream kernels (tools/bpftrace/upstream),
# on kernels without the series' tracepoints: each runs against a workload
# that triggers it, and what it counts agrees with the workload's own
# count. With INVLPGB (the -hw profiles) the 6-thread tlbflush gets a
# global ASID and its flushes are broadcasts; without it they are IPI
# shootdowns, and no broadcast, no IPI avoided and no ASID may be counted.
. "$(dirname "$0")/../lib.sh"
t=$(mktemp -d)
bt=$TOOLS/bpftrace/upstream

if grep -qa btf_trace_broadcast_flush /sys/kernel/btf/vmlinux; then
	skip "the upstream one-liners" "this kernel has the series' tracepoints: 31-oneliners covers it"
	exit 0
fi
if uses_invlpgb; then
	hw=1
	diag "$(uname -r): the kernel uses INVLPGB"
else
	hw=
	diag "$(uname -r): the kernel does not use INVLPGB"
fi

flush6() { "$TOOLS/tlbflush/tlbflush" -t 6 -c 0-5 -d "$1" -q; }
# loops NAME: the loops of the tlbflush run beside one-liner NAME.
loops() { sed -n 's/.*: \([0-9]*\) loops in .*/\1/p' "$t/$1.bt.wl"; }
# total MAP OUT: the sum of map MAP's values over every printout in OUT.
total() { awk -v m="^@$1" '$0 ~ m { s += $NF } END { print s + 0 }' <<<"$2"; }

settle_cpus
out=$(run_bt "$bt/bcast-vs-ipi.bt" 120 flush6 5)
n=$(loops bcast-vs-ipi)
bc=$(total 'broadcast\[[0-9]+, tlbflush\]' "$out")
ipi=$(total 'ipi_shootdown\[[0-9]+, tlbflush\]' "$out")
diag "bcast-vs-ipi.bt: tlbflush ran ${n:-no} loops: $bc broadcast, $ipi IPI shootdown flushes"
if [ -n "$hw" ]; then
	# Up to the global ASID the flushes go by IPI: a few dozen.
	within "bcast-vs-ipi.bt: tlbflush's flushes are broadcasts, one a loop" "$bc" "${n:-0}" 10
else
	expect_eq "bcast-vs-ipi.bt: no broadcast without INVLPGB" 0 "$bc"
	within "bcast-vs-ipi.bt: tlbflush's flushes are IPI shootdowns, one a loop" "$ipi" "${n:-0}" 10
fi

settle_cpus
out=$(run_bt "$bt/ipis-avoided.bt" 120 flush6 5)
n=$(loops ipis-avoided)
av=$(total 'ipis_avoided\[[0-9]+, tlbflush\]' "$out")
diag "ipis-avoided.bt: ${n:-no} loops, $av IPIs avoided"
if [ -n "$hw" ]; then
	# Each broadcast spares the other CPUs of the mask: the 5 other
	# workers, at most the shell's CPUs as well (8 vCPUs).
	if [ -n "$n" ] && [ "$av" -ge $((n * 4)) ] && [ "$av" -le $((n * 7 + n / 10)) ] &&
		grep -qE '^[0-9:]{8} ipis avoided per process' <<<"$out"; then
		pass "ipis-avoided.bt: 4 to 7 IPIs avoided a loop, printed each second"
	else
		fail "ipis-avoided.bt: 4 to 7 IPIs avoided a loop, printed each second" "$(tail -n 8 <<<"$out")"
	fi
else
	expect_eq "ipis-avoided.bt: no IPI avoided without INVLPGB" 0 "$av"
fi

churn() {
	flush6 4
	for _ in 1 2 3 4 5; do settle_cpus; sleep 0.2; done
}
settle_cpus
out=$(run_bt "$bt/asid-churn.bt" 120 churn)
as=$(total 'assigned\[tlbflush\]' "$out")
fr=$(total 'freed\[' "$out")
avail=$(grep -E '^@available: ' <<<"$out" | tail -n 1 | awk '{ print $2 }')
diag "asid-churn.bt: $as assigned to tlbflush, $fr freed, ${avail:-no} available"
if [ -n "$hw" ]; then
	if [ "$as" -eq 1 ] && [ "$fr" -ge 1 ] && [[ $avail =~ ^[0-9]+$ ]] && [ "$avail" -gt 0 ]; then
		pass "asid-churn.bt: tlbflush's one global ASID assigned and freed, with the pool's level"
	else
		fail "asid-churn.bt: tlbflush's one global ASID assigned and freed, with the pool's level" "$(tail -n 12 <<<"$out")"
	fi
else
	expect_eq "asid-churn.bt: no global ASID without INVLPGB" "0 0" "$as $fr"
fi

name="reclaim-flushes.bt: tlbbatch flushes per second beside reclaimed pages"
if ! out=$(run_bt_reclaim "$bt/reclaim-flushes.bt"); then
	fail "$name" "no zram swap"
elif [ "$(total tlbbatch_flushes "$out")" -gt 0 ] && [ "$(total reclaimed_pages "$out")" -gt 0 ]; then
	pass "$name"
	diag "$(total tlbbatch_flushes "$out") batch flushes, $(total other_cpus "$out") other CPUs in their masks, $(total reclaimed_pages "$out") pages reclaimed"
else
	fail "$name" "$(tail -n 8 <<<"$out")"
fi
dmesg_clean "dmesg is clean"
rm -rf "$t"
