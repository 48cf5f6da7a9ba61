#!/bin/sh
# The timing probe inside Linux: pointer chase (with the TLBs in play) and
# the mispredict loop, counted with perf_event_open where the SBI PMU offers it.
# Also shows what the kernel made of the PMU.
dmesg | grep -i -e pmu -e perf
ls /sys/bus/event_source/devices/
cat /sys/bus/event_source/devices/cpu/type 2>/dev/null && echo "cpu PMU registered"
timingprobe
