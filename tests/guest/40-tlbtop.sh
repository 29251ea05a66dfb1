#!/usr/bin/env bash
# boot: soft
# tlbtop under the software model and on the emulated CPU (hw): the
# 8-thread tlbflush workload's row has
# a global ASID and avoided IPIs; the totals agree with perf stat, debugfs
# and /proc/interrupts over the same run; batch mode and -p show what they
# should; no memory leaks under valgrind; no program stays loaded.
. "$(dirname "$0")/../lib.sh"
t=$(mktemp -d)
T=$TOOLS/tlbtop/tlbtop
FLUSH=$TOOLS/tlbflush/tlbflush

if [ ! -x "$T" ]; then
	fail "tlbtop is built" "no $T: make -C tools"
	exit 0
fi
if ! grep -qa btf_trace_broadcast_flush /sys/kernel/btf/vmlinux; then
	for c in "the workload's row has a global ASID and avoided IPIs" \
		"totals agree with perf stat and debugfs" \
		"IPIs sent agree with /proc/interrupts" "batch mode" "-p" \
		"valgrind" "no program left"; do
		skip "$c" "this kernel has no tlb:broadcast_flush (41-tlbtop-errors checks that message)"
	done
	exit 0
fi

settle_cpus
cap=$(btlb global_asid capacity)

start_s=$SECONDS
# 1. JSON, with perf stat around the workload: tlbtop attaches before perf
# starts and detaches after it ends, so its totals cover perf's window.
if start_tlbtop "$t/run.json" "$t/run.err" -j 1; then
	pass "tlbtop -j attaches"
else
	fail "tlbtop -j attaches" "$(cat "$t/run.err")"
fi
a0=$(btlb global_asid assigned) f0=$(btlb global_asid freed)
perf stat -a -x, -o "$t/perf.csv" \
	-e tlb:broadcast_flush -e tlb:invlpgb_issue -e tlb:tlbsync_wait \
	-- "$FLUSH" -t 8 -c 0-7 -d 6 --json >"$t/flush.json"
rc=$?
expect_eq "tlbflush under perf stat exits 0" 0 "$rc"
end_tlbtop
a1=$(btlb global_asid assigned) f1=$(btlb global_asid freed)
no_progs_left "after SIGINT no tlbtop program is loaded"

if jl "$t/run.json" 'len(I) >= 6 and S is not None' | grep -qx True; then
	pass "one JSON object per interval and a summary ($(jl "$t/run.json" 'len(I)') intervals)"
else
	fail "one JSON object per interval and a summary" "$(head -c 2000 "$t/run.json")"
fi
row=$(jl "$t/run.json" '[(p["asid"], p["ipis_avoided"], p["cpus"]) for o in I for p in o["processes"] if p["comm"] == "tlbflush" and p["asid"] is not None and p["ipis_avoided"] > 0][:1]')
if [ "$row" != "[]" ]; then
	pass "the workload's row has a global ASID and avoided IPIs (asid, avoided, cpus: $row)"
else
	fail "the workload's row has a global ASID and avoided IPIs" \
		"$(jl "$t/run.json" '[p for o in I for p in o["processes"] if p["comm"] == "tlbflush"][:3]')"
fi
perf_count() { awk -F, -v e="$1" '$3 == e { print $1 }' "$t/perf.csv"; }
diag "perf stat: $(grep -v '^#' "$t/perf.csv" | grep . | cut -d, -f1,3 | tr '\n' ' ')"
within "broadcast flushes agree with perf stat" \
	"$(jl "$t/run.json" 'S["flushes"]["broadcast"]')" "$(perf_count tlb:broadcast_flush)" 1
within "INVLPGBs agree with perf stat" \
	"$(jl "$t/run.json" 'S["invlpgb"]["issued"]')" "$(perf_count tlb:invlpgb_issue)" 1
within "TLBSYNC waits agree with perf stat" \
	"$(jl "$t/run.json" 'S["tlbsync"]["waits"]')" "$(perf_count tlb:tlbsync_wait)" 1
expect_eq "ASID assigns agree with debugfs" "$((a1 - a0))" "$(jl "$t/run.json" 'S["asid_pool"]["assigns"]')"
expect_eq "ASID frees agree with debugfs" "$((f1 - f0))" "$(jl "$t/run.json" 'S["asid_pool"]["frees"]')"
expect_eq "the summary's debugfs difference agrees with the events" \
	"$(jl "$t/run.json" 'S["debugfs_delta"]["global_asid"]["assigned"]')" \
	"$(jl "$t/run.json" 'S["asid_pool"]["assigns"]')"
