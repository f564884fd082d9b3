// geqr2 of a panel (at most 32 columns, at most 32 * RPL rows) in one CTA of 8 warps, with
// the columns dealt to the warps and each column's rows dealt to the lanes:
//
//   warp w holds columns w, w + 8, w + 16, w + 24,
//   lane l holds rows l*RPL .. l*RPL + RPL - 1 of each of them.
//
// A dot product v^T a_c is then one warp's registers and a butterfly of shuffles, with no
// cross-warp sum; the only cross-warp traffic is v, which the warp owning a column
// publishes in shared memory. Step j (one CTA barrier):
//
//   the warp owning column j + 1 applies H_j to that column alone and forms reflector j + 1
//   from it (LAPACK slarfg order: the norm of the updated column, then v = x / (alpha - beta)),
//   publishing v_{j+1} (zeros above row j + 1, one on it); its other columns get H_j at the
//   start of step j + 1, so that the barrier waits for one column's chain only;
//   every other warp forms w_c = v_j^T a_c for its columns (for c < j this is
//   G(c, j) = v_c^T v_j, which larft needs) and applies H_j to those right of j   -> barrier.
//
// The register panel (geqr2_reg.cuh) has every warp sum every column's cross-warp partials
// instead, which costs less only for short panels (docs/perf-notes.md v9). The norm is
// summed in FP32 while it lies in [2^-100, FLT_MAX], else again in FP64 (tiny, huge, NaN):
// the register panel's rule. A NaN stays in its matrix.
//
// The panel is staged through shared memory in both directions (coalesced global access
// in either layout, cp.async on the way in); V^T, T (larft from G and tau) and tau are
// written as the register panel writes them.
#pragma once

#include <cfloat>
#include <cstdint>

#include "cuda/async_copy.cuh"
#include "cuda/geqr2.cuh"
#include "cuda/geqr2_reg.cuh"
#include "cuda/householder.cuh"
#include "cuda/matrix_view.cuh"
#include "cuda/smem_vec.cuh"

