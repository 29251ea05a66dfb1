#!/usr/bin/env bash
# scripts/guest-run: exit status, CPUs, usage errors, a missing kernel,
# boot profiles.
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

out=$("$gr" --profile nope -- true 2>&1); rc=$?
if [ "$rc" -eq 2 ] && grep -q "no boot profile 'nope' in tests/profiles" <<<"$out"; then
	pass "an unknown --profile: exit 2, named"
else
	fail "an unknown --profile: exit 2, named" "status $rc: $out"
fi
out=$("$gr" --profile soft --append quiet -- cat /proc/cmdline 2>&1)
if [[ " $out " == *" invlpgb=soft "* && " $out " == *" quiet "* ]]; then
	pass "--profile soft boots with its command line, and --append adds to it"
else
	fail "--profile soft boots with its command line, and --append adds to it" "$out"
fi

out=$("$gr" --timeout 3 -- sleep 60 2>&1); rc=$?
expect_eq "a command that runs past --timeout: exit 124" 124 "$rc"

# Two runs at once do not collide.
t=$(mktemp -d)
"$gr" -- sh -c 'echo one' >"$t/a" 2>"$t/a.err" &
"$gr" -- sh -c 'echo two' >"$t/b" 2>"$t/b.err" &
wait
if [ "$(cat "$t/a")" = one ] && [ "$(cat "$t/b")" = two ]; then
	pass "two guests at once keep their outputs apart"
else
	fail "two guests at once keep their outputs apart" \
		"a: $(cat "$t/a" "$t/a.err")" "b: $(cat "$t/b" "$t/b.err")"
fi

# QEMU dying of SIGSEGV before the command starts. A stand-in
# qemu-system-x86_64 first in PATH kills itself as many times as crash-limit
# says, then runs the real one.
real_qemu=$(command -v qemu-system-x86_64)
cat >"$t/qemu-system-x86_64" <<STANDIN
#!/bin/bash
n=\$(cat "$t/crashes" 2>/dev/null || echo 0)
if [ "\$n" -lt "\$(cat "$t/crash-limit")" ]; then
	echo \$((n + 1)) >"$t/crashes"
	kill -SEGV \$\$
fi
exec "$real_qemu" "\$@"
STANDIN
chmod +x "$t/qemu-system-x86_64"

what="qemu crashing once during boot: booted again with a warning, the command's status"
echo 1 >"$t/crash-limit"
out=$(PATH=$t:$PATH "$gr" -- sh -c 'echo booted; exit 5' 2>"$t/err"); rc=$?
if [ "$rc" -eq 5 ] && [ "$out" = booted ] && [ "$(cat "$t/crashes")" = 1 ] &&
	grep -q 'qemu died of signal 11 .*booting again' "$t/err"; then
	pass "$what"
else
	fail "$what" "status $rc, stdout '$out', crashes $(cat "$t/crashes")" "$(cat "$t/err")"
fi

what="qemu crashing every time: three boots, then exit 125 naming qemu"
rm -f "$t/crashes"
echo 99 >"$t/crash-limit"
out=$(PATH=$t:$PATH "$gr" -- true 2>&1); rc=$?
if [ "$rc" -eq 125 ] && [ "$(cat "$t/crashes")" = 3 ] &&
	grep -q 'qemu itself died of signal 11' <<<"$out"; then
	pass "$what"
else
	fail "$what" "status $rc, crashes $(cat "$t/crashes")" "$(tail -n 3 <<<"$out")"
fi
rm -rf "$t"

# A crashing guest: the sysrq 'c' trigger panics the kernel.
out=$("$gr" -- sh -c 'echo c >/proc/sysrq-trigger; sleep 30' 2>&1); rc=$?
if [ "$rc" -eq 125 ] && grep -q 'crashed' <<<"$out"; then
	pass "a kernel panic in the guest: exit 125 with the console's last lines"
else
	fail "a kernel panic in the guest: exit 125 with the console's last lines" "status $rc" "$(tail -n 5 <<<"$out")"
fi

# A boot that does not reach the command: a --boot-timeout of 1 s stops
# each boot before /init starts it (booting takes several seconds).
out=$("$gr" --boot-timeout 1 -- true 2>&1); rc=$?
boots=$(grep -c 'warning: the guest had not started the command after 1s; booting again' <<<"$out")
if [ "$rc" -eq 125 ] && [ "$boots" -eq 2 ] && grep -q 'had not started the command after 1s, in 3 boots' <<<"$out"; then
	pass "a boot that never starts the command: three boots, then exit 125"
else
	fail "a boot that never starts the command: three boots, then exit 125" \
		"status $rc, $boots warnings" "$(tail -n 3 <<<"$out")"
fi
