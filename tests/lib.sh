# shellcheck shell=bash
# Helpers for test files. A test file is a bash script that sources this and
# reports each case with pass/fail/skip; tests/run numbers the cases and
# prints them as KTAP.
#
#   pass NAME            the case passed
#   fail NAME [WHY...]   the case failed; WHY lines become diagnostics
#   skip NAME REASON     the case was skipped, and why
#   check NAME CMD...    pass if CMD succeeds, else fail with its output
#   diag TEXT...         a diagnostic line
set -u
TESTS_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TOP=$(cd "$TESTS_DIR/.." && pwd)
export TOP

diag() {
	local l
	for l in "$@"; do
		printf '%s\n' "$l" | sed 's/^/# /'
	done
}

pass() { printf 'ok %s\n' "$1"; }

fail() {
	local name=$1
	shift
	printf 'not ok %s\n' "$name"
	[ $# -eq 0 ] || diag "$@"
}

skip() { printf 'ok %s # SKIP %s\n' "$1" "$2"; }

check() {
	local name=$1 out
	shift
	if out=$("$@" 2>&1); then
		pass "$name"
	else
		fail "$name" "command failed (status $?): $*" "$(printf '%s\n' "$out" | tail -n 15)"
	fi
}

# expect_eq NAME WANT GOT
expect_eq() {
	if [ "$2" = "$3" ]; then
		pass "$1"
	else
		fail "$1" "expected: $2" "got: $3"
	fi
}

# dmesg_clean NAME: the kernel log has no warning, bug, lockdep report, soft
# lockup or unclaimed NMI.
DMESG_BAD='WARNING:|BUG:|Oops|general protection|possible circular locking|possible recursive locking|inconsistent lock state|suspicious RCU|soft lockup|hard LOCKUP|Uhhuh\. NMI received|Dazed and confused|stack-protector|UBSAN|KASAN'
dmesg_clean() {
	local bad
	bad=$(dmesg | grep -E "$DMESG_BAD" | head -n 10)
	if [ -z "$bad" ]; then
		pass "$1"
	else
		fail "$1" "$bad"
	fi
}

# tlb_ipis: TLB shootdown interrupts received, summed over the CPUs.
tlb_ipis() {
	awk '$1 == "TLB:" { s = 0; for (i = 2; i <= NF && $i ~ /^[0-9]+$/; i++) s += $i; print s }' /proc/interrupts
}

BTLB=/sys/kernel/debug/x86/broadcast_tlb

# btlb FILE KEY: one counter from the debugfs directory of the series.
btlb() {
	awk -v k="$2" '$1 == k { print $2 }' "$BTLB/$1"
}

# booted_mode: the broadcast TLB mode that this boot asked for: the software
# model when the command line says invlpgb=soft[,drop], else "hardware"
# (a CPU with INVLPGB; tests/profiles' hw profiles boot on one).
booted_mode() {
	case " $(cat /proc/cmdline) " in
	*" invlpgb=soft,drop "*) echo soft,drop ;;
	*" invlpgb=soft "*) echo soft ;;
	*) echo hardware ;;
	esac
}

# on_model: true when this boot runs the software model.
on_model() { [ "$(booted_mode)" != hardware ]; }

# expect_booted_mode: debugfs and the boot log say what the command line
# asked for (the software model, or INVLPGB found through CPUID).
expect_booted_mode() {
	local want log
	want=$(booted_mode)
	expect_eq "debugfs reports mode $want" "$want" "$(cat "$BTLB/mode" 2>&1)"
	case $want in
	hardware) log='broadcast TLB invalidation: hardware INVLPGB' ;;
	*) log='broadcast TLB invalidation: software model' ;;
	esac
	if dmesg | grep -q "$log"; then
		pass "the boot log says \"$log\""
	else
		fail "the boot log says \"$log\"" "$(dmesg | grep -i 'broadcast tlb\|invlpgb' | head -n 5)"
	fi
}

# invlpgbs: INVLPGBs issued so far. Under the software model, its counter
# of requests; on (emulated) hardware, which counts nothing the guest can
# read, the tlb:invlpgb_issue events since invlpgbs_begin: the trace ring's
# entries plus its overruns, so that a full ring loses none of the count.
# invlpgbs_begin clears the trace ring (and with it any other trace_on).
invlpgbs_begin() { on_model || trace_on invlpgb_issue; }
invlpgbs() {
	if on_model; then
		btlb soft requests_issued
	else
		awk '$1 == "entries:" || $1 == "overrun:" { s += $2 } END { print s + 0 }' \
			/sys/kernel/tracing/per_cpu/cpu*/stats
	fi
}
invlpgbs_end() { on_model || trace_off; }

