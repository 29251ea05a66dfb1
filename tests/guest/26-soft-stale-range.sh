#!/usr/bin/env bash
# boot: soft hw
# Ranged flushes: the stale-translation checker with a 16-page address A
# (stalecheck --pages 16), so that every remap, mprotect and MADV_DONTNEED
# flushes a range of 16 pages: more than one INVLPGB can cover
# (invlpgb_count_max is 8 under the model), fewer than the ceiling
# (tlb_single_page_flush_ceiling, 33) past which the kernel flushes the
# whole address space. No stale read on any page of the range, and those
# flushes go out as ranges of 16 pages, not as flushes of everything.
. "$(dirname "$0")/../lib.sh"
t=$(mktemp -d)
pages=16
settle_cpus
trace_on broadcast_flush
"$TOOLS/stalecheck/stalecheck" -p "$pages" -d 15 --json >"$t/stale.json"
rc=$?
trace_off
cat /sys/kernel/tracing/trace >"$t/trace"
diag "stalecheck: $(json "$t/stale.json" '"%d pages, %d checked reads, %d writer rounds, %d stale, modes: %s" % (j["pages"], j["checked_reads"], j["writer_rounds"], j["stale_reads"], {m: v["stale_reads"] for m, v in j["per_mode"].items()})' 2>&1)"
expect_eq "stalecheck exits 0" 0 "$rc"
expect_eq "no stale read on any of the $pages pages" 0 "$(json "$t/stale.json" 'j["stale_reads"]' 2>&1)"
for m in remap mprotect dontneed; do
	r=$(json "$t/stale.json" "j['per_mode']['$m']['writer_rounds']" 2>&1)
	if [ "$r" -gt 0 ] 2>/dev/null; then pass "mode $m ran ($r rounds)"; else fail "mode $m ran ($r rounds)"; fi
done

# The broadcast flushes of the run, by length: NPAGES-page ranges, and
# whole-address-space flushes (end = -1).
read -r ranged whole total <<<"$(python3 - "$t/trace" "$pages" <<'PY'
import re, sys
want = int(sys.argv[2]) * 4096
ranged = whole = total = 0
for line in open(sys.argv[1]):
    m = re.search(r' broadcast_flush: .*start=0x([0-9a-f]+) end=0x([0-9a-f]+)', line)
    if not m:
        continue
    total += 1
    start, end = int(m.group(1), 16), int(m.group(2), 16)
    if end == (1 << 64) - 1:
        whole += 1
    elif end - start == want:
        ranged += 1
print(ranged, whole, total)
PY
)"
diag "broadcast flushes: $total, of which $ranged of $pages pages and $whole of the whole address space"
if [ "${ranged:-0}" -ge 3 ]; then
	pass "the $pages-page changes were flushed as $pages-page ranges ($ranged)"
else
	fail "the $pages-page changes were flushed as $pages-page ranges (${ranged:-0})" \
		"$total broadcast flushes, ${whole:-0} of them of the whole address space"
fi

# The same range alone in its 2 MiB area (stalecheck --alone, all modes):
# each remap then frees the page table that held A's 4 KiB entries too, so
# its flush covers cleared PTEs and a freed page table at once. It must
# still invalidate each 4 KiB page: a flush at the PMD stride there (the
# class of upstream's flush_tlb_range() fix for zapped normal PMDs) visits
# one address per 2 MiB and leaves the other pages' entries behind. All
# modes, not remap alone: with remaps only, the readers fault and sleep on
# the mmap lock, their CPUs go lazy and the process never gets a global
# ASID, so no such flush would be a broadcast one.
trace_on broadcast_flush
"$TOOLS/stalecheck/stalecheck" -p "$pages" -A -d 10 --json >"$t/alone.json"
rc=$?
trace_off
freed=$(grep -c ' broadcast_flush: .*freed_tables=1' /sys/kernel/tracing/trace)
diag "stalecheck --alone: $(json "$t/alone.json" '"alone %s, %d checked reads, %d writer rounds, %d stale" % (j["alone"], j["checked_reads"], j["writer_rounds"], j["stale_reads"])' 2>&1); $freed broadcast flushes that freed page tables"
expect_eq "stalecheck --alone exits 0" 0 "$rc"
expect_eq "A stayed alone in its 2 MiB area" True "$(json "$t/alone.json" 'j["alone"]' 2>&1)"
expect_eq "no stale read on any of the $pages pages after remaps that free the page table" 0 \
	"$(json "$t/alone.json" 'j["stale_reads"]' 2>&1)"
if [ "$freed" -ge 3 ]; then
	pass "remaps that freed the page table were broadcast flushes ($freed)"
else
	fail "remaps that freed the page table were broadcast flushes ($freed)" \
		"the process had no global ASID while it remapped"
fi
dmesg_clean "dmesg is clean"
rm -rf "$t"
