#!/usr/bin/env bash
# boot: soft
# CPU hotplug for 2 minutes under broadcast flushing (tests/guest/62-hotplug.sh).
HOTPLUG_SECS=120 exec "$(dirname "$0")/../guest/62-hotplug.sh"
