#!/usr/bin/env bash
# boot: soft hw
# CPU hotplug under broadcast flushing: CPUs 1-7 go offline and online
# through sysfs again and again while tlbflush (a global-ASID process) and
# the stale-translation checker run: no stale read, no failed check, no
# hang, no splat, and every CPU online at the end. The CPUs cycle for
# HOTPLUG_SECS (tests/long runs it longer), and at least twice each.
. "$(dirname "$0")/../lib.sh"
secs=${HOTPLUG_SECS:-20}
t=$(mktemp -d)
settle_cpus
invlpgbs_begin
r0=$(invlpgbs)
# Both run until SIGINT, which they take as the end of the run.
"$TOOLS/tlbflush/tlbflush" -t 4 -d 86400 --json >"$t/flush.json" &
fp=$!
"$TOOLS/stalecheck/stalecheck" -r 3 -d 86400 --json >"$t/stale.json" &
sp=$!
sleep 1
cycles=0 errors=0
end=$((SECONDS + secs))
while [ "$SECONDS" -lt "$end" ] || [ "$cycles" -lt 14 ]; do
	for c in 3 5 1 7 2 6 4; do
		f=/sys/devices/system/cpu/cpu$c/online
		echo 0 >"$f" 2>>"$t/hp.err" || errors=$((errors + 1))
		sleep 0.2
		echo 1 >"$f" 2>>"$t/hp.err" || errors=$((errors + 1))
		cycles=$((cycles + 1))
	done
done
kill -INT "$fp" "$sp"
# Whatever happened, every CPU goes back online.
for f in /sys/devices/system/cpu/cpu[1-9]*/online; do
	[ "$(cat "$f")" = 1 ] || echo 1 >"$f"
done
wait "$fp"; frc=$?
wait "$sp"; src=$?
r1=$(invlpgbs)
invlpgbs_end
diag "$cycles offline/online cycles, $errors sysfs errors, $((r1 - r0)) INVLPGBs"
diag "tlbflush: $(json "$t/flush.json" '"%d loops, %d failed checks" % (j["total_loops"], j["failed_checks"])' 2>&1)"
diag "stalecheck: $(json "$t/stale.json" '"%d checked reads, %d stale" % (j["checked_reads"], j["stale_reads"])' 2>&1)"
if [ "$errors" -eq 0 ]; then
	pass "CPUs went offline and online ($cycles cycles)"
else
	fail "CPUs went offline and online ($cycles cycles, $errors errors)" "$(head -n 3 "$t/hp.err")"
fi
expect_eq "every CPU is online at the end" 8 "$(grep -c '^processor' /proc/cpuinfo)"
expect_eq "tlbflush passed its data checks (status)" 0 "$frc"
expect_eq "stalecheck exits 0" 0 "$src"
expect_eq "no stale read" 0 "$(json "$t/stale.json" 'j["stale_reads"]' 2>&1)"
if [ $((r1 - r0)) -gt 0 ]; then pass "broadcast flushes ran meanwhile"; else fail "broadcast flushes ran meanwhile"; fi
dmesg_clean "dmesg is clean"
rm -rf "$t"
