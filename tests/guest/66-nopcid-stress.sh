#!/usr/bin/env bash
# boot: nopcid hw-nopcid
# The stress set of 60-stress.sh with nopcid, on invlpgb=soft and on a CPU
# with INVLPGB: INVLPGB depends on PCID, so the kernel falls back to IPIs.
EXPECT=ipis exec "$(dirname "$0")/60-stress.sh"
