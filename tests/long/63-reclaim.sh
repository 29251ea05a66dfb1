#!/usr/bin/env bash
# boot: soft
# Reclaim under the checker with 8 passes (tests/guest/63-reclaim.sh).
PASSES=8 exec "$(dirname "$0")/../guest/63-reclaim.sh"
