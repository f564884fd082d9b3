#!/usr/bin/env bash
# Installs what batchqr needs to build and test on a Debian/Ubuntu machine, if missing:
# a C++17 compiler, CMake, Ninja, LAPACK/BLAS (OpenBLAS), GoogleTest, Python's pip/venv.
# The CUDA toolkit is optional: when nvcc is on PATH the CUDA backend is built too.
set -euo pipefail
need=()
command -v cmake >/dev/null || need+=(cmake)
command -v ninja >/dev/null || need+=(ninja-build)
command -v g++ >/dev/null || need+=(g++)
dpkg -s libopenblas-dev >/dev/null 2>&1 || need+=(libopenblas-dev)
dpkg -s liblapack-dev >/dev/null 2>&1 || need+=(liblapack-dev)
dpkg -s libgtest-dev >/dev/null 2>&1 || need+=(libgtest-dev)
python3 -m venv --help >/dev/null 2>&1 || need+=(python3-venv)
if [ ${#need[@]} -gt 0 ]; then
  echo "install-deps: installing ${need[*]}"
  sudo_=""
  [ "$(id -u)" = 0 ] || sudo_="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo_ apt-get update -q
  $sudo_ apt-get install -y -q "${need[@]}"
fi
