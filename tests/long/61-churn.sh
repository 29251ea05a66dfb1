#!/usr/bin/env bash
# boot: soft-asidmax
# Churn with 1500 short-lived global-ASID processes (tests/guest/61-churn.sh).
CHURN=1500 exec "$(dirname "$0")/../guest/61-churn.sh"
