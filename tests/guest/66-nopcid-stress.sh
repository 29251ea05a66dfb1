#!/usr/bin/env bash
# boot: nopcid
# The stress set of 60-stress.sh on invlpgb=soft with nopcid: INVLPGB
# depends on PCID, so the kernel falls back to IPIs.
EXPECT=ipis exec "$(dirname "$0")/60-stress.sh"
