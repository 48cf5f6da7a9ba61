#!/bin/bash
# Side by side in one run (issue 17): a study whose runs each boot Linux
# from reset against the same study booting once and going on from the
# snapshot (first without, then with the snapshot in the cache).
# Usage: scripts/bench-shared-boot.sh [STUDY] [REPEATS]  (default: studies/p87-models.toml, 2)
set -euo pipefail
cd "$(dirname "$0")/.."
study=${1:-studies/p87-models.toml}
repeat=${2:-2}
bin=target/release/hartscope
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
seconds() { # MODE TAG: host seconds of the whole study
    local t0 t1
    t0=$(date +%s.%N)
    "$bin" study "$study" --boot "$1" --repeat "$repeat" --jobs 2 \
        --db "$out/db.sqlite" --out "$out/$2" > "$out/$2.log" 2>&1
    t1=$(date +%s.%N)
    awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }' 
}
key_dir=${HARTSCOPE_CACHE:-$HOME/.cache/hartscope}/snapshots
echo "study $study, $repeat repeat(s), load average $(cut -d' ' -f1-3 /proc/loadavg)"
each=$(seconds each each)
# Without the snapshot in the cache: this binary's snapshots are removed first.
rm -f "$key_dir"/*.snap
cold=$(seconds fast-forward ff-first)
warm=$(seconds fast-forward ff-cached)
printf '| runs start | host seconds | × faster |\n|:--|--:|--:|\n'
printf '| each boots from reset | %.1f | 1.0 |\n' "$each"
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", a / b }'; }
printf '| one fast-forwarded boot (booted now) | %.1f | %s |\n' "$cold" "$(ratio "$each" "$cold")"
printf '| one fast-forwarded boot (from the cache) | %.1f | %s |\n' "$warm" "$(ratio "$each" "$warm")"
grep -h "shared boot" "$out"/ff-*.log | sed 's/^/  /'
