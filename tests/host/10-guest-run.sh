#!/usr/bin/env bash
# scripts/guest-run: exit status, CPUs, usage errors, a missing kernel.
. "$(dirname "$0")/../lib.sh"
gr=$TOP/scripts/guest-run

"$gr" -- sh -c 'exit 3' >/dev/null 2>&1
expect_eq "guest-run passes the command's exit status back (3)" 3 "$?"

out=$("$gr" --cpus 8 -- cat /proc/cpuinfo 2>&1)
expect_eq "guest-run --cpus 8: /proc/cpuinfo lists 8 processors" 8 "$(grep -c '^processor' <<<"$out")"

out=$("$gr" -- sh -c 'echo to-stdout; echo to-stderr >&2' 2>/dev/null)
expect_eq "the command's stdout reaches the caller's stdout" to-stdout "$out"
out=$("$gr" -- sh -c 'echo to-stdout; echo to-stderr >&2' 2>&1 >/dev/null)
expect_eq "the command's stderr reaches the caller's stderr" to-stderr "$out"

out=$("$gr" 2>&1); rc=$?
expect_eq "no arguments: exit 2" 2 "$rc"
case $out in *usage:*) pass "no arguments: usage on stderr" ;; *) fail "no arguments: usage on stderr" "$out" ;; esac
"$gr" --bogus -- true >/dev/null 2>&1
expect_eq "an unknown option: exit 2" 2 "$?"

out=$("$gr" --kernel /nonexistent/bzImage -- true 2>&1); rc=$?
if [ "$rc" -ne 0 ] && grep -q 'no kernel at /nonexistent/bzImage' <<<"$out"; then
	pass "a missing kernel: clear message, non-zero exit"
else
	fail "a missing kernel: clear message, non-zero exit" "status $rc: $out"
fi

out=$("$gr" --timeout 3 -- sleep 60 2>&1); rc=$?
expect_eq "a command that runs past --timeout: exit 124" 124 "$rc"

# Two runs at once do not collide.
t=$(mktemp -d)
"$gr" -- sh -c 'echo one' >"$t/a" 2>&1 &
"$gr" -- sh -c 'echo two' >"$t/b" 2>&1 &
wait
if [ "$(cat "$t/a")" = one ] && [ "$(cat "$t/b")" = two ]; then
	pass "two guests at once keep their outputs apart"
else
	fail "two guests at once keep their outputs apart" "a: $(cat "$t/a")" "b: $(cat "$t/b")"
fi
rm -rf "$t"

# A crashing guest: the sysrq 'c' trigger panics the kernel.
out=$("$gr" -- sh -c 'echo c >/proc/sysrq-trigger; sleep 30' 2>&1); rc=$?
if [ "$rc" -eq 125 ] && grep -q 'crashed' <<<"$out"; then
	pass "a kernel panic in the guest: exit 125 with the console's last lines"
else
	fail "a kernel panic in the guest: exit 125 with the console's last lines" "status $rc" "$(tail -n 5 <<<"$out")"
fi
