#!/usr/bin/env bash
# Builds batchqr and runs the public benchmark suite (14 cases) on the default backend:
# the GPU when one is present, else the CPU (the CPU takes a few minutes).
# Extra arguments go to `batchqr bench` (e.g. --json results.json).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DBATCHQR_BUILD_TESTS=OFF >/dev/null
cmake --build build
exec build/batchqr bench --suite qr_v2 "$@"
