#!/usr/bin/env bash
# boot: hw
# The tracepoint tests on the emulated CPU (tests/guest/30-tracepoints.sh;
# make check runs them under the software model).
exec "$(dirname "$0")/../guest/30-tracepoints.sh"
