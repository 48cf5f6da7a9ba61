#!/usr/bin/env bash
# CI step for guest images: installs host packages, builds both images (the
# cache in $HARTSCOPE_CACHE makes later runs cheap) and boots each under
# QEMU with a small workload. Meant to be called from .ci/run.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup-host.sh
cargo build -q -p hartscope
for image in debian custom; do
  start=$(date +%s)
  ./target/debug/hartscope guest build --image "$image" >/dev/null
  echo "ci-guest: image $image ready in $(( $(date +%s) - start )) s" >&2
done
cargo test -p hartscope --test guest_qemu
