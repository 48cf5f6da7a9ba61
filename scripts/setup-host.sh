#!/usr/bin/env bash
# Installs the Debian packages hartscope needs on a bookworm host. Idempotent:
# packages already present are left alone and `apt-get update` runs at most once.
set -euo pipefail

packages=(
  gcc-riscv64-linux-gnu libc6-dev-riscv64-cross binutils-riscv64-linux-gnu
  gcc-riscv64-unknown-elf picolibc-riscv64-unknown-elf
  qemu-system-misc device-tree-compiler
  cpio bc flex bison libssl-dev libelf-dev build-essential
  xz-utils zstd dpkg-dev sqlite3
  # bookworm's OpenSBI ELF: a real firmware file for the symbolizer's tests
  opensbi
  # guest image builds: locked files fetched over HTTP, release signatures
  # checked by `guest lock`, BTF encoded from the custom kernel's DWARF
  curl debian-archive-keyring gpgv ca-certificates coreutils patch tar dwarves
  # tests/guest_lock.rs signs its stand-in mirror's release files
  gnupg
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed$'; then
    missing+=("$p")
  fi
done

if ((${#missing[@]})); then
  echo "setup-host: installing ${missing[*]}" >&2
  sudo_cmd=()
  if [[ $(id -u) -ne 0 ]]; then sudo_cmd=(sudo); fi
  "${sudo_cmd[@]}" apt-get update -q
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
else
  echo "setup-host: all Debian packages present" >&2
fi

# The workspace's `rust-version` is the oldest toolchain that builds it
# (measured); Debian bookworm's own cargo (1.63) is far older, so rustup's is
# the one to install.
need=$(sed -n 's/^rust-version = "\([0-9.]*\)"$/\1/p' "$(dirname "$0")/../Cargo.toml")
if ! command -v cargo >/dev/null 2>&1; then
  echo "setup-host: cargo is not on PATH; install Rust ${need} or later with rustup (Debian bookworm's cargo is too old)" >&2
  exit 1
fi
have=$(cargo --version | sed -n 's/^cargo \([0-9]*\.[0-9]*\).*/\1/p')
if [[ -z $have ]] || [[ $(printf '%s\n%s\n' "$need" "$have" | sort -V | head -n1) != "$need" ]]; then
  echo "setup-host: $(command -v cargo) is ${have:-of unknown version}, and this workspace needs Rust ${need} or later (Cargo.toml's rust-version); install it with rustup (Debian bookworm's cargo is too old)" >&2
  exit 1
fi

# inferno-collapse-perf: the profile tests check hartscope's perf.script
# against it (a stack collapser nobody here wrote).
if ! command -v inferno-collapse-perf >/dev/null 2>&1 && [[ ! -x "${CARGO_HOME:-$HOME/.cargo}/bin/inferno-collapse-perf" ]]; then
  echo "setup-host: cargo install inferno (for inferno-collapse-perf)" >&2
  cargo install --quiet --locked inferno --version 0.12.8
fi
echo "setup-host: ok ($(cargo --version))" >&2
