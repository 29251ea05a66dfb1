#!/usr/bin/env bash
# boot: soft
# The eight tlb events exist with their fields, fire under workloads meant
# to trigger them, carry sane values, and their counts agree with the
# debugfs counters over the same window (the INVLPGB and TLBSYNC counts
# with the software model's, which only the model keeps).
. "$(dirname "$0")/../lib.sh"
t=$(mktemp -d)
ev=/sys/kernel/tracing/events/tlb
declare -A fields=(
	[global_asid_assign]="ctx_id asid cpus available"
	[global_asid_free]="ctx_id asid available"
	[global_asid_reset]="reusable available"
	[global_asid_transition_done]="ctx_id asid"
	[invlpgb_issue]="pcid addr pages pmd_stride flags"
	[tlbsync_wait]="ns invlpgbs"
	[broadcast_flush]="ctx_id asid start end stride_shift freed_tables invlpgbs cpus"
	[tlbbatch_flush]="cpus pending"
)
for e in global_asid_assign global_asid_free global_asid_reset global_asid_transition_done \
	invlpgb_issue tlbsync_wait broadcast_flush tlbbatch_flush; do
	missing=
	for f in ${fields[$e]}; do
		grep -q "field:.* $f;" "$ev/$e/format" 2>/dev/null || missing="$missing $f"
	done
	if [ -f "$ev/$e/format" ] && [ -z "$missing" ]; then
		pass "tlb:$e exists with its fields"
	else
		fail "tlb:$e exists with its fields" "missing:${missing:- the event}"
	fi
done

# One window: record every tlb event while 8 threads flush, the process
# exits and its ASID comes back; compare with debugfs over the same window.
settle_cpus
a0=$(btlb global_asid assigned) f0=$(btlb global_asid freed)
on_model && { r0=$(btlb soft requests_issued) w0=$(btlb soft tlbsync_waits); }
trace_on global_asid_assign global_asid_free global_asid_transition_done \
	invlpgb_issue tlbsync_wait broadcast_flush
"$TOOLS/tlbflush/tlbflush" -t 8 -c 0-7 -d 6 -q >/dev/null
for _ in 1 2 3 4 5; do settle_cpus; sleep 0.2; done
trace_off
a1=$(btlb global_asid assigned) f1=$(btlb global_asid freed)
on_model && { r1=$(btlb soft requests_issued) w1=$(btlb soft tlbsync_waits); }
cat /sys/kernel/tracing/trace >"$t/trace"
count() { grep -c " $1: " "$t/trace"; }
for e in global_asid_assign global_asid_free global_asid_transition_done invlpgb_issue tlbsync_wait broadcast_flush; do
	n=$(count "$e")
	if [ "$n" -gt 0 ]; then pass "tlb:$e fires ($n)"; else fail "tlb:$e fires ($n)"; fi
done
for e in global_asid_assign global_asid_free broadcast_flush invlpgb_issue tlbsync_wait; do
	diag "$(grep -m1 " $e: " "$t/trace" | sed 's/^ *//')"
done
expect_eq "assign events match debugfs' assigned count" "$((a1 - a0))" "$(count global_asid_assign)"
expect_eq "free events match debugfs' freed count" "$((f1 - f0))" "$(count global_asid_free)"
if on_model; then
	expect_eq "invlpgb_issue events match the model's requests" "$((r1 - r0))" "$(count invlpgb_issue)"
	# tlbsync_wait fires for a TLBSYNC that followed INVLPGBs issued while it
	# was enabled; the model counts every TLBSYNC that had work.
	nw=$(count tlbsync_wait)
	if [ "$nw" -le "$((w1 - w0))" ] && [ "$((nw * 100))" -ge "$(((w1 - w0) * 98))" ]; then
		pass "tlbsync_wait events match the model's waits within 2% ($nw of $((w1 - w0)))"
	else
		fail "tlbsync_wait events match the model's waits within 2% ($nw of $((w1 - w0)))"
	fi
