// geqr2 (+ larft) of a panel of up to 32 columns and M rows (M <= 192) by one warp, with
// no CTA barrier: lane c holds column c, all M rows, in registers, and the column loop is
// unrolled, so every register index is static and only rows below the diagonal are
// touched. The tiny-matrix kernel (geqr2_warp.cuh) in the shape of a tall panel.
//
// Why: in the CTA kernel (geqr2_reg.cuh) every column step is a barrier and a cross-warp
// sum that each warp repeats; with few matrices (batch < SMs) that chain, not arithmetic,
// sets a panel's time. Here a lane's dot with u is a full sum over the rows it holds.
//
//   step j:  lane j shares u = a_j (rows > j are read) in shared memory; every lane forms
//            D_c = u^T a_c (D_j = ||u||^2); two shuffles give ss and alpha to all lanes,
//            which form beta, tau, scale (LAPACK slarfg) and w_c = a_c(j) + scale D_c;
//            then a_c -= tau w_c v_j with v_j = scale u. Lane j keeps u unscaled; v_j and
//            R(j, j) = beta are applied when writing back.
//            For c < j the same w_c is (v_c^T v_j) / scale_c: the Gram entry larft needs.
//
// Numerics as geqr2_warp_kernel: the fast path needs ss in [2^-100, 2^100] (or u exactly
// zero: H = I) and every w_c finite; otherwise the warp factors the panel again from global
// memory (untouched until the end) in LAPACK's order: FP64 norm, u scaled first, dots from
// v. A NaN stays in its matrix.
#pragma once

#include <cfloat>
#include <cstdint>

#include "cuda/geqr2.cuh"
#include "cuda/geqr2_reg.cuh"
#include "cuda/householder.cuh"
#include "cuda/matrix_view.cuh"
#include "cuda/warp_reduce.cuh"

