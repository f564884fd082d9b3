// geqrf of a whole small matrix in one CTA's shared memory, blocked (LAPACK sgeqrf's
// structure inside one CTA): panels of kCtaBlkPanel = 8 columns, each factored by warp 0
// (geqr2), and applied to the columns right of them by the other warps (larfb), with a
// look-ahead of one panel: while warp 0 factors panel p + 1, the others apply panel p to
// the columns past p + 1 (they first apply it to panel p + 1's columns, which warp 0 waits
// for). V, G and tau live in two buffers by panel parity. Two named barriers per panel,
// which all 16 warps meet: with barrier.arrive for the producers it was slower, since the
// next panel's columns then shared their schedulers with the rest of the update, and
// racecheck does not follow arrive -> sync (docs/perf-notes.md v19). One launch, no global
// workspace.
//
// Why not geqr2_cta (unblocked, the matrix in registers): every reflector there is applied
// to the whole trailing matrix by every warp (a BLAS-2 step, ~3x more issue than the
// useful FMAs, plus three shuffle levels per column and slot), and the next column's owner
// shares its scheduler with three warps doing so (docs/perf-notes.md v15, v19). Here the
// panel's chain runs on a warp whose scheduler is otherwise idle, and the trailing update
// is a rank-8 product: 16-column tiles on the tensor cores in 3xTF32 (cta_update_cols_mma)
// while the columns are many, else FFMA with two float4 loads of V per 16 FMAs.
//
// The panel warp (cta_panel_geqr2) holds rows 32 i + lane of all eight panel columns, and
// takes each column step with one reduction (eight sums over the warp). Rows above the
// 32-row group of j0 are skipped (the panel's code is compiled for a few heights, the update
// skips them at run time: one copy of the update's code instead of one per group), rows past
// m are zeros.
//
// The update (compact WY without T): with W = V^T C, the product H_7 .. H_0 C is
// C - V W' where W'(k) = tau_k (W(k) - sum_{i<k} G(i, k) W'(i)) and G = V^T V; the panel
// warp's column steps produce G as a by-product (the dots of v_k with the columns left of
// k, which hold v_i on every row where v_k is nonzero, as geqr2_wcol collects it).
//
// Tiny, huge and NaN columns take the FP64 reflector, as in the other geqr2 kernels. A NaN
// stays in its matrix.
#pragma once

#include <cfloat>
#include <cstdint>

#include "cuda/async_copy.cuh"
#include "cuda/cta_stage.cuh"
#include "cuda/geqr2_cta.hpp"
#include "cuda/geqrf_cta.hpp"
#include "cuda/geqr2_reg.cuh"
#include "cuda/householder.cuh"
#include "cuda/matrix_view.cuh"
#include "cuda/mma_tf32.cuh"
#include "cuda/warp_reduce.cuh"

