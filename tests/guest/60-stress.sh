#!/usr/bin/env bash
# boot: soft hw
# stress-ng's tlb-shootdown, madvise, mremap, mprotect, mmap and fork
# stressors, one after the other, with the stale-translation checker
# running beside them all along: no stale read, every stressor passes, no
# WARNING, BUG or lockdep report. STRESS_SECS sets the time per stressor
# (tests/long runs it longer); EXPECT says what the kernel should do:
# broadcast (the default here: global ASIDs and INVLPGBs) or ipis (the
# fallback profiles, tests/guest/6[5-6]-*). Its temporary files go to
# tmpfs: the 9p share does not truncate a file that was unlinked.
. "$(dirname "$0")/../lib.sh"
secs=${STRESS_SECS:-5}
expect=${EXPECT:-broadcast}
stressors="tlb-shootdown madvise mremap mprotect mmap fork"
t=$(mktemp -d)
nstress=$(echo $stressors | wc -w)
settle_cpus

i0=$(tlb_ipis)
[ "$expect" = broadcast ] && { invlpgbs_begin; a0=$(btlb global_asid assigned); r0=$(invlpgbs); }
# The checker's readers on CPUs 0-3, the stressors on 4-7, so that both
# keep going on 2 host cores.
"$TOOLS/stalecheck/stalecheck" -c 0-3 -d $((secs * nstress + 10)) --json >"$t/stale.json" &
sc=$!
sleep 2
for s in $stressors; do
	taskset -c 4-7 stress-ng --"$s" 4 --timeout "${secs}s" --metrics-brief --temp-path "$t" \
		>"$t/$s.log" 2>&1
	rc=$?
	if [ "$rc" -eq 0 ]; then
		pass "stress-ng --$s 4 for ${secs}s"
	else
		fail "stress-ng --$s 4 for ${secs}s" "status $rc" "$(tail -n 5 "$t/$s.log")"
	fi
done
wait "$sc"
rc=$?
i1=$(tlb_ipis)
diag "stalecheck: $(json "$t/stale.json" '"%d checked reads, %d writer rounds, %d stale" % (j["checked_reads"], j["writer_rounds"], j["stale_reads"])' 2>&1)"
expect_eq "stalecheck beside them exits 0" 0 "$rc"
expect_eq "no stale read" 0 "$(json "$t/stale.json" 'j["stale_reads"]' 2>&1)"
case $expect in
broadcast)
	a1=$(btlb global_asid assigned) r1=$(invlpgbs)
	invlpgbs_end
	diag "$((a1 - a0)) global ASIDs assigned, $((r1 - r0)) INVLPGBs, $((i1 - i0)) TLB IPIs"
	if [ $((a1 - a0)) -gt 0 ] && [ $((r1 - r0)) -gt 0 ]; then
		pass "broadcast flushing was in use (global ASIDs and INVLPGBs)"
	else
		fail "broadcast flushing was in use (global ASIDs and INVLPGBs)" \
			"assigned $((a1 - a0)), INVLPGBs $((r1 - r0))"
	fi ;;
ipis)
	diag "$((i1 - i0)) TLB IPIs; mode: $(cat "$BTLB/mode" 2>&1)"
	if [ $((i1 - i0)) -gt 0 ]; then
		pass "the flushes went by IPI ($((i1 - i0)) TLB shootdowns)"
	else
		fail "the flushes went by IPI" "no TLB shootdown IPI"
	fi
	if [ -d "$BTLB" ] && [ "$(btlb global_asid assigned)" != 0 ]; then
		fail "no global ASID was handed out" "assigned: $(btlb global_asid assigned)"
	else
		pass "no global ASID was handed out"
	fi
	# With nopcid the boot log must say why there is no broadcast flushing
	# (the model's refusal, or the CPU's INVLPGB turned off with PCID),
	# not leave it to be taken for a CPU without INVLPGB.
	case " $(cat /proc/cmdline) " in
	*" nopcid "*)
		if dmesg | grep -Eq 'nopcid: the software model stays off|invalidation: none \(the CPU has INVLPGB, but PCID is off'; then
			pass "the boot log says that nopcid keeps broadcast flushing off"
		else
			fail "the boot log says that nopcid keeps broadcast flushing off" \
				"$(dmesg | grep -i 'broadcast tlb\|invlpgb\|pcid' | head -n 5)"
		fi ;;
	esac ;;
esac
dmesg_clean "dmesg is clean"
rm -rf "$t"
