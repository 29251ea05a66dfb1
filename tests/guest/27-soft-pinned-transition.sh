#!/usr/bin/env bash
# boot: soft hw
# The transition to a global ASID ends on CPUs that run nothing but the
# process. The test's own shell and its children are kept off CPUs 4-7;
# stalecheck's writer runs on CPU 4 and its readers on 5-7, so those CPUs
# never switch to another mm. A CPU leaves its per-CPU ASID for the global
# one at the flush IPI that finish_asid_transition() sends it (the IPI path
# of flush_tlb_func()), or when it switches mm, which here it does not: the
# transition must still end, and afterwards the writer's flushes must be
# INVLPGBs with no shootdown IPI, and no reader may see a stale value.
. "$(dirname "$0")/../lib.sh"
t=$(mktemp -d)

keep_cpus_4_7 || exit 0
base=$(btlb global_asid in_use)
trace_on global_asid_assign global_asid_transition_done
taskset -c 4-7 "$TOOLS/stalecheck/stalecheck" -w 4 -c 5-7 -d 600 --json >"$t/stale.json" 2>"$t/stale.err" &
sp=$!

got=
start=$SECONDS
while [ $((SECONDS - start)) -lt 60 ] && kill -0 "$sp" 2>/dev/null; do
	asid=$(asid_of "$sp")
	[ -n "$asid" ] && { got=1; break; }
	sleep 0.1
done
ev=/sys/kernel/tracing/trace
if [ -z "$got" ]; then
	fail "the process on CPUs 4-7 gets a global ASID" \
		"no tlb:global_asid_assign for it in $((SECONDS - start)) s ($(grep -c 'global_asid_assign:' "$ev") for any process); in_use $base before, $(btlb global_asid in_use) now; stalecheck $(kill -0 "$sp" 2>/dev/null && echo "still running" || echo "had exited")"
	skip "the transition to it ends" "no global ASID was assigned"
	skip "its flushes are INVLPGBs with no shootdown IPI" "no global ASID was assigned"
else
	pass "the process on CPUs 4-7 gets a global ASID"
	diag "ASID $asid after $((SECONDS - start)) s ($(grep -m1 -o "global_asid_assign: asid=$asid .*" "$ev"))"
	done_ev=
	for _ in $(seq 1 100); do
		done_ev=$(grep -m1 -o "global_asid_transition_done: asid=$asid .*" "$ev")
		[ -n "$done_ev" ] && break
		sleep 0.1
	done
	if [ -n "$done_ev" ]; then
		pass "the transition to it ends ($done_ev)"
	else
		fail "the transition to it ends" "no global_asid_transition_done for ASID $asid within 10 s"
	fi
	trace_off

	invlpgbs_begin
	i0=$(tlb_ipis) r0=$(invlpgbs)
	sleep 3
	i1=$(tlb_ipis) r1=$(invlpgbs)
	invlpgbs_end
	ipis=$((i1 - i0)) reqs=$((r1 - r0))
	diag "in 3 s after it: $ipis TLB shootdown IPIs, $reqs INVLPGBs"
	if [ "$reqs" -gt 100 ] && [ $((ipis * 100)) -lt "$reqs" ]; then
		pass "its flushes are INVLPGBs with no shootdown IPI ($ipis IPIs for $reqs INVLPGBs)"
	else
		fail "its flushes are INVLPGBs with no shootdown IPI ($ipis IPIs for $reqs INVLPGBs)" \
			"stalecheck $(kill -0 "$sp" 2>/dev/null && echo "still running" || echo "had exited")"
	fi
fi
trace_off
kill -INT "$sp" 2>/dev/null
wait "$sp"
rc=$?
expect_eq "stalecheck exits 0" 0 "$rc"
[ "$rc" -eq 0 ] || diag "stalecheck: $(tail -n 3 "$t/stale.err")"
diag "stalecheck: $(json "$t/stale.json" '"%d checked reads, %d stale, %d writer rounds" % (j["checked_reads"], j["stale_reads"], j["writer_rounds"])' 2>&1)"
expect_eq "no stale read" 0 "$(json "$t/stale.json" 'j["stale_reads"]' 2>&1)"
dmesg_clean "dmesg is clean"
rm -rf "$t"