namespace batchqr::cuda {

// Writes V^T (unit diagonal, zeros above; vt_pad zero rows before it) of a panel whose
// column c < nrefl holds v_c below the diagonal, as `v(i, c)` returns it.
template <class V>
__device__ __forceinline__ void warp_panel_store_vt(const Geqr2RegArgs& p, std::int64_t mat, int lane, V&& v) {
  if (p.vt_out == nullptr || lane >= p.nrefl) return;
  float* Vt = p.vt_out + mat * p.vt_stride;
  for (int r = -p.vt_pad; r < 0; ++r) Vt[static_cast<std::int64_t>(r) * p.vt_ld + lane] = 0.0f;
  v(Vt);
}

// The fallback for a panel whose fast path failed its checks: LAPACK's order on the panel
// in global memory (lane c owns column c; the lanes split the rows for the norm), then G,
// T, V^T and tau. Rolled loops: this code is rarely run and should stay small.
template <Layout L>
__device__ __noinline__ void geqr2_warp_panel_lapack_order(const Geqr2RegArgs& p, std::int64_t mat, float* sG,
                                                           float* sTau) {
  const int lane = threadIdx.x & 31;
  const MatrixView<L> A = MatrixView<L>{p.a + mat * p.stride, p.ld}.offset(p.j0, p.j0);
  for (int j = 0; j < p.nrefl; ++j) {
    double s = 0.0;
    for (int i = j + 1 + lane; i < p.rows; i += 32) {
      const double x = A(i, j);
      s += x * x;
    }
    const double xnorm = sqrt(warp_allreduce_sum(s)), al = A(j, j);
    float tau = 0.0f;
    if (xnorm != 0.0) {  // else H = I (NaN goes on below)
      const Reflector<double> h = slarfg_fp64(al, xnorm);
      tau = static_cast<float>(h.tau);
      for (int i = j + 1 + lane; i < p.rows; i += 32) A(i, j) = static_cast<float>(A(i, j) * h.scale);
      __syncwarp();
      if (lane > j && lane < p.ncols) {
        float w = A(j, lane);
        for (int i = j + 1; i < p.rows; ++i) w = fmaf(A(i, j), A(i, lane), w);
        A(j, lane) = fmaf(-tau, w, A(j, lane));
        for (int i = j + 1; i < p.rows; ++i) A(i, lane) = fmaf(-tau * w, A(i, j), A(i, lane));
      }
      __syncwarp();
      if (lane == 0) A(j, j) = static_cast<float>(h.beta);
    }
    if (lane == 0) sTau[j] = tau;
    __syncwarp();
  }
  if (p.t_out != nullptr || p.vt_out != nullptr) {
    // G[c][j] = v_c^T v_j (c < j) over rows >= j, v_j(j) = 1.
    if (lane < p.nrefl)
      for (int j = lane + 1; j < p.nrefl; ++j) {
        float g = A(j, lane);
        for (int i = j + 1; i < p.rows; ++i) g = fmaf(A(i, lane), A(i, j), g);
        sG[lane * kGramLd + j] = g;
      }
    __syncwarp();
    larft_warp(sG, sTau, p.nrefl, lane, p.t_out, p.t_stride, p.t_ld, mat);
  }
  warp_panel_store_vt(p, mat, lane, [&](float* Vt) {
    for (int r = 0; r < p.rows; ++r)
      Vt[static_cast<std::int64_t>(r) * p.vt_ld + lane] = r > lane ? A(r, lane) : (r == lane ? 1.0f : 0.0f);
  });
  if (lane < p.nrefl) p.tau[mat * p.tau_stride + p.j0 + lane] = sTau[lane];
}

// One warp (one CTA) per matrix; p.rows <= M, p.ncols <= 32, p.nrefl <= min(rows, ncols).
template <Layout L, int M>
__global__ void __launch_bounds__(32, 1) geqr2_warp_panel_kernel(const Geqr2RegArgs p) {
  static_assert(M % 4 == 0 && M >= 32, "M rows per lane, a multiple of 4, at least 32");
  __shared__ __align__(16) float sU[M];
  __shared__ float sG[kMaxPanelWidth * kGramLd];
  __shared__ float sTau[kMaxPanelWidth];
  constexpr unsigned kFull = 0xffffffffu;
  const int lane = threadIdx.x & 31;
  const std::int64_t mat = blockIdx.x;
  const int k = p.nrefl;
  const bool live = lane < p.ncols;
  const bool want_t = p.t_out != nullptr || p.vt_out != nullptr;

  const MatrixView<L> Ap = MatrixView<L>{p.a + mat * p.stride, p.ld}.offset(p.j0, p.j0);
  float a[M];
#pragma unroll
  for (int i = 0; i < M; ++i) a[i] = (i < p.rows && live) ? Ap(i, lane) : 0.0f;
  float my_tau = 0.0f, my_scale = 1.0f, my_beta = 0.0f;
  bool failed = false;

#pragma unroll
  for (int j = 0; j < kMaxPanelWidth; ++j) {
    if (j >= k) break;
    const int i0 = (j + 1) & ~3;  // the float4 group holding row j + 1
    __syncwarp();                 // the previous step has read u
    if (lane == j) {
#pragma unroll
      for (int i = i0; i < M; i += 4) *reinterpret_cast<float4*>(sU + i) = make_float4(a[i], a[i + 1], a[i + 2], a[i + 3]);
    }
    __syncwarp();
    float d[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
    for (int i = i0; i < M; i += 4) {
      const float4 f = *reinterpret_cast<const float4*>(sU + i);
      const float u[4] = {f.x, f.y, f.z, f.w};
#pragma unroll
      for (int q = 0; q < 4; ++q)
        if (i + q > j) d[q] = fmaf(u[q], a[i + q], d[q]);
    }
    const float dot = (d[0] + d[1]) + (d[2] + d[3]);
    const float ss = __shfl_sync(kFull, dot, j);
    const float alpha = __shfl_sync(kFull, a[j], j);
    const bool zero = ss == 0.0f;
    if (zero) {  // u exactly zero (H = I), or squares that underflowed: lane j can tell
      bool nz = false;
      if (lane == j)
#pragma unroll
        for (int i = j + 1; i < M; ++i) nz |= a[i] != 0.0f;
      if (__any_sync(kFull, nz)) {
        failed = true;
        break;
      }
    } else if (!(ss >= 0x1p-100f && ss <= 0x1p100f)) {
      failed = true;
      break;
    }
    Reflector<float> h{alpha, 0.0f, 0.0f};
    if (!zero) h = slarfg_fp32(alpha, ss);
    const float w = fmaf(h.scale, dot, a[j]);
    const bool right = lane > j && live;
    if (__any_sync(kFull, right && !isfinite(w))) {
      failed = true;
      break;
    }
    if (want_t && lane < j) sG[lane * kGramLd + j] = my_scale * w;
    if (lane == j) {
      my_tau = h.tau;
      my_scale = h.scale;
      my_beta = h.beta;
    }
    const float tw = right ? h.tau * w : 0.0f;
    const float cf = -tw * h.scale;
#pragma unroll
    for (int i = i0; i < M; i += 4) {
      const float4 f = *reinterpret_cast<const float4*>(sU + i);
      const float u[4] = {f.x, f.y, f.z, f.w};
#pragma unroll
      for (int q = 0; q < 4; ++q)
        if (i + q > j) a[i + q] = fmaf(cf, u[q], a[i + q]);
    }
    a[j] -= tw;  // v_j(j) = 1
  }
  if (failed) {  // warp-uniform; nothing was written to global memory yet
    geqr2_warp_panel_lapack_order<L>(p, mat, sG, sTau);
    return;
  }

  if (lane < k) sTau[lane] = my_tau;
  __syncwarp();
  if (want_t) larft_warp(sG, sTau, k, lane, p.t_out, p.t_stride, p.t_ld, mat);

  float* base = p.a;
  asm volatile("" : "+l"(base));  // recompute the store addresses instead of keeping them live
  const MatrixView<L> Aw = MatrixView<L>{base + mat * p.stride, p.ld}.offset(p.j0, p.j0);
  const bool refl = lane < k;
#pragma unroll
  for (int i = 0; i < M; ++i) {
    const float x = !refl ? a[i] : (i > lane ? my_scale * a[i] : (i == lane ? my_beta : a[i]));
    if (i < p.rows && live) Aw(i, lane) = x;
  }
  warp_panel_store_vt(p, mat, lane, [&](float* Vt) {
#pragma unroll
    for (int i = 0; i < M; ++i)
      if (i < p.rows)
        Vt[static_cast<std::int64_t>(i) * p.vt_ld + lane] = i > lane ? my_scale * a[i] : (i == lane ? 1.0f : 0.0f);
  });
  if (refl) p.tau[mat * p.tau_stride + p.j0 + lane] = my_tau;
}

}  // namespace batchqr::cuda
