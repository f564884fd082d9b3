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
// is a rank-8 product with two float4 loads of V per 16 FMAs.
//
// The panel warp's layout is geqr2_cta's: lane = 4 g + q; register P[t][i] holds row
// 8 i + g of panel column q + 4 t. A dot product is RPL FMAs and three shuffle levels; the
// diagonal rows of a panel (j0 .. j0 + 7, j0 a multiple of 8) are register j0 / 8 of lanes
// g = 0 .. 7. Rows above the 32-row group of j0 are skipped (a uniform dispatch on j0 / 32),
// rows past m are zeros.
//
// The update (compact WY without T): with W = V^T C, the product H_7 .. H_0 C is
// C - V W' where W'(k) = tau_k (W(k) - sum_{i<k} G(i, k) W'(i)) and G = V^T V; the panel
// warp's column steps produce G as a by-product (the dots of v_k with the columns left of
// k, which hold v_i on every row where v_k is nonzero, as geqr2_wcol collects it).
//
// The norm is summed in FP32 while it lies in [2^-100, FLT_MAX], else again in FP64
// (tiny, huge, NaN), as in the other geqr2 kernels. A NaN stays in its matrix.
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

namespace batchqr::cuda {

inline constexpr int kCtaBlkWarps = 16;
inline constexpr int kCtaBlkPanel = 8;

// Column stride of the staged matrix: at least 8 RPL rows and 8 mod 32, so that lanes
// (g, q) on rows 8 i + g of columns c + q hit distinct banks.
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
  const int g = lane >> 2, q = lane & 3;
  const std::int64_t mat = blockIdx.x;
  const MatrixView<L> A{p.a + mat * p.stride, p.ld};

  // --- stage in -----------------------------------------------------------------------------
  if constexpr (L == Layout::row_major) {  // warp per row, lanes along it
    for (int r = warp; r < MR; r += NW)
      for (int c = lane; c < n; c += 32) {
        if (r < m) async_copy(sA + c * LD + r, &A(r, c));
        else sA[c * LD + r] = 0.0f;
      }
  } else {  // lanes down each column
    for (int c = warp; c < n; c += NW)
      for (int r = lane; r < MR; r += 32) {
        if (r < m) async_copy(sA + c * LD + r, &A(r, c));
        else sA[c * LD + r] = 0.0f;
      }
  }
  async_wait();
  __syncthreads();

  // Sum over the eight lanes of each column (fixed order: every one of them ends with the
  // same bits).
  auto col_sum = [](auto x) {
    x += __shfl_xor_sync(kFull, x, 4);
    x += __shfl_xor_sync(kFull, x, 8);
    x += __shfl_xor_sync(kFull, x, 16);
    return x;
  };

