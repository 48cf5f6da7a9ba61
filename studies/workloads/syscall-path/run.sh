# The syscall-path study's workload: COUNT raw getppid calls between two
# phase markers (nullsys; the median per call leaves the few cold first
# calls out, the per-call mean of 20,000 barely sees them); and a check
# that getppid still answers what /proc says (for the kernel patch variants):
# the shell's $PPID comes from getppid(), /proc/PID/status from another path.
: "${COUNT:=20000}"
if sh -c 'grep -q "^PPid:[[:space:]]*$PPID\$" /proc/$$/status'; then
    echo "getppid agrees with /proc: ok"
else
    echo "getppid disagrees with /proc"; grep PPid /proc/$$/status; exit 1
fi
nullsys "$COUNT"
echo "syscall-path workload done"
