#!/usr/bin/env bash
# boot: soft-drop
# Proof that the checks can fail: under invlpgb=soft,drop the remote CPUs
# skip the INVLPGB requests for user address spaces; the stale-translation
# checker must report stale reads, and the reclaim workload's data check
# must report lost writes.
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

# The reclaim workload's data check under the same fault. Its hot pages
# (--hot) stay in the threads' TLBs while reclaim takes them, so a write
# through a translation that the dropped INVLPGB left behind is lost and
# the page comes back from swap with an older count; --lock keeps the
# tool's own memory out of reclaim, so that the corruption lands in the
# data it checks rather than in its own state (a crash proves nothing
# about the check).
if setup_zram 1G; then
	"$TOOLS/reclaim/reclaim" -m 96M -f 16M -p 3 -t 4 -c 4-7 -D /tmp --hot 8 --lock \
		--cgroup /sys/fs/cgroup/drop-reclaim --limit 48M --json >"$t/reclaim.json"
	rc=$?
	diag "reclaim under drop: $(json "$t/reclaim.json" '"%d pages verified, %d mismatches (%d on hot pages), %s reclaimed" % (j["pages_verified"], j["mismatches"], j["hot_mismatches"], j["pages_reclaimed"])' 2>&1)"
	expect_eq "reclaim's data check fails (exit 1)" 1 "$rc"
	bad=$(json "$t/reclaim.json" 'j["mismatches"]' 2>/dev/null)
	if [ "${bad:-0}" -gt 0 ]; then
		pass "reclaim reports mismatched pages ($bad)"
	else
		fail "reclaim reports mismatched pages (${bad:-no JSON})"
	fi
else
	fail "zram swap for reclaim" "no /dev/zram0"
fi
rm -rf "$t"
