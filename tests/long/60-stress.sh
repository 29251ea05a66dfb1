#!/usr/bin/env bash
# boot: soft
# The stress set, 40 s per stressor (tests/guest/60-stress.sh).
STRESS_SECS=40 exec "$(dirname "$0")/../guest/60-stress.sh"
