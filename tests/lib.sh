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
