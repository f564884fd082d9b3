// geqr2 of a whole small matrix (at most 8 * RPL rows, 4 * NW * SLOTS columns) in the
// registers of one CTA of NW warps (16 as compiled): unblocked Householder QR, one
// launch, no T factor, no trailing passes through global memory.
//
// Columns are dealt to the warps cyclically, and inside a warp to quarter groups of
// lanes; each column's rows are dealt cyclically to eight lanes:
//
//   lane = 4 g + q (g = 0..7, q = 0..3),
//   warp w, lane (g, q), register a[s][i] holds row 8 i + g of column c = w + NW (q + 4 s).
//
// A dot product v^T a_c is then RPL register FMAs and three shuffle levels (xor 4, 8,
// 16), after which all eight lanes of column c hold it: four columns per instruction, no
// cross-warp sum, no broadcast. Consecutive columns belong to different warps, so the
// owner of column j + 1 is never the owner of column j.
//
// Rows are dealt cyclically so that the rows above a step are the first registers of
// every lane: at step s the registers below i0 = 4 (s / 32) meet only zeros of v_s and are
// skipped (a uniform dispatch on s / 32 picks the unrolled loop), and a reflector's norm
// needs row masks only in the 32-row group that holds its diagonal.
//
// No CTA barrier per step: v_j goes through a ring of kCtaVecRing shared-memory buffers,
// each with a "full" mbarrier (its producer arrives) and an "empty" one (every warp arrives
// once done with it). Each warp applies H_0, H_1, ... in order, waiting only for the v it
// needs next, so warps may trail the chain of reflectors by up to a ring's length. The
// warp owning column j + 1 applies H_j to that column's slot first, forms reflector j + 1
// (LAPACK slarfg order: the norm of the updated column, then v = x / (alpha - beta)),
// publishes v_{j+1}, tau, the scale and beta (its registers keep x; the write-back scales
// it), and only then applies H_j to its other slots: the critical path is one slot's
// update and one reflector per column, which the other warps' updates overlap.
// (compute-sanitizer racecheck does not follow these mbarrier hand-offs and reports the
// ring's stores and loads; synccheck, memcheck and the bitwise-reproducibility test run
// on this kernel.)
//
// Where geqr2_wcol (whole warps on one column, 32 columns) and the register panel (warps
// on rows) need a cross-warp sum or a five-level butterfly per column, this layout keeps
// a BLAS-2 step over the whole trailing matrix cheap enough to factor matrices of up to
// ~200 columns unblocked (docs/perf-notes.md v15).
//
// The norm is summed in FP32 while it lies in [2^-100, FLT_MAX], else again in FP64
// through shared memory (tiny, huge, NaN), as in geqr2_wcol. A NaN stays in its matrix.
// The matrix is staged through shared memory in both directions (coalesced global access
// in either layout, cp.async on the way in).
#pragma once

#include <cfloat>
#include <cstdint>
#include <type_traits>

#include "cuda/async_copy.cuh"
#include "cuda/cta_stage.cuh"
#include "cuda/geqr2_cta.hpp"
#include "cuda/geqr2_reg.cuh"
#include "cuda/householder.cuh"
#include "cuda/matrix_view.cuh"
#include "cuda/mbarrier.cuh"
#include "cuda/smem_vec.cuh"
#include "cuda/warp_reduce.cuh"

