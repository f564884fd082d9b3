// geqrf of a whole matrix in the shared memory of a thread-block cluster of S CTAs, for
// matrices past one CTA's (geqrf_cta.cuh): geqrf_cta's steps, spread over the cluster.
//
// Columns: the 8-column blocks are dealt out round robin (block b on CTA b mod S), so that
// every CTA keeps a share of the shrinking trailing matrix and the panels' owners rotate.
// Each CTA holds its blocks (all rows) in shared memory, as geqrf_cta holds the matrix.
//
// Panels of 8 columns, factored by warp 0 of their CTA (cta_panel_geqr2, the same code as
// geqrf_cta's), applied by six warps of every CTA to its own blocks right of the panel
// (cta_update_cols_fma / cta_update_cols_mma). Look-ahead of one panel across the cluster:
// the CTA that owns panel p + 1 applies panel p to p + 1's columns first (named barrier
// kClColsReady), so that its panel warp factors p + 1 while every CTA still applies p to the
// rest.
//
// Hand-off (mbarriers; the panel's chain is what bounds these matrices, so nothing on it waits
// for a whole-cluster barrier):
// - The panel warp writes V (row-major, unit diagonal), G and tau into its CTA's outbox and
//   sends them, from V's 32-row group on, to every other CTA's inbox of the panel's parity: one
//   bulk copy per CTA, completing on that CTA's `full` mbarrier, which the receiver armed with
//   the copy's bytes. Its own CTA's update warps read the outbox; the panel warp's arrival
//   completes their `full` (a bulk copy to the own CTA is not made: memcheck rejects it).
// - A CTA that has applied panel p re-arms its `full` of that parity for panel p + 2 and
//   arrives on `empty` of p + 2's owner, whose panel warp waits for all S before it factors
//   p + 2: every inbox of that parity is then free, and its outbox's last panel (p + 2 - S <= p)
//   has landed everywhere and been applied.
// Before a CTA ends, a cluster barrier: copies out of its outbox may still be in flight.
//
// Warp 4 shares warp 0's scheduler and stays idle (as in geqrf_cta), so the panel's chain
// issues alone there. Tiny, huge and NaN columns: as in geqrf_cta (a NaN stays in its matrix).
#pragma once

#include <cooperative_groups.h>

#include <cstdint>

#include "cuda/async_copy.cuh"
#include "cuda/cta_stage.cuh"
#include "cuda/dsmem.cuh"
#include "cuda/geqrf_cluster.hpp"
#include "cuda/geqrf_cta.cuh"
#include "cuda/matrix_view.cuh"
#include "cuda/tma.cuh"

