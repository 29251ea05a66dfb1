#!/usr/bin/env bash
# boot: default
# The stress set without invlpgb=soft, 20 s per stressor.
EXPECT=ipis STRESS_SECS=20 exec "$(dirname "$0")/../guest/60-stress.sh"
