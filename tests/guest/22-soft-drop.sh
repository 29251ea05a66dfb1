#!/usr/bin/env bash
# boot: soft-drop
# Proof that the checker can fail: under invlpgb=soft,drop the remote CPUs
# skip the INVLPGB requests for user address spaces, and the checker must
# report stale reads.
. "$(dirname "$0")/../lib.sh"
t=$(mktemp -d)
expect_eq "debugfs reports the dropping model" soft,drop "$(cat $BTLB/mode 2>&1)"
"$TOOLS/stalecheck/stalecheck" -d 30 --expect-stale --json >"$t/stale.json"
rc=$?
diag "stalecheck: $(json "$t/stale.json" '"%d checked reads, %d stale reads, modes: %s" % (j["checked_reads"], j["stale_reads"], {m: v["stale_reads"] for m, v in j["per_mode"].items()})' 2>&1)"
diag "model: $(btlb soft requests_dropped) requests dropped, $(btlb soft requests_applied) applied"
expect_eq "stalecheck --expect-stale exits 0 (it saw stale reads)" 0 "$rc"
stale=$(json "$t/stale.json" 'j["stale_reads"]')
if [ "$stale" -gt 0 ]; then pass "the checker reports stale reads ($stale)"; else fail "the checker reports stale reads ($stale)"; fi
rm -rf "$t"
