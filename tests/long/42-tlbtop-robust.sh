#!/usr/bin/env bash
# boot: soft
# tlbtop: 800 fuzzed command lines, 60 signal runs.
FUZZ=800 SIGNALS=60 exec "$(dirname "$0")/../guest/42-tlbtop-robust.sh"
