#!/usr/bin/env bash
# boot: default
# The runner must count honestly: a failing case or a dying test file fails
# the run; passes and skips do not.
. "$(dirname "$0")/../lib.sh"
sd=$TESTS_DIR/selftest

out=$("$TESTS_DIR/run" "$sd/passes.sh" 2>&1); rc=$?
expect_eq "a passing file: runner exits 0" 0 "$rc"
expect_eq "a passing file: summary line" "1 passed, 0 failed, 1 skipped" "$(tail -n 1 <<<"$out")"

out=$("$TESTS_DIR/run" "$sd/passes.sh" "$sd/fails.sh" 2>&1); rc=$?
expect_eq "a failing case: runner exits 1" 1 "$rc"
expect_eq "a failing case: summary line" "2 passed, 1 failed, 1 skipped" "$(tail -n 1 <<<"$out")"
if grep -q '^not ok 2 fails' <<<"$out"; then pass "a failing case: its file is 'not ok'"; else fail "a failing case: its file is 'not ok'" "$out"; fi

out=$("$TESTS_DIR/run" "$sd/crashes.sh" 2>&1); rc=$?
expect_eq "a dying file: runner exits 1" 1 "$rc"
if grep -q 'exited with status 7' <<<"$out"; then pass "a dying file: its status is reported"; else fail "a dying file: its status is reported" "$out"; fi