# settle_cpus: run a task on every CPU, so that lazy TLB references to
# exited processes' mms are dropped and their global ASIDs freed.
settle_cpus() {
	local c
	for c in $(seq 0 $(($(nproc) - 1))); do
		taskset -c "$c" true 2>/dev/null
	done
}

# keep_cpus_4_7: from here on the test's shell, and so every command it
# starts, stays on CPUs 0-3, leaving CPUs 4-7 to the process under test
# (taskset -c 4-7), which then switch to no other mm; then settle_cpus.
# On a guest with fewer than 8 CPUs: a skip, and status 1.
keep_cpus_4_7() {
	if [ "$(nproc)" -lt 8 ]; then
		skip "the transition ends on CPUs that run only the process" "needs 8 CPUs, has $(nproc)"
		return 1
	fi
	taskset -p -c 0-3 $$ >/dev/null
	settle_cpus
}

# asid_of PID: the global ASID that the trace shows assigned to process
# PID (trace_on global_asid_assign first), or nothing. The event is traced
# in the flushing thread; its TID, in the line's TASK-PID field, is matched
# against PID's threads, so the process must still run. The pool's in_use
# count alone cannot tell: an exited process's mm keeps its ASID until the
# last lazy CPU drops it, which may happen just as PID gets one.
asid_of() {
	local line tid
	grep 'global_asid_assign:' /sys/kernel/tracing/trace 2>/dev/null |
		while read -r line; do
			tid=${line%%[[:space:]]*}
			tid=${tid##*-}
			if [ -n "$tid" ] && [ -d "/proc/$1/task/$tid" ]; then
				line=${line#*global_asid_assign: asid=}
				echo "${line%%[!0-9]*}"
				break
			fi
		done
}

# json FILE EXPR: a value from a JSON file, EXPR in Python on the object 'j'.
json() {
	python3 -c 'import json, sys; j = json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"
}

TOOLS=$TOP/tools

# setup_zram SIZE: swap on a zram device (for the reclaim workload).
setup_zram() { "$TOP/scripts/setup-zram" "$1" 2>/dev/null; }

# trace_on EVENT...: clear the trace buffer and enable tlb:EVENTs.
trace_on() {
	local e
	echo 0 >/sys/kernel/tracing/tracing_on
	: >/sys/kernel/tracing/trace
	echo 16384 >/sys/kernel/tracing/buffer_size_kb
	for e in "$@"; do
		echo 1 >"/sys/kernel/tracing/events/tlb/$e/enable" || return 1
	done
	echo 1 >/sys/kernel/tracing/tracing_on
}

# trace_off: disable the tlb events; the buffer stays readable.
trace_off() {
	echo 0 >/sys/kernel/tracing/tracing_on
	echo 0 >/sys/kernel/tracing/events/tlb/enable
}

# tlbtop_progs: BPF programs of tlbtop still loaded (names cut to 15).
tlbtop_progs() {
	bpftool -j prog show 2>/dev/null | python3 -c '
import json, sys
names = {n[:15] for n in sys.argv[1:]}
print(sum(1 for p in json.load(sys.stdin) if p.get("name") in names))' \
		csd_queue_cpu ipi_send_cpu ipi_send_cpumask tlb_flush broadcast_flush \
		invlpgb_issue tlbsync_wait global_asid_assign global_asid_free \
		global_asid_reset global_asid_transition_done tlbbatch_flush \
		mm_vmscan_lru_shrink_inactive
}

# no_progs_left NAME: none of tlbtop's programs is loaded (freeing them may
# take a moment after the process is gone).
no_progs_left() {
	local n
	for _ in $(seq 1 50); do
		n=$(tlbtop_progs)
		[ "$n" = 0 ] && { pass "$1"; return; }
		sleep 0.1
	done
	fail "$1" "$n programs left" "$(bpftool prog show 2>&1 | head -n 20)"
}

# asid_replay TRACE CAPACITY BEFORE: replay the global ASID events of TRACE
# with tests/asid-replay.py (BEFORE: the ASIDs awaiting a reset when the
# trace began); sets assigned, freed, resets and still (held at the end),
# and reports the allocator's rules and the return of every ASID.
asid_replay() {
	local v errs
	if [ -z "$3" ]; then
		fail "no ASID handed out while in use, or again before a reset, or beyond the cap" \
			"debugfs x86/broadcast_tlb/global_asid has no awaiting_reset"
		fail "every ASID came back (events)" "not replayed"
		assigned=0 freed=0 resets=0 still=0
		return
	fi
	v=$(python3 "$TESTS_DIR/asid-replay.py" "$1" "$2" "$3")
	read -r assigned freed resets still <<<"$(head -n 1 <<<"$v")"
	diag "events: $assigned assigned, $freed freed, $resets resets, $still still held; $3 freed before the trace"
	errs=$(grep '^error:' <<<"$v")
	if [ -z "$errs" ]; then
		pass "no ASID handed out while in use, or again before a reset, or beyond the cap"
	else
		fail "no ASID handed out while in use, or again before a reset, or beyond the cap" "$errs"
	fi
	expect_eq "every ASID came back (events)" 0 "$still"
}

# tlbtop helpers, for the tlbtop tests.
# jl FILE EXPR: EXPR in Python over the JSON lines of FILE: I is the list
# of interval objects, S the summary (None if there is none).
jl() {
	python3 -c '
import json, sys
L = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
I = [o for o in L if o.get("type") == "interval"]
S = ([o for o in L if o.get("type") == "summary"] or [None])[-1]
print(eval(sys.argv[2]))' "$1" "$2"
}

# within NAME GOT WANT PCT: GOT is within PCT % of WANT (WANT > 0).
within() {
	if python3 -c 'import sys; g, w, p = float(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3]); sys.exit(0 if w > 0 and abs(g - w) <= w * p / 100 else 1)' "$2" "$3" "$4" 2>/dev/null; then
		pass "$1 ($2 vs $3)"
	else
		fail "$1 ($2 vs $3)" "expected within $4 %"
	fi
}

# start_tlbtop OUT ERR ARGS...: tlbtop in the background, attached when it
# returns; its PID in $tp.
start_tlbtop() {
	local o=$1 e=$2
	shift 2
	"$TOOLS/tlbtop/tlbtop" "$@" >"$o" 2>"$e" &
	tp=$!
	for _ in $(seq 1 600); do
		grep -q '^Tracing' "$e" && return 0
		kill -0 "$tp" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}

# end_tlbtop: let the exited workload's mm go (its lazy references
# dropped, its global ASID freed) while tlbtop ($tp) still counts, then
# stop tlbtop with SIGINT: it must exit 0.
end_tlbtop() {
	sleep 1.5
	settle_cpus
	sleep 1.2
	kill -INT "$tp"
	wait "$tp"
	expect_eq "tlbtop -j exits 0 on SIGINT" 0 "$?"
}

# run_bt SCRIPT SECONDS WORKLOAD...: start bpftrace SCRIPT, wait until it
# has attached (compiling under TCG takes seconds, and a busy guest starves
# it), run WORKLOAD, and print what bpftrace printed when SIGINT stopped it
# after WORKLOAD (or after SECONDS at the latest). Both outputs stay in $t,
# the test's scratch directory: SCRIPT's name with .out and .wl.
run_bt() {
	local script=$1 secs=$2 out=${t:-/tmp}/$(basename "$1").out
	local kfuncs links
	shift 2
	timeout -s INT "$secs" bpftrace "$script" >"$out" 2>&1 &
	local bpid=$!
	for _ in $(seq 1 600); do
		grep -q '^Attaching' "$out" && break
		sleep 0.1
	done
	# bpftrace says "Attaching" before it attaches. Its kfunc probes
	# patch kernel text, which under TCG is best done with the workload
	# not yet running (docs/tlbtop.md, "7.x under TCG"): wait, 60 s at
	# most, for their links (one a probe line; bpftool of Debian 12 does
	# not name a link's process, so the test's other tools must be gone).
	kfuncs=$(grep -Ec '^kr?(et)?func:' "$script")
	local end=$((SECONDS + 60))
	while [ "$kfuncs" -gt 0 ] && [ "$SECONDS" -lt "$end" ]; do
		links=$(bpftool -j link show 2>/dev/null | jq '[.[] | select(.type == "tracing")] | length')
		[ "${links:-0}" -ge "$kfuncs" ] && break
		sleep 0.2
	done
	sleep 1
	"$@" >"${out%.out}.wl" 2>&1
	sleep 1
	kill -INT "$bpid" 2>/dev/null
	wait "$bpid"
	cat "$out"
}

# uses_invlpgb: true when the running kernel uses INVLPGB: the CPU feature
# bit (word 13, bit 3 of boot_cpu_data's capabilities), which a CPU without
# it, tlbi=ipi or PTI leave clear. For kernels with no debugfs file of the
# series' to ask; read through bpftrace, whose BEGIN patches no text.
uses_invlpgb() {
	[ "$(bpftrace -e 'BEGIN { printf("%d\n", (((struct cpuinfo_x86 *)kaddr("boot_cpu_data"))->x86_capability[13] >> 3) & 1); exit(); }' 2>/dev/null | grep -x '[01]')" = 1 ]
}

# run_bt_reclaim SCRIPT: run_bt SCRIPT over the reclaim workload (memory
# cgroup reclaim to zram swap); fails, printing nothing, without zram.
run_bt_reclaim() {
	setup_zram 1G || return 1
	run_bt "$1" 180 "$TOOLS/reclaim/reclaim" -m 192M -f 32M -p 2 -t 4 \
		-D /tmp --cgroup /sys/fs/cgroup/bt-reclaim --limit 96M -q
}
