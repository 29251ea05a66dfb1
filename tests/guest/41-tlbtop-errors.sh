#!/usr/bin/env bash
# boot: soft
# tlbtop's error paths: bad options and arguments (exit 2 with the usage),
# not root, no BTF, a kernel without the series' tracepoints (fentry is
# taken; forced, exit 3 with a message that names what is missing), a
# kernel without either source, and none of them leaves a BPF
# program loaded.
. "$(dirname "$0")/../lib.sh"
t=$(mktemp -d)
T=$TOOLS/tlbtop/tlbtop

if [ ! -x "$T" ]; then
	fail "tlbtop is built" "no $T: make -C tools"
	exit 0
fi

# run_t OUT ERR ARGS...: tlbtop's status in $rc.
run_t() {
	local o=$1 e=$2
	shift 2
	timeout 120 "$@" >"$o" 2>"$e"
	rc=$?
}

# expect_err NAME STATUS PATTERN CMD...: CMD exits STATUS and its stderr
# matches the extended regex PATTERN.
expect_err() {
	local name=$1 want=$2 pat=$3
	shift 3
	run_t "$t/out" "$t/err" "$@"
	if [ "$rc" -eq "$want" ] && grep -Eq -- "$pat" "$t/err"; then
		pass "$name"
	else
		fail "$name" "status $rc (want $want), stderr:" "$(head -n 8 "$t/err")"
	fi
}

usage='^Usage: tlbtop '
expect_err "an unknown option exits 2" 2 "invalid option" "$T" -x
expect_err "an unknown long option exits 2" 2 "unrecognized option" "$T" --bogus
expect_err "an option without its value exits 2" 2 "requires an argument" "$T" -r
expect_err "-r 0 exits 2 with the usage" 2 "$usage" "$T" -r 0
expect_err "-r x exits 2 with the usage" 2 "$usage" "$T" -r x
expect_err "-p 0 exits 2 with the usage" 2 "$usage" "$T" -p 0
expect_err "-p -5 exits 2 with the usage" 2 "$usage" "$T" -p -5
expect_err "-p of no process exits 2" 2 "no process with PID" "$T" -p 4194304
expect_err "an unknown sort column exits 2" 2 "unknown column 'nope'" "$T" -s nope
expect_err "INTERVAL 0 exits 2" 2 "INTERVAL: 0 is out of range" "$T" 0
expect_err "INTERVAL past a day exits 2" 2 "INTERVAL: 86401 is out of range" "$T" 86401
expect_err "a fractional INTERVAL exits 2" 2 "INTERVAL: '0.5' is not a number" "$T" 0.5
expect_err "COUNT 0 exits 2" 2 "COUNT: 0 is out of range" "$T" 1 0
expect_err "a third argument exits 2" 2 "unexpected argument '3'" "$T" 1 2 3
expect_err "a huge number exits 2" 2 "too large" "$T" 99999999999999999999999
run_t "$t/out" "$t/err" "$T" -h
if [ "$rc" -eq 0 ] && grep -q 'ipis_avoided' "$t/out"; then pass "-h prints the help and exits 0"; else fail "-h prints the help and exits 0" "status $rc"; fi

expect_err "not root exits 3 and says so" 3 "needs root" \
	setpriv --reuid=65534 --regid=65534 --clear-groups "$T" -b 1 1
expect_err "no BTF exits 3 and says so" 3 "the kernel has no BTF" \
	unshare -m sh -c 'mount -t tmpfs none /sys/kernel/btf && exec "$0" -b 1 1' "$T"

expect_err "an unknown --source exits 2" 2 "unknown source 'nope' \(tracepoint, fentry\)" \
	"$T" --source=nope -b 1 1

# "${with_btf[@]}" FILE CMD...: CMD with FILE bind-mounted over the
# kernel's BTF (a command, not a function: run_t runs it under timeout).
with_btf=(unshare -m sh -c 'mount --bind "$0" /sys/kernel/btf/vmlinux && exec "$@"')

# fake_btf OUT NAME...: the kernel's BTF with each NAME misspelt (its last
# letter X, so the length and the BTF stay valid): a kernel without them.
fake_btf() {
	python3 -c '
import sys
d = open("/sys/kernel/btf/vmlinux", "rb").read()
for n in sys.argv[2:]:
    old = b"\0" + n.encode() + b"\0"
    assert d.count(old) == 1, n
    d = d.replace(old, old[:-2] + b"X\0")
open(sys.argv[1], "wb").write(d)
' "$@"
}

# A kernel without the series' events, as upstream is. On the patched
# kernel, show tlbtop BTF in which one tracepoint's name is misspelt.
tp_msg='tlbtop: source tracepoint: the kernel has no tracepoint tlb:broadcast_flush: boot the patched kernel \(make kernel\), or use --source=fentry'
fn_msg='tlbtop: source fentry: the kernel has no function flush_tlb_mm_range in its BTF'
if grep -qa btf_trace_broadcast_flush /sys/kernel/btf/vmlinux; then
	fake_btf "$t/tp.btf" btf_trace_broadcast_flush
	expect_err "--source=tracepoint on a kernel without tlb:broadcast_flush: exit 3, the event named" 3 "$tp_msg" \
		"${with_btf[@]}" "$t/tp.btf" "$T" --source=tracepoint -b 1 1
	expect_eq "only the missing event is named" 1 "$(grep -c 'has no' "$t/err")"
	run_t "$t/out" "$t/err" "${with_btf[@]}" "$t/tp.btf" "$T" -b 1 1
	if [ "$rc" -eq 0 ] && grep -q '  source: fentry, ' "$t/out"; then
		pass "without the series' tracepoints tlbtop falls back to source fentry"
	else
		fail "without the series' tracepoints tlbtop falls back to source fentry" \
			"status $rc" "$(head -n 4 "$t/out" "$t/err")"
	fi
	fake_btf "$t/none.btf" btf_trace_broadcast_flush flush_tlb_mm_range
	expect_err "a kernel with neither source: exit 3, each source's lack named" 3 "$fn_msg" \
		"${with_btf[@]}" "$t/none.btf" "$T" -b 1 1
	if grep -Eq -- "$tp_msg" "$t/err"; then
		pass "the tracepoint source's lack is named too"
	else
		fail "the tracepoint source's lack is named too" "$(cat "$t/err")"
	fi
else
	diag "this kernel has no tlb:broadcast_flush: --source=tracepoint must say so"
	expect_err "--source=tracepoint on a kernel without tlb:broadcast_flush: exit 3, the event named" 3 "$tp_msg" \
		"$T" --source=tracepoint -b 1 1
fi
expect_eq "no tlbtop program is loaded after the errors" 0 "$(tlbtop_progs)"
rm -rf "$t"