  const int npanels = (nrefl + NB - 1) / NB;
  if (warp == 0) {
    for (int pi = 0; pi < npanels; ++pi) {
      const int j0 = pi * NB, kb = min(NB, nrefl - j0);  // kb: reflectors of this panel
      float* sV = sVb + (pi & 1) * MR * NB;
      float* sG = sGb + (pi & 1) * NB * NB;
      float* sTp = sTpb + (pi & 1) * NB;
      if (pi > 0) cta_bar_sync(kColsReady, 32 * NW);  // its columns have the previous panel's update
      static_dispatch<0, RPL / 4>(j0 >> 5, [&](auto t_c) {
        constexpr int I0 = 4 * decltype(t_c)::value;  // registers below I0: rows above j0's 32-row group
        // --- geqr2 of columns j0 .. j0 + 7 -------------------------------------------------
        float P[2][RPL];
#pragma unroll
        for (int t = 0; t < 2; ++t) {
          const int c = j0 + q + 4 * t;
#pragma unroll
          for (int i = I0; i < RPL; ++i) P[t][i] = c < n ? sA[c * LD + 8 * i + g] : 0.0f;
        }
        sG[lane] = 0.0f;
        sG[lane + 32] = 0.0f;
        __syncwarp();
        const int id = (j0 >> 3) & 3;  // register I0 + id holds rows j0 .. j0 + 7
        if (lane >= kb && lane < NB) sTp[lane] = 0.0f;
        // Column step k (< kb) of the column in slot T (k / 4 == T) on lanes q == k % 4. One
        // body per slot, in a rolled loop: unrolled over the eight steps and six 32-row groups
        // the panel code outgrew the instruction cache (half the panel warp's stall samples
        // were no_inst; docs/perf-notes.md v19).
        auto step = [&](auto t_c, int k) {
          constexpr int T = decltype(t_c)::value;
          const int j = j0 + k, qk = k & 3;
          float(&x)[RPL] = P[T];  // column k on lanes q == qk
          float sq[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
          for (int i = I0; i < RPL; ++i) {
            const bool below = i >= I0 + 4 || 8 * i + g > j;
            sq[i & 3] = fmaf(below ? x[i] : 0.0f, x[i], sq[i & 3]);
          }
          const float ss = __shfl_sync(kFull, col_sum((sq[0] + sq[1]) + (sq[2] + sq[3])), qk);
          const float al = id == 0 ? x[I0] : id == 1 ? x[I0 + 1] : id == 2 ? x[I0 + 2] : x[I0 + 3];
          const float alpha = __shfl_sync(kFull, al, 4 * k + qk);
          float beta, tau, scale;
          if (ss >= 0x1p-100f && ss <= FLT_MAX) {  // warp-uniform
            const Reflector<float> h = slarfg_fp32(alpha, ss);
            beta = h.beta;
            tau = h.tau;
            scale = h.scale;
          } else {
            // Tiny, huge or NaN: the norm and the reflector in FP64; x scaled in place (in
            // FP64) on the lanes holding it, v below then taken as it is (scale 1).
            double s = 0.0;
#pragma unroll
            for (int i = I0; i < RPL; ++i) {
              const bool below = i >= I0 + 4 || 8 * i + g > j;
              const double xd = below ? x[i] : 0.0f;
              s = fma(xd, xd, s);
            }
            s = __shfl_sync(kFull, col_sum(s), qk);
            const ReflectorFp64Scale h = slarfg_fp64_or_identity(alpha, sqrt(s));
            if (q == qk) {
#pragma unroll
              for (int i = I0; i < RPL; ++i)
                if (i >= I0 + 4 || 8 * i + g > j) x[i] = static_cast<float>(static_cast<double>(x[i]) * h.scale);
            }
            beta = h.beta;
            tau = h.tau;
            scale = 1.0f;
          }
          // v on every lane (rows 8 i + g, from lane (g, qk)); the column keeps R above,
          // beta on and v below the diagonal.
          float v[RPL];
#pragma unroll
          for (int i = I0; i < RPL; ++i) {
            const float xs = __shfl_sync(kFull, x[i], 4 * g + qk);
            const int r = 8 * i + g;
            v[i] = (i >= I0 + 4 || r > j) ? xs * scale : (r == j ? 1.0f : 0.0f);
            if (q == qk) x[i] = (i >= I0 + 4 || r > j) ? v[i] : (r == j ? beta : x[i]);
          }
          // Dots with this lane's columns c = q, q + 4: H_k on those right of k, G(c, k) for
          // those left of it.
#pragma unroll
          for (int t = 0; t < 2; ++t) {
            float pd[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
            for (int i = I0; i < RPL; ++i) pd[i & 3] = fmaf(v[i], P[t][i], pd[i & 3]);
            const float d = col_sum((pd[0] + pd[1]) + (pd[2] + pd[3]));
            const int c = q + 4 * t;
            const float tw = c > k ? tau * d : 0.0f;
#pragma unroll
            for (int i = I0; i < RPL; ++i) P[t][i] = fmaf(-tw, v[i], P[t][i]);
            if (c < k && g == 0) sG[c * NB + k] = d;
          }
          if (lane == 0) {
            sTau[j] = tau;
            sTp[k] = tau;
          }
        };
#pragma unroll 1
        for (int k = 0; k < min(kb, 4); ++k) step(std::integral_constant<int, 0>{}, k);
#pragma unroll 1
        for (int k = 4; k < kb; ++k) step(std::integral_constant<int, 1>{}, k);
        // The panel back into the matrix, and V row-major for the update.
#pragma unroll
        for (int t = 0; t < 2; ++t) {
          const int cc = q + 4 * t, c = j0 + cc;
#pragma unroll
          for (int i = I0; i < RPL; ++i) {
            const int r = 8 * i + g;
            if (c < n) sA[c * LD + r] = P[t][i];
            sV[r * NB + cc] = cc < kb && r > c ? P[t][i] : (cc < kb && r == c ? 1.0f : 0.0f);
          }
        }
      });
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
      static_dispatch<0, RPL / 4>(j0 >> 5, [&](auto t_c) {
        constexpr int I0 = 4 * decltype(t_c)::value;
        // --- larfb: columns j0 + 8 .. n - 1; the next panel's first (update warps 0-3), then
        // the panel warp may start on it, while the others take the rest, four per warp at a time
        const int c0 = j0 + NB;
        const int quads = c0 < n ? (n - c0 + 3) / 4 : 0;
        // Columns c0 + CPW u .. c0 + CPW u + CPW - 1 (those below n) by one warp: lanes
        // (gr, qc) = 32 / CPW row groups x CPW columns. W = V^T C by FMAs down each lane's rows
        // and a butterfly over the row groups, W' by forward substitution (T never formed),
        // then C -= V W'.
        auto update_cols = [&](auto cpw_c, int u) {
          constexpr int CPW = decltype(cpw_c)::value, RG = 32 / CPW, NR = MR / RG;
          constexpr int F = I0 * 8 / RG;  // registers below F: rows above j0's 32-row group
          const int gr = lane / CPW, qc = lane % CPW;
          const int c = c0 + CPW * u + qc;
          const bool ok = c < n;
          float a[NR];
          float w[NB];
#pragma unroll
          for (int k = 0; k < NB; ++k) w[k] = 0.0f;
#pragma unroll
          for (int i = F; i < NR; ++i) {
            const int r = RG * i + gr;
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
#pragma unroll
          for (int k = 0; k < NB; ++k)
#pragma unroll
            for (int o = CPW; o < 32; o *= 2) w[k] += __shfl_xor_sync(kFull, w[k], o);
#pragma unroll
          for (int k = 0; k < NB; ++k) {
            float s = w[k];
#pragma unroll
            for (int i = 0; i < k; ++i) s = fmaf(-sG[i * NB + k], w[i], s);
            w[k] = sTp[k] * s;
          }
#pragma unroll
          for (int i = F; i < NR; ++i) {
            const int r = RG * i + gr;
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
        };
        // The next panel's columns (j0 + 8 .. j0 + 15) first, as four pairs on four update
        // warps (half a quad's rows per lane), since the panel warp waits for them.
        if (uw >= 0 && uw < 4 && 2 * uw < n - c0) update_cols(std::integral_constant<int, 2>{}, uw);
        if (pi + 1 < npanels) cta_bar_sync(kColsReady, 32 * NW);
        if (uw >= 0)
          for (int u = uw + 2; u < quads; u += kUpdateWarps) update_cols(std::integral_constant<int, 4>{}, u);
      });
    }
  }
  __syncthreads();

  // --- write back: the matrix in sA is the output (R on and above, V below the diagonal) ---
  cta_write_back<NW>(A, sA, LD, m, n, p.tau + mat * p.tau_stride, sTau, nrefl);
}

}  // namespace batchqr::cuda