namespace batchqr::cuda {

inline constexpr int kCtaBlkWarps = 16;
inline constexpr int kCtaBlkPanel = 8;
inline constexpr int kCtaBlkPanelUnroll = 2;  // column steps per pass of the panel loop
// The update takes 16-column tiles on the tensor cores once more than this many columns lie
// past the next panel (more than two rounds of four columns on each of the 12 update warps),
// else four columns per warp and round in FFMA, whose tasks are shorter. Measured on the H200
// (docs/perf-notes.md v20): thresholds 0 / 48 / 96 / 144 gave 176^2 x40 0.149 / 0.146 / 0.144
// / 0.149 ms and 100^2 x40 0.074 / 0.071 / 0.070 / 0.070 (FFMA only: 0.151, 0.068).
inline constexpr int kCtaBlkMmaMinCols = 96;
// The next panel's columns go one per update warp (eight warps) from this many staged rows
// (8 RPL), else two per warp (four warps). Measured on the H200 (docs/perf-notes.md v22):
// one per warp gave 176^2 x40 -1.1%, 192^2 x132 -1.2%, 100^2 x40 -1.2%, 128^2 x40 +-0,
// 64^2 x40 +7%, 48^2 x40 +6.5%.
inline constexpr int kCtaBlkNextOneColRows = 128;
// The panel warp's code is compiled for at most this many heights (registers per lane and
// column, each height serving the panels whose rows fit in it): one per 32-row group up to
// 192 rows. Fewer heights process more zero rows; more cost instruction-cache misses each time
// the panel steps into a new group. Measured on the H200 (docs/perf-notes.md v21): 1 / 2 / 3
// / 6 heights gave 176^2 x40 0.157 / 0.143 / 0.142 / 0.141 ms.
inline constexpr int kCtaPanelHeights = 6;
// Rows per warp and copy of the row-major stage-in and write-back (the rest of a warp's 32
// lanes along them). Measured on the H200 at 176^2 (docs/perf-notes.md v22): 1 / 4 rows gave
// a stage-in of 15.0k / 11.2k cycles and a write-back of 6.0k / 2.2k.
inline constexpr int kCtaBlkStageRows = 4;

// The slot of panel column i at step k (the panel loop's rotation): G(i, k) is stored there.
__host__ __device__ constexpr int cta_blk_slot(int i, int k) {
  return (i - k / kCtaBlkPanelUnroll * kCtaBlkPanelUnroll) & (kCtaBlkPanel - 1);
}

// Column stride of the staged matrix: at least 8 RPL rows and 8 mod 32, so that the FFMA
// update's lanes (8 row groups x 4 columns) hit distinct banks. The tensor-core tiles' loads
// then meet 2-way conflicts; 4 mod 8 would clear them at 4 more floats per column, which
// the widest shapes (224 x 230) do not have.
__host__ __device__ constexpr int cta_blk_ld(int rpl) { return (8 * rpl + 23) / 32 * 32 + 8; }

__host__ __device__ constexpr std::size_t geqrf_cta_smem_bytes(int rpl, int n) {
  // two panels' V row-major (8 RPL x 8), the matrix (n x LD), two panels' G (8 x 8) and tau,
  // every tau
  return sizeof(float) * (2 * static_cast<std::size_t>(8 * rpl) * kCtaBlkPanel +
                          static_cast<std::size_t>(n) * cta_blk_ld(rpl) + 2 * kCtaBlkPanel * kCtaBlkPanel +
                          2 * kCtaBlkPanel + kCtaBlkMaxCols);
}

// Named barriers of the look-ahead (barrier 0 is __syncthreads'): kPanelReady once a
// panel's V, G and tau are written (and the previous update is done), kColsReady once the
// next panel's columns have this panel's update. The warps meet them from different code,
// hence the non-aligned form.
inline constexpr int kPanelReady = 1, kColsReady = 2;
__device__ __forceinline__ void cta_bar_sync(int id, int count) {
  asm volatile("barrier.sync %0, %1;" ::"r"(id), "r"(count) : "memory");
}

// geqr2 of the panel j0 .. j0 + 7 (kb reflectors) by one warp. Lane l holds rows
// rb + 32 i + l of all eight columns (rb: the first row of j0's 32-row group, the rows above
// are not touched; i < nv, zeros for nv <= i < NR), so that v never leaves its lane. A
// column step is one reduction: the dots of x = a_k(j + 1:) with all eight columns at once
// (its norm, the update's dots, G's dots), since
// v^T a_c = a_c(j) + x^T a_c(j + 1:) / (alpha - beta). They are eight sums over the warp
// (warp_allreduce_sum8); row j comes from its lane by one shuffle per column.
//
// Where that is not safe, the step takes a second round: x^T a_c can overflow or underflow
// where v^T a_c would not (a dot not finite), and a norm outside [2^-100, 2^100] (or a large
// alpha) needs the careful reflector: hypot in FP32, or FP64 for a norm^2 outside
// [2^-100, FLT_MAX] (tiny, huge, NaN), as in the other geqr2 kernels. v is then formed first
// and the second round takes its dots.
//
// The pivot sits in a compile-time slot: the steps run U at a time in a rolled loop, the
// slots rotating by U after each (slot t holds column (t + k0) mod 8), so that the code of
// one pass is U steps (unrolled over all eight it outgrew the instruction cache, v19).
// Step k's dots go to row k of sG by slot: G(i, k) = v_i^T v_k at sG[k NB + cta_blk_slot(i, k)].
//
// sP: the panel's first column (columns LD apart, pn of them in the matrix, so zeros past
// them); sTau: where the panel's tau go.
template <int NR>
__device__ __forceinline__ void cta_panel_geqr2(float* sP, int LD, int pn, float* sV, float* sG, float* sTp,
                                                float* sTau, int j0, int kb, int nv) {
  constexpr int NB = kCtaBlkPanel, U = kCtaBlkPanelUnroll;
  static_assert(NB % U == 0, "the slots come back in place after NB / U passes");
  constexpr unsigned kFull = 0xffffffffu;
  const int lane = threadIdx.x & 31;
  const int jl = j0 & 31;  // row j0: register 0 of lane jl
  const int rb = j0 - jl;   // the row of register 0 on lane 0
  float P[NB][NR];
#pragma unroll
  for (int t = 0; t < NB; ++t)
#pragma unroll
    for (int i = 0; i < NR; ++i) P[t][i] = t < pn && i < nv ? sP[t * LD + rb + 32 * i + lane] : 0.0f;
  sG[lane] = 0.0f;  // rows k >= kb are read, with tau = 0
  sG[lane + 32] = 0.0f;
  if (lane >= kb && lane < NB) sTp[lane] = 0.0f;
  __syncwarp();
  // live[t]: all ones while slot t holds a column right of this pass's pivots, else zero (an
  // AND mask on w: no predicate per slot and step, and a NaN there cannot leak into the
  // finished columns); it rotates with the slots.
  unsigned live[NB];
#pragma unroll
  for (int t = 0; t < NB; ++t) live[t] = ~0u;

#pragma unroll 1
  for (int k0 = 0; k0 < NB; k0 += U) {
#pragma unroll
    for (int s = 0; s < U; ++s) {
      const int k = k0 + s, jr = jl + k;  // row j = j0 + k: register 0 of lane jr
      if (k >= kb) continue;              // warp-uniform
      float(&x)[NR] = P[s];
      const bool below = lane > jr, on = lane == jr;  // register 0's row against row j
      float rj[NB];
#pragma unroll
      for (int t = 0; t < NB; ++t) rj[t] = __shfl_sync(kFull, P[t][0], jr);
      float y[NR];  // round 0: x below row j; round 1: v
#pragma unroll
      for (int i = 0; i < NR; ++i) y[i] = i > 0 || below ? x[i] : 0.0f;
      float v[NR], d[NB], beta, tau;
#pragma unroll 1
      for (int round = 0;; ++round) {
        float dots[NB];
#pragma unroll
        for (int t = 0; t < NB; ++t) {
          float acc = y[0] * P[t][0];
#pragma unroll
          for (int i = 1; i < NR; ++i) acc = fmaf(y[i], P[t][i], acc);
          dots[t] = acc;
        }
        warp_allreduce_sum8(dots);
        if (round == 1) {  // y = v, row j included: the dots are v^T (slot t)
#pragma unroll
          for (int t = 0; t < NB; ++t) d[t] = dots[t];
          break;
        }
        const float alpha = rj[s], ss = dots[s];
        // finite iff every dot is (a NaN or an overflow makes the sum NaN or inf)
        const float mag = ((fabsf(dots[0]) + fabsf(dots[1])) + (fabsf(dots[2]) + fabsf(dots[3]))) +
                          ((fabsf(dots[4]) + fabsf(dots[5])) + (fabsf(dots[6]) + fabsf(dots[7])));
        // The in-range reflector first, taken back below where the checks fail (it cannot
        // trap), so that its latency overlaps the vote. Votes, not plain branches: the compiler
        // cannot tell that values from shuffles agree across the warp, and would wrap the
        // shuffles of the next round in code for a divergent warp.
        {
          const Reflector<float> h = slarfg_fp32_in_range(alpha, ss);
          beta = h.beta;
          tau = h.tau;
#pragma unroll
          for (int i = 0; i < NR; ++i) v[i] = x[i] * h.scale;
          v[0] = below ? v[0] : on ? 1.0f : 0.0f;
#pragma unroll
          for (int t = 0; t < NB; ++t) d[t] = fmaf(dots[t], h.scale, rj[t]);
        }
        if (__all_sync(kFull, mag <= FLT_MAX && ss >= 0x1p-100f && ss <= 0x1p100f && fabsf(alpha) <= 0x1p50f)) break;
        if (__all_sync(kFull, ss >= 0x1p-100f && ss <= FLT_MAX)) {
          const Reflector<float> h = slarfg_fp32(alpha, ss);
          beta = h.beta;
          tau = h.tau;
#pragma unroll
          for (int i = 0; i < NR; ++i) v[i] = x[i] * h.scale;
        } else {
          double s64 = 0.0;
#pragma unroll
          for (int i = 0; i < NR; ++i) s64 = fma(static_cast<double>(y[i]), static_cast<double>(y[i]), s64);
          const ReflectorFp64Scale h = slarfg_fp64_or_identity(alpha, sqrt(warp_allreduce_sum(s64)));
          beta = h.beta;
          tau = h.tau;
#pragma unroll
          for (int i = 0; i < NR; ++i) v[i] = static_cast<float>(static_cast<double>(x[i]) * h.scale);
        }
        v[0] = below ? v[0] : on ? 1.0f : 0.0f;
#pragma unroll
        for (int i = 0; i < NR; ++i) y[i] = v[i];
      }
      // H_k on the slots right of the pivot that hold columns right of k (w = 0 on those that
      // wrapped round: finished columns), without branches
#pragma unroll
      for (int t = s + 1; t < NB; ++t) {
        const float w = __uint_as_float(__float_as_uint(tau * d[t]) & live[t]);
#pragma unroll
        for (int i = 0; i < NR; ++i) P[t][i] = fmaf(-w, v[i], P[t][i]);
      }
      // the column keeps R above, beta on and v below row j
#pragma unroll
      for (int i = 0; i < NR; ++i) x[i] = i > 0 || below ? v[i] : on ? beta : x[i];
      if (lane == 0) {
        *reinterpret_cast<float4*>(sG + k * NB) = make_float4(d[0], d[1], d[2], d[3]);
        *reinterpret_cast<float4*>(sG + k * NB + 4) = make_float4(d[4], d[5], d[6], d[7]);
        sTau[k] = tau;
        sTp[k] = tau;
      }
    }
    float head[U][NR];
#pragma unroll
    for (int t = 0; t < NB; ++t)
#pragma unroll
      for (int i = 0; i < NR; ++i) {
        if (t < U) head[t][i] = P[t][i];
        P[t][i] = t + U < NB ? P[t + U][i] : head[t + U - NB][i];
      }
#pragma unroll
    for (int t = 0; t < NB; ++t) live[t] = t + U < NB ? live[t + U] : 0u;
  }

  // The panel back into the matrix, and V row-major (unit diagonal, zeros above) for the update.
#pragma unroll
  for (int i = 0; i < NR; ++i) {
    if (i >= nv) break;
    const int r = rb + 32 * i + lane;
    float vr[NB];
#pragma unroll
    for (int t = 0; t < NB; ++t) {
      if (t < pn) sP[t * LD + r] = P[t][i];
      vr[t] = t < kb && r > j0 + t ? P[t][i] : (t < kb && r == j0 + t ? 1.0f : 0.0f);
    }
    *reinterpret_cast<float4*>(sV + r * NB) = make_float4(vr[0], vr[1], vr[2], vr[3]);
    *reinterpret_cast<float4*>(sV + r * NB + 4) = make_float4(vr[4], vr[5], vr[6], vr[7]);
  }
}

// larfb on columns cb .. cb + CPW - 1 (those below n) by one warp in FFMA: lanes (gr, qc) =
// 32 / CPW row groups x CPW columns. W = V^T C by FMAs down each lane's rows and a butterfly
// over the row groups, W' by forward substitution (T never formed), then C -= V W'. Rows
// from the 32-row group g0 (V is zero above the diagonal and stale above that group).
// V, G and T never alias the columns updated (callers keep the panel in its own buffer):
// __restrict__ lets a row's loads of V pass the previous row's stores to C.
template <int CPW, int MR>
__device__ __forceinline__ void cta_update_cols_fma(float* __restrict__ sA, int LD, const float* __restrict__ sV,
                                                    const float* __restrict__ sG, const float* __restrict__ sTp,
                                                    int cb, int n, int g0) {
  constexpr int NB = kCtaBlkPanel, RG = 32 / CPW, NR = MR / RG;
  constexpr unsigned kFull = 0xffffffffu;
  const int lane = threadIdx.x & 31;
  // the first F row groups (above g0's 32-row group) are skipped: a[i] holds row RG (i + F) + gr
  const int F = g0 * 32 / RG;
  const int gr = lane / CPW, qc = lane % CPW;
  const int c = cb + qc;
  const bool ok = c < n;
  float a[NR];
  float w[NB];
#pragma unroll
  for (int k = 0; k < NB; ++k) w[k] = 0.0f;
#pragma unroll
  for (int i = 0; i < NR; ++i) {
    if (i >= NR - F) break;
    const int r = RG * (i + F) + gr;
    a[i] = ok ? sA[c * LD + r] : 0.0f;
    const float4 v0 = *reinterpret_cast<const float4*>(sV + r * NB);
    const float4 v1 = *reinterpret_cast<const float4*>(sV + r * NB + 4);
    w[0] = fmaf(v0.x, a[i], w[0]);
    w[1] = fmaf(v0.y, a[i], w[1]);
    w[2] = fmaf(v0.z, a[i], w[2]);
    w[3] = fmaf(v0.w, a[i], w[3]);
    w[4] = fmaf(v1.x, a[i], w[4]);
    w[5] = fmaf(v1.y, a[i], w[5]);
    w[6] = fmaf(v1.z, a[i], w[6]);
    w[7] = fmaf(v1.w, a[i], w[7]);
  }
  if constexpr (CPW == 1) {
    warp_allreduce_sum8(w);  // 17 shuffles where the butterfly takes 40
  } else {
#pragma unroll
    for (int k = 0; k < NB; ++k)
#pragma unroll
      for (int o = CPW; o < 32; o *= 2) w[k] += __shfl_xor_sync(kFull, w[k], o);
  }
#pragma unroll
  for (int k = 0; k < NB; ++k) {
    float s = w[k];
#pragma unroll
    for (int i = 0; i < k; ++i) s = fmaf(-sG[k * NB + cta_blk_slot(i, k)], w[i], s);
    w[k] = sTp[k] * s;
  }
#pragma unroll
  for (int i = 0; i < NR; ++i) {
    if (i >= NR - F) break;
    const int r = RG * (i + F) + gr;
    const float4 v0 = *reinterpret_cast<const float4*>(sV + r * NB);
    const float4 v1 = *reinterpret_cast<const float4*>(sV + r * NB + 4);
    float y = a[i];
    y = fmaf(-v0.x, w[0], y);
    y = fmaf(-v0.y, w[1], y);
    y = fmaf(-v0.z, w[2], y);
    y = fmaf(-v0.w, w[3], y);
    y = fmaf(-v1.x, w[4], y);
    y = fmaf(-v1.y, w[5], y);
    y = fmaf(-v1.z, w[6], y);
    y = fmaf(-v1.w, w[7], y);
    if (ok) sA[c * LD + r] = y;
  }
}

// larfb on columns cb .. cb + 15 (those below n) by one warp on the tensor cores, in 3xTF32
// (FP32-grade): W^T = C^T V by m16n8k8 (M: the 16 columns, K: 8 rows per step, two
// accumulators for two chains), W' by the forward substitution on every lane of a quad (a
// row of W^T spans a quad's four lanes), then C -= V W' per 16-row tile (N: each 8-column
// half). The substitution's output comes in the reflector order 2t, 2t + 1 on lane t, so
// the last product takes its K (the reflectors) in that order: V's two values per lane are
// then adjacent (one 64-bit load). Rows from R0 (the 32-row group of the panel's diagonal:
// V is zero above the diagonal and stale above R0).
template <int MR>
__device__ __forceinline__ void cta_update_cols_mma(float* __restrict__ sA, int LD, const float* __restrict__ sV,
                                                    const float* __restrict__ sG, const float* __restrict__ sTp,
                                                    int cb, int n, int R0) {
  constexpr int NB = kCtaBlkPanel;
  constexpr unsigned kFull = 0xffffffffu;
  const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  const bool ok0 = cb + g < n, ok1 = cb + g + 8 < n;
  const float* a0p = sA + (ok0 ? cb + g : 0) * LD;
  const float* a1p = sA + (ok1 ? cb + g + 8 : 0) * LD;
  // W^T (16 x 8): acc[.][0] (column g, reflector 2t), [1] (g, 2t + 1), [2] (g + 8, 2t), [3] (g + 8, 2t + 1)
  float acc[2][4] = {{0.0f, 0.0f, 0.0f, 0.0f}, {0.0f, 0.0f, 0.0f, 0.0f}};
#pragma unroll 2
  for (int r0 = R0; r0 < MR; r0 += 16) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int r = r0 + 8 * h;
      const float a[4] = {ok0 ? a0p[r + t] : 0.0f, ok1 ? a1p[r + t] : 0.0f, ok0 ? a0p[r + t + 4] : 0.0f,
                          ok1 ? a1p[r + t + 4] : 0.0f};
      const float b[2] = {sV[(r + t) * NB + g], sV[(r + t + 4) * NB + g]};
      std::uint32_t ab[4], as[4], bb[2], bs[2];
#pragma unroll
      for (int i = 0; i < 4; ++i) split_tf32(a[i], ab[i], as[i]);
#pragma unroll
      for (int i = 0; i < 2; ++i) split_tf32(b[i], bb[i], bs[i]);
      mma_3xtf32(acc[h], ab, as, bb, bs);
    }
  }
  // W of columns cb + g (h = 0) and cb + g + 8 (h = 1), every reflector, on the quad's lanes;
  // then W' in place
  float w[2][NB];
  const int quad = lane & ~3;
