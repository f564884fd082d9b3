#!/usr/bin/env bash
# One call on a GPU machine (no internet needed): build, run every GPU test, benchmark
# the public suite beside cuSOLVER and cuBLAS, run compute-sanitizer (memcheck, racecheck) on a small suite of batchqr's own
# kernels, and print a short table last. Full logs and JSON go to $OUT.
#
#   scripts/gpu-check.sh [--skip-tests] [--skip-sanitizer] [--skip-smoke] [--bench-args "..."]
#
# BUILD_DIR (default build-gpu) may hold binaries built elsewhere for this GPU (the
# device tool carries them); they are used when they run here, else the tree is built.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/gpu-check-out}
BUILD=${BUILD_DIR:-build-gpu}
mkdir -p "$OUT"
run_tests=1 run_san=1 run_smoke=1 bench_args=""
while [ $# -gt 0 ]; do
  case "$1" in
    --skip-tests) run_tests=0 ;;
    --skip-sanitizer) run_san=0 ;;
    --skip-smoke) run_smoke=0 ;;
    --bench-args) bench_args="$2"; shift ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
summary=()
note() { summary+=("$1"); echo "== $1"; echo "$1" >>"$OUT/summary.txt"; }
: >"$OUT/summary.txt"

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader | tee "$OUT/gpu.txt"

if ! "$BUILD/batchqr" version >/dev/null 2>&1; then
  echo "== building in $BUILD"
  rm -rf "$BUILD"
  cmake -S . -B "$BUILD" -G Ninja -DCMAKE_CUDA_ARCHITECTURES=90a-real >"$OUT/build.log" 2>&1 &&
    cmake --build "$BUILD" >>"$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; echo "BUILD FAILED"; exit 1; }
fi
"$BUILD/batchqr" version

if [ $run_tests = 1 ]; then
  timeout 240 "$BUILD/tests/batchqr_gpu_tests" --gtest_output=json:"$OUT/gpu-tests.json" >"$OUT/gpu-tests.log" 2>&1
  rc=$?
  grep -E "^\[  (FAILED|PASSED|SKIPPED) |Failure|Expected|actual|seed" "$OUT/gpu-tests.log" | head -40
  note "gpu tests: rc=$rc, $(grep -c '^\[       OK \]' "$OUT/gpu-tests.log") ok, $(grep -c '^\[  FAILED  \].*ms)' "$OUT/gpu-tests.log") failed"
  timeout 120 "$BUILD/tests/batchqr_cpu_tests" >"$OUT/cpu-tests.log" 2>&1
  note "cpu tests on this machine: rc=$?"
fi

timeout 300 "$BUILD/batchqr" bench --suite qr_v2 --json "$OUT/qr_v2.json" $bench_args >"$OUT/qr_v2.txt" 2>"$OUT/qr_v2.err"
note "bench qr_v2: rc=$?"
if [ $run_smoke = 1 ]; then
  timeout 120 "$BUILD/batchqr" bench --suite smoke --no-baselines --json "$OUT/smoke.json" >"$OUT/smoke.txt" 2>"$OUT/smoke.err"
  note "bench smoke: rc=$? $(grep 'geometric' "$OUT/smoke.txt")"
fi

if [ $run_san = 1 ]; then
  san_cases=(--case batch=3,n=32,cond=1 --case batch=3,n=176,cond=1 --case batch=2,n=352,cond=1,case=mixed
             --case batch=2,m=300,n=640 --case batch=1,n=2048 --case batch=1,m=20000,n=40 --case batch=2,m=4,n=300)
  for layout in row col; do
    timeout 150 compute-sanitizer --tool memcheck --error-exitcode 1 "$BUILD/batchqr" bench --no-baselines --no-validate --rounds 1 \
      --layout $layout "${san_cases[@]}" >"$OUT/memcheck-$layout.log" 2>&1
    note "memcheck ($layout-major, 7 cases): rc=$? $(grep -E 'ERROR SUMMARY' "$OUT/memcheck-$layout.log" | tail -1)"
  done
  timeout 150 compute-sanitizer --tool racecheck --error-exitcode 1 "$BUILD/batchqr" bench --no-baselines --no-validate --rounds 1 \
    --case batch=2,n=100 --case batch=2,n=300 >"$OUT/racecheck.log" 2>&1
  note "racecheck (2 cases): rc=$? $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY' "$OUT/racecheck.log" | tail -1)"
fi

echo
echo "================ summary ================"
printf '%s\n' "${summary[@]}"
cat "$OUT/qr_v2.txt"
