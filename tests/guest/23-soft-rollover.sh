#!/usr/bin/env bash
# boot: soft-asidmax hw-asidmax
# With global_asid_max=4, more than four global-ASID processes, one after
# another and several at once: the allocator wraps (reset), hands a freed
# ASID out again only after a reset, never hands out one that is in use,
# stays within the cap, and the kernel says nothing.
. "$(dirname "$0")/../lib.sh"
t=$(mktemp -d)
cap=$(btlb global_asid capacity)
expect_eq "the pool is capped at 4" 4 "$cap"

settle_cpus
# Freed before the trace began, made reusable by its first reset.
before=$(btlb global_asid awaiting_reset)
trace_on global_asid_assign global_asid_free global_asid_reset
for i in 1 2 3 4 5 6; do
	"$TOOLS/tlbflush/tlbflush" -t 8 -c 0-7 -d 2 -q >/dev/null || echo "tlbflush $i failed" >>"$t/errors"
	settle_cpus
done
pids=
for i in 1 2 3 4 5 6; do
	"$TOOLS/tlbflush/tlbflush" -t 8 -c 0-7 -d 4 -q >/dev/null &
	pids="$pids $!"
done
for p in $pids; do wait "$p" || echo "tlbflush $p failed" >>"$t/errors"; done
for _ in 1 2 3 4 5; do settle_cpus; sleep 0.2; done
trace_off
cat /sys/kernel/tracing/trace >"$t/trace"
expect_eq "every tlbflush passed its data checks" "" "$(cat "$t/errors" 2>/dev/null)"

asid_replay "$t/trace" "$cap" "$before"
if [ "$assigned" -gt "$cap" ]; then pass "more ASIDs were assigned ($assigned) than the pool holds"; else fail "more ASIDs were assigned ($assigned) than the pool holds"; fi
if [ "$resets" -ge 2 ]; then pass "the allocator wrapped and flushed ($resets resets)"; else fail "the allocator wrapped and flushed ($resets resets)"; fi
expect_eq "debugfs: none in use" 0 "$(btlb global_asid in_use)"
dmesg_clean "dmesg is clean"
rm -rf "$t"
