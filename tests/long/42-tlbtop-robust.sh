#!/usr/bin/env bash
# boot: soft
# tlbtop: 800 fuzzed command lines, 30 signal runs (about 11 s each
# under TCG: loading and attaching the programs, the delay, the summary).
FUZZ=800 SIGNALS=30 exec "$(dirname "$0")/../guest/42-tlbtop-robust.sh"
