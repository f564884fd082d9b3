#!/usr/bin/env bash
# Where a CUDA file's kernels spill: compiles FILE.cu for sm_90a with line info, disassembles
# the cubin and prints, per kernel, ptxas's register and spill figures and the source lines of
# its local-memory loads and stores (STL / LDL) with their counts. A spill outside a kernel's
# inner loops (loop headers, staging) costs little; one inside a column step's chain costs
# every step. Host-only: needs nvcc and nvdisasm, no GPU.
#
#   scripts/spill-report.sh [-DNAME=VALUE]... FILE.cu
#
# FILE.cu: a library source (src/cuda/*.cu) or a scratch file that includes a kernel header
# and instantiates the shapes of interest (much faster than the library's files). nvdisasm:
# $NVDISASM, else on PATH, else the pip wheel nvidia-cuda-nvdisasm, installed on first use into
# ${XDG_CACHE_HOME:-~/.cache}/batchqr-tools (needs PyPI). BUILD_DIR (default build-cuda) gives
# the generated headers (batchqr/version.hpp); configure it once with CMake.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
defs=()
while [ $# -gt 1 ]; do defs+=("$1"); shift; done
[ $# -eq 1 ] && [ -f "$1" ] || { echo "usage: scripts/spill-report.sh [-DNAME=VALUE]... FILE.cu" >&2; exit 2; }
src=$1
build=${BUILD_DIR:-$root/build-cuda}
[ -f "$build/include/batchqr/version.hpp" ] || { echo "spill-report: configure $build with CMake first (generated headers)" >&2; exit 1; }
dis=${NVDISASM:-$(command -v nvdisasm || true)}
if [ -z "$dis" ]; then
  tools=${XDG_CACHE_HOME:-$HOME/.cache}/batchqr-tools
  dis=$( (find "$tools" -name nvdisasm -type f 2>/dev/null || true) | head -1)
  if [ -z "$dis" ]; then
    echo "spill-report: installing nvdisasm from PyPI into $tools" >&2
    python3 -m pip install -q --target "$tools" nvidia-cuda-nvdisasm >&2
    dis=$(find "$tools" -name nvdisasm -type f | head -1)
  fi
fi
[ -x "$dis" ] || { echo "spill-report: no nvdisasm" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
nvcc -cubin -o "$tmp/k.cubin" -std=c++17 --expt-relaxed-constexpr -lineinfo -DBATCHQR_BUILT_SM90A=1 \
  -gencode arch=compute_90a,code=sm_90a -Xptxas -v -I "$root/include" -I "$build/include" -I "$root/src" \
  "${defs[@]}" "$src" >"$tmp/ptxas.txt" 2>&1 || { cat "$tmp/ptxas.txt" >&2; exit 1; }
"$dis" -g -c "$tmp/k.cubin" >"$tmp/k.sass"
python3 - "$tmp/ptxas.txt" "$tmp/k.sass" "$root" <<'PY'
import re, sys
ptxas, sass, root = open(sys.argv[1]).read().splitlines(), open(sys.argv[2]).read().splitlines(), sys.argv[3] + "/"
info, cur = {}, None
for line in ptxas:
    m = re.search(r"Compiling entry function '([^']+)'", line)
    if m: cur = m.group(1); info[cur] = []
    elif cur and ("spill" in line or "Used" in line): info[cur].append(line.split(":", 1)[-1].strip())
kernel, where, spills = None, None, {}
for line in sass:
    m = re.match(r"\s*\.section\s+\.text\.([^,\s]+)", line)  # one per kernel
    if m: kernel = m.group(1); spills.setdefault(kernel, {})
    m = re.search(r'//## File "([^"]+)", line (\d+)', line)
    if m: where = f"{m.group(1).replace(root, '')}:{m.group(2)}"
    m = re.search(r"\b(STL|LDL)(\.\S+)?\s", line)
    if m and kernel:
        d = spills[kernel].setdefault(where, [0, 0]); d[0 if m.group(1) == "STL" else 1] += 1
for k in sorted(set(info) | set(spills)):
    print(k)
    for l in info.get(k, []): print("   ", l)
    for w, (st, ld) in sorted(spills.get(k, {}).items(), key=lambda x: -sum(x[1])):
        print(f"    {st:3d} STL {ld:3d} LDL  {w}")
PY
