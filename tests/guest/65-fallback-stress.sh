#!/usr/bin/env bash
# boot: default
# The stress set of 60-stress.sh on the patched kernel without
# invlpgb=soft (no INVLPGB: IPIs).
EXPECT=ipis exec "$(dirname "$0")/60-stress.sh"
