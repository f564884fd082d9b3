// geqr2 in registers: unblocked Householder QR of a panel (or of a whole small matrix)
// held in the registers of one CTA. Warps split the rows, lanes split the columns:
//
//   warp w holds rows  w*R .. w*R + R - 1,
//   lane l holds columns l, l + 32, ..., l + 32*(CT-1),
//
// so a row-major panel loads with whole-warp 128-byte rows, every product is a register
// FMA, and the only cross-warp traffic per column is one CTA barrier:
//
//   step j:  (a) in each warp, the lane owning column j shares u = a_j(rows > j) in the
//                warp's slice of shared memory (no barrier: a warp reads only its rows);
//                each lane forms its partial D_c = u^T a_c, for c = j too (= ||u||^2);
//                the warp holding row j also shares that row              -> barrier
//            (b) every lane sums the partials of its columns (slot-major: a column's
//                partials are contiguous, read as float4) in a fixed order, and takes
//                ss = D_j from the owner lane, so every warp forms the same alpha = a_j(j),
//                beta, tau and scale = 1 / (alpha - beta) (LAPACK slarfg), and
//                w_c = v_j^T a_c = a_c(j) + scale * D_c;
//            (c) a_c -= tau w_c v_j with v_j = scale * u (unit at row j); the owner lane
//                stores v_j in column j.
//
// Folding the norm into the dot pass halves the barriers of the textbook order (norm,
// barrier, scale, dot, barrier). It uses the unscaled u, so the fast path is taken only
// while ss lies in [2^-100, FLT_MAX] and every w_c is finite; otherwise (a column of tiny
// or huge values, an overflowing dot, a NaN) the column is redone as LAPACK does it: the
// norm summed in FP64, u scaled to v first, the dots formed again from v. A NaN in a
// matrix stays in that matrix (its tau and factors become NaN).
//
// The warp holding row j runs code specialised for row j's position in it
// (static_dispatch), so that its register indices stay compile-time constants.
//
// The panel variant (CT = 1) also collects G = V^T V (for c < j, w_c = v_c^T v_j in the
// same formula, since the stored a_c is v_c on every row where v_j is nonzero), forms T of
// the compact-WY form (LAPACK larft 'F','C'), and writes V^T explicitly (unit diagonal,
// zeros above) for the GEMM trailing update.
#pragma once

#include <cooperative_groups.h>

#include <cfloat>
#include <cstdint>
#include <type_traits>

#include "cuda/geqr2.cuh"
#include "cuda/householder.cuh"
#include "cuda/matrix_view.cuh"
#include "cuda/reg_config.hpp"

