#!/usr/bin/env bash
# boot: soft
# Reclaim under the stale-translation checker: memory-cgroup reclaim (anon
# to zram, dirty file pages), then kswapd (min_free_kbytes raised so that
# the free memory left sits just above the watermarks; dirty file pages on
# the shared 9p directory, written back to the host), each with
# the reclaim workload's data check and the checker running beside it on
# other CPUs. PASSES sets the reclaim passes (tests/long runs more).
. "$(dirname "$0")/../lib.sh"
passes=${PASSES:-3}
t=$(mktemp -d)
setup_zram 1G || { fail "zram swap for reclaim" "no /dev/zram0"; exit 0; }

# reclaim_under_checker NAME RECLAIM-ARGS...: reclaim on CPUs 4-7 while
# stalecheck reads on 0-3; both must pass.
reclaim_under_checker() {
	local name=$1 rrc src
	shift
	"$TOOLS/stalecheck/stalecheck" -c 0-3 -d 3600 --json >"$t/stale.json" &
	local sp=$!
	sleep 1
	"$TOOLS/reclaim/reclaim" -t 4 -c 4-7 -p "$passes" --json "$@" >"$t/reclaim.json"
	rrc=$?
	kill -INT "$sp"
	wait "$sp"
	src=$?
	diag "$name: reclaim: $(json "$t/reclaim.json" '"%d pages touched, %s reclaimed, %d mismatches, %.1f s" % (j["pages_touched"], j["pages_reclaimed"], j["mismatches"], j["elapsed_s"])' 2>&1)"
	diag "$name: stalecheck: $(json "$t/stale.json" '"%d checked reads, %d stale" % (j["checked_reads"], j["stale_reads"])' 2>&1)"
	expect_eq "$name: every page read back right (reclaim exits 0)" 0 "$rrc"
	expect_eq "$name: the checker beside it exits 0" 0 "$src"
	expect_eq "$name: no stale read" 0 "$(json "$t/stale.json" 'j["stale_reads"]' 2>&1)"
}

# kswapd_reclaimed: folios that kswapd0 reclaimed since kswapd_trace_on,
# from vmscan:mm_vmscan_lru_shrink_inactive (the guest kernel has no
# VM_EVENT_COUNTERS, so /proc/vmstat has no pgsteal_kswapd).
SHRINK=/sys/kernel/tracing/events/vmscan/mm_vmscan_lru_shrink_inactive
kswapd_trace_on() {
	echo 0 >/sys/kernel/tracing/tracing_on
	: >/sys/kernel/tracing/trace
	echo "common_pid == $(pgrep -x kswapd0)" >"$SHRINK/filter"
	echo 1 >"$SHRINK/enable"
	echo 1 >/sys/kernel/tracing/tracing_on
}
kswapd_reclaimed() {
	echo 0 >"$SHRINK/enable"
	echo 0 >"$SHRINK/filter"
	grep -o 'nr_reclaimed=[0-9]*' /sys/kernel/tracing/trace | awk -F= '{ s += $2 } END { print s + 0 }'
}

b0=$(btlb soft requests_issued)
reclaim_under_checker "memcg" -m 96M -f 16M -D /tmp \
	--cgroup /sys/fs/cgroup/test-reclaim --limit 48M
r=$(json "$t/reclaim.json" 'j["pages_reclaimed"] or 0' 2>&1)
if [ "$r" -gt 0 ] 2>/dev/null; then pass "memcg: pages were reclaimed ($r)"; else fail "memcg: pages were reclaimed ($r)"; fi

dir=$TOP/build/guest-tmp
if mkdir -p "$dir" 2>/dev/null && [ -w "$dir" ]; then
	# The low watermark is about 5/4 of min_free_kbytes: put it 160 MB
	# below the free memory, so that a 64+192 MB working set wakes kswapd.
	old_mfk=$(cat /proc/sys/vm/min_free_kbytes)
	sync
	echo 3 >/proc/sys/vm/drop_caches
	free_kb=$(awk '$1 == "MemFree:" { print $2 }' /proc/meminfo)
	mfk=$(((free_kb - 160 * 1024) * 4 / 5))
	diag "kswapd: MemFree $((free_kb / 1024)) MB, min_free_kbytes $old_mfk -> $mfk"
	echo "$mfk" >/proc/sys/vm/min_free_kbytes
	kswapd_trace_on
	reclaim_under_checker "kswapd" -m 64M -f 192M -D "$dir"
	k=$(kswapd_reclaimed)
	echo "$old_mfk" >/proc/sys/vm/min_free_kbytes
	if [ "$k" -gt 0 ]; then
		pass "kswapd reclaimed folios ($k)"
	else
		fail "kswapd reclaimed folios" "no mm_vmscan_lru_shrink_inactive of kswapd0 reclaimed any"
	fi
else
	skip "kswapd" "no writable $dir in the guest (run from the checkout)"
fi
b1=$(btlb soft requests_issued)
diag "$((b1 - b0)) INVLPGB requests during the runs"
dmesg_clean "dmesg is clean"
rm -rf "$t"
