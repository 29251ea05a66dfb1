#!/usr/bin/env bash
# A test file whose cases pass and skip.
. "$(dirname "$0")/../lib.sh"
pass "a case that passes"
skip "a case that is skipped" "to show skips are counted"
