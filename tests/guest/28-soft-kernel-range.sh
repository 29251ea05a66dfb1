#!/usr/bin/env bash
# boot: soft hw
# Kernel ranges: tools/kflushcheck frees BPF arena pages on one CPU (each a
# one-page flush_tlb_kernel_range(), through vunmap_range()) while three
# other CPUs read them through the kernel mapping with a BPF program. After
# the free, a read must fault (and read 0); a read of the old contents is a
# stale kernel translation. Those flushes must also go out as one-page
# INVLPGBs of that address (the VA flag, global entries included), not as
# flushes of every TLB entry.
. "$(dirname "$0")/../lib.sh"
t=$(mktemp -d)
rounds=${KFLUSH_ROUNDS:-1500}
trace_on invlpgb_issue
"$TOOLS/kflushcheck/kflushcheck" -r "$rounds" -c 4-7 --json >"$t/out" 2>"$t/err"
rc=$?
trace_off
cat /sys/kernel/tracing/trace >"$t/trace"
diag "kflushcheck: $(cat "$t/out" "$t/err")"
expect_eq "kflushcheck exits 0" 0 "$rc"
val() { json "$t/out" "j['$1']" 2>&1; }
expect_eq "every reader saw each page's marker before its free" 0 "$(val first_misses)"
expect_eq "no read of a freed page through a stale kernel translation" 0 "$(val stale_reads)"
expect_eq "3 readers read each of the $rounds freed pages" $((3 * rounds)) "$(val reads)"

# INVLPGBs of kernel addresses (PCID 0, global entries included): of one
# page at an address (VA), and of everything (no VA).
read -r ranged all <<<"$(awk '/ invlpgb_issue: pcid=0 / && /flags=[A-Z_|]*GLOBAL/ {
	if ($0 ~ /flags=VA[|]/ && $0 ~ / pages=1 /) r++; else if ($0 !~ /flags=VA[|]/) a++ }
	END { print r + 0, a + 0 }' "$t/trace")"
diag "INVLPGBs of kernel addresses: $ranged of one page at an address, $all of everything"
if [ "$ranged" -ge "$rounds" ]; then
	pass "each freed page was flushed by a one-page INVLPGB with the VA flag ($ranged for $rounds pages)"
else
	fail "each freed page was flushed by a one-page INVLPGB with the VA flag ($ranged for $rounds pages)" \
		"$all INVLPGBs of every kernel translation"
fi
dmesg_clean "dmesg is clean"
rm -rf "$t"
