// geqr2 of a tiny matrix (m <= 32, n <= 32) by one warp, with no CTA barrier at all:
// lane c holds column c (M rows, M >= m, in registers) and the column loop is unrolled,
// so every register index is static and only the rows below the diagonal are touched.
//
//   step j:  the lane owning column j shares u = a_j(rows > j) in the warp's shared slot;
//            every lane forms D_c = u^T a_c (D_j = ||u||^2); two shuffles give ss and
//            alpha to all lanes, which form beta, tau, scale = 1 / (alpha - beta) (LAPACK
//            slarfg) and w_c = a_c(j) + scale D_c; then a_c -= tau w_c v_j, v_j = scale u.
//
// The same numerics as geqr2_reg_kernel: the fast path needs ss in [2^-100, 2^100] (or u
// exactly zero) and every w_c finite; otherwise the warp drops its registers and factors
// the matrix again from global memory (untouched until the end) in LAPACK's order: FP64
// norm, u scaled first, dots from v. A NaN stays in its matrix.
#pragma once

#include <cfloat>
#include <cstdint>

#include "cuda/geqr2_warp_launch.hpp"
#include "cuda/householder.cuh"
#include "cuda/matrix_view.cuh"
#include "cuda/warp_reduce.cuh"

namespace batchqr::cuda {

inline constexpr int kWarpQrWarpsPerCta = 4;

// The fallback of geqr2_warp_kernel for a matrix whose fast path failed its checks:
// LAPACK's order (FP64 norm, then scale, then the dots) on a copy in shared memory
// (column c of the warp's copy at sA[c * 33 + i]; lane c owns column c; lane i squares
// row i for the norm). Rolled loops: this code is rarely run and should stay small.
template <Layout L>
__device__ __noinline__ void geqr2_warp_lapack_order(const Geqr2WarpArgs& p, std::int64_t mat, float* sA) {
  const int lane = threadIdx.x & 31;
  const int k = p.m < p.n ? p.m : p.n;
  const MatrixView<L> A{p.a + mat * p.stride, p.ld};
  for (int i = 0; i < p.m; ++i) sA[lane * 33 + i] = lane < p.n ? A(i, lane) : 0.0f;
  __syncwarp();
  float my_tau = 0.0f;
  for (int j = 0; j < k; ++j) {
    const double x = lane > j && lane < p.m ? static_cast<double>(sA[j * 33 + lane]) : 0.0;
    const double xnorm = sqrt(warp_allreduce_sum(x * x)), al = sA[j * 33 + j];
    __syncwarp();
    if (xnorm == 0.0) continue;  // H = I (NaN goes on below)
    const Reflector<double> h = slarfg_fp64(al, xnorm);
    const float tau = static_cast<float>(h.tau);
    if (lane > j && lane < p.m) sA[j * 33 + lane] = static_cast<float>(x * h.scale);
    if (lane == j) my_tau = tau;
    __syncwarp();
    if (lane > j && lane < p.n) {
      float* c = sA + lane * 33;
      const float* v = sA + j * 33;
      float w = c[j];
      for (int i = j + 1; i < p.m; ++i) w = fmaf(v[i], c[i], w);
      c[j] = fmaf(-tau, w, c[j]);
      for (int i = j + 1; i < p.m; ++i) c[i] = fmaf(-tau * w, v[i], c[i]);
    }
    if (lane == j) sA[j * 33 + j] = static_cast<float>(h.beta);
    __syncwarp();
  }
  if (lane < p.n)
    for (int i = 0; i < p.m; ++i) A(i, lane) = sA[lane * 33 + i];
  if (lane < k) p.tau[mat * p.tau_stride + lane] = my_tau;
}

template <Layout L, int M>
__global__ void __launch_bounds__(32 * kWarpQrWarpsPerCta) geqr2_warp_kernel(const Geqr2WarpArgs p) {
  static_assert(M % 4 == 0 && M <= 32, "M rows per lane, a multiple of 4, at most 32");
  __shared__ __align__(16) float s_u[kWarpQrWarpsPerCta][M];
  __shared__ float s_fallback[kWarpQrWarpsPerCta][32 * 33];
  constexpr unsigned kFull = 0xffffffffu;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const std::int64_t mat = static_cast<std::int64_t>(blockIdx.x) * kWarpQrWarpsPerCta + warp;
  if (mat >= p.batch) return;  // a whole warp; no CTA barrier follows
  float* u = s_u[warp];
  const int k = p.m < p.n ? p.m : p.n;
  const bool live = lane < p.n;

  const MatrixView<L> A{p.a + mat * p.stride, p.ld};
  float a[M];
#pragma unroll
  for (int i = 0; i < M; ++i) a[i] = (i < p.m && live) ? A(i, lane) : 0.0f;
  // Lane c keeps its column's u_c = a_c(rows > c) unscaled; v_c = my_scale * u_c and
  // R(c, c) = my_beta are applied when writing back (nothing reads them before).
  float my_tau = 0.0f, my_scale = 1.0f, my_beta = 0.0f;
  bool failed = false;

#pragma unroll
  for (int j = 0; j < M && j < 32; ++j) {
    if (j >= k) break;
    const int i0 = (j + 1) & ~3;  // the float4 group holding row j + 1
    __syncwarp();                 // the previous step has read u
    if (lane == j) {
#pragma unroll
      for (int i = i0; i < M; i += 4) *reinterpret_cast<float4*>(u + i) = make_float4(a[i], a[i + 1], a[i + 2], a[i + 3]);
    }
    __syncwarp();
    float uv[M];  // rows > j of u
#pragma unroll
    for (int i = i0; i < M; i += 4) {
      const float4 f = *reinterpret_cast<const float4*>(u + i);
      uv[i] = f.x; uv[i + 1] = f.y; uv[i + 2] = f.z; uv[i + 3] = f.w;
    }
    float d[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
    for (int i = j + 1; i < M; ++i) d[i & 3] = fmaf(uv[i], a[i], d[i & 3]);
    const float dot = (d[0] + d[1]) + (d[2] + d[3]);
    const float ss = __shfl_sync(kFull, dot, j);
    const float alpha = __shfl_sync(kFull, a[j], j);
    // Fast path only where alpha^2 + ss neither overflows nor underflows and u^T a_c
    // cannot overflow for a finite matrix of this column's scale; checked below. An
    // exactly zero u gives H = I (tau = 0), as in LAPACK.
    const bool zero = ss == 0.0f;
    if (zero) {
      bool nz = false;
#pragma unroll
      for (int i = j + 1; i < M; ++i) nz |= uv[i] != 0.0f;
      if (nz) { failed = true; break; }  // squares underflowed
    } else if (!(ss >= 0x1p-100f && ss <= 0x1p100f)) {
      failed = true;
      break;
    }
    Reflector<float> h{alpha, 0.0f, 0.0f};  // u = 0: H = I, beta = alpha
    if (!zero) h = slarfg_fp32(alpha, ss);
    const float beta = h.beta, tau = h.tau, scale = h.scale;
    const float w = fmaf(scale, dot, a[j]);
    const bool right = lane > j && live;
    if (__any_sync(kFull, right && !isfinite(w))) { failed = true; break; }
    if (lane == j) {
      my_tau = tau;
      my_scale = scale;
      my_beta = beta;
    }
    const float tw = right ? tau * w : 0.0f;
    const float cf = -tw * scale;
#pragma unroll
    for (int i = j + 1; i < M; ++i) a[i] = fmaf(cf, uv[i], a[i]);
    a[j] -= tw;  // v_j(j) = 1
  }
  if (failed) {  // warp-uniform
    geqr2_warp_lapack_order<L>(p, mat, s_fallback[warp]);
    return;
  }

  float* base = p.a;
  asm volatile("" : "+l"(base));  // recompute the store addresses instead of keeping them live
  const MatrixView<L> Aw{base + mat * p.stride, p.ld};
#pragma unroll
  for (int i = 0; i < M; ++i) {
    const float x = i > lane ? my_scale * a[i] : (i == lane ? my_beta : a[i]);
    if (i < p.m && live) Aw(i, lane) = lane < k ? x : a[i];
  }
  if (lane < k) p.tau[mat * p.tau_stride + lane] = my_tau;
}

}  // namespace batchqr::cuda
