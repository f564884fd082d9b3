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
# Without a visible GPU the package's CUDA code is compiled but never run, and the C++ build
# above has already compiled it for every default architecture: one is enough here (the
# build is most of this script's time on a 2-core machine).
pip_args=()
if command -v nvcc >/dev/null && ! nvidia-smi -L >/dev/null 2>&1; then
  pip_args+=(-C cmake.define.CMAKE_CUDA_ARCHITECTURES=90a-real)
fi
build/venv/bin/python -m pip install -q "${pip_args[@]}" ".[test]"
build/venv/bin/python -m pytest -q python/tests
