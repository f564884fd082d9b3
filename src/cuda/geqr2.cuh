// geqr2 (+ larft): unblocked Householder QR of a panel, one CTA or one thread-block
// cluster per matrix, the panel in shared memory (split over the cluster's CTAs) or, past
// what a cluster holds, in place in global memory. The policy uses it for panels taller
// than the register-resident kernel covers (geqr2_reg.cuh: 1024 rows).
//
// The panel is rows x ncols, starting at (j0, j0) of each matrix. Its first `nrefl`
// columns are reduced by reflectors; every reflector is applied to all ncols columns.
// For the blocked algorithm ncols = nrefl = nb, and the kernel also forms the T factor
// of the compact-WY form Q = I - V T V^T (LAPACK larft 'F','C') and, for a trailing
// update by GEMMs, writes V^T (explicit unit diagonal).
//
// Work split: warp w owns the columns c with c % NW == w. Step j:
//   1. the owner of column j already holds sum_{i>j} a_ij^2 and a_jj (it computed them
//      while updating column j in step j-1): it forms beta, tau, scales v_j (FP64 math);
//   2. barrier;
//   3. each warp, for each of its columns c != j: w_c = v_j^T a_c (lanes over rows);
//      c > j: a_c -= tau_j w_c v_j (and the owner of c = j+1 takes its new norm);
//      c < j: w_c = v_c^T v_j is G[c][j], the Gram entry larft needs.
// One CTA-wide barrier per column. With a cluster the rows are split over the CTAs and
// steps 1 and 3 each add one cluster-wide reduction through distributed shared memory.
//
// Sums are in a fixed order (butterfly within a warp, rank order across the cluster),
// so results are bitwise reproducible. Norms are accumulated in FP64: squares of FP32
// values neither overflow nor underflow there, so no scaling pass is needed.
#pragma once

#include <cooperative_groups.h>

#include <cstdint>

#include "cuda/householder.cuh"
#include "cuda/matrix_view.cuh"
#include "cuda/warp_reduce.cuh"

