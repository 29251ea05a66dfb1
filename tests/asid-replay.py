#!/usr/bin/env python3
# Replays the global ASID events of a trace (tlb:global_asid_assign, _free,
# _reset, from /sys/kernel/tracing/trace) and checks the allocator's rules:
# every ASID in the global range (6, TLB_NR_DYN_ASIDS, to 6 + capacity), none
# handed out while held or again before a reset, frees by the holder, each
# reset making exactly the freed ones reusable. Prints "assigned freed
# resets still-held", then an "error:" line for each of the first 10
# violations.
#
#   asid-replay.py TRACE CAPACITY [BEFORE]
#
# BEFORE is how many ASIDs were freed but not yet made reusable when the
# trace began (debugfs x86/broadcast_tlb/global_asid, awaiting_reset): the
# first reset makes those reusable too. Which ASIDs they are the trace does
# not say, so an ASID handed out again before that first reset is only
# caught when its free is in the trace.
import re, sys
held, pending = {}, set()
before = int(sys.argv[3]) if len(sys.argv) > 3 else 0
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
        if int(f['reusable']) != len(pending) + before:
            errors.append('reset made %s reusable, %d were freed%s' %
                          (f['reusable'], len(pending) + before,
                           ' (%d before the trace)' % before if before else ''))
        pending.clear()
        before = 0
print(assigned, freed, resets, len(held))
for e in errors[:10]:
    print('error:', e)
