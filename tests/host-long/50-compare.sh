#!/usr/bin/env bash
# The short comparison (scripts/compare --quick): vanilla 6.12 and the
# patched kernel with invlpgb=soft, one 8-thread tlbflush run and one
# 2-thread reclaim run each, and the direction that the series promises.
. "$(dirname "$0")/../lib.sh"
out=$TOP/build/results/check
rm -rf "$out"
log=$(mktemp)
if ! "$TOP/scripts/compare" --quick --out "$out" >"$log" 2>&1; then
	fail "scripts/compare --quick ran" "$(tail -n 20 "$log")"
	rm -f "$log"
	exit 0
fi
pass "scripts/compare --quick ran"
rm -f "$log"

# m LABEL WORKLOAD THREADS KEY: a median from summary.json.
m() { json "$out/summary.json" "j['$1']['$2']['$3']['$4']"; }

# expect_cmp NAME COND WHAT KEY...: COND, a Python expression in v
# (vanilla) and s (patched, invlpgb=soft), holds for the medians at KEY.
expect_cmp() {
	local name=$1 cond=$2 what=$3 v s
	shift 3
	v=$(m vanilla "$@") s=$(m patched-soft "$@")
	diag "$what: vanilla $v, patched with invlpgb=soft $s"
	if python3 -c "import sys; v, s = map(float, sys.argv[1:]); sys.exit(0 if $cond else 1)" "$v" "$s"; then
		pass "$name"
	else
		fail "$name" "vanilla $v, invlpgb=soft $s"
	fi
}

expect_cmp "tlbflush x8: at least 10x fewer shootdown IPIs per 1000 loops under invlpgb=soft than on vanilla" \
	"v > 0 and s * 10 <= v" "tlbflush x8, TLB-shootdown IPIs per 1000 loops" \
	tlbflush 8 tlb_ipis_per_1000_loops
expect_cmp "reclaim: fewer TLB flushes per reclaimed folio on the patched kernel than on vanilla" \
	"s < v" "reclaim x2, arch_tlbbatch_flush per 1000 reclaimed folios" \
	reclaim 2 flushes_per_1000_folios

check "the data checks of every run passed" grep -q 'every tlbflush read and every reclaimed page checked out' "$out/compare.md"
if [ -s "$out/ipis-per-1000-loops.png" ] && [ -s "$out/reclaim-flushes.png" ]; then
	pass "gnuplot drew both plots"
else
	fail "gnuplot drew both plots" "$(ls -l "$out")"
fi