namespace batchqr::cuda {

// Widest panel the blocked algorithm uses; the T factor is stored as a 32 x 32 tile.
inline constexpr int kMaxPanelWidth = 32;
inline constexpr int kGramLd = kMaxPanelWidth + 1;

struct Geqr2Args {
  float* a;                 // first matrix of the (chunk of the) batch
  std::int64_t ld, stride;
  float* tau;               // tau of the first matrix
  std::int64_t tau_stride;
  float* t_out;             // T (row-major, nrefl x nrefl of a t_ld x t_ld tile) per matrix; null: none
  std::int64_t t_stride;
  int t_ld;
  float* vt_out;            // V^T, nrefl x rows column-major (ld = vt_ld) per matrix; null: none
  std::int64_t vt_stride;
  int vt_ld;
  int vt_pad;               // also zero the vt_pad columns before vt_out (rows of a wider V above the panel)
  int j0;                   // the panel starts at row j0, column j0
  int rows;                 // m - j0
  int ncols;                // columns held and updated (>= nrefl)
  int nrefl;                // reflectors to form (<= kMaxPanelWidth when t_out is set)
  int cluster;              // CTAs per matrix
  int rows_per_cta;         // rows held by each CTA (the last one may hold fewer)
  int lds;                  // leading dimension of the panel in shared memory
};

__host__ __device__ constexpr int round_up2(int x) { return (x + 1) & ~1; }

// larft ('F','C') by one warp: lane i forms row i of the upper-triangular T of the
// compact-WY form from tau and the upper part of the Gram matrix G = V^T V
// (G[l][j] at sG[l * kGramLd + j]):  T[i][j] = -tau_j sum_{i <= l < j} T[i][l] G[l][j],
// T[j][j] = tau_j. Then, if t_out is set, stores the 32 x 32 tile of matrix `mat` row-major
// (zeros past nrefl) at t_out + mat * t_stride, rows t_ld apart, through sG (G is dead by
// then): a lane's row in place of G's, so that every store is one coalesced row.
//
// Right-looking: once T[i][l] is final it is added into the sums of every later column, so
// the dependent chain per column is one FMA and one multiply rather than a dot of length j
// (the sums keep the order l = 0, 1, ...: the same bits as the left-looking loop).
__device__ __forceinline__ void larft_warp(float* sG, const float* sTau, int nrefl, int lane, float* t_out,
                                           std::int64_t t_stride, int t_ld, std::int64_t mat) {
  float trow[kMaxPanelWidth];  // trow[j]: the running sum of column j, then T[lane][j]
#pragma unroll
  for (int j = 0; j < kMaxPanelWidth; ++j) trow[j] = 0.0f;
#pragma unroll
  for (int l = 0; l < kMaxPanelWidth; ++l) {
    if (l >= nrefl) {
      trow[l] = 0.0f;
      continue;
    }
    const float t = sTau[l];
    trow[l] = lane < l ? -t * trow[l] : (lane == l ? t : 0.0f);
    if (l >= lane)
#pragma unroll
      for (int j = l + 1; j < kMaxPanelWidth; ++j)
        if (j < nrefl) trow[j] = fmaf(trow[l], sG[l * kGramLd + j], trow[j]);
  }
  if (t_out != nullptr) {
    // A 32 x 32 tile (t_ld == 32) is stored whole; a block of a wider T only where it lies.
    const int extent = t_ld == kMaxPanelWidth ? kMaxPanelWidth : nrefl;
    __syncwarp();  // every lane has read G
#pragma unroll
    for (int l = 0; l < kMaxPanelWidth; ++l) sG[lane * kGramLd + l] = trow[l];  // odd stride: no bank conflicts
    __syncwarp();
    float* T = t_out + mat * t_stride + lane;
    if (lane < extent)
      for (int r = 0; r < extent; ++r) T[static_cast<std::int64_t>(r) * t_ld] = sG[r * kGramLd + lane];
  }
}

// Dynamic shared memory of geqr2_kernel, in bytes.
__host__ __device__ inline std::size_t geqr2_smem_bytes(const Geqr2Args& p, bool panel_in_smem) {
  std::size_t floats = 0;
  if (panel_in_smem) floats += static_cast<std::size_t>(p.lds) * p.ncols;
  floats += round_up2(p.nrefl);
  if (p.cluster > 1) floats += round_up2(p.ncols);
  if (p.t_out != nullptr || p.vt_out != nullptr) floats += kMaxPanelWidth * kGramLd;
  return 2 * sizeof(double) + floats * sizeof(float);
}

// Element (r, c) of this CTA's rows of the panel: in shared memory (column-major, lds)
// or, for panels too tall for the chip, in place in global memory.
template <Layout L, bool kSmem>
struct PanelStore {
  float* s;
  int lds;
  MatrixView<L> g;
  __device__ __forceinline__ float& operator()(int r, int c) const {
    if constexpr (kSmem) {
      return s[c * lds + r];
    } else {
      return g(r, c);
    }
  }
};

template <Layout L, int NW, bool kSmem>
__global__ void __launch_bounds__(NW * 32) geqr2_kernel(const Geqr2Args p) {
  namespace cg = cooperative_groups;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  constexpr int NT = NW * 32;

  const int cs = p.cluster;
  const std::int64_t mat = blockIdx.x / cs;
  const int rank = static_cast<int>(blockIdx.x - mat * cs);
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  const int rb = rank * p.rows_per_cta;  // first panel row held by this CTA
  const int nloc = max(0, min(p.rows, rb + p.rows_per_cta) - rb);
  const bool want_t = p.t_out != nullptr || p.vt_out != nullptr;

  double* sNorm = reinterpret_cast<double*>(smem_raw);  // cluster slot: {sum sq, alpha}
  float* sP = reinterpret_cast<float*>(sNorm + 2);
  float* sTau = sP + (kSmem ? static_cast<std::size_t>(p.lds) * p.ncols : 0);
  float* sDot = sTau + round_up2(p.nrefl);               // cluster slots: partial dots
  float* sG = sDot + (cs > 1 ? round_up2(p.ncols) : 0);  // Gram matrix V^T V (upper)

  const MatrixView<L> A{p.a + mat * p.stride, p.ld};
  const MatrixView<L> Ap = A.offset(p.j0 + rb, p.j0);
  const PanelStore<L, kSmem> P{sP, p.lds, Ap};

  if constexpr (kSmem) {
    const int total = nloc * p.ncols;
    for (int idx = threadIdx.x; idx < total; idx += NT) {
      // Consecutive threads walk the contiguous direction of the global layout.
      const int r = L == Layout::row_major ? idx / p.ncols : idx % nloc;
      const int c = L == Layout::row_major ? idx % p.ncols : idx / nloc;
      sP[c * p.lds + r] = Ap(r, c);
    }
    __syncthreads();
  }

  cg::cluster_group cluster = cg::this_cluster();

  // This CTA's part of sum_{row > c} P(row, c)^2 and, if it holds row c, P(c, c).
  auto column_norm = [&](int c, double& ss, double& alpha) {
    double s = 0.0;
    for (int rl = max(0, c + 1 - rb) + lane; rl < nloc; rl += 32) {
      const double x = P(rl, c);
      s += x * x;
    }
    ss = warp_allreduce_sum(s);
    alpha = (c >= rb && c < rb + nloc) ? static_cast<double>(P(c - rb, c)) : 0.0;
  };

  double my_ss = 0.0, my_alpha = 0.0;  // state of the next column, in its owner warp
  if (warp == 0 && p.nrefl > 0) column_norm(0, my_ss, my_alpha);

  for (int j = 0; j < p.nrefl; ++j) {
    const int wj = j % NW;
    const int jl = j - rb;                 // local index of row j (held here if 0 <= jl < nloc)
    const int lo = max(0, j - rb);         // first local row with global row >= j

    // --- 1. the reflector ---------------------------------------------------------
    double ss = my_ss, alpha = my_alpha;
    if (cs > 1) {
      if (warp == wj && lane == 0) {
        sNorm[0] = ss;
        sNorm[1] = alpha;
      }
      cluster.sync();
      if (warp == wj) {
        ss = 0.0;
        alpha = 0.0;
        for (int q = 0; q < cs; ++q) {
          const double* rs = cluster.map_shared_rank(sNorm, q);
          ss += rs[0];
          alpha += rs[1];
        }
      }
    }
    if (warp == wj) {
      const double xnorm = sqrt(ss);
      double beta = alpha, tau = 0.0;
      if (xnorm != 0.0) {  // LAPACK: x == 0 exactly gives tau = 0, H = I. NaN goes here.
        const Reflector<double> h = slarfg_fp64(alpha, xnorm);
        beta = h.beta;
        tau = h.tau;
        const double scale = h.scale;
        for (int rl = max(0, j + 1 - rb) + lane; rl < nloc; rl += 32)
          P(rl, j) = static_cast<float>(static_cast<double>(P(rl, j)) * scale);
        if (jl >= 0 && jl < nloc && lane == 0) P(jl, j) = static_cast<float>(beta);
      }
      if (lane == 0) sTau[j] = static_cast<float>(tau);
    }
    __syncthreads();
    const float tj = sTau[j];

    // --- 3. dots, then the update of the columns right of j ----------------------------
    auto v_at = [&](int rl) { return rl == jl ? 1.0f : P(rl, j); };
    auto apply = [&](int c, float w) {
      const float tw = tj * w;
      const bool next = c == j + 1 && c < p.nrefl;
      const int lo_next = max(0, c + 1 - rb);
      double s = 0.0;
      for (int rl = lo + lane; rl < nloc; rl += 32) {
        const float x = fmaf(-tw, v_at(rl), P(rl, c));
        P(rl, c) = x;
        if (next && rl >= lo_next) s += static_cast<double>(x) * x;
      }
      if (next) {
        my_ss = warp_allreduce_sum(s);
        __syncwarp();
        my_alpha = (c >= rb && c < rb + nloc) ? static_cast<double>(P(c - rb, c)) : 0.0;
      }
    };
    auto wanted = [&](int c) { return c > j || (want_t && c < j); };

    for (int c = warp; c < p.ncols; c += NW) {
      if (!wanted(c)) continue;
      float acc = 0.0f;
      for (int rl = lo + lane; rl < nloc; rl += 32) acc = fmaf(v_at(rl), P(rl, c), acc);
      acc = warp_allreduce_sum(acc);
      if (cs > 1) {
        if (lane == 0) sDot[c] = acc;
      } else if (c < j) {
        if (lane == 0) sG[c * kGramLd + j] = acc;
      } else {
        apply(c, acc);
      }
    }
    if (cs > 1) {
      cluster.sync();
      for (int c = warp; c < p.ncols; c += NW) {
        if (!wanted(c)) continue;
        float w = 0.0f;
        for (int q = 0; q < cs; ++q) w += cluster.map_shared_rank(sDot, q)[c];
        if (c < j) {
          if (lane == 0) sG[c * kGramLd + j] = w;
        } else {
          apply(c, w);
        }
      }
    }
  }

  // --- larft: T from G and tau (one warp; in a cluster, rank 0: every rank holds G) -----
  if (want_t) {
    __syncthreads();  // G complete; also orders the panel for the V^T copy below
    if (warp == 0 && rank == 0) larft_warp(sG, sTau, p.nrefl, lane, p.t_out, p.t_stride, p.t_ld, mat);
  }

  // --- V^T for the GEMM trailing update ---------------------------------------------------
  if (p.vt_out != nullptr) {
    float* Vt = p.vt_out + mat * p.vt_stride;
    const int total = nloc * p.nrefl;
    for (int idx = threadIdx.x; idx < total; idx += NT) {
      const int rl = idx / p.nrefl, c = idx % p.nrefl, gr = rb + rl;
      Vt[static_cast<std::int64_t>(gr) * p.vt_ld + c] = gr > c ? P(rl, c) : (gr == c ? 1.0f : 0.0f);
    }
    if (rank == 0)
      for (int idx = threadIdx.x; idx < p.vt_pad * p.nrefl; idx += NT)
        Vt[static_cast<std::int64_t>(idx / p.nrefl - p.vt_pad) * p.vt_ld + idx % p.nrefl] = 0.0f;
  }

  // --- write back ---------------------------------------------------------------------------
  if constexpr (kSmem) {
    __syncthreads();
    const int total = nloc * p.ncols;
    for (int idx = threadIdx.x; idx < total; idx += NT) {
      const int r = L == Layout::row_major ? idx / p.ncols : idx % nloc;
      const int c = L == Layout::row_major ? idx % p.ncols : idx / nloc;
      Ap(r, c) = sP[c * p.lds + r];
    }
  }
  if (rank == 0)
    for (int j = threadIdx.x; j < p.nrefl; j += NT) p.tau[mat * p.tau_stride + p.j0 + j] = sTau[j];
  if (cs > 1) cluster.sync();  // no CTA may leave while others read its shared memory
}

}  // namespace batchqr::cuda
