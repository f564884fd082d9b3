// geqr2 in registers: unblocked Householder QR of a panel (or of a whole small matrix)
// held in the registers of one CTA. Warps split the rows, lanes split the columns:
//
//   warp w holds rows  w*R .. w*R + R - 1,
//   lane l holds columns l, l + 32, ..., l + 32*(CT-1),
//
// so a row-major panel loads with whole-warp 128-byte rows, every product is a register
// FMA, and the only cross-thread traffic per column is two CTA barriers:
//
//   step j:  (a) each warp's lane owning column j has put its partial sum of squares of
//                rows > j in shared memory                                   -> barrier
//            (b) every warp forms beta, tau (LAPACK slarfg, FP32) from the partials,
//                the owner lane scales its part of v_j and shares it in its warp;
//                each lane forms its partial w_c = v_j^T a_c                  -> barrier
//            (c) each lane sums the W partials (warp order: deterministic) and applies
//                a_c -= tau w_c v_j; the owner of column j+1 forms (a) of step j+1.
//
// Norms are FP32 sums of squares, checked: if the sum is not in [2^-100, FLT_MAX] (a
// column of tiny or huge values, or a NaN) the column is summed again in FP64 and its
// reflector formed in FP64, so scaling never over- or underflows. A NaN in a matrix stays
// in that matrix (its tau and factors become NaN).
//
// The panel variant (CT = 1) also accumulates G = V^T V (lanes c < j compute v_c^T v_j in
// the same pass) and forms T of the compact-WY form (LAPACK larft 'F','C'), and writes
// V^T explicitly (unit diagonal, zeros above) for the GEMM trailing update.
#pragma once

#include <cfloat>
#include <cstdint>

#include "cuda/geqr2.cuh"
#include "cuda/matrix_view.cuh"
#include "cuda/reg_config.hpp"

namespace batchqr::cuda {

struct Geqr2RegArgs {
  float* a;                 // first matrix of the (chunk of the) batch
  std::int64_t ld, stride;
  float* tau;
  std::int64_t tau_stride;
  float* t_out;             // T (row-major 32 x 32) per matrix; null: none (needs CT == 1)
  float* vt_out;            // V^T, nrefl x rows column-major (ld = nrefl), per matrix; null: none
  std::int64_t vt_stride;
  int j0;                   // the panel starts at (j0, j0)
  int rows;                 // m - j0
  int ncols;                // columns held and updated (>= nrefl)
  int nrefl;                // reflectors to form
};

__host__ __device__ constexpr std::size_t geqr2_reg_smem_bytes(int warps, int CT) {
  // v per warp (W x R <= 1024), slow-path partials (W + 1 doubles), partial norms (W, +1
  // alpha), dot partials (W x 32*CT), tau (32*CT), Gram/T (32 x 33)
  return sizeof(float) * 1024 + sizeof(double) * (static_cast<std::size_t>(warps) + 1) +
         sizeof(float) * (static_cast<std::size_t>(warps) + 1 + static_cast<std::size_t>(warps) * 32 * CT + 32 * CT +
                          kMaxPanelWidth * kGramLd);
}

template <Layout L, int R, int CT>
__global__ void __launch_bounds__(32 * geqr2_reg_max_warps(R, CT)) geqr2_reg_kernel(const Geqr2RegArgs p) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  const int W = blockDim.x >> 5;
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  const std::int64_t mat = blockIdx.x;

  float* sV = reinterpret_cast<float*>(smem_raw);                 // [1024]: v of row w*R + i (16-byte aligned)
  double* sNorm64 = reinterpret_cast<double*>(sV + 1024);          // [W] slow-path partials
  float* sNorm = reinterpret_cast<float*>(sNorm64 + W + 1);        // [W] partials, then alpha
  float* sDot = sNorm + W + 1;                               // [W][32*CT]
  float* sTau = sDot + W * 32 * CT;                          // [32*CT]
  float* sG = sTau + 32 * CT;                                // [32][kGramLd]
  const bool want_t = p.t_out != nullptr || p.vt_out != nullptr;

  const MatrixView<L> A{p.a + mat * p.stride, p.ld};
  const MatrixView<L> Ap = A.offset(p.j0, p.j0);
  const int r0 = warp * R;  // first row of this warp

  // v is read as float4 broadcasts when the rows per warp allow it.
  constexpr int kVec = R % 4 == 0 ? 4 : (R % 2 == 0 ? 2 : 1);
  struct VecF {
    float x[kVec];
  };
  auto load_vec = [](const float* q) {
    VecF r;
    if constexpr (kVec == 4) {
      const float4 f = *reinterpret_cast<const float4*>(q);
      r.x[0] = f.x; r.x[1] = f.y; r.x[2] = f.z; r.x[3] = f.w;
    } else if constexpr (kVec == 2) {
      const float2 f = *reinterpret_cast<const float2*>(q);
      r.x[0] = f.x; r.x[1] = f.y;
    } else {
      r.x[0] = *q;
    }
    return r;
  };
  auto store_rows = [](float* q, const float (&x)[R]) {
#pragma unroll
    for (int i = 0; i < R; i += kVec) {
      if constexpr (kVec == 4) {
        *reinterpret_cast<float4*>(q + i) = make_float4(x[i], x[i + 1], x[i + 2], x[i + 3]);
      } else if constexpr (kVec == 2) {
        *reinterpret_cast<float2*>(q + i) = make_float2(x[i], x[i + 1]);
      } else {
        q[i] = x[i];
      }
    }
  };