else
	skip "invlpgb_issue events match the model's requests" "no software model: the CPU keeps no INVLPGB count"
	skip "tlbsync_wait events match the model's waits" "no software model: the CPU keeps no TLBSYNC count"
fi

cap=$(btlb global_asid capacity)
python3 - "$t/trace" "$(nproc)" "$cap" >"$t/sane" <<'PY'
import re, sys
ncpu, cap = int(sys.argv[2]), int(sys.argv[3])
bad = []
for line in open(sys.argv[1]):
    m = re.search(r' (\w+): (.*)', line)
    if not m or m.group(1) not in ('global_asid_assign', 'global_asid_free', 'broadcast_flush'):
        continue
    f = dict(kv.split('=', 1) for kv in m.group(2).split() if '=' in kv)
    asid = int(f['asid'])
    if not 6 <= asid <= 6 + cap:
        bad.append('%s: asid %d outside the global range' % (m.group(1), asid))
    if 'available' in f and int(f['available']) > cap:
        bad.append('%s: available %s above capacity %d' % (m.group(1), f['available'], cap))
    if m.group(1) == 'broadcast_flush' and int(f['cpus']) > ncpu - 1:
        bad.append('broadcast_flush: cpus %s above %d' % (f['cpus'], ncpu - 1))
if bad:
    print('\n'.join(bad[:10]))
PY
if [ -s "$t/sane" ]; then fail "values are sane (asid range, cpus, available)" "$(cat "$t/sane")"; else pass "values are sane (asid range, cpus, available)"; fi

# reset: the initial allocation always resets once (the search starts at the end).
if dmesg | grep -q 'global ASID pool capped'; then :; fi
# tlbbatch_flush under memory cgroup reclaim
if setup_zram 1G; then
	trace_on tlbbatch_flush
	"$TOOLS/reclaim/reclaim" -m 192M -f 32M -p 2 -t 4 -D /tmp --cgroup /sys/fs/cgroup/tp-reclaim --limit 96M -q >"$t/reclaim" 2>&1
	rc=$?
	trace_off
	n=$(grep -c ' tlbbatch_flush: ' /sys/kernel/tracing/trace)
	expect_eq "reclaim's data checks pass" 0 "$rc"
	if [ "$n" -gt 0 ]; then pass "tlb:tlbbatch_flush fires under memory cgroup reclaim ($n)"; else fail "tlb:tlbbatch_flush fires under memory cgroup reclaim ($n)" "$(cat "$t/reclaim")"; fi
	diag "$(grep -m1 ' tlbbatch_flush: ' /sys/kernel/tracing/trace | sed 's/^ *//')"
else
	fail "tlb:tlbbatch_flush fires under memory cgroup reclaim" "no zram swap"
fi

out=$(perf stat -x, -e 'tlb:*' -a -- "$TOOLS/tlbflush/tlbflush" -t 8 -c 0-7 -d 2 -q 2>&1)
if grep -q 'tlb:broadcast_flush' <<<"$out" && grep -q 'tlb:invlpgb_issue' <<<"$out"; then
	pass "perf stat -e 'tlb:*' counts the events"
	diag "$(grep -E 'broadcast_flush|invlpgb_issue|tlbsync_wait' <<<"$out")"
else
	fail "perf stat -e 'tlb:*' counts the events" "$out"
fi
if perf record -q -o "$t/perf.data" -e 'tlb:*' -a -- "$TOOLS/tlbflush/tlbflush" -t 8 -c 0-7 -d 2 -q >/dev/null 2>&1 &&
	perf script -i "$t/perf.data" 2>/dev/null | grep -q 'tlb:broadcast_flush'; then
	pass "perf record -e 'tlb:*' records the events"
else
	fail "perf record -e 'tlb:*' records the events"
fi
dmesg_clean "dmesg is clean"
rm -rf "$t"
