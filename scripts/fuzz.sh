#!/usr/bin/env bash
# Coverage-guided fuzzing of every target in crates/fuzzing (libFuzzer via
# cargo-fuzz, on stable with `--sanitizer none`: the targets are safe Rust,
# so what libFuzzer looks for is a panic, an endless loop or a blow-up).
#
#   scripts/fuzz.sh SECONDS [TARGET...]
#
# Each target runs SECONDS from its seeds (fuzz/seeds/TARGET, committed)
# and the corpus it has grown (fuzz/corpus/TARGET, not committed). A target
# that crashes, hangs or runs out of memory stops the script with its
# reproducer's path (fuzz/artifacts/TARGET/); the last line per target gives
# executions and corpus size. `make test` runs it briefly; a long campaign
# is the same command with a larger SECONDS.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"

seconds="${1:?usage: scripts/fuzz.sh SECONDS [TARGET...]}"
shift
if [ "$#" -gt 0 ]; then
    targets=("$@")
else
    targets=(hart board boot_images machine_toml scenario_toml results_store btf snapshot)
fi
if ! command -v cargo-fuzz > /dev/null; then
    echo "fuzz: installing cargo-fuzz from crates.io"
    cargo install cargo-fuzz --locked --version 0.13.2
fi
cargo fuzz build -s none --fuzz-dir fuzz
status=0
for t in "${targets[@]}"; do
    mkdir -p "fuzz/corpus/$t" "fuzz/artifacts/$t"
    log="fuzz/artifacts/$t/last-run.log"
    # -timeout: one input taking 10 s is a hang; -rss_limit_mb: a blow-up.
    if cargo fuzz run -s none --fuzz-dir fuzz "$t" "fuzz/corpus/$t" "fuzz/seeds/$t" -- \
        -max_total_time="$seconds" -timeout=10 -rss_limit_mb=4096 -print_final_stats=1 \
        -artifact_prefix="fuzz/artifacts/$t/" > "$log" 2>&1; then
        runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
        corpus=$(find "fuzz/corpus/$t" -type f | wc -l)
        echo "fuzz: $t: ${runs:-?} executions in ${seconds} s, corpus ${corpus} inputs, no finding"
    else
        status=1
        echo "fuzz: $t: FOUND A PROBLEM (log: $log)"
        grep -E "panicked at|ERROR: libFuzzer|SUMMARY|Test unit written to" "$log" | head -n 8 | sed 's/^/    /'
    fi
done
exit "$status"