  float a[CT][R];
#pragma unroll
  for (int t = 0; t < CT; ++t)
#pragma unroll
    for (int i = 0; i < R; ++i) {
      const int r = r0 + i, c = t * 32 + lane;
      a[t][i] = (r < p.rows && c < p.ncols) ? Ap(r, c) : 0.0f;
    }

  // This warp's partial sum of squares of column c below row c (lane c % 32 holds it).
  auto norm_partial = [&](int c) {
    const int tc = c >> 5;
    if (lane == (c & 31)) {
      float s0 = 0.0f, s1 = 0.0f;
      const bool below = r0 > c;  // every row of this warp is below row c
#pragma unroll
      for (int t = 0; t < CT; ++t) {
        if (t != tc) continue;
        if (below) {
#pragma unroll
          for (int i = 0; i < R; ++i) {
            if (i & 1) s1 = fmaf(a[t][i], a[t][i], s1);
            else s0 = fmaf(a[t][i], a[t][i], s0);
          }
        } else {
#pragma unroll
          for (int i = 0; i < R; ++i) {
            const float x = r0 + i > c ? a[t][i] : 0.0f;
            if (i & 1) s1 = fmaf(x, x, s1);
            else s0 = fmaf(x, x, s0);
          }
        }
#pragma unroll
        for (int i = 0; i < R; ++i)
          if (r0 + i == c) sNorm[W] = a[t][i];  // alpha: one warp holds row c
      }
      sNorm[warp] = s0 + s1;
    }
  };

  if (p.nrefl > 0) {
    if (warp == 0 && lane == 0) sNorm[W] = 0.0f;  // alpha of a row past the panel (rows == 0)
    norm_partial(0);
  }

