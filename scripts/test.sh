#!/usr/bin/env bash
# Builds batchqr and runs every test this machine can run: the C++ tests (ctest; the GPU
# tests report themselves skipped where no GPU is visible) and the Python package's tests
# (installed into a virtualenv with pip; its GPU part is skipped without a GPU).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build build
ctest --test-dir build --output-on-failure -j "$(nproc)"
python3 -m venv build/venv
build/venv/bin/python -m pip install -q --upgrade pip
build/venv/bin/python -m pip install -q ".[test]"
build/venv/bin/python -m pytest -q python/tests