namespace batchqr::cuda {

inline constexpr int kClWarps = 8;
inline constexpr int kClUpdateWarps = 6;  // warps 1-3 and 5-7
inline constexpr int kClNextWarps = 4;    // the next panel's 8 columns, two per warp
// The update takes 16-column tiles on the tensor cores once more than this many of the CTA's
// columns lie right of the panel (and the next panel), else four columns per warp and round.
inline constexpr int kClMmaMinCols = 48;
// Named barriers (0 is __syncthreads'): the next panel's columns are updated (its panel warp
// and kClNextWarps update warps); every update warp is done with a panel.
inline constexpr int kClColsReady = 1, kClUpdDone = 2;

__device__ __forceinline__ void cta_bar_arrive(int id, int count) {
  asm volatile("barrier.arrive %0, %1;" ::"r"(id), "r"(count) : "memory");
}

// Floats of a panel's hand-off: V (MR x 8, row-major), G (8 x 8), tau (8).
__host__ __device__ constexpr int cl_slot_floats(int MR) {
  return MR * kCtaBlkPanel + kCtaBlkPanel * kCtaBlkPanel + kCtaBlkPanel;
}
// 8-column blocks per CTA (the first CTAs may hold one more than the last).
__host__ __device__ constexpr int cl_local_blocks(int n, int ctas) {
  return ((n + kCtaBlkPanel - 1) / kCtaBlkPanel + ctas - 1) / ctas;
}
__host__ __device__ constexpr std::size_t geqrf_cluster_smem_bytes(int MR, int ctas, int n) {
  // two mbarriers of each kind, two inboxes and an outbox, the CTA's columns, tau
  return 4 * sizeof(std::uint64_t) +
         sizeof(float) * (3 * static_cast<std::size_t>(cl_slot_floats(MR)) +
                          static_cast<std::size_t>(cl_local_blocks(n, ctas)) * kCtaBlkPanel * cta_blk_ld(MR / 8) + MR);
}

template <Layout L, int MR>
__global__ void __launch_bounds__(32 * kClWarps, 1) geqrf_cluster_kernel(const Geqr2CtaArgs p) {
  static_assert(MR % 32 == 0, "32-row groups");
  constexpr int NB = kCtaBlkPanel, LD = cta_blk_ld(MR / 8), NRF = MR / 32, SLOT = cl_slot_floats(MR);
  extern __shared__ __align__(16) unsigned char smem_raw[];
  cooperative_groups::cluster_group cluster = cooperative_groups::this_cluster();
  const int S = static_cast<int>(cluster.num_blocks()), q = static_cast<int>(cluster.block_rank());
  const int m = p.m, n = p.n, nrefl = m < n ? m : n, npanels = (nrefl + NB - 1) / NB;
  const int nb = (n + NB - 1) / NB;
  // This CTA's blocks q, q + S, ...: local column lc is column gcol(lc); ncl of them are in
  // the matrix (the last block may be partial).
  const int nbl = q < nb ? (nb - q + S - 1) / S : 0;
  const int ncl = nbl == 0 ? 0 : NB * nbl - ((nb - 1) % S == q ? NB * nb - n : 0);
  auto gcol = [&](int lc) { return NB * (S * (lc / NB) + q) + lc % NB; };

  std::uint64_t* full = reinterpret_cast<std::uint64_t*>(smem_raw);  // [2] by panel parity
  std::uint64_t* empty = full + 2;                                    // [2]
  float* sIn = reinterpret_cast<float*>(empty + 2);  // [2][SLOT] V (rows from its group on), G, tau
  float* sOut = sIn + 2 * SLOT;                       // [SLOT] this CTA's panel, as it goes out
  float* sA = sOut + SLOT;                            // [NB nbl][LD] this CTA's columns; rows m .. MR - 1 zero
  float* sTau = sA + static_cast<std::size_t>(cl_local_blocks(n, S)) * NB * LD;  // [MR] its panels' tau
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const std::int64_t mat = blockIdx.x / S;
  const MatrixView<L> A{p.a + mat * p.stride, p.ld};
  // Bytes of panel pi's hand-off: V from its 32-row group on, G, tau.
  auto copy_bytes = [&](int pi) {
    return static_cast<unsigned>(sizeof(float) * (SLOT - ((NB * pi) & ~31) * NB));
  };

  if (threadIdx.x == 0) {
    mbarrier_init(full, 1);
    mbarrier_init(full + 1, 1);
    mbarrier_init(empty, S);
    mbarrier_init(empty + 1, S);
    mbarrier_init_fence();
  }
  // --- stage in: this CTA's columns (8-column blocks: 32-byte runs of a row-major row) -------
  if constexpr (L == Layout::row_major) {
    cta_row_major_tiles<kClWarps, kCtaBlkStageRows>(MR, ncl, [&](int r, int lc) {
      if (r < m) async_copy(sA + lc * LD + r, &A(r, gcol(lc)));
      else sA[lc * LD + r] = 0.0f;
    });
  } else {
    for (int lc = warp; lc < ncl; lc += kClWarps)
      for (int r = lane; r < MR; r += 32) {
        if (r < m) async_copy(sA + lc * LD + r, &A(r, gcol(lc)));
        else sA[lc * LD + r] = 0.0f;
      }
  }
  async_wait();
  __syncthreads();
  // Arms `full` of panel pi's parity: for the bytes of its copy, or (this CTA's own panel) not
  // at all, the panel warp's arrival completes it.
  auto arm = [&](int pi, bool own) {
    if (!own) mbarrier_arrive_expect_tx(full + (pi & 1), copy_bytes(pi));
  };
  if (threadIdx.x == 0) {  // the first two panels
    arm(0, q == 0);
    if (npanels > 1) arm(1, q == 1);
  }
  cluster.sync();  // every CTA's barriers exist before any copy or arrival

  if (warp == 0) {
    // --- the panels of this CTA: blocks q, q + S, ... ---------------------------------------
    int waited[2] = {0, 0};  // phases of empty[parity] waited for so far
    // (no divisions by S on the chain: ~150 cycles each at run-time S)
    for (int pi = q, lb = 0; pi < npanels; pi += S, ++lb) {  // lb: the panel's local block
      const int j0 = NB * pi, par = pi & 1;
      if (pi > 0) cta_bar_sync(kClColsReady, 32 * (1 + kClNextWarps));  // its columns have panel pi - 1
      if (pi >= 2) {
        mbarrier_wait_cluster(empty + par, waited[par] & 1);
        ++waited[par];
      }
      const int nv = NRF - (j0 >> 5), kb = min(NB, nrefl - j0);
      static_panel_dispatch<NRF, (kCtaPanelHeights < NRF ? kCtaPanelHeights : NRF)>(nv, [&](auto nr_c) {
        cta_panel_geqr2<decltype(nr_c)::value>(sA + NB * lb * LD, LD, n - j0, sOut, sOut + MR * NB,
                                                sOut + MR * NB + NB * NB, sTau + j0, j0, kb, nv);
      });
      fence_proxy_async_shared();  // the outbox's writes before the copies' reads
      __syncwarp();
      if (lane < S && lane != q) {
        const int v0 = (j0 & ~31) * NB;
        bulk_copy_to_cluster(dsmem_address(sIn + par * SLOT + v0, lane), sOut + v0, copy_bytes(pi),
                             dsmem_address(full + par, lane));
      }
      if (lane == 0) mbarrier_arrive(full + par);  // this CTA's update warps read the outbox
    }
  } else if (warp % 4 != 0) {
    // --- the update warps: every panel on this CTA's columns right of it -----------------------
    const int uw = warp - 1 - warp / 4;
    int owner = 0;  // pi % S, counted (no divisions by S on the chain)
    int cr = 0;     // this CTA's first column right of panel pi
    for (int pi = 0; pi < npanels; ++pi) {
      const int j0 = NB * pi, g0 = j0 >> 5, par = pi & 1;
      const bool own = owner == q;
      if (own) cr += NB;
      owner = owner + 1 == S ? 0 : owner + 1;  // (pi + 1) % S
      // The next panel's columns first where this CTA owns it: its panel warp waits for them.
      const bool next = pi + 1 < npanels && owner == q;
      const int owner2 = owner + 1 == S ? 0 : owner + 1;  // (pi + 2) % S
      mbarrier_wait(full + par, (pi >> 1) & 1);
      const float* sV = own ? sOut : sIn + par * SLOT;
      const float* sG = sV + MR * NB;
      const float* sTp = sG + NB * NB;
      int c = cr;
      if (next) {
        if (uw < kClNextWarps) {
          if (2 * uw < ncl - c) cta_update_cols_fma<2, MR>(sA, LD, sV, sG, sTp, c + 2 * uw, ncl, g0);
          cta_bar_arrive(kClColsReady, 32 * (1 + kClNextWarps));
        }
        c += NB;
      }
      // The rest (the first tasks to the warps that had none of the next panel's columns).
      const int u0 = next ? (uw + kClUpdateWarps - kClNextWarps) % kClUpdateWarps : uw;
      if (ncl - c > kClMmaMinCols) {
        for (int u = u0; c + 16 * u < ncl; u += kClUpdateWarps)
          cta_update_cols_mma<MR>(sA, LD, sV, sG, sTp, c + 16 * u, ncl, 32 * g0);
      } else {
        for (int u = u0; c + 4 * u < ncl; u += kClUpdateWarps)
          cta_update_cols_fma<4, MR>(sA, LD, sV, sG, sTp, c + 4 * u, ncl, g0);
      }
      cta_bar_sync(kClUpdDone, 32 * kClUpdateWarps);
      if (uw == 0 && lane == 0 && pi + 2 < npanels) {
        arm(pi + 2, owner2 == q);
        fence_proxy_async_shared();  // this CTA's reads of the inbox before the next copy's writes
        // (its own barrier by the local form, which racecheck follows)
        if (owner2 == q) mbarrier_arrive(empty + par);
        else mbarrier_arrive_cluster(dsmem_address(empty + par, owner2));
      }
    }
  }
  __syncthreads();

  // --- write back: this CTA's columns and its panels' tau ------------------------------------
  if constexpr (L == Layout::row_major) {
    cta_row_major_tiles<kClWarps, kCtaBlkStageRows>(m, ncl, [&](int r, int lc) { A(r, gcol(lc)) = sA[lc * LD + r]; });
  } else {
    for (int lc = warp; lc < ncl; lc += kClWarps)
      for (int r = lane; r < m; r += 32) A(r, gcol(lc)) = sA[lc * LD + r];
  }
  float* tau = p.tau + mat * p.tau_stride;
  for (int j = threadIdx.x; j < nrefl; j += 32 * kClWarps)
    if ((j / NB) % S == q) tau[j] = sTau[j];
  cluster.sync();  // copies out of this CTA's outbox have landed everywhere
}

}  // namespace batchqr::cuda
