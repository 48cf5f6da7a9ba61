# The syscall-path study's workload: COUNT raw getppid calls between two
# phase markers (nullsys), after a warm-up of the same loop.
: "${COUNT:=20000}"
nullsys 2000 > /dev/null
nullsys "$COUNT"
echo "syscall-path workload done"
