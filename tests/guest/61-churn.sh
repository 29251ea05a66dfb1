#!/usr/bin/env bash
# boot: soft-asidmax hw-asidmax
# Churn: many short-lived multi-threaded processes, two at a time, each
# flushing on four CPUs so that it gets a global ASID, with the pool capped
# at 4 (global_asid_max=4): many rollovers, no ASID handed out twice at
# once, and the pool back where it started (no leak). CHURN sets the
# number of processes (tests/long runs thousands).
. "$(dirname "$0")/../lib.sh"
n=${CHURN:-200}
t=$(mktemp -d)
cap=$(btlb global_asid capacity)
settle_cpus
avail0=$(btlb global_asid available)
a0=$(btlb global_asid assigned)
# Freed before the trace began, made reusable by its first reset.
before=$(btlb global_asid awaiting_reset)
trace_on global_asid_assign global_asid_free global_asid_reset
start=$SECONDS
for ((i = 0; i < n; i += 2)); do
	"$TOOLS/tlbflush/tlbflush" -t 4 -c 0-3 -d 0.2 -q >/dev/null || echo "tlbflush $i failed" >>"$t/errors" &
	"$TOOLS/tlbflush/tlbflush" -t 4 -c 4-7 -d 0.2 -q >/dev/null || echo "tlbflush $((i + 1)) failed" >>"$t/errors"
	wait
done
for _ in 1 2 3 4 5; do settle_cpus; sleep 0.2; done
trace_off
cat /sys/kernel/tracing/trace >"$t/trace"
a1=$(btlb global_asid assigned)
diag "$n processes in $((SECONDS - start)) s; debugfs: $((a1 - a0)) assigned"
expect_eq "every tlbflush passed its data checks" "" "$(head -n 3 "$t/errors" 2>/dev/null)"
if grep -q 'entries-in-buffer/entries-written: \([0-9]*\)/\1 ' "$t/trace"; then
	pass "the trace buffer kept every event"
else
	fail "the trace buffer kept every event" "$(grep entries-in-buffer "$t/trace")"
fi
asid_replay "$t/trace" "$cap" "$before"
if [ "$assigned" -ge $((n / 2)) ]; then
	pass "most processes became global-ASID users ($assigned of $n)"
else
	fail "most processes became global-ASID users ($assigned of $n)"
fi
if [ "$resets" -ge $((assigned / (cap + 1) / 2)) ] && [ "$resets" -ge 2 ]; then
	pass "many rollovers ($resets resets)"
else
	fail "many rollovers ($resets resets for $assigned assigns)"
fi
expect_eq "the pool's available count is back where it started" "$avail0" "$(btlb global_asid available)"
dmesg_clean "dmesg is clean"
rm -rf "$t"
