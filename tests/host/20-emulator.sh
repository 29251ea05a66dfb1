#!/usr/bin/env bash
# The emulated CPU (build/qemu, make qemu) before the guest tests of the hw
# profile rely on it: scripts/check-emulator's freestanding program checks
# PCID and NOFLUSH retention, INVPCID, INVLPGB and TLBSYNC, and their
# faults, on two vCPUs, plainly and with invlpgb-strict=on; and on
# Debian's QEMU, which has none of them, the same cases must fail.
. "$(dirname "$0")/../lib.sh"
ce=$TOP/scripts/check-emulator
t=$(mktemp -d)

summary() { grep -E '^[0-9]+ passed, [0-9]+ failed' "$1" | tail -n 1; }

for strict in "" --strict; do
	name="the emulated CPU passes its own tests${strict:+ with invlpgb-strict=on}"
	if "$ce" $strict >"$t/out" 2>&1; then
		pass "$name"
		diag "$(summary "$t/out")"
	else
		fail "$name" "$(grep -E '^not ok' "$t/out" | head -n 10)" "$(summary "$t/out")" \
			"$(tail -n 3 "$t/out")"
	fi
done

# The same program on a CPU without the features: it must notice.
"$ce" --qemu qemu-system-x86_64 >"$t/out" 2>&1
rc=$?
nf=$(summary "$t/out" | sed -nE 's/.* ([0-9]+) failed.*/\1/p')
if [ "$rc" -ne 0 ] && [ "${nf:-0}" -ge 10 ]; then
	pass "on Debian's QEMU (no PCID, INVPCID, INVLPGB) the feature cases fail"
	diag "$(summary "$t/out")"
else
	fail "on Debian's QEMU (no PCID, INVPCID, INVLPGB) the feature cases fail" \
		"exit $rc, $(summary "$t/out")" "$(tail -n 5 "$t/out")"
fi
rm -rf "$t"
