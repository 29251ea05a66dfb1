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

# settle_cpus: run a task on every CPU, so that lazy TLB references to
# exited processes' mms are dropped and their global ASIDs freed.
settle_cpus() {
	local c
	for c in $(seq 0 $(($(nproc) - 1))); do
		taskset -c "$c" true 2>/dev/null
	done
}

# json FILE EXPR: a value from a JSON file, EXPR in Python on the object 'j'.
json() {
	python3 -c 'import json, sys; j = json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"
}

TOOLS=$TOP/tools

# setup_zram SIZE: swap on a zram device (for the reclaim workload).
setup_zram() {
	[ -e /sys/block/zram0 ] || return 1
	grep -q '^/dev/zram0' /proc/swaps && return 0
	echo "$1" >/sys/block/zram0/disksize || return 1
	mkswap /dev/zram0 >/dev/null 2>&1 || return 1
	swapon /dev/zram0
}

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