  for (int j = 0; j < p.nrefl; ++j) {
    const int jt = j >> 5, jl = j & 31;
    __syncthreads();  // (a): norm partials of column j

    // --- (b) the reflector: every warp computes the same beta, tau --------------------------
    float ss0 = 0.0f, ss1 = 0.0f;
    {
      int w = 0;
      for (; w + 2 <= W; w += 2) {
        ss0 += sNorm[w];
        ss1 += sNorm[w + 1];
      }
      if (w < W) ss0 += sNorm[w];
    }
    const float ss = ss0 + ss1;
    const float alpha = sNorm[W];
    float tau = 0.0f, beta = alpha, scale = 0.0f;
    // Outside [2^-100, FLT_MAX] (also 0: squares may have underflowed; NaN) the FP32 sum
    // is not trusted. The test is uniform: every warp read the same partials.
    bool slow = !(ss >= 0x1p-100f && ss <= FLT_MAX);
    if (!slow) {
      // alpha^2 + ss cannot overflow or lose alpha^2 to underflow in this range.
      const bool plain = ss <= 0x1p100f && fabsf(alpha) <= 0x1p50f && fabsf(alpha) >= 0x1p-50f;
      beta = -copysignf(plain ? __fsqrt_rn(fmaf(alpha, alpha, ss)) : hypotf(alpha, sqrtf(ss)), alpha);
      tau = (beta - alpha) * __frcp_rn(beta);
      scale = __frcp_rn(alpha - beta);
    }
    double scale64 = 0.0;
    if (slow) {
      if (lane == jl) {
        double s = 0.0;
#pragma unroll
        for (int t = 0; t < CT; ++t) {
          if (t != jt) continue;
#pragma unroll
          for (int i = 0; i < R; ++i) {
            const double x = r0 + i > j ? static_cast<double>(a[t][i]) : 0.0;
            s += x * x;
          }
        }
        sNorm64[warp] = s;
      }
      __syncthreads();
      double s = 0.0;
      for (int w = 0; w < W; ++w) s += sNorm64[w];
      const double xnorm = sqrt(s), al = alpha;
      if (xnorm != 0.0) {  // NaN goes here too
        const double b = -copysign(hypot(al, xnorm), al);
        beta = static_cast<float>(b);
        tau = static_cast<float>((b - al) / b);
        scale64 = 1.0 / (al - b);
      } else {
        slow = false;  // an exactly zero column below the diagonal: tau = 0, H = I
        tau = 0.0f;
        beta = alpha;
      }
    }
    const bool active = tau != 0.0f || slow;  // warp-uniform
    // The owner lane turns column j into v_j (unit diagonal implied) and shares it.
    if (lane == jl) {
#pragma unroll
      for (int t = 0; t < CT; ++t) {
        if (t != jt) continue;
        if (r0 > j && !slow) {  // the common case: every row of this warp is below row j
          if (active) {
#pragma unroll
            for (int i = 0; i < R; ++i) a[t][i] *= scale;
          }
          store_rows(sV + r0, a[t]);
        } else {
#pragma unroll
          for (int i = 0; i < R; ++i) {
            const int r = r0 + i;
            float v = 0.0f;
            if (r > j && active) {
              a[t][i] = slow ? static_cast<float>(static_cast<double>(a[t][i]) * scale64) : a[t][i] * scale;
              v = a[t][i];
            } else if (r == j) {
              if (active) a[t][i] = beta;
              v = 1.0f;
            }
            sV[r0 + i] = v;
          }
        }
      }
    }
    if (warp == 0 && lane == 0) sTau[j] = tau;
    __syncwarp();

    // Dots: lane c, columns c > j: v_j^T a_c; columns c < j (panel only): v_c^T v_j = G[c][j].
    // For c < j the stored a_c is v_c on every row where v_j is nonzero (rows >= j > c),
    // so one formula serves both.
    const bool rows_live = r0 + R > j;  // rows above j have v_j = 0
    const float* v = sV + r0;  // read where used (vectorized broadcasts): a register copy would not fit at R = 32
#pragma unroll
    for (int t = 0; t < CT; ++t) {
      if (t * 32 + 31 < j && !want_t) continue;  // every column of this tile is left of j
      const int c = t * 32 + lane;
      float d0 = 0.0f, d1 = 0.0f;
      if (rows_live) {
#pragma unroll
        for (int i = 0; i < R; i += kVec) {
          const VecF vv = load_vec(v + i);
#pragma unroll
          for (int q = 0; q < kVec; ++q) {
            if (q & 1) d1 = fmaf(vv.x[q], a[t][i + q], d1);
            else d0 = fmaf(vv.x[q], a[t][i + q], d0);
          }
        }
      }
      sDot[warp * 32 * CT + c] = d0 + d1;
    }
    __syncthreads();  // (b): dot partials

    // --- (c) sums, update, and the next column's norm ----------------------------------------
#pragma unroll
    for (int t = 0; t < CT; ++t) {
      if (t * 32 + 31 < j && !want_t) continue;
      if (!rows_live && !want_t) continue;  // nothing of this warp changes
      const int c = t * 32 + lane;
      // Four independent chains, combined in a fixed order (deterministic).
      float w0 = 0.0f, w1 = 0.0f, w2 = 0.0f, w3 = 0.0f;
      int q = 0;
      for (; q + 4 <= W; q += 4) {
        w0 += sDot[q * 32 * CT + c];
        w1 += sDot[(q + 1) * 32 * CT + c];
        w2 += sDot[(q + 2) * 32 * CT + c];
        w3 += sDot[(q + 3) * 32 * CT + c];
      }
      for (; q < W; ++q) w0 += sDot[q * 32 * CT + c];
      const float w = (w0 + w1) + (w2 + w3);
      if (c > j && c < p.ncols) {
        const float tw = tau * w;
        if (rows_live && active) {
#pragma unroll
          for (int i = 0; i < R; i += kVec) {
            const VecF vv = load_vec(v + i);
#pragma unroll
            for (int q = 0; q < kVec; ++q) a[t][i + q] = fmaf(-tw, vv.x[q], a[t][i + q]);
          }
        }
      } else if (c < j && want_t && warp == 0) {
        sG[c * kGramLd + j] = w;
      }
    }
    if (j + 1 < p.nrefl) norm_partial(j + 1);
  }

  // --- larft: T from G and tau (warp 0) -----------------------------------------------------
  if (want_t) {
    __syncthreads();
    if (warp == 0)
      larft_warp(sG, sTau, p.nrefl, lane, p.t_out, mat);
  }

  // --- write back: factors, tau, V^T --------------------------------------------------------
  // The base pointer is laundered so that the compiler recomputes the element addresses
  // here instead of keeping the load's R * CT 64-bit addresses live through the loop.
  float* base = p.a;
  asm volatile("" : "+l"(base));
  const MatrixView<L> Aw = MatrixView<L>{base + mat * p.stride, p.ld}.offset(p.j0, p.j0);
#pragma unroll
  for (int t = 0; t < CT; ++t)
#pragma unroll
    for (int i = 0; i < R; ++i) {
      const int r = r0 + i, c = t * 32 + lane;
      if (r < p.rows && c < p.ncols) Aw(r, c) = a[t][i];
    }
  if (p.vt_out != nullptr && lane < p.nrefl) {
    float* Vt = p.vt_out + mat * p.vt_stride;
#pragma unroll
    for (int i = 0; i < R; ++i) {
      const int r = r0 + i;
      if (r < p.rows) Vt[static_cast<std::int64_t>(r) * p.nrefl + lane] = r > lane ? a[0][i] : (r == lane ? 1.0f : 0.0f);
    }
  }
  for (int j = threadIdx.x; j < p.nrefl; j += blockDim.x) p.tau[mat * p.tau_stride + p.j0 + j] = sTau[j];
}

}  // namespace batchqr::cuda
