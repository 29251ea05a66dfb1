#!/usr/bin/env bash
# boot: soft hw
# Reclaim under the stale-translation checker: memory-cgroup reclaim (anon
# to zram, dirty file pages on tmpfs), then kswapd (a process locks most of
# the free memory; compressible anonymous pages swapped to zram), each with
# the reclaim workload's data check, hot pages included, and the checker
# running beside it on other CPUs. PASSES sets the reclaim passes
# (tests/long runs more).
. "$(dirname "$0")/../lib.sh"
passes=${PASSES:-1}
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

# The model counts INVLPGBs; on hardware the count would need the trace
# ring, which the kswapd run uses for its own event.
on_model && b0=$(btlb soft requests_issued)
reclaim_under_checker "memcg" -m 96M -f 16M -D /tmp --hot 8 \
	--cgroup /sys/fs/cgroup/test-reclaim --limit 48M
r=$(json "$t/reclaim.json" 'j["pages_reclaimed"] or 0' 2>&1)
if [ "$r" -gt 0 ] 2>/dev/null; then pass "memcg: pages were reclaimed ($r)"; else fail "memcg: pages were reclaimed ($r)"; fi

# kswapd: a locked hog takes the free memory but about 192 MB, which an
# anonymous working set of 320 MB overruns. Its pages are compressible
# (--sparse), so that swapping them to zram frees memory.
sync
echo 3 >/proc/sys/vm/drop_caches
free_mb=$(($(awk '$1 == "MemFree:" { print $2 }' /proc/meminfo) / 1024))
python3 -c '
import ctypes, mmap, sys, time
n = int(sys.argv[1]) << 20
m = mmap.mmap(-1, n)
libc = ctypes.CDLL(None, use_errno=True)
if libc.mlock(ctypes.c_void_p(ctypes.addressof(ctypes.c_char.from_buffer(m))), ctypes.c_size_t(n)):
    sys.exit("mlock: errno %d" % ctypes.get_errno())
print("locked", flush=True)
time.sleep(86400)' $((free_mb - 192)) >"$t/hog" 2>&1 &
hog=$!
for _ in $(seq 1 600); do grep -q locked "$t/hog" && break; kill -0 "$hog" 2>/dev/null || break; sleep 0.1; done
diag "kswapd: MemFree $free_mb MB, $((free_mb - 192)) MB locked ($(cat "$t/hog")), $(($(awk '$1 == "MemFree:" { print $2 }' /proc/meminfo) / 1024)) MB left"
kswapd_trace_on
reclaim_under_checker "kswapd" -m 320M -f 0 --sparse --hot 8
k=$(kswapd_reclaimed)
kill "$hog"
wait "$hog" 2>/dev/null
if [ "$k" -gt 0 ]; then
	pass "kswapd reclaimed folios ($k)"
else
	fail "kswapd reclaimed folios" "no mm_vmscan_lru_shrink_inactive of kswapd0 reclaimed any"
fi
on_model && diag "$(($(btlb soft requests_issued) - b0)) INVLPGB requests during the runs"
dmesg_clean "dmesg is clean"
rm -rf "$t"