namespace batchqr::cuda {

struct Geqr2RegArgs {
  float* a;                 // first matrix of the (chunk of the) batch
  std::int64_t ld, stride;
  float* tau;
  std::int64_t tau_stride;
  float* t_out;             // T (row-major, rows t_ld apart) per matrix; null: none (needs CT == 1)
  std::int64_t t_stride;
  int t_ld;
  float* vt_out;            // V^T, nrefl x rows column-major (ld = vt_ld), per matrix; null: none
  std::int64_t vt_stride;
  int vt_ld;
  int vt_pad;               // also zero the vt_pad columns before vt_out (rows of a wider V above the panel)
  int j0;                   // the panel starts at (j0, j0)
  int rows;                 // m - j0
  int ncols;                // columns held and updated (>= nrefl)
  int nrefl;                // reflectors to form
  int cluster = 1;          // CTAs per matrix (kernel variant kCluster): CTA q holds rows q*W*R ..
  const int* only_flagged = nullptr;  // non-null: factor only the matrices b with only_flagged[b] != 0
                                      // (geqr2_reg's cluster variant and geqr2_wcol)
};

// Dot partials are stored column by column, one slot per warp of the launch bounds: a
// column's partials are contiguous (summed with float4 loads) and the stride, a multiple of
// 4 that is not a multiple of 8, keeps those loads free of bank conflicts.
__host__ __device__ constexpr int geqr2_reg_dot_slots(int max_warps) { return max_warps + 4; }

__host__ __device__ constexpr std::size_t geqr2_reg_smem_bytes(int warps, int max_warps, int R, int CT,
                                                               bool cluster = false) {
  // dot partials (two buffers of 32*CT columns x slots), u per warp (W x R), the shared row
  // (two buffers of 32*CT), tau (32*CT), Gram/T (32 x 33), then FP64 norm partials (W);
  // in a cluster also the CTA's column sums (two buffers of 32*CT) and its FP64 norm
  return sizeof(float) * (2 * static_cast<std::size_t>(32 * CT) * geqr2_reg_dot_slots(max_warps) +
                          static_cast<std::size_t>(warps) * R + 2 * 32 * CT + 32 * CT + kMaxPanelWidth * kGramLd +
                          (cluster ? 2 * 32 * CT : 0)) +
         sizeof(double) * (static_cast<std::size_t>(warps) + 1 + (cluster ? 1 : 0));
}

// f(std::integral_constant<int, k>) for a warp-uniform runtime k in [Lo, Hi): a binary
// search of log2(Hi - Lo) branches, so that code indexing registers by k stays static.
template <int Lo, int Hi, class F>
__device__ __forceinline__ void static_dispatch(int k, F&& f) {
  if constexpr (Hi - Lo == 1) {
    f(std::integral_constant<int, Lo>{});
  } else {
    constexpr int kMid = (Lo + Hi) / 2;
    if (k < kMid) static_dispatch<Lo, kMid>(k, f);
    else static_dispatch<kMid, Hi>(k, f);
  }
}

// One-tile shapes of up to 16 warps ask for two resident CTAs (64 registers per thread):
// a column step is a chain of latencies, which a second CTA per SM overlaps.
//
// kCluster: a panel taller than one CTA holds is split over a thread-block cluster of
// p.cluster CTAs, W * R rows each. Each CTA sums its warps' partials as above; the CTAs'
// sums meet through distributed shared memory (one cluster barrier per column, sums in rank
// order, so every CTA forms the same reflector), and rank 0 shares row j (the policy keeps
// W * R >= 128 > j: row j is always in rank 0). One CTA barrier and one cluster barrier
// per column.
template <Layout L, int R, int CT, int MaxW, bool kCluster = false>
__global__ void __launch_bounds__(32 * MaxW, (CT == 1 && MaxW == 16) ? 2 : 1) geqr2_reg_kernel(const Geqr2RegArgs p) {
  static_assert(R % 2 == 0, "the dot buffers alternate by the parity of j, which needs an even R");
  static_assert(!kCluster || CT == 1, "clusters hold panels");
  constexpr int NC = 32 * CT;
  constexpr int kDs = geqr2_reg_dot_slots(MaxW);
  static_assert(kDs % 4 == 0 && kDs % 8 != 0, "float4-aligned, conflict-free slot stride");
  extern __shared__ __align__(16) unsigned char smem_raw[];
  const int W = blockDim.x >> 5;
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  const int cs = kCluster ? p.cluster : 1;
  const std::int64_t mat = blockIdx.x / cs;
  const int rank = static_cast<int>(blockIdx.x - mat * cs);
  if constexpr (kCluster) {
    if (p.only_flagged != nullptr && p.only_flagged[mat] == 0) return;  // the whole cluster alike
  }
  const int rb = rank * W * R;                              // first panel row of this CTA
  const int nrows = kCluster ? min(p.rows - rb, W * R) : p.rows;  // rows held here (may be <= 0)

  float* sDot = reinterpret_cast<float*>(smem_raw);  // [2][NC][kDs]: slot w of column c: warp w's partial
  float* sU = sDot + 2 * NC * kDs;                    // [W][R]: u (or v) of this warp's rows
  float* sRow = sU + W * R;                           // [2][NC]
  float* sTau = sRow + 2 * NC;                      // [NC]
  float* sG = sTau + NC;                            // [32][kGramLd]
  double* sNorm64 = reinterpret_cast<double*>(
      reinterpret_cast<std::uintptr_t>(sG + kMaxPanelWidth * kGramLd + 1) & ~std::uintptr_t{7});
  double* sCtaNorm = sNorm64 + W;                                 // kCluster: this CTA's FP64 norm
  float* sCta = reinterpret_cast<float*>(sCtaNorm + 1);           // kCluster: [2][NC] this CTA's column sums
  const bool want_t = p.t_out != nullptr || p.vt_out != nullptr;

  // Slots of warps beyond this launch's W stay zero; a warp whose rows are all final
  // writes zeros (a) instead of dots, so every column sums all kDs slots.
  for (int i = threadIdx.x; i < 2 * NC; i += blockDim.x)
    for (int w = W; w < kDs; ++w) sDot[i * kDs + w] = 0.0f;

  const MatrixView<L> A{p.a + mat * p.stride, p.ld};
  const MatrixView<L> Ap = A.offset(p.j0 + rb, p.j0);
  const int r0 = warp * R;  // first row of this warp (in this CTA)
  float* u = sU + r0;

  // u is read as float4 (or float2) broadcasts.
  constexpr int kVec = R % 4 == 0 ? 4 : 2;
  struct VecF {
    float x[kVec];
  };
  auto load_vec = [](const float* q) {
    VecF r;
    if constexpr (kVec == 4) {
      const float4 f = *reinterpret_cast<const float4*>(q);
      r.x[0] = f.x; r.x[1] = f.y; r.x[2] = f.z; r.x[3] = f.w;
    } else {
      const float2 f = *reinterpret_cast<const float2*>(q);
      r.x[0] = f.x; r.x[1] = f.y;
    }
    return r;
  };

  float a[CT][R];
#pragma unroll
  for (int t = 0; t < CT; ++t)
#pragma unroll
    for (int i = 0; i < R; ++i) {
      const int r = r0 + i, c = t * 32 + lane;
      a[t][i] = (r < nrows && c < p.ncols) ? Ap(r, c) : 0.0f;
    }

  // Whether tile t of a lane's columns takes part in step j: it holds columns right of j,
  // or left of j, which G needs.
  auto needed = [&](int t, int j) { return t * 32 + 31 >= j || want_t; };
  // Partial dots of this warp's rows with u, for every column a lane holds that is needed.
  auto partial_dots = [&](int j, float* dot) {
#pragma unroll
    for (int t = 0; t < CT; ++t) {
      if (!needed(t, j)) continue;
      float d0 = 0.0f, d1 = 0.0f;
#pragma unroll
      for (int i = 0; i < R; i += kVec) {
        const VecF uu = load_vec(u + i);
#pragma unroll
        for (int q = 0; q < kVec; ++q) {
          if (q & 1) d1 = fmaf(uu.x[q], a[t][i + q], d1);
          else d0 = fmaf(uu.x[q], a[t][i + q], d0);
        }
      }
      dot[(t * 32 + lane) * kDs + warp] = d0 + d1;
    }
  };
  auto zero_dots = [&](int j, float* dot) {
#pragma unroll
    for (int t = 0; t < CT; ++t) {
      if (!needed(t, j)) continue;
      dot[(t * 32 + lane) * kDs + warp] = 0.0f;
    }
  };
  // Sum of column c's slots (dead warps hold zeros), in a fixed order: every warp gets the
  // same bits. Unrolled float4 loads: no loop, no per-warp address arithmetic.
  auto sum_partials = [&](const float* dot, int c) {
    const float4* q = reinterpret_cast<const float4*>(dot + c * kDs);
    float4 s = q[0];
#pragma unroll
    for (int k = 1; k < kDs / 4; ++k) {
      const float4 f = q[k];
      s.x += f.x;
      s.y += f.y;
      s.z += f.z;
      s.w += f.w;
    }
    return (s.x + s.y) + (s.z + s.w);
  };
  // This lane's sums for the columns it holds that take part in step j (zero for the others).
  auto column_sums = [&](const float* dot, int j, float (&d)[CT]) {
#pragma unroll
    for (int t = 0; t < CT; ++t) {
      d[t] = 0.0f;
      if (!needed(t, j)) continue;
      d[t] = sum_partials(dot, t * 32 + lane);
    }
  };
  // kCluster: replaces d (this CTA's sums of the columns this lane holds) by the cluster's,
  // summed in rank order so that every CTA gets the same bits. xc: this column's buffer.
  // Every thread of every CTA calls it (it holds a cluster barrier).
  auto cluster_sums = [&](float (&d)[CT], float* xc, int j) {
    if constexpr (kCluster) {
      cooperative_groups::cluster_group cluster = cooperative_groups::this_cluster();
      if (warp == 0)
#pragma unroll
        for (int t = 0; t < CT; ++t) xc[t * 32 + lane] = d[t];
      cluster.sync();  // also publishes rank 0's row j
#pragma unroll
      for (int t = 0; t < CT; ++t) {
        if (!needed(t, j)) continue;
        float s = 0.0f;
        for (int q = 0; q < cs; ++q) s += cluster.map_shared_rank(xc, q)[t * 32 + lane];
        d[t] = s;
      }
    }
  };

  for (int jb = 0; jb < p.nrefl; jb += R) {
    const int wlo = rank == 0 ? jb / R : -1;  // the warp holding rows jb .. jb + R - 1 (rank 0)
    const bool above = warp < wlo;   // every row of this warp is final (part of R)
    const bool bound = warp == wlo;  // this warp holds the rows j of this block
    // Unrolled for R <= 4; from R = 8 the unrolled loop spilled (two CTAs per SM leave 64
    // registers), and a rolled loop keeps the code of the larger shapes small.
#pragma unroll(R <= 4 ? R : 1)
    for (int jr = 0; jr < R; ++jr) {
      const int j = jb + jr;
      if (j >= p.nrefl) break;
      const int jt = j >> 5, jl = j & 31;
      float* dot = sDot + (jr & 1) * NC * kDs;
      float* row = sRow + (jr & 1) * NC;

      // --- (a) share u, partial dots, the row j ------------------------------------------
      __syncwarp();  // the previous column's update has read u
      if (!above) {
        // The owner lane shares its column; the warp holding row j shares it as zeros
        // above row j, and shares row j.
        auto share = [&](auto jr_c) {
          constexpr int kJr = decltype(jr_c)::value;  // < 0: every row of this warp is below j
          if (lane == jl) {
#pragma unroll
            for (int t = 0; t < CT; ++t) {
              if (t != jt) continue;
#pragma unroll
              for (int i = 0; i < R; i += kVec) {
                float x[kVec];
#pragma unroll
                for (int q = 0; q < kVec; ++q) x[q] = i + q > kJr ? a[t][i + q] : 0.0f;
                if constexpr (kVec == 4) *reinterpret_cast<float4*>(u + i) = make_float4(x[0], x[1], x[2], x[3]);
                else *reinterpret_cast<float2*>(u + i) = make_float2(x[0], x[1]);
              }
            }
          }
          if constexpr (kJr >= 0) {
#pragma unroll
            for (int t = 0; t < CT; ++t) row[t * 32 + lane] = a[t][kJr];
          }
        };
        if (bound) static_dispatch<0, R>(jr, share);
        else share(std::integral_constant<int, -1>{});
        __syncwarp();
        partial_dots(j, dot);
      } else {
        zero_dots(j, dot);
      }
      __syncthreads();

      // --- (b) the reflector and w (every warp alike) --------------------------------------
      // Each lane sums the partials of its own columns once; ss (column j's sum) comes from
      // the owner lane by a shuffle, the same bits as summing it here, but the sums of the
      // reflector and of w no longer follow each other on the critical path.
      float dsum[CT];
      column_sums(dot, j, dsum);
      float* xc = sCta + (jr & 1) * NC;
      cluster_sums(dsum, xc, j);
      // Row j: here, or (cluster) in rank 0's shared memory.
      const float* rrow = row;
      if constexpr (kCluster) rrow = cooperative_groups::this_cluster().map_shared_rank(row, 0);
      float dj = dsum[0];
#pragma unroll
      for (int t = 1; t < CT; ++t)
        if (t == jt) dj = dsum[t];
      const float ss = __shfl_sync(0xffffffffu, dj, jl);
      const float alpha = rrow[j];
      float tau = 0.0f, beta = alpha, scale = 0.0f;
      bool slow = !(ss >= 0x1p-100f && ss <= FLT_MAX);
      if (!slow) {
        const Reflector<float> h = slarfg_fp32(alpha, ss);
        beta = h.beta;
        tau = h.tau;
        scale = h.scale;
      }
      float w[CT];
      bool bad = false;
#pragma unroll
      for (int t = 0; t < CT; ++t) {
        w[t] = 0.0f;
        if (!needed(t, j)) continue;
        w[t] = fmaf(scale, dsum[t], rrow[t * 32 + lane]);
        bad |= !isfinite(w[t]);
      }
      slow = slow || __any_sync(0xffffffffu, bad);  // the same in every warp: same data, same order
      float vs = scale;                             // v_j = vs * (the contents of u)
      if (slow) {
        // LAPACK's order in FP64: the norm, then v = u / (alpha - beta), then the dots.
        if (lane == jl) {
          double s = 0.0;
          if (!above)
#pragma unroll
            for (int i = 0; i < R; ++i) s += static_cast<double>(u[i]) * u[i];
          sNorm64[warp] = s;
        }
        __syncthreads();
        double s = 0.0;
        for (int q = max(wlo, 0); q < W; ++q) s += sNorm64[q];
        if constexpr (kCluster) {
          cooperative_groups::cluster_group cluster = cooperative_groups::this_cluster();
          if (threadIdx.x == 0) *sCtaNorm = s;
          cluster.sync();
          s = 0.0;
          for (int q = 0; q < cs; ++q) s += *cluster.map_shared_rank(sCtaNorm, q);
        }
        const ReflectorFp64Scale h = slarfg_fp64_or_identity(alpha, sqrt(s));
        beta = h.beta;
        tau = h.tau;
        const double scale64 = h.scale;
        if (!above && tau != 0.0f) {
          if (lane == jl)
#pragma unroll
            for (int i = 0; i < R; ++i) u[i] = static_cast<float>(static_cast<double>(u[i]) * scale64);
          __syncwarp();
          partial_dots(j, dot);
        }
        __syncthreads();
        float d2[CT];
        column_sums(dot, j, d2);
        cluster_sums(d2, xc, j);  // the fast path's readers of xc have passed the norm's barrier
#pragma unroll
        for (int t = 0; t < CT; ++t) {
          if (!needed(t, j)) continue;
          const int c = t * 32 + lane;
          w[t] = tau != 0.0f ? d2[t] + rrow[c] : rrow[c];
        }
        vs = 1.0f;
      }

      // --- (c) the update ------------------------------------------------------------------
      if (bound && want_t) {
#pragma unroll
        for (int t = 0; t < CT; ++t)
          if (t * 32 + lane < j) sG[(t * 32 + lane) * kGramLd + j] = w[t];
      }
      if (warp == wlo && lane == 0) sTau[j] = tau;
      if (!above && tau != 0.0f) {
        // Warp-uniform split: only the warp holding row j needs the row tests.
        auto update = [&](auto jr_c) {
          constexpr int kJr = decltype(jr_c)::value;  // < 0: every row of this warp is below j
#pragma unroll
          for (int t = 0; t < CT; ++t) {
            if (t * 32 + 31 < j) continue;  // every column of this tile is final
            const int c = t * 32 + lane;
            if (c == j) {  // the owner: v_j (rows > j), beta (row j)
#pragma unroll
              for (int i = 0; i < R; i += kVec) {
                const VecF uu = load_vec(u + i);
#pragma unroll
                for (int q = 0; q < kVec; ++q) {
                  if (i + q > kJr) a[t][i + q] = vs * uu.x[q];
                  else if (i + q == kJr) a[t][i + q] = beta;
                }
              }
            } else if (c > j && c < p.ncols) {
              const float cf = -tau * w[t] * vs;
#pragma unroll
              for (int i = 0; i < R; i += kVec) {
                const VecF uu = load_vec(u + i);
#pragma unroll
                for (int q = 0; q < kVec; ++q)  // v_j(j) = 1 (u(j) was shared as 0)
                  a[t][i + q] = i + q == kJr ? fmaf(-tau, w[t], a[t][i + q]) : fmaf(cf, uu.x[q], a[t][i + q]);
              }
            }
          }
        };
        if (bound) static_dispatch<0, R>(jr, update);
        else update(std::integral_constant<int, -1>{});
      }  // tau = 0: H = I, column j stays (beta = alpha)
    }
  }

  __syncthreads();  // G and tau complete

  // --- write back: factors, tau, V^T --------------------------------------------------------
  // The base pointer is laundered so that the compiler recomputes the element addresses
  // here instead of keeping the load's R * CT 64-bit addresses live through the loop.
  float* base = p.a;
  asm volatile("" : "+l"(base));
  const MatrixView<L> Aw = MatrixView<L>{base + mat * p.stride, p.ld}.offset(p.j0 + rb, p.j0);
#pragma unroll
  for (int t = 0; t < CT; ++t)
#pragma unroll
    for (int i = 0; i < R; ++i) {
      const int r = r0 + i, c = t * 32 + lane;
      if (r < nrows && c < p.ncols) Aw(r, c) = a[t][i];
    }
  if (p.vt_out != nullptr && lane < p.nrefl) {
    float* Vt = p.vt_out + mat * p.vt_stride + static_cast<std::int64_t>(rb) * p.vt_ld;
#pragma unroll
    for (int i = 0; i < R; ++i) {
      const int r = r0 + i, rg = rb + r;  // rg: the row in the panel
      if (r < nrows)
        Vt[static_cast<std::int64_t>(r) * p.vt_ld + lane] = rg > lane ? a[0][i] : (rg == lane ? 1.0f : 0.0f);
    }
    if (warp == 0 && rank == 0)
      for (int r = -p.vt_pad; r < 0; ++r) Vt[static_cast<std::int64_t>(r) * p.vt_ld + lane] = 0.0f;
  }
  if (rank == 0)
    for (int j = threadIdx.x; j < p.nrefl; j += blockDim.x) p.tau[mat * p.tau_stride + p.j0 + j] = sTau[j];
  // --- larft: T from G and tau (warp 0), after the write-back: the panel's registers are
  // free by then, so that larft's 32 running sums do not spill.
  if (want_t && warp == 0 && rank == 0) larft_warp(sG, sTau, p.nrefl, lane, p.t_out, p.t_stride, p.t_ld, mat);
  // No CTA may leave while another still reads its shared memory.
  if constexpr (kCluster) cooperative_groups::this_cluster().sync();
}

}  // namespace batchqr::cuda
