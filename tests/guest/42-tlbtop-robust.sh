#!/usr/bin/env bash
# boot: soft
# tlbtop's robustness: fuzzed command lines (random, overlong, negative and
# huge numbers, unknown options) always give a message and exit 2, never a
# crash; SIGINT and SIGTERM at random points, attaching included, always
# give the summary and exit 0, and leave no BPF program behind. FUZZ sets
# the number of command lines and SIGNALS the number of signal runs.
. "$(dirname "$0")/../lib.sh"
t=$(mktemp -d)
T=$TOOLS/tlbtop/tlbtop
fuzz=${FUZZ:-150}
signals=${SIGNALS:-8}

# Command lines that are wrong in some way, one per line, each argument
# ended by \x01, from a seeded generator (the seed is in the diagnostics).
seed=${SEED:-$RANDOM}
diag "fuzz seed $seed ($fuzz command lines)"
python3 - "$seed" "$fuzz" >"$t/cmds" <<'PY'
import random, sys
r = random.Random(int(sys.argv[1]))
opts = ["-p", "-r", "-s", "-C", "-b", "-j", "-v", "--pid", "--rows", "--sort",
        "--noclear", "--batch", "--json", "--verbose"]
needs = {"-p", "-r", "-s", "--pid", "--rows", "--sort"}
bad_nums = ["-1", "-0", "0", "-99999999999999999999", "99999999999999999999",
            "18446744073709551616", "4294967296", "1e3", "0x10", "1.5", "", " ",
            "12abc", "+-3", "9" * 400, "nan", "inf"]
cols = ["pid", "comm", "cpus", "asid", "flushes", "bcast", "ipis",
        "ipis_avoided", "invlpgb", "tlbsync"]
junk = lambda: "".join(r.choice("abcXYZ-_=/%*?\\'\" \t") for _ in range(r.randint(1, 40)))
for _ in range(int(sys.argv[2])):
    kind = r.randrange(7)
    a = [r.choice(["-b", "-j", "-C"]) for _ in range(r.randint(0, 2))]
    if kind == 0:                                 # unknown option
        a.append("-" + r.choice("acdefgiklmnoqtuwxyzABDEFG"))
    elif kind == 1:                               # unknown long option
        a.append("--" + junk().strip("-= ") + "x")
    elif kind == 2:                               # bad number for -p/-r
        a += [r.choice(["-p", "-r", "--pid", "--rows"]), r.choice(bad_nums)]
    elif kind == 3:                               # bad sort column
        a += [r.choice(["-s", "--sort"]), r.choice(cols) + junk()]
    elif kind == 4:                               # bad INTERVAL or COUNT
        a += [r.choice(bad_nums + ["86401", "1000000001"])]
    elif kind == 5:                               # too many arguments
        a += ["1", "1", str(r.randint(1, 9))]
    else:                                         # option missing its value
        a.append(r.choice(sorted(needs)))
    # Each argument ends with \x01, so that an empty last one survives read.
    print("".join(x + "\x01" for x in a))
PY
n=0 bad=0
t0=$SECONDS
while IFS= read -r line; do
	n=$((n + 1))
	IFS=$'\x01' read -r -a args <<<"$line"
	timeout 30 "$T" "${args[@]}" >"$t/out" 2>"$t/err" </dev/null
	rc=$?
	if [ "$rc" -ne 2 ] || [ ! -s "$t/err" ]; then
		bad=$((bad + 1))
		[ "$bad" -le 5 ] && diag "tlbtop $(printf '%q ' "${args[@]}"): status $rc, stderr: $(head -c 200 "$t/err")"
	fi
done <"$t/cmds"
diag "$n command lines in $((SECONDS - t0)) s"
if [ "$n" -eq "$fuzz" ] && [ "$bad" -eq 0 ]; then
	pass "$fuzz fuzzed command lines: each a message and exit 2"
else
	fail "$fuzz fuzzed command lines: each a message and exit 2" "$bad of $n did otherwise"
fi
no_progs_left "no tlbtop program is loaded after the fuzzing"

# Signals at random points: some while it attaches, most while it runs.
"$TOOLS/tlbflush/tlbflush" -t 6 -c 0-5 -d 3600 -q >/dev/null &
wl=$!
ok=0
t0=$SECONDS
for i in $(seq 1 "$signals"); do
	sig=$([ $((i % 2)) = 0 ] && echo INT || echo TERM)
	delay=$(python3 -c "import random; print(round(random.Random($seed + $i).uniform(0.2, 4), 2))")
	"$T" -b 1 >"$t/out" 2>"$t/err" &
	tp=$!
	sleep "$delay"
	kill -"$sig" "$tp"
	wait "$tp"
	rc=$?
	if [ "$rc" -eq 0 ] && grep -q '^Summary since' "$t/out"; then
		ok=$((ok + 1))
	else
		diag "SIG$sig after ${delay}s: status $rc, last lines: $(tail -n 3 "$t/out" "$t/err" | tr '\n' ' ')"
	fi
done
kill "$wl"; wait "$wl" 2>/dev/null
diag "$signals signal runs in $((SECONDS - t0)) s"
expect_eq "SIGINT and SIGTERM at random points: summary and exit 0 ($signals runs)" "$signals" "$ok"
no_progs_left "no tlbtop program is loaded after the signals"
dmesg_clean "dmesg is clean"
rm -rf "$t"