expect_eq "every interval reports debugfs's pool capacity" "[$cap]" \
	"$(jl "$t/run.json" 'sorted({o["asid_pool"]["capacity"] for o in I})')"
peak=$(jl "$t/run.json" 'max(o["asid_pool"]["in_use"] for o in I)')
if [ "$peak" -ge 1 ]; then pass "the pool shows an ASID in use ($peak at most)"; else fail "the pool shows an ASID in use" "in_use peak: $peak"; fi
expect_eq "pressure is in_use/capacity" True \
	"$(jl "$t/run.json" 'all(abs(o["asid_pool"]["pressure_pct"] - 100.0 * o["asid_pool"]["in_use"] / o["asid_pool"]["capacity"]) < 1e-6 for o in I)')"
if on_model; then
	within "INVLPGBs agree with the software model's requests" \
		"$(jl "$t/run.json" 'S["invlpgb"]["issued"]')" \
		"$(jl "$t/run.json" 'S["debugfs_delta"]["soft"]["requests_issued"]')" 1
else
	skip "INVLPGBs agree with the software model's requests" "booted in mode $(booted_mode): no model counts them"
fi
expect_eq "the intervals add up to no more than the summary" True \
	"$(jl "$t/run.json" 'sum(o["flushes"]["broadcast"] for o in I) <= S["flushes"]["broadcast"] and sum(o["invlpgb"]["issued"] for o in I) <= S["invlpgb"]["issued"]')"
hist=$(jl "$t/run.json" 'sum(b["count"] for b in S["tlbsync_hist"]) == S["tlbsync"]["waits"] > 0')
expect_eq "the TLBSYNC histogram holds every wait" True "$hist"
diag "summary: $(jl "$t/run.json" '"%d broadcast, %d IPI shootdown, %d local only flushes; %d IPIs sent, %d avoided; %d INVLPGBs; TLBSYNC mean %s ns, p99 <= %s ns" % (S["flushes"]["broadcast"], S["flushes"]["ipi_shootdown"], S["flushes"]["local_only"], S["ipis_sent"], S["ipis_avoided"], S["invlpgb"]["issued"], S["tlbsync"]["mean_ns"], S["tlbsync"]["p99_ns"])')"

# 2. IPIs: two threads stay below the 4 CPUs a global ASID needs, so they
# flush with IPIs; each one is a TLB shootdown interrupt somewhere.
settle_cpus
if start_tlbtop "$t/ipi.json" "$t/ipi.err" -j 1; then
	i0=$(tlb_ipis)
	"$FLUSH" -t 2 -c 0-1 -d 3 -q >/dev/null
	i1=$(tlb_ipis)
	kill -INT "$tp"
	wait "$tp"
	within "IPIs sent agree with /proc/interrupts" "$(jl "$t/ipi.json" 'S["ipis_sent"]')" "$((i1 - i0))" 1
	sd=$(jl "$t/ipi.json" 'S["flushes"]["ipi_shootdown"]')
	if [ "$sd" -gt 0 ]; then pass "they are IPI shootdowns ($sd)"; else fail "they are IPI shootdowns" "$sd"; fi
else
	fail "IPIs sent agree with /proc/interrupts" "tlbtop did not start: $(cat "$t/ipi.err")"
fi

diag "$((SECONDS - start_s)) s: batch mode and -p"
# 3. Batch mode and -p while the workload runs. Six workers get a global
# ASID and leave two CPUs to the rest (eight would starve everything else
# under the software model).
settle_cpus
base=$(btlb global_asid in_use)
"$FLUSH" -t 6 -c 0-5 -d 600 -q >/dev/null &
wp=$!
for _ in $(seq 1 150); do
	[ "$(btlb global_asid in_use)" -gt "$base" ] && break
	sleep 0.1
