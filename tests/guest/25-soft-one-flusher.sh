#!/usr/bin/env bash
# boot: soft hw
# A process whose flushes all come from one thread still gets a global
# ASID. The writer of tools/remapper remaps a page every 32 jiffies while
# seven pinned threads keep busy in the process, each remap timed so that
# its flush ends with the jiffies far from the writer's pid in their low 5
# bits: the check that looks at a process only when those match never
# fires, and only a look that does not depend on the pid can find it.
. "$(dirname "$0")/../lib.sh"
t=$(mktemp -d)
settle_cpus
a0=$(btlb global_asid assigned) i0=$(tlb_ipis)
"$TOOLS/remapper/remapper" -t 7 -c 0-7 -d 20 --avoid-pid-slot --json >"$t/r.json"
rc=$?
a1=$(btlb global_asid assigned) i1=$(tlb_ipis)
expect_eq "remapper exits 0" 0 "$rc"
remaps=$(json "$t/r.json" 'j["remaps"]')
in_slot=$(json "$t/r.json" 'j["remaps_ended_in_pid_slot"]')
ipis=$((i1 - i0)) assigned=$((a1 - a0))
diag "$remaps remaps in $(json "$t/r.json" '"%.1f" % j["elapsed_s"]') s, writer pid slot $(json "$t/r.json" 'j["pid_slot"]'), $in_slot of them ended in it" \
	"$assigned global ASIDs assigned, $ipis TLB shootdown IPIs ($((remaps ? ipis * 1000 / remaps : 0)) per 1000 remaps)"
if [ "$remaps" -ge 64 ]; then
	pass "the writer remapped at least 64 times ($remaps)"
else
	fail "the writer remapped at least 64 times ($remaps)"
fi
if [ "$assigned" -ge 1 ]; then
	pass "the single flusher's process gets a global ASID"
else
	fail "the single flusher's process gets a global ASID" \
		"$remaps remaps, $in_slot ended in the writer's pid slot, each flushed by IPI ($ipis IPIs)"
fi
# Seven readers: a remap flushed by IPI interrupts seven CPUs. Once the
# process has its global ASID, its remaps send none.
if [ "$remaps" -gt 0 ] && [ $((ipis * 2)) -lt $((remaps * 7)) ]; then
	pass "most remaps are flushed without IPIs ($ipis IPIs for $remaps remaps)"
else
	fail "most remaps are flushed without IPIs ($ipis IPIs for $remaps remaps)"
fi
dmesg_clean "dmesg is clean"
rm -rf "$t"
