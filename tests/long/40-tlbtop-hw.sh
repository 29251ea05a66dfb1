#!/usr/bin/env bash
# boot: hw
# tlbtop on the emulated CPU (tests/guest/40-tlbtop.sh; make check runs it
# under the software model).
exec "$(dirname "$0")/../guest/40-tlbtop.sh"
