#!/usr/bin/env bash
# One call on a GPU machine (no internet needed): build, run every GPU test, benchmark
# the public suite beside cuSOLVER and cuBLAS (default math) and again with FP32 trailing
# updates, run the smoke tests, run compute-sanitizer memcheck on batchqr's kernels, and
# print a short table last. Logs and JSON go to $OUT (8 files at most).
#
#   scripts/gpu-check.sh [--skip-tests] [--skip-sanitizer] [--skip-smoke] [--no-baselines]
#                        [--racecheck] [--profile] [--small-n] [--offsuite]
# --profile: per-kernel time (ncu) of one call of a few suite cases, written to profile.txt.
# --small-n: the small-n table of issue #5 (n in 8..400, batch 1/40/1000, with both
#            baselines), written to small-n.json / small-n.txt.
# --offsuite: the off-suite sizes of issue #6 (300x640, 100x768, 30x1536, 4x3000, 1x8192),
#            written to offsuite.json; compare TFLOP/s with the nearest suite size.
# Text logs are packed into logs.tar.gz at the end (the device tool returns 8 files).
#
# BUILD_DIR (default build-gpu) may hold binaries built elsewhere for this GPU (the
# device tool carries them); they are used when they run here, else the tree is built.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/gpu-check-out}
BUILD=${BUILD_DIR:-build-gpu}
mkdir -p "$OUT"
run_tests=1 run_san=1 run_smoke=1 run_race=0 run_prof=0 run_small=0 run_off=0 baselines=
while [ $# -gt 0 ]; do
  case "$1" in
    --skip-tests) run_tests=0 ;;
    --skip-sanitizer) run_san=0 ;;
    --skip-smoke) run_smoke=0 ;;
    --racecheck) run_race=1 ;;
    --profile) run_prof=1 ;;
    --small-n) run_small=1 ;;
    --offsuite) run_off=1 ;;
    --no-baselines) baselines=--no-baselines ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
S="$OUT/summary.txt"
: >"$S"
note() { echo "== $1"; echo "$1" >>"$S"; }

note "$(nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader) $(date -u +%FT%TZ)"
if ! "$BUILD/batchqr" version >/dev/null 2>&1; then
  echo "== building in $BUILD"
  rm -rf "$BUILD"
  cmake -S . -B "$BUILD" -G Ninja -DCMAKE_CUDA_ARCHITECTURES=90a-real >"$OUT/build.log" 2>&1 &&
    cmake --build "$BUILD" >>"$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; echo "BUILD FAILED"; exit 1; }
fi
note "$("$BUILD/batchqr" version)"

if [ $run_tests = 1 ]; then
  timeout 150 "$BUILD/tests/batchqr_gpu_tests" >"$OUT/gpu-tests.log" 2>&1
  rc=$?
  grep -E "^\[  FAILED  \]|Failure|Which is|actual|seed" "$OUT/gpu-tests.log" | head -30
  note "gpu tests: rc=$rc, $(grep -c '^\[       OK \]' "$OUT/gpu-tests.log") ok, $(grep -c '^\[  FAILED  \].*ms)' "$OUT/gpu-tests.log") failed"
  if [ -x "$BUILD/tests/batchqr_cpu_tests" ]; then
    timeout 30 "$BUILD/tests/batchqr_cpu_tests" >/dev/null 2>&1
    note "cpu tests on this machine: rc=$?"
  fi
fi

