#!/usr/bin/env bash
# boot: soft
# Each bpftrace one-liner in tools/bpftrace runs against a workload that
# triggers it, and prints output of the expected shape.
. "$(dirname "$0")/../lib.sh"
t=$(mktemp -d)
bt=$TOOLS/bpftrace

flush8() { "$TOOLS/tlbflush/tlbflush" -t 8 -c 0-7 -d "$1" -q; }

settle_cpus
out=$(run_bt "$bt/ipis-avoided.bt" 120 flush8 10)
if grep -qE '^@ipis_avoided\[[0-9]+, tlbflush\]: [1-9][0-9]*' <<<"$out"; then
	pass "ipis-avoided.bt: IPIs avoided per process per second"
	diag "$(grep -m2 -E '^[0-9:]+ ipis|^@ipis_avoided' <<<"$out")"
else
	fail "ipis-avoided.bt: IPIs avoided per process per second" "$(tail -n 8 <<<"$out")"
fi

out=$(run_bt "$bt/tlbsync-wait.bt" 90 flush8 10)
if grep -q '^@tlbsync_ns:' <<<"$out" && grep -qE '^\[[0-9]+[KMG]?, [0-9]+[KMG]?\) +[0-9]+ \|@*' <<<"$out"; then
	pass "tlbsync-wait.bt: a histogram of TLBSYNC waits"
else
	fail "tlbsync-wait.bt: a histogram of TLBSYNC waits" "$(tail -n 12 <<<"$out")"
fi

out=$(run_bt "$bt/invlpgb-pages.bt" 90 flush8 10)
if grep -qE '^@pages\[4K stride\]:' <<<"$out" && grep -qE '^\[1\] +[0-9]+ \|@*' <<<"$out"; then
	pass "invlpgb-pages.bt: a histogram of pages per INVLPGB"
else
	fail "invlpgb-pages.bt: a histogram of pages per INVLPGB" "$(tail -n 12 <<<"$out")"
fi

out=$(run_bt "$bt/bcast-vs-ipi.bt" 90 flush8 10)
if grep -qE '^@broadcast\[[0-9]+, tlbflush\]: [1-9]' <<<"$out"; then
	pass "bcast-vs-ipi.bt: broadcast and IPI flushes per process"
	diag "$(grep -m2 -E '^@(broadcast|ipi_shootdown)' <<<"$out")"
else
	fail "bcast-vs-ipi.bt: broadcast and IPI flushes per process" "$(tail -n 8 <<<"$out")"
fi

churn() {
	flush8 8
	for _ in 1 2 3 4 5; do settle_cpus; sleep 0.2; done
}
out=$(run_bt "$bt/asid-churn.bt" 120 churn)
if grep -qE '^@assigned\[tlbflush\]: [1-9]' <<<"$out" && grep -qE '^@freed\[.*\]: [1-9]' <<<"$out" &&
	grep -qE '^@available: [0-9]+' <<<"$out"; then
	pass "asid-churn.bt: assign and free churn by command with the pool's level"
	diag "$(grep -m3 -E '^@(assigned|freed|available)' <<<"$out")"
else
	fail "asid-churn.bt: assign and free churn by command with the pool's level" "$(tail -n 12 <<<"$out")"
fi

name="reclaim-flushes.bt: tlbbatch flushes per second beside reclaimed pages"
if ! out=$(run_bt_reclaim "$bt/reclaim-flushes.bt"); then
	fail "$name" "no zram swap"
elif grep -qE '^@tlbbatch_flushes: [1-9]' <<<"$out" && grep -qE '^@reclaimed_pages: [1-9]' <<<"$out"; then
	pass "$name"
	diag "$(grep -m3 -E '^@(tlbbatch_flushes|reclaimed_pages|ipis): [1-9]' <<<"$out")"
else
	fail "$name" "$(tail -n 8 <<<"$out")"
fi
dmesg_clean "dmesg is clean"
rm -rf "$t"