namespace batchqr::cuda {

// Staged matrix: column c, row r at c * SC + r (SC odd: a warp's row-major staging
// stores, lanes on columns, hit distinct banks).
__host__ __device__ constexpr int cta_stage_col(int rpl) { return 8 * rpl + 1; }

// Buffers of v in flight: how far a warp may trail the reflector chain.
inline constexpr int kCtaVecRing = 16;

__host__ __device__ constexpr std::size_t geqr2_cta_smem_bytes(int rpl, int n) {
  // two mbarriers per ring buffer, the ring of v (8 * RPL floats each), tau and the scales
  // of v, the staged matrix
  return 2 * sizeof(std::uint64_t) * kCtaVecRing +
         sizeof(float) * (static_cast<std::size_t>(kCtaVecRing) * 8 * rpl + 2 * kCtaMaxCols +
                          static_cast<std::size_t>(n) * cta_stage_col(rpl));
}

// The reflector of a column whose FP32 sum of squares cannot be trusted, by a whole warp:
// x (zero on and above row jn, in any order) in vb[0 .. 8 * RPL); the FP64 norm, LAPACK's
// slarfg in FP64, then vb scaled in place to v below jn (the caller sets the one on row
// jn). Returns (beta, tau); tau = 0 for an exactly zero x (H = I, beta = alpha).
template <int RPL>
__device__ __noinline__ float2 cta_reflector_fp64(float* vb, float alpha, int lane) {
  constexpr int PL = RPL / 4;  // entries per lane
  double s = 0.0;
  for (int i = 0; i < PL; ++i) {
    const double x = vb[lane * PL + i];
    s = fma(x, x, s);
  }
  const ReflectorFp64Scale h = slarfg_fp64_or_identity(alpha, sqrt(warp_allreduce_sum(s)));
  for (int i = 0; i < PL; ++i) vb[lane * PL + i] = static_cast<float>(static_cast<double>(vb[lane * PL + i]) * h.scale);
  __syncwarp();
  return make_float2(h.beta, h.tau);
}

template <Layout L, int RPL, int SLOTS, int NW>
__global__ void __launch_bounds__(32 * NW, 1) geqr2_cta_kernel(const Geqr2CtaArgs p) {
  constexpr int VS = 8 * RPL, SC = cta_stage_col(RPL), CPS = 4 * NW;  // CPS: columns per slot
  static_assert(RPL % 4 == 0 && SLOTS >= 1 && SLOTS * CPS <= 256, "float4 rows");
  extern __shared__ __align__(16) unsigned char smem_raw[];
  constexpr int NB = kCtaVecRing;
  std::uint64_t* full = reinterpret_cast<std::uint64_t*>(smem_raw);  // [NB] v_j written (1 arrival)
  std::uint64_t* empty = full + NB;                                  // [NB] v_j read (one arrival per warp)
  float* sV = reinterpret_cast<float*>(empty + NB);  // [NB][VS] v_j in buffer j % NB, lane-major: [g][i] = v(8 i + g)
  float* sTau = sV + NB * VS;                        // [kCtaMaxCols]
  float* sScale = sTau + kCtaMaxCols;                // [kCtaMaxCols] v_c = x_c * scale_c below the diagonal
  float* sA = sScale + kCtaMaxCols;                  // [n][SC] the matrix, staged (and the diagonal of R)
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int g = lane >> 2, q = lane & 3;
  const std::int64_t mat = blockIdx.x;
  const int m = p.m, n = p.n, nrefl = m < n ? m : n;
  const MatrixView<L> A{p.a + mat * p.stride, p.ld};
  if (threadIdx.x < NB) {
    mbarrier_init(full + threadIdx.x, 1);
    mbarrier_init(empty + threadIdx.x, NW);
    mbarrier_init_fence();
  }

  // --- stage in -----------------------------------------------------------------------------
  if constexpr (L == Layout::row_major) {  // warp w: rows w, w + NW, ...; lanes along the row
    for (int r = warp; r < m; r += NW)
      for (int c = lane; c < n; c += 32) async_copy(sA + c * SC + r, &A(r, c));
  } else {  // lanes down each column
    for (int c = warp; c < n; c += NW)
      for (int r = lane; r < m; r += 32) async_copy(sA + c * SC + r, &A(r, c));
  }
  async_wait();
  __syncthreads();
  auto col = [&](int s) { return warp + NW * (q + 4 * s); };
  float a[SLOTS][RPL];
#pragma unroll
  for (int s = 0; s < SLOTS; ++s) {
    const int c = col(s);
#pragma unroll
    for (int i = 0; i < RPL; ++i) a[s][i] = (c < n && 8 * i + g < m) ? sA[c * SC + 8 * i + g] : 0.0f;
  }

  // Sum over the eight lanes of each column (lanes 4 g + q, fixed order): every one of
  // them ends with the same bits.
  auto col_sum = [](float x) {
    x += __shfl_xor_sync(0xffffffffu, x, 4);
    x += __shfl_xor_sync(0xffffffffu, x, 8);
    x += __shfl_xor_sync(0xffffffffu, x, 16);
    return x;
  };

  // Reflector jn from slot K (this warp owns column jn, on lanes q == jn / NW % 4): beta
  // to sA, v (zero above jn, one on it) to sV[buf], tau and the scale to sTau[jn],
  // sScale[jn]. The registers keep x (FP32 path; the write-back scales it) or take v
  // (FP64 path, scale 1). Rows of the 32-row group of jn are masked, those above skipped.
  auto reflect = [&](auto k_c, int jn, int buf) {
    constexpr int K = decltype(k_c)::value;
    const int qn = (jn / NW) & 3, gn = jn & 7, ln = 4 * gn + qn;  // lane ln holds row jn
    float* vb = sV + buf * VS;
    static_dispatch<0, RPL / 4>(jn >> 5, [&](auto t_c) {
      constexpr int I0 = 4 * decltype(t_c)::value;  // registers below I0: rows above jn's group
      const int d = jn - g;                          // row 8 i + g lies below jn iff 8 i > d
      float sq[4] = {0.0f, 0.0f, 0.0f, 0.0f}, al = 0.0f;
#pragma unroll
      for (int i = I0; i < RPL; ++i) {
        const float x = a[K][i];
        if (i < I0 + 4) {
          sq[i & 3] = fmaf(8 * i > d ? x : 0.0f, x, sq[i & 3]);
          if (8 * i == d) al = x;
        } else {
          sq[i & 3] = fmaf(x, x, sq[i & 3]);
        }
      }
      const float ss = __shfl_sync(0xffffffffu, col_sum((sq[0] + sq[1]) + (sq[2] + sq[3])), qn);
      const float alpha = __shfl_sync(0xffffffffu, al, ln);
      float tau, beta, scale;
      if (ss >= 0x1p-100f && ss <= FLT_MAX) {  // warp-uniform: the same bits in every lane
        const Reflector<float> h = slarfg_fp32(alpha, ss);
        beta = h.beta;
        tau = h.tau;
        scale = h.scale;
        if (q == qn) {
#pragma unroll
          for (int i = 0; i < RPL; i += 4) {
            float w[4];
#pragma unroll
            for (int t = 0; t < 4; ++t) {
              const int r = i + t;
              w[t] = r < I0 ? 0.0f : r < I0 + 4 ? (8 * r > d ? a[K][r] * scale : 0.0f) : a[K][r] * scale;
            }
            *reinterpret_cast<float4*>(vb + g * RPL + i) = make_float4(w[0], w[1], w[2], w[3]);
          }
        }
      } else {
        // Tiny, huge or NaN: out of line in FP64 through shared memory (x in, v out), the
        // whole warp on the column's rows, so that the rare path costs the common one no
        // registers. Zero x (H = I): tau = 0 and v = 0 below jn, as LAPACK. The registers
        // take v (rows below jn; R above stays), scale 1.
        if (q == qn) {
#pragma unroll
          for (int i = 0; i < RPL; ++i)
            vb[g * RPL + i] = i < I0 ? 0.0f : i < I0 + 4 ? (8 * i > d ? a[K][i] : 0.0f) : a[K][i];
        }
        __syncwarp();
        const float2 bt = cta_reflector_fp64<RPL>(vb, alpha, lane);
        beta = bt.x;
        tau = bt.y;
        scale = 1.0f;
        if (q == qn) {
#pragma unroll
          for (int i = I0; i < RPL; ++i)
            if (i >= I0 + 4 || 8 * i > d) a[K][i] = vb[g * RPL + i];
        }
      }
      if (lane == ln) {
        vb[gn * RPL + (jn >> 3)] = 1.0f;
        sA[jn * SC + jn] = beta;
      }
      if (lane == 0) {
        sTau[jn] = tau;
        sScale[jn] = scale;
      }
    });
  };

  float v[RPL];
  // H_s (v in registers) on the columns right of s of slots F .. E - 1 but `skip`: all dots
  // first, then all sums, then all updates, so that the slots' chains overlap. Registers
  // below 4 (s / 32) hold rows above s, where v_s is zero: skipped.
  auto update_range = [&](auto f_c, auto e_c, int s, float tau, int skip) {
    constexpr int F = decltype(f_c)::value, E = decltype(e_c)::value;
    static_dispatch<0, RPL / 4>(s >> 5, [&](auto t_c) {
      constexpr int I0 = 4 * decltype(t_c)::value;
      float d[SLOTS];
#pragma unroll
      for (int k = F; k < E; ++k) {
        float p[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
        for (int i = I0; i < RPL; ++i) p[i & 3] = fmaf(v[i], a[k][i], p[i & 3]);
        d[k] = (p[0] + p[1]) + (p[2] + p[3]);
      }
#pragma unroll
      for (int o = 4; o <= 16; o *= 2)
#pragma unroll
        for (int k = F; k < E; ++k) d[k] += __shfl_xor_sync(0xffffffffu, d[k], o);
#pragma unroll
      for (int k = F; k < E; ++k) {
        const float tw = col(k) > s && k != skip ? tau * d[k] : 0.0f;
#pragma unroll
        for (int i = I0; i < RPL; ++i) a[k][i] = fmaf(-tw, v[i], a[k][i]);
      }
    });
  };
  using K0 = std::integral_constant<int, 0>;
  // f(std::integral_constant<int, k>) for a warp-uniform runtime k in [0, SLOTS)
  auto for_slot = [&](int k, auto&& f) { static_dispatch<0, SLOTS>(k, f); };
  // H_s on every slot that holds a column right of s (slot k does while w + NW (4 k + 3) > s).
  auto update_active = [&](int s, float tau, int skip) {
    const int first = s < warp + 3 * NW ? 0 : (s - warp - 3 * NW) / CPS + 1;
    if (first < SLOTS)
      for_slot(first, [&](auto f_c) { update_range(f_c, std::integral_constant<int, SLOTS>{}, s, tau, skip); });
  };

  // Reflector jn into its ring buffer, once every warp is done with the one it replaces.
  auto publish = [&](auto k_c, int jn) {
    const int b = jn % NB;
    mbarrier_wait(empty + b, ((jn / NB) & 1) ^ 1);
    reflect(k_c, jn, b);
    __syncwarp();
    if (lane == 0) mbarrier_arrive(full + b);
  };
  if (warp == 0) publish(K0{}, 0);

  for (int j = 0; j < nrefl; ++j) {
    const int b = j % NB;
    mbarrier_wait(full + b, (j / NB) & 1);
    load_float4s(sV + b * VS + g * RPL, v);
    const float tau = sTau[j];
    const int jn = j + 1;
    if (jn < nrefl && jn % NW == warp) {
      const int kn = jn / CPS;
      for_slot(kn, [&](auto k_c) {
        update_range(k_c, std::integral_constant<int, decltype(k_c)::value + 1>{}, j, tau, -1);  // slot K alone
        publish(k_c, jn);
      });
      load_float4s(sV + b * VS + g * RPL, v);  // again: v need not live through the reflector's registers
      update_active(j, tau, kn);
    } else {
      update_active(j, tau, -1);
    }
    __syncwarp();
    if (lane == 0) mbarrier_arrive(empty + b);
  }
  __syncthreads();

  // --- write back through shared memory: R above the diagonal, v = x * scale below it ------
#pragma unroll
  for (int s = 0; s < SLOTS; ++s) {
    const int c = col(s);
    if (c < n) {
      const float scale = c < nrefl ? sScale[c] : 1.0f;
#pragma unroll
      for (int i = 0; i < RPL; ++i) {
        const int r = 8 * i + g;
        if (r < m && r != c) sA[c * SC + r] = r > c ? a[s][i] * scale : a[s][i];
      }
    }
  }
  __syncthreads();
  cta_write_back<NW>(A, sA, SC, m, n, p.tau + mat * p.tau_stride, sTau, nrefl);
}

}  // namespace batchqr::cuda