#pragma unroll
  for (int k = 0; k < NB; ++k) {
    w[0][k] = __shfl_sync(kFull, acc[0][k & 1] + acc[1][k & 1], quad + (k >> 1));
    w[1][k] = __shfl_sync(kFull, acc[0][2 + (k & 1)] + acc[1][2 + (k & 1)], quad + (k >> 1));
  }
#pragma unroll
  for (int k = 0; k < NB; ++k)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      float s = w[h][k];
#pragma unroll
      for (int i = 0; i < k; ++i) s = fmaf(-sG[k * NB + cta_blk_slot(i, k)], w[h][i], s);
      w[h][k] = sTp[k] * s;
    }
  // B of C -= V W' for each 8-column half h: reflectors 2t, 2t + 1 of column cb + 8 h + g
  std::uint32_t wb[2][2], ws[2][2];
#pragma unroll
  for (int h = 0; h < 2; ++h)
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      const float x = t == 0 ? w[h][e] : t == 1 ? w[h][2 + e] : t == 2 ? w[h][4 + e] : w[h][6 + e];
      split_tf32(x, wb[h][e], ws[h][e]);
    }
  // C tile (16 x 8 of half h): (r0 + g, 2t), (r0 + g, 2t + 1), (r0 + g + 8, 2t), (r0 + g + 8, 2t + 1)
  const int cc = cb + 2 * t;
  bool okc[2][2];