timeout 150 "$BUILD/batchqr" bench --suite qr_v2 $baselines --json "$OUT/qr_v2.json" >"$OUT/qr_v2.txt" 2>&1
note "bench qr_v2 (default math): rc=$? $(grep 'geometric' "$OUT/qr_v2.txt")"
if [ $run_san = 1 ]; then
  L="$OUT/sanitizer.log"
  : >"$L"
  # The GPU tests below reach every kernel of the policy in both layouts and both math
  # modes (cuBLAS updates for fp32, batchqr's larfb kernels for tf32x3): one warp per
  # tiny matrix (EveryKernelPath, ExtremeScales: its LAPACK-order fallback), register fused
  # (EveryKernelPath 300x48 and 64x64 x300; ExtremeScales 300x48), register panels with up to 16 and 32 warps (300x640, 100x777, 777x100),
  # geqr2_wcol panels (300x640, 777x100; its FP64 reflector in ExtremeScales 600x40, 300x300),
  # cluster panels (2048x64, 3000x4), the global-memory panel (20000x40), wide (4x3000),
  # two-level blocking with its Gram products and larft_merge (TwoLevelBlocking,
  # TwoLevelPartialBlocks; larft_merge_pair on clusters of 1-8 CTAs: MergePairClusters), one-level
  # updates by larfb_fused and by cuBLAS (EveryKernelPath), every shape of geqr2_cta and of
  # geqrf_cta (CtaKernel), geqrf_cluster on 2-6 CTAs (ClusterKernel).
  # The CLI is not used here: it factors up to 50 inputs per case, too slow under the tool.
  timeout 300 compute-sanitizer --tool memcheck --error-exitcode 1 "$BUILD/tests/batchqr_gpu_tests" \
    --gtest_filter='*TallAndWide*:*ZeroMatrix*:*NaNStays*:*PaddedStrides*:*ExtremeScales*:*EveryKernelPath/fp32:*TwoLevelBlocking/fp32:*TwoLevelPartialBlocks:*MergePairClusters:*CtaKernel:*ClusterKernel' >>"$L" 2>&1
  note "memcheck (GPU tests: every kernel path): rc=$? $(grep -E 'ERROR SUMMARY' "$L" | tail -1)"
  # larfb_stripe split over a cluster (2500 rows: 5 CTAs per stripe) and 16-CTA clusters
  # (its next-panel updates at 8000 rows).
  timeout 150 compute-sanitizer --tool memcheck --error-exitcode 1 "$BUILD/geqrf_outer_sweep" --outer 64 \
    --reps 1 2500 130 1 8000 40 1 >>"$L" 2>&1
  note "memcheck (larfb_stripe on clusters): rc=$? $(grep -E 'ERROR SUMMARY' "$L" | tail -1)"
  # The look-ahead's side-stream form (next block's columns on the side stream; forced on
  # both layouts, one level and two).
  for lay in row col; do
    timeout 150 compute-sanitizer --tool memcheck --error-exitcode 1 "$BUILD/geqrf_outer_sweep" --cta 0 --outer 64 \
      --look-ahead 2 --layout $lay --reps 1 600 600 3 1100 300 2 >>"$L" 2>&1
    note "memcheck (look-ahead form 2, $lay): rc=$? $(grep -E 'ERROR SUMMARY' "$L" | tail -1)"
  done
  # The blocked path's one-launch tail (GeqrfPlan::tail) on the trailing matrices, through
  # a pointer offset by tail_at (ld + 1): geqrf_cluster (448^2 x2), geqrf_cta (300^2 x200),
  # the register kernel (600x200 x64), both layouts.
  for lay in row col; do
    timeout 150 compute-sanitizer --tool memcheck --error-exitcode 1 "$BUILD/geqrf_outer_sweep" --outer 32 \
      --look-ahead 1 --layout $lay --reps 1 448 448 2 300 300 200 600 200 64 >>"$L" 2>&1
    note "memcheck (one-launch tail, $lay): rc=$? $(grep -E 'ERROR SUMMARY' "$L" | tail -1)"
  done
  # larfb_stripe64 (row-major, outer blocks of 64, sm_90a; forced, as the policy keeps it
  # for large batches): TMA, mbarriers, named barriers per warpgroup and wgmma, persistent
  # over items; rows not a multiple of 32 or 64.
  for tool in memcheck synccheck; do
    timeout 150 compute-sanitizer --tool $tool --error-exitcode 1 "$BUILD/geqrf_outer_sweep" --cta 0 --outer 64 \
      --stripe64 1 --layout row --reps 1 512 512 3 333 400 2 >>"$L" 2>&1
    note "$tool (larfb_stripe64): rc=$? $(grep -E 'ERROR SUMMARY' "$L" | tail -1)"
  done
  # larft_merge_pair on clusters of 8 CTAs: the CTAs' sums meet through distributed shared
  # memory between two cluster barriers.
  timeout 100 compute-sanitizer --tool synccheck --error-exitcode 1 "$BUILD/geqrf_outer_sweep" --outer 64 \
    --merge-ctas 8 --reps 1 1100 200 2 300 300 2 >>"$L" 2>&1
  note "synccheck (larft_merge_pair on clusters): rc=$? $(grep -E 'ERROR SUMMARY' "$L" | tail -1)"
  # geqr2_cta hands reflectors between warps through mbarriers: synccheck checks their use.
  timeout 100 compute-sanitizer --tool synccheck --error-exitcode 1 "$BUILD/geqrf_outer_sweep" --cta 1 --outer 32 \
    --layout row --reps 1 176 176 2 90 140 2 >>"$L" 2>&1
  note "synccheck (geqr2_cta): rc=$? $(grep -E 'ERROR SUMMARY' "$L" | tail -1)"
  # geqrf_cta's panel warp and update warps meet on two named barriers from different code.
  timeout 100 compute-sanitizer --tool synccheck --error-exitcode 1 "$BUILD/geqrf_outer_sweep" --cta 2 --outer 32 \
    --layout col --reps 1 176 176 2 90 140 2 >>"$L" 2>&1
  note "synccheck (geqrf_cta): rc=$? $(grep -E 'ERROR SUMMARY' "$L" | tail -1)"
  # geqr2_chol's warps meet its named barrier from different code (both panel forms), and
  # larfb_stripe's phase 3 runs on wgmma (sm_90a) at K = 64.
  timeout 100 compute-sanitizer --tool synccheck --error-exitcode 1 "$BUILD/geqrf_outer_sweep" --cta 0 --outer 64 \
    --stripe 2 --stripe64 0 --layout row --reps 1 300 300 2 1100 40 1 >>"$L" 2>&1
  note "synccheck (geqr2_chol, larfb_stripe on wgmma): rc=$? $(grep -E 'ERROR SUMMARY' "$L" | tail -1)"
  if [ $run_race = 1 ]; then
    # Not geqr2_cta (--cta 0, which leaves out geqrf_cta too, checked on its own below):
    # racecheck does not follow geqr2_cta's mbarrier hand-offs and reports
    # every store and load of its ring of v buffers (docs/perf-notes.md v15).
    # Shared-memory races: the warp kernel (n = 20), the fused register kernel (n = 64), and
    # the blocked path's register panels with larfb_fused, larfb_stripe (3xTF32, K = 32 and
    # 64; FP32 on a cluster of 3 CTAs at 1100 rows; 3xTF32 on 3 at 1030) and cluster panels
    # (one call per variant of geqrf_outer_sweep: the CLI factors 50 inputs per case, too
    # slow here).
    timeout 150 compute-sanitizer --tool racecheck --error-exitcode 1 "$BUILD/batchqr" bench --no-baselines \
      --no-validate --rounds 1 --case batch=2,n=20 --case batch=300,n=64 >>"$L" 2>&1
    note "racecheck (warp and fused kernels): rc=$? $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY' "$L" | tail -1)"
    for lay in row col; do
      timeout 150 compute-sanitizer --tool racecheck --error-exitcode 1 "$BUILD/geqrf_outer_sweep" --cta 2 --outer 32 \
        --layout $lay --reps 1 100 100 1 130 200 1 >>"$L" 2>&1
      note "racecheck (geqrf_cta, $lay): rc=$? $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY' "$L" | tail -1)"
    done
    timeout 150 compute-sanitizer --tool racecheck --error-exitcode 1 "$BUILD/geqrf_outer_sweep" --cta 0 --outer 32 \
      --fused-update 1 --stripe 0 --reps 1 100 100 2 >>"$L" 2>&1
    note "racecheck (blocked, larfb_fused): rc=$? $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY' "$L" | tail -1)"
    for lay in row col; do
      timeout 150 compute-sanitizer --tool racecheck --error-exitcode 1 "$BUILD/geqrf_outer_sweep" --cta 0 --outer 64 \
        --stripe 2 --stripe64 0 --layout $lay --reps 1 200 200 2 >>"$L" 2>&1
      note "racecheck (blocked, larfb_stripe 3xTF32, $lay): rc=$? $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY' "$L" | tail -1)"
    done
    timeout 150 compute-sanitizer --tool racecheck --error-exitcode 1 "$BUILD/geqrf_outer_sweep" --cta 0 --outer 64 \
      --stripe64 1 --layout row --reps 1 200 200 2 >>"$L" 2>&1
    note "racecheck (larfb_stripe64): rc=$? $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY' "$L" | tail -1)"
    timeout 150 compute-sanitizer --tool racecheck --error-exitcode 1 "$BUILD/geqrf_outer_sweep" --cta 0 --outer 32 \
      --stripe 1 --reps 1 150 150 2 1100 64 1 >>"$L" 2>&1
    note "racecheck (larfb_stripe FP32, cluster panel): rc=$? $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY' "$L" | tail -1)"
    timeout 150 compute-sanitizer --tool racecheck --error-exitcode 1 "$BUILD/geqrf_outer_sweep" --cta 0 --outer 32 \
      --wcol 1 --layout row --reps 1 300 200 2 >>"$L" 2>&1
    note "racecheck (geqr2_wcol panels): rc=$? $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY' "$L" | tail -1)"
    timeout 150 compute-sanitizer --tool racecheck --error-exitcode 1 "$BUILD/geqrf_outer_sweep" --cta 0 --outer 32 \
      --layout row --reps 1 1030 40 1 >>"$L" 2>&1
    note "racecheck (larfb_stripe 3xTF32 on a cluster): rc=$? $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY' "$L" | tail -1)"
  fi
