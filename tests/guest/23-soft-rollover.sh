#!/usr/bin/env bash
# boot: soft-asidmax
# With global_asid_max=4, more than four global-ASID processes, one after
# another and several at once: the allocator wraps (reset), hands a freed
# ASID out again only after a reset, never hands out one that is in use,
# stays within the cap, and the kernel says nothing.
. "$(dirname "$0")/../lib.sh"
t=$(mktemp -d)
cap=$(btlb global_asid capacity)
expect_eq "the pool is capped at 4" 4 "$cap"

settle_cpus
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

# Replay the events: ASIDs 6 (TLB_NR_DYN_ASIDS) to 6 + cap are global ones.
python3 - "$t/trace" "$cap" >"$t/verdict" <<'PY'
import re, sys
held, pending = {}, set()
assigned = freed = resets = 0
errors = []
lo, hi = 6, 6 + int(sys.argv[2])
for line in open(sys.argv[1]):
    m = re.search(r'(global_asid_\w+): (.*)', line)
    if not m:
        continue
    ev, f = m.group(1), dict(kv.split('=') for kv in m.group(2).split())
    if ev == 'global_asid_assign':
        a = int(f['asid']); assigned += 1
        if not lo <= a <= hi:
            errors.append('assigned %d outside [%d, %d]' % (a, lo, hi))
        if a in held:
            errors.append('assigned %d while ctx %s holds it' % (a, held[a]))
        if a in pending:
            errors.append('assigned %d again before a reset' % a)
        held[a] = f['ctx_id']
    elif ev == 'global_asid_free':
        a = int(f['asid']); freed += 1
        if held.get(a) != f['ctx_id']:
            errors.append('freed %d, held by %s, not ctx %s' % (a, held.get(a), f['ctx_id']))
        held.pop(a, None); pending.add(a)
    elif ev == 'global_asid_reset':
        resets += 1
        if int(f['reusable']) != len(pending):
            errors.append('reset made %s reusable, %d were freed' % (f['reusable'], len(pending)))
        pending.clear()
print(assigned, freed, resets, len(held))
for e in errors[:10]:
    print('error:', e)
PY
read -r assigned freed resets still <"$t/verdict"
diag "events: $assigned assigned, $freed freed, $resets resets, $still still held"
if [ "$assigned" -gt "$cap" ]; then pass "more ASIDs were assigned ($assigned) than the pool holds"; else fail "more ASIDs were assigned ($assigned) than the pool holds"; fi
if [ "$resets" -ge 2 ]; then pass "the allocator wrapped and flushed ($resets resets)"; else fail "the allocator wrapped and flushed ($resets resets)"; fi
errs=$(grep '^error:' "$t/verdict")
if [ -z "$errs" ]; then
	pass "no ASID handed out while in use, or again before a reset, or beyond the cap"
else
	fail "no ASID handed out while in use, or again before a reset, or beyond the cap" "$errs"
fi
expect_eq "every ASID came back" 0 "$still"
expect_eq "debugfs: none in use" 0 "$(btlb global_asid in_use)"
dmesg_clean "dmesg is clean"
rm -rf "$t"
