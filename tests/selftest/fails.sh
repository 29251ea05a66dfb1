#!/usr/bin/env bash
# A test file whose second case always fails: tests/guest/01-runner.sh uses it
# to show that a failing case fails the run.
. "$(dirname "$0")/../lib.sh"
pass "a case that passes"
fail "a case that fails" "this failure is intended"
