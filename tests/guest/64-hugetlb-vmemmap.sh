#!/usr/bin/env bash
# boot: soft hw
# flush_tlb_all(): the HugeTLB vmemmap optimisation (HVO) remaps the
# vmemmap of each 2 MB page it takes into the pool, a kernel (global)
# mapping whose frames change, calls flush_tlb_all() and frees the old
# frames. tools/vmemmapcheck grows and shrinks the pool on CPU 4 while
# CPUs 5-7 read the pool pages' struct pages through the vmemmap with a
# BPF program: after HVO, each tail vmemmap page must read as the copy of
# the head's (PG_head set); a read of the old tail struct pages went
# through a translation that flush_tlb_all() left behind. The flush must
# also go out as INVLPGBs of everything, global entries included.
. "$(dirname "$0")/../lib.sh"
t=$(mktemp -d)
trials=${VMEMMAP_TRIALS:-20}
hvo=/proc/sys/vm/hugetlb_optimize_vmemmap

if [ ! -w "$hvo" ]; then
	fail "HugeTLB vmemmap optimisation" "no $hvo: the kernel lacks HUGETLB_PAGE_OPTIMIZE_VMEMMAP"
	exit 0
fi
echo 1 >"$hvo"
trace_on invlpgb_issue
"$TOOLS/vmemmapcheck/vmemmapcheck" -t "$trials" -c 4-7 --json >"$t/out" 2>"$t/err"
rc=$?
trace_off
echo 0 >"$hvo"
diag "vmemmapcheck: $(cat "$t/out" "$t/err")"
expect_eq "vmemmapcheck exits 0" 0 "$rc"
val() { json "$t/out" "j['$1']" 2>/dev/null || echo "no result"; }
expect_eq "no read of a remapped vmemmap page through a stale translation" 0 "$(val stale_reads)"
expect_eq "no read of the vmemmap faulted" 0 "$(val read_faults)"
# at_least NAME N MIN WHY: pass when N (a number) is MIN or more.
at_least() {
	if [ "$2" -ge "$3" ] 2>/dev/null; then
		pass "$1"
	else
		fail "$1" "got $2, want $3 or more: $4"
	fi
}
at_least "HVO optimised the pool's pages" "$(val optimised)" "$trials" \
	"without HVO there is no remap to test"
at_least "pages came back at frames the readers had read" "$(val same_frames)" "$trials" \
	"the readers checked too few pages to count"

# Each growth of the pool ends in flush_tlb_all() (twice: after the PMD
# split and after the remap); under INVLPGB that is an INVLPGB of every
# PCID with global entries included, no VA.
read -r all nonglobal <<<"$(awk '/ invlpgb_issue: / && !/flags=[A-Z_|]*(VA|PCID)/ {
	if ($0 ~ /flags=[A-Z_|]*GLOBAL/) a++; else n++ }
	END { print a + 0, n + 0 }' /sys/kernel/tracing/trace)"
diag "INVLPGBs of every PCID: $all with global entries, $nonglobal without"
if [ "$all" -ge "$trials" ]; then
	pass "flush_tlb_all() goes out as INVLPGBs with global entries ($all for $trials growths)"
else
	fail "flush_tlb_all() goes out as INVLPGBs with global entries ($all for $trials growths)" \
		"$nonglobal INVLPGBs of every PCID without global entries"
fi
dmesg_clean "dmesg is clean"
rm -rf "$t"
