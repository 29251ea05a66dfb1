#!/usr/bin/env bash
# boot: soft
# tlbtop soak: 10 minutes (SOAK_SECS) of tlbtop -j 1 while short-lived
# multi-threaded processes come and go and a long-running flusher runs:
# its resident memory at the end is within 5 % of the level after the
# first minute, the per-interval table stays bounded (processes that
# exited leave it), and the summary's table makes room by folding exited
# processes instead of growing.
. "$(dirname "$0")/../lib.sh"
secs=${SOAK_SECS:-600}
t=$(mktemp -d)
T=$TOOLS/tlbtop/tlbtop
"$T" -j 1 >"$t/out" 2>"$t/err" &
tp=$!
for _ in $(seq 1 600); do grep -q '^Tracing' "$t/err" && break; sleep 0.1; done
"$TOOLS/tlbflush/tlbflush" -t 4 -c 0-3 -d "$secs" -q >/dev/null &
wl=$!
rss() { awk '$1 == "VmRSS:" { print $2 }' "/proc/$tp/status"; }
end=$((SECONDS + secs))
started=0 rss0=
while [ "$SECONDS" -lt "$end" ]; do
	"$TOOLS/tlbflush/tlbflush" -t 4 -c 4-7 -d 0.3 -q >/dev/null
	started=$((started + 1))
	[ -z "$rss0" ] && [ "$SECONDS" -ge $((end - secs + 60)) ] && rss0=$(rss)
done
wait "$wl"
rss1=$(rss)
kill -INT "$tp"
wait "$tp"
rc=$?
diag "$started short-lived processes; tlbtop VmRSS ${rss0} kB after a minute, ${rss1} kB at the end"
expect_eq "tlbtop exits 0 after the soak" 0 "$rc"
if python3 -c 'import sys; a, b = map(int, sys.argv[1:]); sys.exit(0 if abs(b - a) <= a * 0.05 else 1)' "$rss0" "$rss1"; then
	pass "resident memory within 5 % of the level after a minute ($rss0 -> $rss1 kB)"
else
	fail "resident memory within 5 % of the level after a minute ($rss0 -> $rss1 kB)"
fi
# In the last minute of intervals, at most the long-running flusher, the
# short-lived process of that second and a few others show.
maxrows=$(python3 -c '
import json, sys
I = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
I = [o for o in I if o.get("type") == "interval"][-60:]
print(max(o["processes_seen"] for o in I))' "$t/out")
if [ "$maxrows" -le 20 ]; then
	pass "the per-interval table stays small ($maxrows processes at most in the last minute, $started started)"
else
	fail "the per-interval table stays small" "$maxrows processes in one interval"
fi
# The summary remembers at most 512 processes; exited ones make room.
read -r folded untracked <<<"$(python3 -c '
import json, sys
S = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
S = [o for o in S if o.get("type") == "summary"][-1]
print(S["processes_folded"], S["processes_untracked"])' "$t/out")"
diag "summary: $folded exited processes folded, $untracked not tracked"
expect_eq "no process left untracked by the summary (exited ones make room)" 0 "$untracked"
if [ "$started" -gt 512 ]; then
	if [ "$folded" -gt 0 ]; then
		pass "past 512 processes, exited ones were folded ($folded)"
	else
		fail "past 512 processes, exited ones were folded" "none folded, $started started"
	fi
else
	skip "past 512 processes, exited ones were folded" "only $started processes started"
fi
no_progs_left "no tlbtop program is loaded after the soak"
dmesg_clean "dmesg is clean"
rm -rf "$t"
