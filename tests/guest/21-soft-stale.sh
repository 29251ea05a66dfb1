#!/usr/bin/env bash
# boot: soft hw
# The stale-translation checker finds no stale read, under the software
# model and on a CPU with INVLPGB and PCID: every remap, mprotect and MADV_DONTNEED of a page that seven other
# CPUs keep reading is flushed before the call returns.
. "$(dirname "$0")/../lib.sh"
t=$(mktemp -d)
settle_cpus
base=$(btlb global_asid in_use)
a0=$(btlb global_asid assigned)
invlpgbs_begin
i0=$(tlb_ipis) r0=$(invlpgbs)
"$TOOLS/stalecheck/stalecheck" -d 15 --json >"$t/stale.json"
rc=$?
i1=$(tlb_ipis) r1=$(invlpgbs)
invlpgbs_end
a1=$(btlb global_asid assigned)
summary=$(json "$t/stale.json" '"%d checked reads, %.0f reads/s, %d writer rounds, %d stale" % (j["checked_reads"], j["reads_per_sec"], j["writer_rounds"], j["stale_reads"])' 2>&1)
diag "stalecheck: $summary"
diag "during the run: $((i1 - i0)) TLB shootdown IPIs, $((r1 - r0)) INVLPGBs, $((a1 - a0)) global ASIDs assigned"
expect_eq "stalecheck exits 0" 0 "$rc"
expect_eq "no stale read" 0 "$(json "$t/stale.json" 'j["stale_reads"]')"
reads=$(json "$t/stale.json" 'j["checked_reads"]')
if [ "$reads" -ge 1000000 ]; then pass "at least 10^6 checked reads ($reads)"; else fail "at least 10^6 checked reads ($reads)"; fi
for m in remap mprotect dontneed; do
	r=$(json "$t/stale.json" "j['per_mode']['$m']['writer_rounds']")
	if [ "$r" -gt 0 ]; then pass "mode $m ran ($r rounds)"; else fail "mode $m ran ($r rounds)"; fi
done
if [ $((a1 - a0)) -gt 0 ] && [ $((r1 - r0)) -gt 0 ]; then
	pass "the checker ran on a global ASID with broadcast flushes"
else
	fail "the checker ran on a global ASID with broadcast flushes" "assigned: $((a1 - a0)), INVLPGBs: $((r1 - r0))"
fi
dmesg_clean "dmesg is clean"
rm -rf "$t"
