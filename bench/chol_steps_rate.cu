// Cycles per barrier step of geqr2_chol's factorization phase (src/cuda/small_fp64.cuh:
// R, R^-T, the LU by columns and by rows, L^-1, W^-1 on six warps of 256 threads, 33 steps)
// by which of those warps take part, the others only meeting the barriers. Tells whether
// a step is bound by the chain of the factor warps or by the step vectors that every warp
// loads broadcast from shared memory (docs/perf-notes.md v39). One or two CTAs per SM, each
// on the same 32 x 32 inputs; clock64 around the phase, averaged over repetitions and CTAs.
// Not part of the library.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "cuda/small_fp64.cuh"

namespace {

namespace sm = batchqr::cuda::small;
constexpr int N = sm::kN, Ld = sm::kSmallLd;
constexpr int kThreads = 256, kSteps = N + 1;
constexpr int kMat = N * Ld;

// Roles, as bits of the template's mask: the warps that take them in geqr2_chol.
enum Role : unsigned { kChol = 1, kRit = 2, kLu = 4, kRows = 8, kLi = 16, kUi = 32 };

// Entry (r, c) of A_top in shared memory, skewed as geqr2_chol's cluster form keeps it, so
// that the column warp's and the rows warp's loads both meet 32 banks.
__host__ __device__ constexpr int top_at(int r, int c) { return r * Ld + ((c + r) & 31); }

// Shared memory: G's pristine copy, R, R^-T, W (and L), L^-1, W^-T, A_top, then the step
// vectors (as geqr2_chol's tail: R's row, W's row, the column, the multipliers) and the
// per-step scalars.
constexpr int kSmemDoubles = 7 * kMat + 4 * 64 + 3 * N + 2;

template <unsigned kRoles>
__global__ void __launch_bounds__(kThreads) steps_kernel(const double* g_in, const double* a_in, int reps,
                                                         double* sink, long long* cycles) {
  extern __shared__ __align__(16) double smem[];
  double *g0 = smem, *R = g0 + kMat, *RIT = R + kMat, *LU = RIT + kMat, *LI = LU + kMat, *WIT = LI + kMat,
         *top = WIT + kMat;
  double *vec = top + kMat, *urow = vec + 64, *lcol = urow + 64, *fv = lcol + 64;
  double *sign = fv + 64, *rsq = sign + N, *rdiag = rsq + N;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  for (int i = tid; i < kMat; i += kThreads) {
    g0[i] = g_in[i];
    top[i] = a_in[i];
  }
  vec[tid] = 0.0;  // vec, urow, lcol and fv: 4 x 64 doubles
  long long total = 0;
  for (int rep = 0; rep < reps; ++rep) {
    __syncthreads();
    for (int i = tid; i < kMat; i += kThreads) R[i] = g0[i];
    __syncthreads();
    const long long t0 = clock64();
    auto barrier = [] { sm::named_barrier(0, kThreads); };
    if (warp == 0 && (kRoles & kChol)) {
      sm::Col c;
      sm::load_col(R, lane, c);
      __syncwarp();
      double fr;
      sm::cholesky_r(c, lane, R, rsq, vec, fr, 0, kThreads);
      barrier();
    } else if (warp == 1 && (kRoles & kRit)) {
      double fi;
      sm::cholesky_rit(lane, vec, rsq, RIT, fi, 0, kThreads);
      barrier();
    } else if (warp == 2 && (kRoles & kLu)) {
      sm::Col c;
#pragma unroll
      for (int i = 0; i < N; ++i) c[i] = top[top_at(i, lane)];
      barrier();
      sm::lu_on_cholesky(c, lane, R, rsq, LU, sign, rdiag, lcol, urow, fv, 0, kThreads);
    } else if (warp == 7 && (kRoles & kRows)) {
      sm::Col x;
#pragma unroll
      for (int j = 0; j < N; ++j) x[j] = top[top_at(lane, j)];
      barrier();
      sm::lu_rows(x, lane, lcol, fv, 0, kThreads);
    } else if (warp == 3 && (kRoles & kLi)) {
      barrier();
      sm::lu_li(lane, lcol, rdiag, LU, LI, 0, kThreads);
    } else if (warp == 5 && (kRoles & kUi)) {
      barrier();
      sm::lu_ui(lane, urow, rdiag, WIT, 0, kThreads);
    } else {
#pragma unroll 1
      for (int k = 0; k < kSteps; ++k) barrier();
    }
    __syncthreads();
    total += clock64() - t0;
  }
  if (tid == 0) {
    cycles[blockIdx.x] = total / reps;
    sink[blockIdx.x] = R[(N - 1) * Ld + N - 1] + RIT[0] + LU[kMat - 1] + LI[kMat - 1] + WIT[kMat - 1];
  }
}

template <unsigned kRoles>
void run(const char* name, int ctas_per_sm, int sms, const double* g, const double* a, double* sink,
         long long* cycles) {
  const int smem = kSmemDoubles * static_cast<int>(sizeof(double));
  cudaFuncSetAttribute(steps_kernel<kRoles>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  const int grid = ctas_per_sm * sms;
  steps_kernel<kRoles><<<grid, kThreads, smem>>>(g, a, 2, sink, cycles);  // warm-up
  steps_kernel<kRoles><<<grid, kThreads, smem>>>(g, a, 50, sink, cycles);
  std::vector<long long> c(grid);
  cudaMemcpy(c.data(), cycles, grid * sizeof(long long), cudaMemcpyDeviceToHost);
  double mean = 0.0;
  for (long long x : c) mean += static_cast<double>(x);
  mean /= grid;
  std::printf("%-34s %d CTA/SM: %7.0f cycles per phase, %5.0f per step  (%s)\n", name, ctas_per_sm, mean,
              mean / kSteps, cudaGetErrorString(cudaGetLastError()));
}

}  // namespace

int main() {
  int sms = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  // G = A^T A of a 200 x 32 Gaussian panel (an SPD Gram matrix, as the kernel's), A_top its
  // first 32 rows; row-major, Ld apart.
  std::mt19937_64 gen(20261204);
  std::normal_distribution<double> nd;
  const int m = 200;
  std::vector<double> a(m * N), g(kMat, 0.0), top(kMat, 0.0);
  for (double& x : a) x = nd(gen);
  for (int i = 0; i < N; ++i)
    for (int j = 0; j < N; ++j) {
      for (int r = 0; r < m; ++r) g[i * Ld + j] += a[r * N + i] * a[r * N + j];
      top[top_at(i, j)] = a[i * N + j];
    }
  double *dg = nullptr, *da = nullptr, *sink = nullptr;
  long long* cycles = nullptr;
  cudaMalloc(&dg, kMat * sizeof(double));
  cudaMalloc(&da, kMat * sizeof(double));
  cudaMalloc(&sink, 2 * sms * sizeof(double));
  cudaMalloc(&cycles, 2 * sms * sizeof(long long));
  cudaMemcpy(dg, g.data(), kMat * sizeof(double), cudaMemcpyHostToDevice);
  cudaMemcpy(da, top.data(), kMat * sizeof(double), cudaMemcpyHostToDevice);
  for (int per_sm : {1, 2}) {
    run<kChol | kRit | kLu | kRows | kLi | kUi>("all six (geqr2_chol)", per_sm, sms, dg, da, sink, cycles);
    run<kChol | kLu | kRows>("R, LU by columns and rows", per_sm, sms, dg, da, sink, cycles);
    run<kChol | kLu | kRows | kRit>("  + R^-T", per_sm, sms, dg, da, sink, cycles);
    run<kChol | kLu | kRows | kLi>("  + L^-1", per_sm, sms, dg, da, sink, cycles);
    run<kChol | kLu | kRows | kUi>("  + W^-1", per_sm, sms, dg, da, sink, cycles);
    run<kChol | kRit>("R, R^-T (the Cholesky alone)", per_sm, sms, dg, da, sink, cycles);
    run<kChol>("R alone", per_sm, sms, dg, da, sink, cycles);
  }
  return 0;
}