done
"$T" -b 1 2 >"$t/batch.txt" 2>"$t/batch.err"
rc=$?
expect_eq "tlbtop -b 1 2 exits 0" 0 "$rc"
missing=
on_model && want_mode="software model" || want_mode="hardware INVLPGB"
for h in "^[0-9][0-9]:[0-9][0-9]:[0-9][0-9]  mode: $want_mode" '^ASID pool: [0-9]+ in use of [0-9]+' \
	'^Flushes: ' '^IPIs: ' '^INVLPGB: ' '^TLBSYNC: ' '^Reclaim: ' '^ +PID COMM +CPUS +ASID +FLUSHES +BCAST +IPIS +AVOIDED +INVLPGB +TLBSYNC$' \
	'^Summary since ' '^TLBSYNC wait:' '^ +nsec +: count +distribution'; do
	grep -Eq "$h" "$t/batch.txt" || missing="$missing [$h]"
done
if [ -z "$missing" ]; then pass "batch mode prints the header, the rows, the summary and the histogram"; else fail "batch mode prints the header, the rows, the summary and the histogram" "missing:$missing" "$(head -n 30 "$t/batch.txt")"; fi
if grep -Eq "^ *$wp +tlbflush +[0-9]+ +[0-9]+ " "$t/batch.txt"; then
	pass "batch mode shows the workload's row with its ASID"
else
	fail "batch mode shows the workload's row with its ASID" "$(head -n 30 "$t/batch.txt")"
fi
if grep -q $'\e' "$t/batch.txt"; then fail "batch mode has no terminal control"; else pass "batch mode has no terminal control"; fi

"$T" -b -p "$wp" 1 2 >"$t/pid.txt" 2>"$t/pid.err"
rc=$?
expect_eq "tlbtop -b -p PID 1 2 exits 0" 0 "$rc"
pids=$(awk '/^ +PID COMM/ { r = 1; next } /^$/ { r = 0 } r && $1 ~ /^[0-9]+$/ { print $1 }' "$t/pid.txt" | sort -u | tr '\n' ' ')
if [ "$pids" = "$wp " ]; then
	pass "-p shows only that process"
else
	fail "-p shows only that process" "rows of PIDs: '$pids', want '$wp '" "$(head -n 24 "$t/pid.txt")"
fi
"$T" -j -p "$wp" -r 5 1 1 >"$t/pid.json" 2>"$t/pid.err" || diag "tlbtop -j -p: $(cat "$t/pid.err")"
expect_eq "-p in JSON: only that process" "[$wp]" "$(jl "$t/pid.json" 'sorted({p["pid"] for o in I + [S] for p in o["processes"]})')"

kill -INT "$wp" 2>/dev/null
wait "$wp"

diag "$((SECONDS - start_s)) s: valgrind"
# 4. No leaks: a short run under valgrind (suppressing its false reports
# about bpf()'s union bpf_attr, see the file), with two threads flushing
# by IPI so that there are rows to drain.
"$FLUSH" -t 2 -c 0-1 -d 600 -q >/dev/null &
wp=$!
valgrind --leak-check=full --error-exitcode=9 \
	--suppressions="$TOOLS/tlbtop/valgrind.supp" "$T" -b 1 2 >"$t/vg.out" 2>"$t/vg.err"
rc=$?
if [ "$rc" -eq 0 ] && grep -q 'definitely lost: 0 bytes\|no leaks are possible' "$t/vg.err"; then
	pass "no leak or memory error under valgrind"
else
	fail "no leak or memory error under valgrind" "status $rc" "$(grep -v 'unhandled eBPF command' "$t/vg.err" | tail -n 25)"
fi
kill -INT "$wp" 2>/dev/null
wait "$wp"

# 5. SIGTERM and SIGKILL leave nothing behind either.
if start_tlbtop "$t/term.txt" "$t/term.err" -b 10; then
	kill -TERM "$tp"
	wait "$tp"
	expect_eq "tlbtop exits 0 on SIGTERM" 0 "$?"
	if grep -q '^Summary since' "$t/term.txt"; then pass "SIGTERM prints the summary"; else fail "SIGTERM prints the summary" "$(cat "$t/term.txt")"; fi
	no_progs_left "after SIGTERM no tlbtop program is loaded"
else
	fail "tlbtop -b starts" "$(cat "$t/term.err")"
fi
if start_tlbtop "$t/kill.txt" "$t/kill.err" -b 10; then
	kill -KILL "$tp"
	wait "$tp" 2>/dev/null
	no_progs_left "after SIGKILL no tlbtop program is loaded"
fi
diag "tlbtop tests took $((SECONDS - start_s)) s"
dmesg_clean "dmesg is clean"
rm -rf "$t"
