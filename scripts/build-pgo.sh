#!/usr/bin/env bash
# Build target/pgo/release/hartscope: the release build optimised with a
# profile of its own runs (LLVM profile-guided optimisation). An
# instrumented build runs `hartscope bench` once (the Linux boot on the
# atomic and in-order models, plain and sampled, the bare-metal cpubound
# program, a disk read and a network transfer), and the final build lays
# out and inlines its code by what those runs counted. On the in-order
# P87 boot this took 3.4 % of the host instructions and 11 % of the
# first-level instruction-cache misses away (docs/engine-speed.md).
#
# Both builds live in target/ directories of their own (their compiler
# flags differ from the plain release build's, and cargo would otherwise
# rebuild one over the other). The profile is made again only when the
# sources changed since the last one (their hash is kept beside it).
#
# Needs rustup's llvm-tools component (for llvm-profdata, which must come
# from the compiler's own LLVM version); it is added when missing.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo=${CARGO:-cargo}

sysroot=$(rustc --print sysroot)
host=$(rustc -vV | sed -n 's/^host: //p')
profdata="$sysroot/lib/rustlib/$host/bin/llvm-profdata"
# (the way round when no profile can be made)
plain="without a profile: cargo build --release, then target/release/hartscope bench"
if [[ ! -x $profdata ]]; then
  if ! command -v rustup >/dev/null 2>&1; then
    echo "build-pgo: $profdata is missing and rustup is not on PATH to add the llvm-tools component that holds it ($plain)" >&2
    exit 1
  fi
  echo "build-pgo: rustup component add llvm-tools (for llvm-profdata)" >&2
  if ! rustup component add llvm-tools; then
    echo "build-pgo: rustup could not add the llvm-tools component (llvm-profdata); $plain" >&2
    exit 1
  fi
  if [[ ! -x $profdata ]]; then
    echo "build-pgo: rustup added llvm-tools but $profdata is still missing" >&2
    exit 1
  fi
fi

# what the builds read: the compiler, the manifests and every file under
# crates/ (edits not yet committed too; no git needed)
sources=$( {
  rustc -vV
  find Cargo.toml Cargo.lock crates -type f -not -path '*/target/*' -print0 | sort -z | xargs -0 sha256sum
} | sha256sum | cut -d' ' -f1)
out=target/pgo
profile=$out/merged.profdata
if [[ -f $profile && -x $out/release/hartscope && $(cat "$out/sources.sha256" 2>/dev/null) == "$sources" ]]; then
  echo "build-pgo: $out/release/hartscope is up to date with its profile" >&2
  exit 0
fi

raw=$(pwd)/target/pgo-gen/profiles
rm -rf "$raw"
echo "build-pgo: the instrumented build (target/pgo-gen)" >&2
RUSTFLAGS="-Cprofile-generate=$raw" CARGO_TARGET_DIR=target/pgo-gen \
  "$cargo" build --release -p hartscope
gen=target/pgo-gen/release/hartscope

echo "build-pgo: the training runs (hartscope bench, once, with the instrumented build)" >&2
"$gen" guest build --image debian
"$gen" bench --repeat 1 --disk-mib 8 --net-mib 4 >/dev/null

mkdir -p "$out"
"$profdata" merge -o "$profile" "$raw"
echo "build-pgo: the final build (target/pgo), optimised with $profile" >&2
# (cargo does not see a new profile's contents: a clean final build reads it)
rm -rf "$out/release"
RUSTFLAGS="-Cprofile-use=$(pwd)/$profile" CARGO_TARGET_DIR=$out \
  "$cargo" build --release -p hartscope
echo "$sources" > "$out/sources.sha256"
echo "build-pgo: ok ($out/release/hartscope)" >&2
