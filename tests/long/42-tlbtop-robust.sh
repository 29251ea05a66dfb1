#!/usr/bin/env bash
# boot: soft
# tlbtop: 3000 fuzzed command lines, 60 signal runs.
FUZZ=3000 SIGNALS=60 exec "$(dirname "$0")/../guest/42-tlbtop-robust.sh"