namespace batchqr::cuda {

inline constexpr int kWcolWarps = 8;
inline constexpr int kWcolColsPerWarp = kMaxPanelWidth / kWcolWarps;

// Floats between consecutive lanes' rows of one column in shared memory: RPL, padded by 4
// where RPL / 4 is even, so that a quarter-warp's float4 accesses hit distinct banks.
__host__ __device__ constexpr int wcol_lane_stride(int rpl) { return (rpl / 4) % 2 == 1 ? rpl : rpl + 4; }

// The staged panel: odd strides between lanes' rows (RPL + 1) and between columns, so that
// a warp's accesses down a row (lanes on columns) or across lanes are free of bank
// conflicts.
__host__ __device__ constexpr int wcol_stage_col(int rpl) { return 32 * (rpl + 1) + 1; }

__host__ __device__ constexpr std::size_t geqr2_wcol_smem_bytes(int rpl) {
  // v (three buffers, float4-aligned first), the staged panel (32 columns), tau, G
  return sizeof(float) * (3 * static_cast<std::size_t>(32) * wcol_lane_stride(rpl) +
                          static_cast<std::size_t>(kMaxPanelWidth) * wcol_stage_col(rpl) + kMaxPanelWidth +
                          kMaxPanelWidth * kGramLd);
}

// Sums of d[0..3] over the warp, every lane getting all four: reduce-scatter (lanes
// whose bits 4, 3 are q end with column q's sum), then four broadcasts; 10 shuffles
// instead of 20. Fixed order: the same bits in every lane.
__device__ __forceinline__ void warp_allreduce4(float (&d)[4], int lane) {
  const bool hi = lane & 16, mid = lane & 8;
  const float s0 = hi ? d[0] : d[2], s1 = hi ? d[1] : d[3];
  const float e0 = (hi ? d[2] : d[0]) + __shfl_xor_sync(0xffffffffu, s0, 16);
  const float e1 = (hi ? d[3] : d[1]) + __shfl_xor_sync(0xffffffffu, s1, 16);
  float f = (mid ? e1 : e0) + __shfl_xor_sync(0xffffffffu, mid ? e0 : e1, 8);
  f += __shfl_xor_sync(0xffffffffu, f, 4);
  f += __shfl_xor_sync(0xffffffffu, f, 2);
  f += __shfl_xor_sync(0xffffffffu, f, 1);
#pragma unroll
  for (int q = 0; q < 4; ++q) d[q] = __shfl_sync(0xffffffffu, f, q * 8);
}

// The reflector of a column whose FP32 sum of squares cannot be trusted: v[0 .. nr) holds
// this lane's rows r0 .. of x (zero on and above row jn); the FP64 norm, LAPACK's slarfg
// in FP64, then v scaled in place (one on row jn). Returns (beta, tau); tau = 0 for an
// exactly zero x (H = I, beta = alpha). Called by a whole warp.
inline __device__ __noinline__ float2 wcol_reflector_fp64(float* v, int nr, int r0, int jn, float alpha) {
  double s = 0.0;
  for (int i = 0; i < nr; ++i) s = fma(static_cast<double>(v[i]), static_cast<double>(v[i]), s);
  const ReflectorFp64Scale h = slarfg_fp64_or_identity(alpha, sqrt(warp_allreduce_sum(s)));
  for (int i = 0; i < nr; ++i) {
    const int r = r0 + i;
    v[i] = r > jn ? static_cast<float>(static_cast<double>(v[i]) * h.scale) : (r == jn ? 1.0f : 0.0f);
  }
  __syncwarp();
  return make_float2(h.beta, h.tau);
}

// CTAs per SM the kernel's registers are bounded for: a column is a chain of latencies,
// which more resident matrices overlap.
__host__ __device__ constexpr int wcol_min_ctas(int rpl) { return rpl <= 4 ? 4 : rpl <= 8 ? 3 : rpl <= 16 ? 2 : 1; }

// kOnlyFlagged: after the Cholesky QR panel, factor only the matrices it flagged
// (Geqr2RegArgs::only_flagged); a separate instantiation, so that the plain kernel's code
// stays as it was (the check compiled into it had made it spill).
template <Layout L, int RPL, bool kOnlyFlagged = false>
__global__ void __launch_bounds__(32 * kWcolWarps, wcol_min_ctas(RPL))
    geqr2_wcol_kernel(const Geqr2RegArgs p) {
  constexpr int NW = kWcolWarps, CPW = kWcolColsPerWarp;
  constexpr int LS = wcol_lane_stride(RPL), CS = 32 * LS;  // v: floats between lanes, per buffer
  constexpr int SL = RPL + 1, SC = wcol_stage_col(RPL);    // staged panel: between lanes, columns
  static_assert(RPL % 4 == 0 && CPW == 4, "float4 rows, warp_allreduce4");
  extern __shared__ __align__(16) unsigned char smem_raw[];
  float* sV = reinterpret_cast<float*>(smem_raw);  // [3][CS] v_j in buffer j % 3
  float* sA = sV + 3 * CS;                          // [32][SC] the panel, staged
  float* sTau = sA + kMaxPanelWidth * SC;           // [32]
  float* sG = sTau + kMaxPanelWidth;                // [32][kGramLd]
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const std::int64_t mat = blockIdx.x;
  if constexpr (kOnlyFlagged) {
    if (p.only_flagged[mat] == 0) return;
  }
  const int rows = p.rows, ncols = p.ncols, nrefl = p.nrefl;
  const bool want_t = p.t_out != nullptr || p.vt_out != nullptr;
  auto sidx = [](int c, int r) { return c * SC + (r / RPL) * SL + r % RPL; };

  // --- stage in (coalesced in either layout; cp.async, so every copy is in flight at once) ----
  {
    const MatrixView<L> Ap = MatrixView<L>{p.a + mat * p.stride, p.ld}.offset(p.j0, p.j0);
    if constexpr (L == Layout::row_major) {  // warp w: rows w, w + NW, ...; lane: column
      for (int r = warp; r < rows; r += NW) {
        if (lane < ncols) async_copy(sA + sidx(lane, r), &Ap(r, lane));
        else sA[sidx(lane, r)] = 0.0f;
      }
    } else {  // thread t: rows t, t + 256, ... of every column
      for (int r = threadIdx.x; r < rows; r += NW * 32)
        for (int c = 0; c < kMaxPanelWidth; ++c) {
          if (c < ncols) async_copy(sA + sidx(c, r), &Ap(r, c));
          else sA[sidx(c, r)] = 0.0f;
        }
    }
    async_wait();
  }
  __syncthreads();
  const int r0 = lane * RPL;  // this lane's first row
  float a[CPW][RPL];
#pragma unroll
  for (int k = 0; k < CPW; ++k) {
    const int c = warp + k * NW;
#pragma unroll
    for (int i = 0; i < RPL; ++i) a[k][i] = (c < ncols && r0 + i < rows) ? sA[c * SC + lane * SL + i] : 0.0f;
  }

  // Reflector jn from column a[K] (this warp owns column jn): beta on row jn, v below it in
  // a[K]; v (zeros above jn, one on it) to sV[jn & 1], tau to sTau[jn].
  auto reflect = [&](auto k_c, int jn, int buf) {
    constexpr int K = decltype(k_c)::value;
    float s0 = 0.0f, s1 = 0.0f, al = 0.0f;
#pragma unroll
    for (int i = 0; i < RPL; ++i) {
      const int r = r0 + i;
      const float x = r > jn ? a[K][i] : 0.0f;
      if (i & 1) s1 = fmaf(x, x, s1);
      else s0 = fmaf(x, x, s0);
      if (r == jn) al = a[K][i];
    }
    const float ss = warp_allreduce_sum(s0 + s1);
    const float alpha = __shfl_sync(0xffffffffu, al, jn / RPL);
    float* vb = sV + buf * CS + lane * LS;
    float tau, beta;
    if (ss >= 0x1p-100f && ss <= FLT_MAX) {  // warp-uniform: the same bits in every lane
      const Reflector<float> h = slarfg_fp32(alpha, ss);
      beta = h.beta;
      tau = h.tau;
#pragma unroll
      for (int i = 0; i < RPL; i += 4) {
        float v[4];
#pragma unroll
        for (int q = 0; q < 4; ++q) {
          const int r = r0 + i + q;
          const float x = a[K][i + q], vx = h.scale * x;
          v[q] = r > jn ? vx : (r == jn ? 1.0f : 0.0f);
          a[K][i + q] = r > jn ? vx : (r == jn ? beta : x);
        }
        *reinterpret_cast<float4*>(vb + i) = make_float4(v[0], v[1], v[2], v[3]);
      }
    } else {
      // Tiny, huge or NaN: out of line in FP64 through shared memory (x in, v out), so
      // that the rare path costs the common one no registers.
#pragma unroll
      for (int i = 0; i < RPL; i += 4) {
        float x[4];
#pragma unroll
        for (int q = 0; q < 4; ++q) x[q] = r0 + i + q > jn ? a[K][i + q] : 0.0f;
        *reinterpret_cast<float4*>(vb + i) = make_float4(x[0], x[1], x[2], x[3]);
      }
      const float2 bt = wcol_reflector_fp64(vb, RPL, r0, jn, alpha);
      beta = bt.x;
      tau = bt.y;
#pragma unroll
      for (int i = 0; i < RPL; ++i) {
        const int r = r0 + i;
        a[K][i] = r > jn ? vb[i] : (r == jn ? beta : a[K][i]);
      }
    }
    if (lane == 0) sTau[jn] = tau;
  };
  // a[K] -= (tau w) v
  auto apply = [&](auto k_c, float tw, const float (&v)[RPL]) {
    constexpr int K = decltype(k_c)::value;
#pragma unroll
    for (int i = 0; i < RPL; ++i) a[K][i] = fmaf(-tw, v[i], a[K][i]);
  };
  using K0 = std::integral_constant<int, 0>;
  using K1 = std::integral_constant<int, 1>;
  using K2 = std::integral_constant<int, 2>;
  using K3 = std::integral_constant<int, 3>;
  // f(std::integral_constant<int, k>) for a warp-uniform runtime k in [0, 4)
  auto for_tile = [&](int k, auto&& f) {
    if (k == 0) f(K0{});
    else if (k == 1) f(K1{});
    else if (k == 2) f(K2{});
    else f(K3{});
  };

  if (warp == 0 && nrefl > 0) reflect(K0{}, 0, 0);
  __syncthreads();

  // Step j. The warp owning column j + 1 does only that column (H_j, then reflector j + 1)
  // before the barrier, and applies H_j to its other columns at the start of step j + 1,
  // where it is not the owner: the barrier waits for one column's chain, not for a chain
  // plus a warp's whole update. v is kept three deep for that (v_{j-1} is read again in
  // step j while v_{j+1} is written).
  int bj = 0;  // the buffer of v_j: j % 3
  float v[RPL];
  auto load_v = [&](int b) { load_float4s(sV + b * CS + lane * LS, v); };
  auto dot = [&](const float (&x)[RPL]) {
    float d0 = 0.0f, d1 = 0.0f;
#pragma unroll
    for (int i = 0; i < RPL; i += 2) {
      d0 = fmaf(v[i], x[i], d0);
      d1 = fmaf(v[i + 1], x[i + 1], d1);
    }
    return d0 + d1;
  };
  // H_s (v in registers) on this warp's columns right of s except `skip`; G(c, s) for c < s.
  auto update_columns = [&](int s, float tau, int skip) {
    float d[CPW];
#pragma unroll
    for (int k = 0; k < CPW; ++k) d[k] = dot(a[k]);
    warp_allreduce4(d, lane);
#pragma unroll
    for (int k = 0; k < CPW; ++k) {
      const int c = warp + k * NW;
      if (c > s && c < ncols && c != skip) {
        const float tw = tau * d[k];
#pragma unroll
        for (int i = 0; i < RPL; ++i) a[k][i] = fmaf(-tw, v[i], a[k][i]);
      } else if (c < s && want_t && lane == 0) {
        sG[c * kGramLd + s] = d[k];  // v_c^T v_s: column c holds v_c on every row where v_s is nonzero
      }
    }
  };

  for (int j = 0; j < nrefl; ++j) {
    const int bp = bj == 0 ? 2 : bj - 1, bn = bj == 2 ? 0 : bj + 1;
    if (j >= 1 && j % NW == warp) {  // owner of column j in step j - 1: its deferred H_{j-1}
      load_v(bp);
      update_columns(j - 1, sTau[j - 1], j);
    }
    load_v(bj);
    const float tau = sTau[j];
    const int jn = j + 1;
    if (jn < nrefl && jn % NW == warp) {
      for_tile(jn / NW, [&](auto k_c) {
        constexpr int K = decltype(k_c)::value;
        apply(k_c, tau * warp_allreduce_sum(dot(a[K])), v);
        reflect(k_c, jn, bn);
      });
    } else {
      update_columns(j, tau, -1);
    }
    __syncthreads();
    bj = bn;
  }
  // --- write back through shared memory; warp 0 forms T (larft) first ------------------------
#pragma unroll
  for (int k = 0; k < CPW; ++k) {
    const int c = warp + k * NW;
#pragma unroll
    for (int i = 0; i < RPL; ++i) sA[c * SC + lane * SL + i] = a[k][i];
  }
  __syncthreads();
  if (want_t && warp == 0) larft_warp(sG, sTau, nrefl, lane, p.t_out, p.t_stride, p.t_ld, mat);
  {
    const MatrixView<L> Ap = MatrixView<L>{p.a + mat * p.stride, p.ld}.offset(p.j0, p.j0);
    if constexpr (L == Layout::row_major) {
      for (int r = warp; r < rows; r += NW)
        if (lane < ncols) Ap(r, lane) = sA[sidx(lane, r)];
    } else {
      for (int c = 0; c < ncols; ++c)
        for (int r = threadIdx.x; r < rows; r += NW * 32) Ap(r, c) = sA[sidx(c, r)];
    }
  }
  if (p.vt_out != nullptr && lane < nrefl) {
    float* Vt = p.vt_out + mat * p.vt_stride;
    for (int r = warp; r < rows; r += NW)
      Vt[static_cast<std::int64_t>(r) * p.vt_ld + lane] = r > lane ? sA[sidx(lane, r)] : (r == lane ? 1.0f : 0.0f);
    if (warp == 0)
      for (int r = -p.vt_pad; r < 0; ++r) Vt[static_cast<std::int64_t>(r) * p.vt_ld + lane] = 0.0f;
  }
  for (int j = threadIdx.x; j < nrefl; j += NW * 32) p.tau[mat * p.tau_stride + p.j0 + j] = sTau[j];
}

}  // namespace batchqr::cuda