#pragma unroll
  for (int h = 0; h < 2; ++h)
#pragma unroll
    for (int e = 0; e < 2; ++e) okc[h][e] = cc + 8 * h + e < n;
#pragma unroll 2
  for (int r0 = R0; r0 < MR; r0 += 16) {
    const float2 vlo = *reinterpret_cast<const float2*>(sV + (r0 + g) * NB + 2 * t);
    const float2 vhi = *reinterpret_cast<const float2*>(sV + (r0 + g + 8) * NB + 2 * t);
    std::uint32_t vb[4], vs[4];
    split_tf32(-vlo.x, vb[0], vs[0]);
    split_tf32(-vhi.x, vb[1], vs[1]);
    split_tf32(-vlo.y, vb[2], vs[2]);
    split_tf32(-vhi.y, vb[3], vs[3]);
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      float* c0p = sA + (okc[h][0] ? cc + 8 * h : 0) * LD + r0 + g;
      float* c1p = sA + (okc[h][1] ? cc + 8 * h + 1 : 0) * LD + r0 + g;
      float d[4] = {okc[h][0] ? c0p[0] : 0.0f, okc[h][1] ? c1p[0] : 0.0f, okc[h][0] ? c0p[8] : 0.0f,
                    okc[h][1] ? c1p[8] : 0.0f};
      const std::uint32_t bb[2] = {wb[h][0], wb[h][1]}, bs[2] = {ws[h][0], ws[h][1]};
      mma_3xtf32(d, vb, vs, bb, bs);
      if (okc[h][0]) {
        c0p[0] = d[0];
        c0p[8] = d[2];
      }
      if (okc[h][1]) {
        c1p[0] = d[1];
        c1p[8] = d[3];
      }
    }
  }
}