fi

timeout 60 "$BUILD/batchqr" bench --suite qr_v2 --math tf32x3 --no-baselines --json "$OUT/qr_v2_tf32x3.json" >"$OUT/qr_v2_tf32x3.txt" 2>&1
note "bench qr_v2 (--math tf32x3): rc=$? $(grep 'geometric' "$OUT/qr_v2_tf32x3.txt")"
if [ $run_prof = 1 ]; then
  P="$OUT/profile.txt"
  : >"$P"
  for c in batch=640,n=512 batch=60,n=1024 batch=2,n=4096; do
    timeout 90 ncu --clock-control none --launch-count 400 --metrics gpu__time_duration.sum --csv "$BUILD/batchqr" bench \
      --no-baselines --no-validate --rounds 1 --case $c 2>/dev/null | python3 scripts/ncu-summary.py "$c (2 calls)" >>"$P"
  done
  cat "$P"
fi
if [ $run_smoke = 1 ]; then
  timeout 100 "$BUILD/batchqr" bench --suite smoke --no-baselines --json "$OUT/smoke.json" >"$OUT/smoke.txt" 2>&1
  note "bench smoke: rc=$? $(grep 'geometric' "$OUT/smoke.txt")"
fi
if [ $run_small = 1 ]; then
  # One bench run per batch size, so that a timeout loses one row group, not the table
  # (the CLI prints its table at the end); the parts are merged into small-n.json.
  : >"$OUT/small-n.txt"
  for b in 1 40 1000; do
    cases=()
    for n in 8 16 32 48 64 100 128 176 200 256 300 352 400; do cases+=(--case batch=$b,n=$n); done
    timeout 200 "$BUILD/batchqr" bench "${cases[@]}" --json "$OUT/small-n-b$b.json" >>"$OUT/small-n.txt" 2>&1
    note "small-n table, batch $b (13 cases, with baselines): rc=$? $(grep 'geometric' "$OUT/small-n.txt" | tail -1)"
  done
  python3 - "$OUT" <<'PY'
