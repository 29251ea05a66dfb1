#!/usr/bin/env bash
# boot: nopcid
# The stress set with invlpgb=soft nopcid, 20 s per stressor.
EXPECT=ipis STRESS_SECS=20 exec "$(dirname "$0")/../guest/60-stress.sh"