// f(integral_constant<NRA>) with NRA the smallest of ceil(NRF k / V), k = 1 .. V, that is >= nv.
template <int NRF, int V, int K = 1, class F>
__device__ __forceinline__ void static_panel_dispatch(int nv, F&& f) {
  constexpr int NRA = (NRF * K + V - 1) / V;
  if constexpr (K == V) f(std::integral_constant<int, NRA>{});
  else if (nv <= NRA) f(std::integral_constant<int, NRA>{});
  else static_panel_dispatch<NRF, V, K + 1>(nv, f);
}

template <Layout L, int RPL>
__global__ void __launch_bounds__(32 * kCtaBlkWarps, 1) geqrf_cta_kernel(const Geqr2CtaArgs p) {
  constexpr int NW = kCtaBlkWarps, NB = kCtaBlkPanel, LD = cta_blk_ld(RPL), MR = 8 * RPL;
  static_assert(RPL % 4 == 0 && NB == 8, "32-row groups; panel rows j0 .. j0 + 7 in one register");
  constexpr unsigned kFull = 0xffffffffu;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  const int m = p.m, n = p.n, nrefl = m < n ? m : n;
  // Per panel, in two buffers (panel parity): V, G and tau.
  float* sVb = reinterpret_cast<float*>(smem_raw);  // [2][MR][NB] V row-major: unit diagonal, zeros above
  float* sA = sVb + 2 * MR * NB;                    // [n][LD] the matrix; rows m .. MR - 1 zero
  float* sGb = sA + static_cast<std::size_t>(n) * LD;  // [2][NB][NB] G(i, k) = v_i^T v_k at i * NB + k, i < k
  float* sTpb = sGb + 2 * NB * NB;                     // [2][NB] the panel's tau (0 past its reflectors)
  float* sTau = sTpb + 2 * NB;                         // [nrefl]
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const std::int64_t mat = blockIdx.x;
  const MatrixView<L> A{p.a + mat * p.stride, p.ld};

  // --- stage in -----------------------------------------------------------------------------
  if constexpr (L == Layout::row_major) {
    // Four rows x eight columns per warp and copy (kCtaBlkStageRows): a whole 32-byte sector of
    // each row, and two lanes per bank (LD is 8 mod 32), where a warp per row put its lanes on
    // four banks.
    cta_row_major_tiles<NW, kCtaBlkStageRows>(MR, n, [&](int r, int c) {
      if (r < m) async_copy(sA + c * LD + r, &A(r, c));
      else sA[c * LD + r] = 0.0f;
    });
  } else {  // lanes down each column
    for (int c = warp; c < n; c += NW)
      for (int r = lane; r < MR; r += 32) {
        if (r < m) async_copy(sA + c * LD + r, &A(r, c));
        else sA[c * LD + r] = 0.0f;
      }
  }
  async_wait();
  __syncthreads();

  const int npanels = (nrefl + NB - 1) / NB;
  if (warp == 0) {
    for (int pi = 0; pi < npanels; ++pi) {
      const int j0 = pi * NB;
      if (pi > 0) cta_bar_sync(kColsReady, 32 * NW);  // its columns have the previous panel's update
      {
        constexpr int NRF = RPL / 4;
        const int nv = NRF - (j0 >> 5);
        float* sV = sVb + (pi & 1) * MR * NB;
        float* sG = sGb + (pi & 1) * NB * NB;
        float* sTp = sTpb + (pi & 1) * NB;
        const int kb = min(NB, nrefl - j0);
        static_panel_dispatch<NRF, (kCtaPanelHeights < NRF ? kCtaPanelHeights : NRF)>(nv, [&](auto nr_c) {
          cta_panel_geqr2<decltype(nr_c)::value>(sA + j0 * LD, LD, n - j0, sV, sG, sTp, sTau + j0, j0, kb, nv);
        });
      }
      cta_bar_sync(kPanelReady, 32 * NW);
    }
  } else {
    // The update warps: those that do not share the panel warp's scheduler (warp % 4 is the
    // scheduler), so that its chain issues alone and its code stays in that scheduler's
    // instruction cache. uw: the update warp's index, -1 for warps 4, 8, 12 (barriers only).
    constexpr int kUpdateWarps = NW - NW / 4;
    const int uw = warp % 4 == 0 ? -1 : warp - 1 - warp / 4;
    for (int pi = 0; pi < npanels; ++pi) {
      const int j0 = pi * NB;
      const float* sV = sVb + (pi & 1) * MR * NB;
      const float* sG = sGb + (pi & 1) * NB * NB;
      const float* sTp = sTpb + (pi & 1) * NB;
      cta_bar_sync(kPanelReady, 32 * NW);
      {
        const int g0 = j0 >> 5;  // rows above 32 g0 are not touched
        // --- larfb: columns j0 + 8 .. n - 1; the next panel's first (update warps 0-7 or
        // 0-3), then the panel warp may start on it, while the others take the rest
        const int c0 = j0 + NB;
        auto update_cols = [&](auto cpw_c, int u) {
          constexpr int CPW = decltype(cpw_c)::value;
          cta_update_cols_fma<CPW, MR>(sA, LD, sV, sG, sTp, c0 + CPW * u, n, g0);
        };
        // The next panel's columns (j0 + 8 .. j0 + 15) first, since the panel warp waits for
        // them: a column per update warp where the rows are many, else pairs of columns on
        // four warps (half a quad's rows per lane), whose butterfly is a level shorter.
        constexpr int kNextCpw = MR >= kCtaBlkNextOneColRows ? 1 : 2, kNextWarps = NB / kNextCpw;
        if (uw >= 0 && uw < kNextWarps && kNextCpw * uw < n - c0)
          update_cols(std::integral_constant<int, kNextCpw>{}, uw);
        if (pi + 1 < npanels) cta_bar_sync(kColsReady, 32 * NW);
        // The rest in 16-column tiles on the tensor cores (the first to the warps that had none
        // of the next panel's columns) while they are many, else four columns per warp and round.
        if (uw >= 0) {
          if (n - c0 - NB > kCtaBlkMmaMinCols) {
            for (int u = (uw + kUpdateWarps - kNextWarps) % kUpdateWarps; c0 + NB + 16 * u < n; u += kUpdateWarps)
              cta_update_cols_mma<MR>(sA, LD, sV, sG, sTp, c0 + NB + 16 * u, n, 32 * g0);
          } else {
            for (int u = uw + 2; c0 + 4 * u < n; u += kUpdateWarps) update_cols(std::integral_constant<int, 4>{}, u);
          }
        }
      }
    }
  }
  __syncthreads();

  // --- write back: the matrix in sA is the output (R on and above, V below the diagonal) ---
  cta_write_back<NW, kCtaBlkStageRows>(A, sA, LD, m, n, p.tau + mat * p.tau_stride, sTau, nrefl);
}

}  // namespace batchqr::cuda
