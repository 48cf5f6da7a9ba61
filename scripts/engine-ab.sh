#!/usr/bin/env bash
# Two hartscope binaries side by side on the same inputs, interleaved
# (A, B, A, B, ...) so a shared machine's load hits both alike: a debian
# P87 boot (atomic, --smp 2), the same on the in-order model, and the
# bare-metal cpubound program. Prints host seconds (the run's own
# --stats-json figure), user CPU seconds and MIPS per run, the load average
# before and after, and checks that both give the same console bytes and
# guest counts.
#
#   scripts/engine-ab.sh OLD_BINARY NEW_BINARY [ROUNDS]
set -euo pipefail
a=$1; b=$2; rounds=${3:-3}
root=$(cd "$(dirname "$0")/.." && pwd)
out=$(mktemp -d /tmp/engine-ab.XXXXXX)
elf=$out/cpubound.elf
riscv64-unknown-elf-gcc -DCPUBOUND_BARE_METAL -DDEFAULT_ROUNDS=300 -O2 -march=rv64gc -mabi=lp64d \
    -mcmodel=medany -ffreestanding -fno-builtin -fno-tree-loop-distribute-patterns -nostdlib \
    -nostartfiles -static -Wl,--no-warn-rwx-segments -T "$root/guest/workloads/cpubound-bare.ld" \
    "$root/guest/workloads/cpubound.c" -lgcc -o "$elf"
wl=$root/guest/workloads/p87-shell
declare -A args=(
    [linux-atomic]="boot --image debian --smp 2 --workload $wl"
    [linux-inorder]="boot --image debian --smp 2 --machine $root/machines/inorder.toml --workload $wl"
    [cpubound]="boot --bios none --kernel $elf"
)
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-14s %-4s %5s %10s %10s %8s\n' bench bin round host_s user_s MIPS
for bench in linux-atomic linux-inorder cpubound; do
    for r in $(seq "$rounds"); do
        for w in a b; do
            bin=${!w}
            tag=$out/$bench-$w
            /usr/bin/time -f %U -o "$tag.time" "$bin" ${args[$bench]} --stats-json "$tag.json" \
                > "$tag.console" 2> "$tag.err"
            python3 - "$tag.json" "$(cat "$tag.time")" "$bench" "$w" "$r" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print(f"{sys.argv[3]:<14} {sys.argv[4]:<4} {sys.argv[5]:>5} {d['host_seconds']:>10.2f} {float(sys.argv[2]):>10.2f} {d['mips']:>8.1f}")
PY
        done
        cmp -s "$out/$bench-a.console" "$out/$bench-b.console" || { echo "$bench: console output differs"; exit 1; }
        python3 - "$out/$bench-a.json" "$out/$bench-b.json" "$bench" <<'PY'
import json, sys
def guest(v):
    if isinstance(v, dict):
        return {k: guest(x) for k, x in v.items() if 'host' not in k and k != 'mips'}
    if isinstance(v, list):
        return [guest(x) for x in v]
    return v
a, b = (guest(json.load(open(p))) for p in sys.argv[1:3])
if a != b:
    sys.exit(f"{sys.argv[3]}: guest counts differ")
PY
    done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "console bytes and guest counts identical in every pair"
rm -rf "$out"
