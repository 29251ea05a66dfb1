#!/usr/bin/env bash
# boot: default
# Without invlpgb=soft the same kernel has no INVLPGB and flushes with IPIs.
. "$(dirname "$0")/../lib.sh"
t=$(mktemp -d)
expect_eq "debugfs reports mode none" none "$(cat $BTLB/mode 2>&1)"
if dmesg | grep -q 'broadcast TLB invalidation: none'; then
	pass "the boot log says broadcast TLB invalidation is off"
else
	fail "the boot log says broadcast TLB invalidation is off" "$(dmesg | grep -i 'broadcast tlb\|invlpgb' | head -n 5)"
fi
i0=$(tlb_ipis)
"$TOOLS/tlbflush/tlbflush" -t 8 -c 0-7 -d 3 --json >"$t/flush.json"
rc=$?
i1=$(tlb_ipis)
loops=$(json "$t/flush.json" 'j["total_loops"]')
diag "tlbflush: $loops loops, $((i1 - i0)) TLB shootdown IPIs"
expect_eq "tlbflush's data checks pass" 0 "$rc"
if [ $((i1 - i0)) -gt "$((loops / 10))" ]; then
	pass "8 threads' flushes are TLB shootdown IPIs"
else
	fail "8 threads' flushes are TLB shootdown IPIs" "$((i1 - i0)) IPIs for $loops loops"
fi
expect_eq "no global ASID is in use" 0 "$(btlb global_asid in_use)"
dmesg_clean "dmesg is clean"
rm -rf "$t"