import json, math, os, sys
out = sys.argv[1]
parts = [json.load(open(p)) for p in (os.path.join(out, f"small-n-b{b}.json") for b in (1, 40, 1000)) if os.path.exists(p)]
if parts:
    merged = dict(parts[0])
    merged["cases"] = [c for p in parts for c in p["cases"]]
    times = [c["ms_median"] for c in merged["cases"] if c.get("ms_median")]
    merged["geomean_ms"] = math.exp(sum(map(math.log, times)) / len(times)) if times else None
    merged["all_pass"] = all(p.get("all_pass") for p in parts) and len(parts) == 3
    json.dump(merged, open(os.path.join(out, "small-n.json"), "w"), indent=1)
for b in (1, 40, 1000):
    p = os.path.join(out, f"small-n-b{b}.json")
    if os.path.exists(p):
        os.remove(p)
PY
fi

if [ $run_off = 1 ]; then
  timeout 120 "$BUILD/batchqr" bench --no-baselines --case batch=300,n=640 --case batch=100,n=768 \
    --case batch=30,n=1536 --case batch=4,n=3000 --case batch=1,n=8192 --json "$OUT/offsuite.json" \
    >"$OUT/offsuite.txt" 2>&1
  note "off-suite sizes: rc=$? $(grep 'geometric' "$OUT/offsuite.txt")"
fi

echo
echo "================ summary ================"
cat "$S"
sed -n '/^case/,$p' "$OUT/qr_v2.txt"
shopt -s nullglob
logs=()
for f in "$OUT"/*.log "$OUT"/*.txt; do [ "$(basename "$f")" = summary.txt ] || logs+=("$(basename "$f")"); done
[ ${#logs[@]} -eq 0 ] || tar czf "$OUT/logs.tar.gz" -C "$OUT" --remove-files "${logs[@]}"
