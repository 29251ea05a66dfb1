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

# The reclaim workload under the same fault, for the record only: its data
# check has not been seen to catch the dropped flushes (why is not known:
# perhaps QEMU's TLB has lost the stale entries before a thread comes back
# to a reclaimed page), so this is a diagnostic, not a case.
if setup_zram 1G; then
	"$TOOLS/reclaim/reclaim" -m 96M -f 16M -p 3 -t 4 -c 4-7 -D /tmp \
		--cgroup /sys/fs/cgroup/drop-reclaim --limit 48M --json >"$t/reclaim.json"
	diag "reclaim under drop (status $?): $(json "$t/reclaim.json" '"%d pages verified, %d mismatches, %s reclaimed" % (j["pages_verified"], j["mismatches"], j["pages_reclaimed"])' 2>&1)"
fi
rm -rf "$t"
