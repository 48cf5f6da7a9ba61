# The ipi-latency study's workload: ipiping (guest/workloads/ipiping.c)
# times ROUNDS synchronous round trips of an empty request between a client
# on CPU 0 and a server on CPU 1 that sleeps between requests, through MODE
# (pipe or futex), and sends the distribution on the `metrics` channel.
# ROUNDS and MODE come from the study.
echo "ipi-latency: CPUs online $(cat /sys/devices/system/cpu/online), command line: $(cat /proc/cmdline)"
ipiping "${MODE:-pipe}" "${ROUNDS:-200}" 0 1
