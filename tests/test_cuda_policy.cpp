// The CUDA backend's kernel-selection policy, checked on the host (no GPU needed): every
// plan names a compiled kernel configuration that covers its matrix or panel, and the
// workspace it asks for holds what the driver carves from it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <tuple>

#include "batchqr/batchqr.hpp"
#include "cuda/geqr2_warp_launch.hpp"
#include "cuda/geqr2_wcol.hpp"
#include "cuda/larft_merge.hpp"
#include "cuda/larfb_stripe.hpp"
#include "cuda/larfb_stripe64.hpp"
#include "cuda/policy.hpp"
#include "test_util.hpp"

namespace batchqr::cuda {
namespace {

DeviceInfo h200() {
  DeviceInfo d;
  d.cc_major = 9;
  d.sm_count = 132;
  d.smem_per_block_optin = 232448;  // 227 KB
  d.smem_per_sm = 233472;
  d.cluster_launch = true;
  // cudaOccupancyMaxActiveClusters on the H200 (docs/perf-notes.md v26): 132 SMs hold 66
  // clusters of 2 but only 39 of 3 and 30 of 4
  const int clusters[] = {0, 0, 66, 39, 30, 22, 17, 15, 15};
  for (int c = 0; c <= 8; ++c) d.whole_sm_clusters[c] = clusters[c];
  return d;
}

void expect_valid_reg(const RegConfig& rc, int rows, int ncols) {
  ASSERT_GT(rc.rows_per_warp, 0) << rows << " x " << ncols;
  bool compiled = false;
  for (const RegShape& s : kRegShapes)
    compiled |= s.rows_per_warp == rc.rows_per_warp && s.col_tiles == rc.col_tiles && s.max_warps == rc.max_warps;
  EXPECT_TRUE(compiled) << "R=" << rc.rows_per_warp << " CT=" << rc.col_tiles;
  EXPECT_GE(rc.cluster * rc.warps * rc.rows_per_warp, rows);
  if (rc.cluster == 1) {
    EXPECT_LT((rc.warps - 1) * rc.rows_per_warp, rows) << "a warp with no rows";
  } else {
    EXPECT_LE(rc.cluster, kMaxCluster);
    EXPECT_EQ(rc.col_tiles, 1);
    EXPECT_GE(rc.warps * rc.rows_per_warp, 128) << "row j of every reflector must lie in rank 0";
    EXPECT_LT((rc.cluster - 1) * rc.warps * rc.rows_per_warp, rows) << "a CTA with no rows";
  }
  EXPECT_GE(32 * rc.col_tiles, ncols);
  EXPECT_LE(rc.warps, rc.max_warps);
}

// A one-launch kernel's configuration holds an m x n matrix.
void expect_valid_one(const DeviceInfo& dev, const OneLaunchPlan& one, int m, int n) {
  SCOPED_TRACE(testing::Message() << "one launch of " << m << " x " << n);
  switch (one.algorithm) {
    case Algorithm::warp:
      EXPECT_LE(m, 32);
      EXPECT_LE(n, 32);
      return;
    case Algorithm::fused:
      expect_valid_reg(one.fused_reg, m, n);
      return;
    case Algorithm::cta_blocked:
      EXPECT_GE(8 * one.cta_blk.rows_per_lane, m);
      EXPECT_LE(geqrf_cta_smem(one.cta_blk, n), dev.smem_per_block_optin);
      return;
    case Algorithm::cluster_blocked:
      EXPECT_GE(one.cluster_blk.rows, m);
      EXPECT_GE(one.cluster_blk.ctas, 2);
      EXPECT_LE(one.cluster_blk.ctas, kMaxCluster);
      EXPECT_LE(one.cluster_blk.ctas, (n + 7) / 8);
      EXPECT_LE(geqrf_cluster_smem(one.cluster_blk, n), dev.smem_per_block_optin);
      return;
    case Algorithm::cta:
      EXPECT_GE(8 * one.cta.rows_per_lane, m);
      EXPECT_GE(4 * one.cta.warps * one.cta.slots, n);
      EXPECT_LE(geqr2_cta_smem(one.cta, n), dev.smem_per_block_optin);
      return;
    case Algorithm::blocked:
      ADD_FAILURE() << "not a one-launch plan";
      return;
  }
}

void expect_valid_plan(const DeviceInfo& dev, const GeqrfDesc& d) {
  SCOPED_TRACE(testing::Message() << d.batch << " x " << d.m << " x " << d.n << (dev.tf32x3 ? " tf32x3" : " gemm"));
  const GeqrfPlan plan = make_plan(dev, d);
  EXPECT_EQ(make_plan(dev, d).workspace_bytes, plan.workspace_bytes);  // deterministic
  const int m = static_cast<int>(d.m), n = static_cast<int>(d.n), k = std::min(m, n);
  ASSERT_GE(plan.batch_chunk, 1);
  ASSERT_LE(plan.batch_chunk, d.batch);
  if (plan.algorithm != Algorithm::blocked) {
    expect_valid_one(dev, plan, m, n);
    EXPECT_EQ(plan.workspace_bytes, 0u);
    EXPECT_EQ(plan.tail_at, 0);
    return;
  }
  ASSERT_GE(plan.nb, 1);
  ASSERT_LE(plan.nb, 32);  // kMaxPanelWidth: T is one 32 x 32 tile
  EXPECT_EQ(plan.trailing, dev.tf32x3 ? Trailing::mma_tf32x3 : Trailing::gemm);
  // What the driver carves per matrix must fit: T, W and (gemm) V^T, double-buffered, and
  // for two-level blocking the inner W and the Gram blocks.
  const std::size_t bufs = plan.trailing == Trailing::gemm ? 2 : 1;
  const int handles = plan.trailing == Trailing::gemm ? 2 * plan.interleave : 0;  // two per lane
  EXPECT_TRUE(plan.interleave == 1 || (plan.interleave == 2 && plan.look_ahead && plan.trailing == Trailing::gemm));
  if (plan.trailing == Trailing::gemm) {
    const int nbo = plan.outer_nb;
    EXPECT_EQ(nbo % plan.nb, 0);
    EXPECT_GE(nbo, plan.nb);
    EXPECT_LE(nbo, std::max(kMaxOuterWidth, plan.nb));
    EXPECT_LE(nbo, k);
    EXPECT_GE(plan.t_floats, static_cast<std::size_t>(std::max(nbo, 32)) * std::max(nbo, 32));
    EXPECT_GE(plan.vt_floats, static_cast<std::size_t>(m) * nbo);
    EXPECT_GE(plan.w_floats, 2 * static_cast<std::size_t>(nbo) * n);
    if (nbo > plan.nb) {
      EXPECT_GE(plan.w_inner_floats, 2 * static_cast<std::size_t>(plan.nb) * (nbo - plan.nb));
      EXPECT_GE(plan.s_floats, static_cast<std::size_t>(nbo - 32) * (nbo - 32));
    }
    EXPECT_GE(plan.blas_bytes, kBlasWorkspace);
  } else {
    EXPECT_EQ(plan.blas_bytes, 0u);
  }
  const std::size_t one = (bufs * plan.t_floats + bufs * plan.vt_floats + plan.w_floats + plan.w_inner_floats +
                           plan.s_floats) * sizeof(float);
  const std::size_t blas = handles * (plan.blas_bytes + 256);
  EXPECT_GE(plan.workspace_bytes, blas + static_cast<std::size_t>(plan.batch_chunk) * one);
  // Bounded: a chunk of one matrix, or the chunk cap.
  EXPECT_LE(plan.workspace_bytes, blas + std::max(one, kMaxWorkspace));
  // The tail: a one-launch kernel on the trailing matrices from a column where an outer block starts.
  if (plan.tail_at > 0) {
    EXPECT_EQ(plan.trailing, Trailing::gemm);
    EXPECT_EQ(plan.tail_at % plan.outer_nb, 0);
    EXPECT_LT(plan.tail_at, k);
    expect_valid_one(dev, plan.tail, m - plan.tail_at, n - plan.tail_at);
  }
  for (int j0 = 0; j0 < k; j0 += plan.nb) {
    const int jb = std::min(plan.nb, k - j0), rows = m - j0;
    const PanelPlan pp = panel_plan(dev, rows, jb, jb, n - j0 - jb > 0, plan.batch_chunk);
    if (pp.wcol_rows_per_lane > 0) {
      EXPECT_GE(32 * pp.wcol_rows_per_lane, rows);
      EXPECT_LE(pp.smem_bytes, dev.smem_per_block_optin);
      EXPECT_EQ(pp.smem_bytes, geqr2_wcol_smem(pp.wcol_rows_per_lane));
      EXPECT_EQ(pp.wcol_rows_per_lane, geqr2_wcol_rows_per_lane(rows));
      continue;
    }
    if (pp.reg.rows_per_warp > 0) {
      expect_valid_reg(pp.reg, rows, jb);
      EXPECT_EQ(pp.reg.col_tiles, 1);
      continue;
    }
    EXPECT_LE(pp.smem_bytes, dev.smem_per_block_optin);
    EXPECT_GE(pp.cluster, 1);
    EXPECT_LE(pp.cluster, kMaxCluster);
    EXPECT_GE(static_cast<std::int64_t>(pp.rows_per_cta) * pp.cluster, rows);
    EXPECT_TRUE(pp.warps == 8 || pp.warps == 16 || pp.warps == 32);
  }
}

TEST(CudaPolicy, EveryPlanNamesACompiledKernelThatCoversIt) {
  for (bool tf32x3 : {false, true}) {
    DeviceInfo dev = h200();
    dev.tf32x3 = tf32x3;
    for (int m : {1, 2, 7, 31, 32, 33, 64, 65, 100, 176, 255, 256, 257, 352, 511, 512, 513, 1000, 1024, 1025, 2048,
                  4096, 20000})
      for (int n : {1, 2, 7, 31, 32, 33, 63, 64, 65, 100, 176, 352, 512, 777, 1024, 2048, 4096})
        for (std::int64_t batch : {1, 40, 640})
          expect_valid_plan(dev, make_geqrf_desc(m, n, batch));
  }
}

TEST(CudaPolicy, RandomShapesAndBatches) {
  std::mt19937_64 rng(test::fresh_seed());
  const DeviceInfo dev = h200();
  for (int i = 0; i < 400; ++i) {
    const int m = 1 + static_cast<int>(rng() % 3000), n = 1 + static_cast<int>(rng() % 3000);
    const std::int64_t batch = 1 + static_cast<std::int64_t>(rng() % 5000);
    expect_valid_plan(dev, make_geqrf_desc(m, n, batch));
  }
}

TEST(CudaPolicy, TinyMatricesTakeAWarpSmallOnesAreFusedLargeOnesBlocked) {
  const DeviceInfo dev = h200();
  EXPECT_EQ(make_plan(dev, make_geqrf_desc(32, 32, 20)).algorithm, Algorithm::warp);
  EXPECT_EQ(make_plan(dev, make_geqrf_desc(1, 1, 1)).algorithm, Algorithm::warp);
  EXPECT_EQ(make_plan(dev, make_geqrf_desc(33, 32, 20)).algorithm, Algorithm::cta_blocked);  // few: geqrf_cta
  EXPECT_EQ(make_plan(dev, make_geqrf_desc(32, 33, 20)).algorithm, Algorithm::cta_blocked);
  EXPECT_EQ(make_plan(dev, make_geqrf_desc(33, 32, 1000)).algorithm, Algorithm::fused);
  EXPECT_EQ(make_plan(dev, make_geqrf_desc(300, 48, 20)).algorithm, Algorithm::fused);  // tall
  EXPECT_EQ(warp_qr_rows(8, 32), 8);
  EXPECT_EQ(warp_qr_rows(9, 1), 16);
  EXPECT_EQ(warp_qr_rows(17, 17), 32);
  EXPECT_EQ(warp_qr_rows(0, 5), 0);
  EXPECT_EQ(make_plan(dev, make_geqrf_desc(64, 64, 1000)).algorithm, Algorithm::fused);
  EXPECT_EQ(make_plan(dev, make_geqrf_desc(176, 176, 40)).algorithm, Algorithm::cta_blocked);
  EXPECT_EQ(make_plan(dev, make_geqrf_desc(1000, 40, 3)).algorithm, Algorithm::blocked);  // 2 tiles, too tall
  EXPECT_EQ(make_plan(dev, make_geqrf_desc(1024, 32, 3)).algorithm, Algorithm::fused);   // 32 warps of 32 rows
}

// geqrf_cluster: past one CTA's shared memory (up to 416 rows and 512 columns, from 128
// columns), and ahead of geqrf_cta from 192 rows (or 176 rows and 192 columns), while the
// clusters are resident at once: 2 CTAs up to 264 columns at 256 rows, and up to two more
// while as many clusters of them are resident.
TEST(CudaPolicy, WholeMatrixOnAClusterPastOneCta) {
  const DeviceInfo dev = h200();
  for (auto [m, n, b, c] : {std::tuple{256, 256, 40, 2}, {300, 300, 40, 2}, {300, 300, 1, 4}, {352, 352, 1, 5},
                            {352, 352, 20, 5}, {352, 352, 23, 4}, {416, 416, 30, 4}, {416, 416, 1, 6},
                            {400, 128, 40, 2}, {130, 300, 40, 2}, {256, 256, 66, 2}, {256, 256, 1, 4},
                            {200, 400, 20, 4}, {352, 352, 39, 3}, {192, 192, 40, 2}, {192, 192, 66, 2},
                            {200, 200, 1, 4}, {224, 224, 40, 2}, {176, 256, 40, 2}, {200, 130, 40, 2}}) {
    const GeqrfPlan p = make_plan(dev, make_geqrf_desc(m, n, b));
    EXPECT_EQ(p.algorithm, Algorithm::cluster_blocked) << m << " x " << n << " x " << b;
    EXPECT_EQ(p.cluster_blk.ctas, c) << m << " x " << n << " x " << b;
    EXPECT_GE(p.cluster_blk.rows, m);
  }
  // more clusters than are resident at once, too few columns, too large, or geqrf_cta's
  for (auto [m, n, b] : {std::tuple{256, 256, 67}, {352, 352, 40}, {400, 400, 40}, {300, 100, 2}, {500, 500, 1},
                         {256, 600, 1}, {176, 176, 40}, {184, 184, 40}, {160, 256, 40}, {192, 192, 67},
                         {200, 100, 40}})
    EXPECT_NE(make_plan(dev, make_geqrf_desc(m, n, b)).algorithm, Algorithm::cluster_blocked)
        << m << " x " << n << " x " << b;
  PlanHints hints;
  hints.cta = 3;  // wherever a shape holds the matrix
  EXPECT_EQ(make_plan(dev, make_geqrf_desc(352, 352, 1000), hints).algorithm, Algorithm::cluster_blocked);
  EXPECT_EQ(make_plan(dev, make_geqrf_desc(64, 64, 1), hints).cluster_blk.ctas, 2);
  // a count of CTAs asked for, within the fewest that hold the matrix and one per block (8 at most)
  for (auto [m, n, b, ask, c] : {std::tuple{352, 352, 1000, 6, 6}, {352, 352, 1, 2, 3}, {352, 352, 1, 20, 8},
                                 {300, 40, 1, 8, 5}, {256, 256, 40, 3, 3}}) {
    hints.cluster_ctas = ask;
    EXPECT_EQ(make_plan(dev, make_geqrf_desc(m, n, b), hints).cluster_blk.ctas, c) << m << " x " << n << " x " << b;
  }
  hints.cluster_ctas = 0;
  EXPECT_EQ(make_plan(dev, make_geqrf_desc(417, 300, 1), hints).algorithm, Algorithm::blocked);
  DeviceInfo old = dev;
  old.cluster_launch = false;
  EXPECT_EQ(make_plan(old, make_geqrf_desc(300, 300, 40)).algorithm, Algorithm::blocked);
}

// geqrf_cta: matrices of at most 256 rows (and columns that fit its shared memory; from 192
// rows only past the resident clusters of geqrf_cluster) within one wave of one CTA per SM,
// of 65-192 columns within two, and of 65-128 rows and columns within four. geqr2_cta: small
// ones of at most 64 columns ahead of the register kernel; larger batches, rows or columns
// go blocked (or fused).
TEST(CudaPolicy, WholeMatrixInOneCtaForFewSmallMatrices) {
  const DeviceInfo dev = h200();  // 132 SMs
  for (auto [m, n, b] : {std::tuple{176, 176, 40}, {176, 176, 1}, {176, 176, 264}, {100, 100, 132}, {192, 192, 100},
                         {256, 128, 100}, {250, 70, 5}, {20, 190, 3}, {65, 65, 1}, {224, 224, 132}, {256, 200, 100},
                         {64, 64, 132}, {200, 64, 40}, {33, 33, 1}, {1, 50, 2}, {50, 1, 2}, {100, 48, 40},
                         {192, 192, 133}, {192, 192, 264}, {80, 80, 500}, {100, 100, 500}, {128, 128, 528},
                         {128, 100, 300}}) {
    const GeqrfPlan p = make_plan(dev, make_geqrf_desc(m, n, b));
    EXPECT_EQ(p.algorithm, Algorithm::cta_blocked) << m << " x " << n << " x " << b;
    EXPECT_GE(8 * p.cta_blk.rows_per_lane, m);
  }
  EXPECT_EQ(make_plan(dev, make_geqrf_desc(176, 176, 40)).cta_blk.rows_per_lane, 24);
  // Past one wave: 65-192 columns only; geqr2_cta keeps the small ones.
  for (auto [m, n, b] : {std::tuple{64, 64, 264}, {33, 33, 200}, {64, 48, 200}}) {
    const GeqrfPlan p = make_plan(dev, make_geqrf_desc(m, n, b));
    EXPECT_EQ(p.algorithm, Algorithm::cta) << m << " x " << n << " x " << b;
    EXPECT_GE(8 * p.cta.rows_per_lane, m);
    EXPECT_GE(4 * p.cta.warps * p.cta.slots, n);
  }
  EXPECT_EQ(make_plan(dev, make_geqrf_desc(64, 64, 264)).cta.slots, 1);
  for (auto [m, n, b] : {std::tuple{176, 176, 265}, {100, 100, 1000}, {257, 100, 5}, {200, 193, 133}, {256, 129, 265},
                         {300, 100, 2}, {224, 224, 264}, {192, 192, 265}, {128, 128, 529},
                         {129, 129, 500}, {256, 128, 500}, {64, 100, 500}})
    EXPECT_EQ(make_plan(dev, make_geqrf_desc(m, n, b)).algorithm, Algorithm::blocked) << m << " x " << n << " x " << b;
  for (auto [m, n, b] : {std::tuple{64, 64, 265}, {100, 48, 133}, {129, 64, 133}, {200, 64, 133}, {300, 40, 2},
                         {256, 64, 264}})
    EXPECT_EQ(make_plan(dev, make_geqrf_desc(m, n, b)).algorithm, Algorithm::fused) << m << " x " << n << " x " << b;
  PlanHints hints;
  hints.cta = 1;  // wherever a shape holds the matrix
  EXPECT_EQ(make_plan(dev, make_geqrf_desc(64, 64, 1000), hints).algorithm, Algorithm::cta);
  EXPECT_EQ(make_plan(dev, make_geqrf_desc(200, 64, 40), hints).algorithm, Algorithm::cta);
  EXPECT_EQ(make_plan(dev, make_geqrf_desc(32, 32, 1000), hints).algorithm, Algorithm::warp);  // tiny: still a warp
  EXPECT_EQ(make_plan(dev, make_geqrf_desc(176, 176, 40), hints).algorithm, Algorithm::cta);
  hints.cta = 2;  // geqrf_cta wherever a shape holds the matrix
  EXPECT_EQ(make_plan(dev, make_geqrf_desc(64, 64, 1000), hints).algorithm, Algorithm::cta_blocked);
  EXPECT_EQ(make_plan(dev, make_geqrf_desc(256, 203, 1000), hints).algorithm, Algorithm::cta_blocked);
  EXPECT_EQ(make_plan(dev, make_geqrf_desc(256, 204, 1), hints).algorithm, Algorithm::blocked);  // shared memory
  EXPECT_EQ(make_plan(dev, make_geqrf_desc(32, 32, 1000), hints).algorithm, Algorithm::warp);
  hints.cta = 0;
  EXPECT_EQ(make_plan(dev, make_geqrf_desc(176, 176, 40), hints).algorithm, Algorithm::blocked);
}

TEST(CudaPolicy, HugeBatchesAreChunkedUnderTheWorkspaceCap) {
  const DeviceInfo dev = h200();
  const GeqrfPlan plan = make_plan(dev, make_geqrf_desc(512, 512, 9000));
  EXPECT_LT(plan.batch_chunk, 9000);
  EXPECT_LE(plan.workspace_bytes, 2 * plan.interleave * (kBlasWorkspace + 256) + kMaxWorkspace);
}

TEST(CudaPolicy, LargeMatricesUseTwoLevelBlocking) {
  const DeviceInfo dev = h200();
  EXPECT_EQ(make_plan(dev, make_geqrf_desc(512, 512, 640)).outer_nb, outer_width(dev, 512, 512, 640));
  EXPECT_EQ(make_plan(dev, make_geqrf_desc(512, 512, 640)).outer_nb, 64);
  EXPECT_EQ(make_plan(dev, make_geqrf_desc(512, 512, 132)).outer_nb, 64);
  EXPECT_EQ(make_plan(dev, make_geqrf_desc(512, 512, 40)).outer_nb, 32);  // few matrices of k < 768: one level
  EXPECT_EQ(make_plan(dev, make_geqrf_desc(768, 768, 100)).outer_nb, 64);
  EXPECT_EQ(make_plan(dev, make_geqrf_desc(1536, 1536, 30)).outer_nb, 64);
  EXPECT_EQ(make_plan(dev, make_geqrf_desc(1024, 1024, 60)).outer_nb, 64);
  EXPECT_EQ(make_plan(dev, make_geqrf_desc(4096, 4096, 2)).outer_nb, 64);  // few matrices, large enough
  EXPECT_EQ(make_plan(dev, make_geqrf_desc(3000, 3000, 4)).outer_nb, 64);
  EXPECT_EQ(make_plan(dev, make_geqrf_desc(8192, 8192, 1)).outer_nb, 64);
  EXPECT_EQ(make_plan(dev, make_geqrf_desc(4096, 4096, 1)).outer_nb, 32);  // batch x k^2 below kTwoLevelMinWork
  EXPECT_EQ(make_plan(dev, make_geqrf_desc(2048, 2048, 4)).outer_nb, 32);
  EXPECT_EQ(make_plan(dev, make_geqrf_desc(2048, 2048, 8)).outer_nb, 64);
  EXPECT_EQ(make_plan(dev, make_geqrf_desc(1536, 1536, 8)).outer_nb, 32);  // batch x k^2 below kTwoLevelMinWork
  EXPECT_EQ(make_plan(dev, make_geqrf_desc(1024, 1024, 16)).outer_nb, 32);
  EXPECT_EQ(make_plan(dev, make_geqrf_desc(768, 768, 40)).outer_nb, 32);
  EXPECT_EQ(make_plan(dev, make_geqrf_desc(1024, 1024, 30)).outer_nb, 64);
  EXPECT_EQ(make_plan(dev, make_geqrf_desc(300, 300, 40)).outer_nb, 32);
  PlanHints hints;
  hints.cta = 0;  // the blocked path, also where geqr2_cta would take the matrix
  hints.outer_nb = 96;
  EXPECT_EQ(make_plan(dev, make_geqrf_desc(512, 512, 640), hints).outer_nb, 96);
  hints.outer_nb = 100;  // rounded down to a multiple of the panel width
  EXPECT_EQ(make_plan(dev, make_geqrf_desc(512, 512, 640), hints).outer_nb, 96);
  hints.outer_nb = 128;  // never wider than the matrix
  EXPECT_EQ(make_plan(dev, make_geqrf_desc(100, 90, 640), hints).outer_nb, 64);
}

TEST(CudaPolicy, ForcedPanelRowsPerWarpWhereAShapeHoldsThePanel) {
  const DeviceInfo dev = h200();
  PlanHints hints;
  hints.panel.rows_per_warp = 16;
  const GeqrfPlan plan = make_plan(dev, make_geqrf_desc(256, 256, 1000), hints);
  EXPECT_EQ(plan.panel.rows_per_warp, 16);
  PanelHints reg_policy;
  reg_policy.wcol = 0;
  EXPECT_EQ(panel_plan(dev, 256, 32, 32, true, 1000, reg_policy).reg.rows_per_warp, 32);  // the policy's
  const PanelPlan forced = panel_plan(dev, 256, 32, 32, true, 1000, plan.panel);
  EXPECT_EQ(forced.reg.rows_per_warp, 16);
  EXPECT_EQ(forced.reg.warps, 16);
  EXPECT_EQ(forced.wcol_rows_per_lane, 0);
  // A forced R also keeps the panel off geqr2_wcol; no 16-row shape holds 512 rows: the
  // register panel's own choice.
  PanelHints reg_only;
  reg_only.wcol = 0;
  const PanelPlan forced512 = panel_plan(dev, 512, 32, 32, true, 1000, plan.panel);
  EXPECT_EQ(forced512.wcol_rows_per_lane, 0);
  EXPECT_EQ(forced512.reg.rows_per_warp, panel_plan(dev, 512, 32, 32, true, 1000, reg_only).reg.rows_per_warp);
}

TEST(CudaPolicy, TallerPanelsUpTo1024RowsOnWarpsThatOwnColumns) {
  const DeviceInfo dev = h200();
  for (std::int64_t batch : {1, 40, 640}) {
    for (int rows : {129, 160, 176, 192, 193, 257, 300, 384, 385, 512, 513, 640, 768, 769, 1000, 1024}) {
      const PanelPlan pp = panel_plan(dev, rows, 32, 32, true, batch);
      EXPECT_GT(pp.wcol_rows_per_lane, 0) << rows;
      EXPECT_GE(32 * pp.wcol_rows_per_lane, rows);
      EXPECT_LT(32 * (pp.wcol_rows_per_lane - 4), rows);  // the smallest that holds the panel
      EXPECT_EQ(pp.reg.rows_per_warp, 0);
    }
    for (int rows : {1, 31, 32, 100, 128, 1025, 2048}) EXPECT_EQ(panel_plan(dev, rows, 32, 32, true, batch).wcol_rows_per_lane, 0) << rows;
  }
  EXPECT_EQ(geqr2_wcol_rows_per_lane(384), 12);
  EXPECT_EQ(geqr2_wcol_rows_per_lane(385), 16);
  EXPECT_EQ(geqr2_wcol_rows_per_lane(1025), 0);
  // Hints: on for any panel it holds, off everywhere.
  PanelHints on, off;
  on.wcol = 1;
  off.wcol = 0;
  EXPECT_EQ(panel_plan(dev, 100, 20, 20, true, 40, on).wcol_rows_per_lane, 4);
  EXPECT_EQ(panel_plan(dev, 1024, 32, 32, true, 40, off).wcol_rows_per_lane, 0);
  EXPECT_GT(panel_plan(dev, 1024, 32, 32, true, 40, off).reg.rows_per_warp, 0);
}

// Panels of 32 columns and 1025-8192 rows: the Cholesky QR panel, the fewest CTAs of at most
// 512 rows (a multiple of 32), before the cluster register panel it falls back to; and
// geqr2_wcol's panels of few matrices.
TEST(CudaPolicy, TallPanelsOf32ColumnsByCholeskyQr) {
  const DeviceInfo dev = h200();
  auto cfg = [&](int rows, int ncols, std::int64_t batch = 2, const PanelHints& hints = {}) {
    return chol_panel_config(dev, rows, ncols, batch, panel_plan(dev, rows, ncols, ncols, true, batch, hints), hints);
  };
  for (int rows : {1025, 1100, 2048, 2049, 3000, 4096, 4097, 6000, 8192}) {
    const CholConfig c = cfg(rows, 32);
    EXPECT_GE(c.cluster, 2) << rows;
    EXPECT_LE(c.cluster, kCholMaxCluster) << rows;
    EXPECT_EQ(c.rows_per_cta % 32, 0) << rows;
    EXPECT_LE(c.rows_per_cta, kCholMaxRowsPerCta) << rows;
    EXPECT_GE(static_cast<long>(c.cluster) * c.rows_per_cta, rows) << rows;
    EXPECT_LE(geqr2_chol_smem(c.rows_per_cta, c.cluster), dev.smem_per_block_optin) << rows;
  }
  EXPECT_EQ(cfg(4096, 32).cluster, 8);
  EXPECT_EQ(cfg(4096, 32).rows_per_cta, 512);
  EXPECT_EQ(cfg(8192, 32).cluster, 16);
  EXPECT_EQ(cfg(8193, 32).cluster, 0);  // past 16 x 512 rows
  EXPECT_EQ(cfg(4096, 16).cluster, 0);  // only full 32-column panels
  PanelHints off, rows256;
  off.chol = 0;
  rows256.chol_rows = 256;
  EXPECT_EQ(cfg(4096, 32, 2, off).cluster, 0);
  EXPECT_EQ(cfg(4096, 32, 2, rows256).cluster, 16);
  EXPECT_EQ(cfg(4096, 32, 2, rows256).rows_per_cta, 256);
  EXPECT_EQ(cfg(6000, 32, 2, rows256).cluster, 0);  // 24 CTAs: more than a cluster holds
  // geqr2_wcol's panels (193-1024 rows) of at most kCholShortMaxBatch matrices, on CTAs
  // of at most 256 rows, at least two; at any batch with hint 2, never with hint 1.
  EXPECT_EQ(cfg(1024, 32, 8).cluster, 4);
  EXPECT_EQ(cfg(1024, 32, 8).rows_per_cta, 256);
  EXPECT_EQ(cfg(700, 32, 1).cluster, 3);
  EXPECT_EQ(cfg(512, 32, 4).cluster, 2);
  EXPECT_EQ(cfg(384, 32, 2).rows_per_cta, 192);
  EXPECT_EQ(cfg(193, 32, 1).cluster, 2);
  EXPECT_EQ(cfg(193, 32, 1).rows_per_cta, 128);
  EXPECT_EQ(cfg(150, 32, 1).cluster, 0);  // geqr2_wcol's since v37, but the rule starts at 193 rows
  EXPECT_EQ(cfg(192, 32, 1).cluster, 0);
  EXPECT_EQ(cfg(120, 32, 1).cluster, 0);  // the register panel's: no flagged variant
  // Past kCholShortMaxBatch matrices, panels of more than 768 rows while their CTAs fit in
  // one wave (132 SMs).
  EXPECT_EQ(cfg(1024, 32, 33).cluster, 4);
  EXPECT_EQ(cfg(1024, 32, 34).cluster, 0);
  EXPECT_EQ(cfg(769, 32, 33).cluster, 4);
  EXPECT_EQ(cfg(768, 32, 9).cluster, 0);
  EXPECT_EQ(cfg(512, 32, kCholShortMaxBatch + 1).cluster, 0);
  EXPECT_EQ(cfg(1024, 32, 640).cluster, 0);
  PanelHints shorter, tall_only;
  shorter.chol = 2;
  tall_only.chol = 1;
  EXPECT_EQ(cfg(1024, 32, 640, shorter).cluster, 4);
  EXPECT_EQ(cfg(1024, 32, 1, tall_only).cluster, 0);
  EXPECT_EQ(cfg(4096, 32, 1, tall_only).cluster, 8);
  EXPECT_EQ(cfg(1024, 32, 1, off).cluster, 0);
  EXPECT_EQ(cfg(4096, 32, 2, shorter).cluster, 8);
  // The one-CTA form: geqr2_wcol's panels of 257-512 rows while the batch fills a wave of
  // two CTAs per SM (132 SMs), or any of its panels of at most 512 rows with hint 3
  // (taller ones as with hint 2).
  PanelHints one_cta;
  one_cta.chol = 3;
  EXPECT_EQ(cfg(512, 32, 640).cluster, 1);
  EXPECT_EQ(cfg(512, 32, 640).rows_per_cta, 512);
  EXPECT_EQ(cfg(450, 32, 264).rows_per_cta, 480);
  EXPECT_EQ(cfg(257, 32, 264).rows_per_cta, 288);
  EXPECT_EQ(cfg(512, 32, 263).cluster, 0);
  EXPECT_EQ(cfg(256, 32, 640).cluster, 0);
  EXPECT_EQ(cfg(193, 32, 640, one_cta).rows_per_cta, 224);
  EXPECT_EQ(cfg(513, 32, 640).cluster, 0);
  EXPECT_EQ(cfg(150, 32, 640).cluster, 0);  // the register panel's
  EXPECT_EQ(cfg(512, 32, 640, off).cluster, 0);
  EXPECT_EQ(cfg(512, 32, 640, tall_only).cluster, 0);
  EXPECT_EQ(cfg(300, 32, 1, one_cta).cluster, 1);
  EXPECT_EQ(cfg(700, 32, 1, one_cta).cluster, 3);
  EXPECT_LE(2 * (geqr2_chol_smem(512, 1) + 1024), static_cast<std::size_t>(dev.smem_per_sm));  // two per SM
  DeviceInfo old = dev;
  old.cluster_launch = false;
  EXPECT_EQ(geqr2_chol_config(old, 4096).cluster, 0);
}

TEST(CudaPolicy, TallPanelsInTheRegistersOfACluster) {
  const DeviceInfo dev = h200();
  for (int rows : {1025, 1100, 2048, 2049, 3000, 4096, 4097, 6000, 8192}) {
    const RegConfig rc = reg_cluster_config(dev, rows, 32);
    expect_valid_reg(rc, rows, 32);
    EXPECT_GT(rc.cluster, 1) << rows;
  }
  EXPECT_EQ(reg_cluster_config(dev, 4096, 32).cluster, 8);
  EXPECT_EQ(reg_cluster_config(dev, 4096, 32).rows_per_warp, 32);
  EXPECT_EQ(reg_cluster_config(dev, 4096, 32).max_warps, 16);
  EXPECT_EQ(reg_cluster_config(dev, 2048, 32).cluster, 8);
  EXPECT_EQ(reg_cluster_config(dev, 2048, 32).rows_per_warp, 16);
  EXPECT_EQ(reg_cluster_config(dev, 1100, 32).cluster, 8);
  EXPECT_EQ(reg_cluster_config(dev, 2048, 32, 32).cluster, 4);  // forced R = 32
  EXPECT_EQ(reg_cluster_config(dev, 2048, 32, 32).rows_per_warp, 32);
  EXPECT_EQ(reg_cluster_config(dev, 8192, 32).max_warps, 32);
  EXPECT_EQ(reg_cluster_config(dev, 8193, 32).rows_per_warp, 0);  // past 8 x 1024 rows
  EXPECT_EQ(reg_cluster_config(dev, 1024, 32).rows_per_warp, 0);  // one CTA holds it
  DeviceInfo old = dev;
  old.cluster_launch = false;
  EXPECT_EQ(reg_cluster_config(old, 4096, 32).rows_per_warp, 0);
  PanelHints off;
  off.reg_cluster = 0;
  EXPECT_EQ(panel_plan(dev, 4096, 32, 32, true, 2, off).reg.rows_per_warp, 0);  // geqr2_kernel
  EXPECT_EQ(panel_plan(dev, 4096, 32, 32, true, 2).reg.cluster, 8);
  // A forced cluster size (tuning clients) wherever rank 0 keeps the first 32 rows.
  PanelHints four;
  four.reg_cluster = 4;
  const PanelPlan p176 = panel_plan(dev, 176, 32, 32, true, 40, four);
  EXPECT_EQ(p176.reg.cluster, 4);
  EXPECT_EQ(p176.reg.rows_per_warp * p176.reg.warps, 48);
  EXPECT_EQ(p176.cluster, 4);
  EXPECT_EQ(panel_plan(dev, 100, 32, 32, true, 40, four).reg.cluster, 1);  // 25 rows per CTA: one CTA
  EXPECT_EQ(panel_plan(dev, 176, 32, 32, true, 40).reg.cluster, 1);        // the policy: one CTA
}

TEST(CudaPolicy, StripeUpdatesAtEveryBatch) {
  const DeviceInfo dev = h200();
  PlanHints blocked;
  blocked.cta = 0;  // the blocked path, also where geqr2_cta would take the matrix
  for (auto [m, b] : {std::pair{176, 40}, {256, 1}, {300, 40}, {352, 40}, {4096, 2}, {2048, 8}}) {
    const GeqrfPlan p = make_plan(dev, make_geqrf_desc(m, m, b), blocked);
    EXPECT_TRUE(p.stripe_update) << m << " x " << b;
    EXPECT_EQ(p.stripe_math, StripeMath::tf32x3);
    EXPECT_FALSE(p.fused_update) << m;  // larfb_stripe takes all its updates
  }
  EXPECT_TRUE(make_plan(dev, make_geqrf_desc(176, 176, 1000), blocked).stripe_update);  // fills the GPU: still the stripe
  EXPECT_FALSE(make_plan(dev, make_geqrf_desc(176, 176, 1000), blocked).fused_update);
  // Two level: at any batch.
  EXPECT_EQ(make_plan(dev, make_geqrf_desc(1024, 1024, 60)).outer_nb, 64);
  EXPECT_EQ(make_plan(dev, make_geqrf_desc(512, 512, 640)).outer_nb, 64);
  for (auto [m, b] : {std::pair{1024, 60}, {1536, 30}, {768, 100}, {640, 300}, {512, 640}, {512, 5000}})
    EXPECT_TRUE(make_plan(dev, make_geqrf_desc(m, m, b)).stripe_update) << m << " x " << b;
  PlanHints hints = blocked;
  hints.stripe_update = 1;
  EXPECT_TRUE(make_plan(dev, make_geqrf_desc(640, 640, 300), hints).stripe_update);
  EXPECT_EQ(make_plan(dev, make_geqrf_desc(640, 640, 300), hints).stripe_math, StripeMath::fp32);
  hints.stripe_update = 0;
  EXPECT_FALSE(make_plan(dev, make_geqrf_desc(176, 176, 40), hints).stripe_update);
  EXPECT_TRUE(make_plan(dev, make_geqrf_desc(176, 176, 40), hints).fused_update);  // the previous rule
}

// larft_merge_pair on a cluster per matrix only where the batch leaves SMs idle: up to 8
// CTAs, at most the SMs per matrix, each with at least kMergePairMinRows rows; one CTA
// without cluster launches.
TEST(CudaPolicy, MergePairClusterForFewMatrices) {
  DeviceInfo dev = h200();
  EXPECT_EQ(merge_pair_ctas(dev, 4096, 2), 8);
  EXPECT_EQ(merge_pair_ctas(dev, 2048, 8), 7);   // (2048 - 32) / 256 rows
  EXPECT_EQ(merge_pair_ctas(dev, 1024, 60), 2);  // 132 / 60 SMs per matrix
  EXPECT_EQ(merge_pair_ctas(dev, 512, 640), 1);
  EXPECT_EQ(merge_pair_ctas(dev, 200, 1), 1);    // too few rows to share
  EXPECT_EQ(merge_pair_ctas(dev, 4096, 132), 1);
  EXPECT_EQ(merge_pair_ctas(dev, 4096, 66), 2);
  PlanHints hints;
  hints.merge_ctas = 5;
  EXPECT_EQ(make_plan(dev, make_geqrf_desc(1024, 1024, 60, Layout::row_major), hints).merge_ctas, 5);
  EXPECT_EQ(make_plan(dev, make_geqrf_desc(1024, 1024, 60, Layout::row_major)).merge_ctas, 0);
  dev.cluster_launch = false;
  EXPECT_EQ(merge_pair_ctas(dev, 4096, 2), 1);
  EXPECT_EQ(make_plan(dev, make_geqrf_desc(1024, 1024, 60, Layout::row_major), hints).merge_ctas, 1);
}

// larfb_stripe64 for outer blocks of 64 of row-major matrices from kStripe64MinItemsPerSm
// matrices x 64-column stripes per SM, where the build has its sm_90a code; never
// column-major, never in FP32 updates; hint 1 forces it, 0 forbids it.
TEST(CudaPolicy, Stripe64ForManyStripesPerSm) {
  const DeviceInfo dev = h200();
  EXPECT_TRUE(stripe64_update(dev, 512, 640));   // 5120 stripes: 39 per SM
  EXPECT_FALSE(stripe64_update(dev, 300, 300));  // 1500: 11
  EXPECT_FALSE(stripe64_update(dev, 1024, 60));  // 960: 7
  EXPECT_TRUE(stripe64_update(dev, 64, kStripe64MinItemsPerSm * 132));
  EXPECT_FALSE(stripe64_update(dev, 64, kStripe64MinItemsPerSm * 132 - 1));
  const bool built = larfb_stripe64_available(dev.cc_major, dev.cc_minor);
  const GeqrfDesc row = make_geqrf_desc(512, 512, 640, Layout::row_major);
  EXPECT_EQ(make_plan(dev, row).stripe64, built);
  EXPECT_EQ(make_plan(dev, row).stripe64_ctas, built ? 132 : 0);
  EXPECT_FALSE(make_plan(dev, make_geqrf_desc(512, 512, 640, Layout::col_major)).stripe64);
  EXPECT_FALSE(make_plan(dev, make_geqrf_desc(300, 300, 300, Layout::row_major)).stripe64);
  PlanHints hints;
  hints.cta = 0;
  hints.outer_nb = 64;  // (the policy's width at 300 columns is 32)
  EXPECT_FALSE(make_plan(dev, make_geqrf_desc(300, 300, 300, Layout::row_major), hints).stripe64);
  hints.stripe64 = 1;
  EXPECT_EQ(make_plan(dev, make_geqrf_desc(300, 300, 300, Layout::row_major), hints).stripe64, built);
  hints.stripe64 = 0;
  EXPECT_FALSE(make_plan(dev, row, hints).stripe64);
  hints.stripe64 = -1;
  hints.stripe_update = 1;  // FP32 updates: larfb_stripe's FMA form
  EXPECT_FALSE(make_plan(dev, row, hints).stripe64);
  DeviceInfo blackwell = dev;
  blackwell.cc_major = 10;  // no wgmma
  EXPECT_FALSE(make_plan(blackwell, row).stripe64);
}

// The look-ahead's form: the next outer block's columns on the side stream for two-level
// plans of row-major matrices (measured there), on the caller's stream otherwise; hints 1 and
// 2 pick the form, 0 turns the look-ahead off.
TEST(CudaPolicy, NextBlockOnTheSideStreamForTwoLevelRowMajor) {
  const DeviceInfo dev = h200();
  const GeqrfDesc row = make_geqrf_desc(512, 512, 640, Layout::row_major);
  EXPECT_TRUE(make_plan(dev, row).next_on_side);
  EXPECT_TRUE(make_plan(dev, make_geqrf_desc(2048, 2048, 8, Layout::row_major)).next_on_side);
  EXPECT_FALSE(make_plan(dev, make_geqrf_desc(512, 512, 640, Layout::col_major)).next_on_side);
  const GeqrfDesc one_level = make_geqrf_desc(1024, 1024, 8, Layout::row_major);
  ASSERT_EQ(make_plan(dev, one_level).outer_nb, 32);
  EXPECT_FALSE(make_plan(dev, one_level).next_on_side);
  PlanHints hints;
  hints.look_ahead = 2;
  EXPECT_TRUE(make_plan(dev, one_level, hints).next_on_side);
  hints.look_ahead = 1;
  EXPECT_FALSE(make_plan(dev, row, hints).next_on_side);
  EXPECT_TRUE(make_plan(dev, row, hints).look_ahead);
  hints.look_ahead = 0;
  EXPECT_FALSE(make_plan(dev, row, hints).next_on_side);
  EXPECT_FALSE(make_plan(dev, row, hints).look_ahead);
}

// LAPACK's crossover: the blocked path hands the trailing matrices to the first one-launch
// kernel that the policy takes whole at that size and batch, from an outer block's first
// column; hint 0 keeps the blocked path to the end.
// The batch interleave: two parts per chunk from 3/4 of a matrix per SM (99 on 132 SMs),
// only with the look-ahead, and two more cuBLAS workspaces for the second lane's handles.
TEST(CudaPolicy, BatchInterleaveFromThreeQuartersOfAMatrixPerSm) {
  const DeviceInfo dev = h200();
  const GeqrfPlan big = make_plan(dev, make_geqrf_desc(512, 512, 640));
  EXPECT_EQ(big.interleave, 2);
  EXPECT_EQ(make_plan(dev, make_geqrf_desc(300, 300, 99)).interleave, 2);
  EXPECT_EQ(make_plan(dev, make_geqrf_desc(300, 300, 98)).interleave, 1);
  EXPECT_EQ(make_plan(dev, make_geqrf_desc(1024, 1024, 60)).interleave, 1);
  EXPECT_EQ(make_plan(dev, make_geqrf_desc(2048, 2048, 8)).interleave, 1);
  PlanHints off, on, no_look_ahead;
  off.interleave = 1;
  on.interleave = 2;
  no_look_ahead.look_ahead = 0;
  const GeqrfPlan one = make_plan(dev, make_geqrf_desc(512, 512, 640), off);
  EXPECT_EQ(one.interleave, 1);
  EXPECT_EQ(one.batch_chunk, big.batch_chunk);
  EXPECT_EQ(big.workspace_bytes - one.workspace_bytes, 2 * (big.blas_bytes + 256));
  EXPECT_EQ(make_plan(dev, make_geqrf_desc(512, 512, 640), no_look_ahead).interleave, 1);
  EXPECT_EQ(make_plan(dev, make_geqrf_desc(2048, 2048, 8), on).interleave, 2);
  EXPECT_EQ(make_plan(dev, make_geqrf_desc(2048, 2048, 1), on).interleave, 1);  // one matrix: one part
  EXPECT_EQ(make_plan(dev, make_geqrf_desc(32, 32, 1000)).interleave, 1);        // one launch
  // Halves, enqueued block by block, unless hinted.
  EXPECT_EQ(big.interleave_first, 0);
  EXPECT_TRUE(big.interleave_by_block);
  PlanHints uneven;
  uneven.interleave_first = 264;
  uneven.interleave_order = 0;
  const GeqrfPlan u = make_plan(dev, make_geqrf_desc(512, 512, 640), uneven);
  EXPECT_EQ(u.interleave_first, 264);
  EXPECT_FALSE(u.interleave_by_block);
  EXPECT_EQ(u.workspace_bytes, big.workspace_bytes);
}

TEST(CudaPolicy, ChainUpdatesSplitWhereTheirCtasTakeHalfTheSms) {
  const DeviceInfo dev = h200();
  EXPECT_EQ(make_plan(dev, make_geqrf_desc(4096, 4096, 2)).chain_split_rows, 256);  // 32 CTAs
  EXPECT_EQ(make_plan(dev, make_geqrf_desc(2048, 2048, 8)).chain_split_rows, 256);  // 64
  EXPECT_EQ(make_plan(dev, make_geqrf_desc(1024, 1024, 8)).chain_split_rows, 256);  // 32
  EXPECT_EQ(make_plan(dev, make_geqrf_desc(2048, 2048, 9)).chain_split_rows, 0);    // 72
  EXPECT_EQ(make_plan(dev, make_geqrf_desc(1536, 1536, 30)).chain_split_rows, 0);
  EXPECT_EQ(make_plan(dev, make_geqrf_desc(1024, 1024, 60)).chain_split_rows, 0);
  EXPECT_EQ(make_plan(dev, make_geqrf_desc(512, 512, 640)).chain_split_rows, 0);
  EXPECT_EQ(chain_split_rows(dev, 256, 1), 0);  // one CTA's block already
  EXPECT_EQ(chain_split_rows(dev, 257, 33), 256);
  EXPECT_EQ(chain_split_rows(dev, 257, 34), 0);
  PlanHints off, forced;
  off.chain_split_rows = -1;
  forced.chain_split_rows = 128;
  EXPECT_EQ(make_plan(dev, make_geqrf_desc(4096, 4096, 2), off).chain_split_rows, 0);
  EXPECT_EQ(make_plan(dev, make_geqrf_desc(512, 512, 640), forced).chain_split_rows, 128);
  // larfb_stripe's clusters at a split: blocks of at most split rows, up to 16 CTAs, else
  // its own form.
  EXPECT_EQ(larfb_stripe_cluster(4096, 256), 16);
  EXPECT_EQ(larfb_stripe_cluster(700, 256), 3);
  EXPECT_EQ(larfb_stripe_cluster(200, 256), 1);
  EXPECT_EQ(larfb_stripe_cluster(4097, 256), larfb_stripe_cluster(4097));
  EXPECT_EQ(larfb_stripe_cluster(700), 1);
  EXPECT_EQ(larfb_stripe_cluster(1500, 1000), larfb_stripe_cluster(1500));  // past a split CTA's rows
  EXPECT_LT(larfb_stripe_smem_bytes(4096, 256), larfb_stripe_smem_bytes(4096));
}

TEST(CudaPolicy, BlockedPathEndsInAOneLaunchTail) {
  const DeviceInfo dev = h200();
  for (const Layout layout : {Layout::row_major, Layout::col_major}) {
    for (const auto& [m, n, batch] : {std::tuple{352, 352, 40}, std::tuple{512, 512, 640}, std::tuple{1024, 1024, 60},
                                       std::tuple{2048, 2048, 8}, std::tuple{4096, 4096, 2}, std::tuple{300, 300, 600},
                                       std::tuple{448, 448, 2}, std::tuple{600, 200, 64}, std::tuple{400, 600, 8}}) {
      SCOPED_TRACE(testing::Message() << batch << " x " << m << " x " << n);
      const GeqrfDesc d = make_geqrf_desc(m, n, batch, layout);
      const GeqrfPlan plan = make_plan(dev, d);
      ASSERT_EQ(plan.algorithm, Algorithm::blocked);
      ASSERT_GT(plan.tail_at, 0);
      EXPECT_GT(n - plan.tail_at, plan.nb);  // more than the last panel
      // The first such column: the block before it is still blocked.
      const int j = plan.tail_at;
      EXPECT_EQ(one_launch_plan(dev, m - j, n - j, plan.batch_chunk).algorithm, plan.tail.algorithm);
      if (j > plan.outer_nb)
        EXPECT_EQ(one_launch_plan(dev, m - j + plan.outer_nb, n - j + plan.outer_nb, plan.batch_chunk).algorithm,
                  Algorithm::blocked);
      PlanHints off;
      off.tail = 0;
      EXPECT_EQ(make_plan(dev, d, off).tail_at, 0);
      EXPECT_EQ(make_plan(dev, d, off).workspace_bytes, plan.workspace_bytes);
    }
  }
  // Which kernels: the suite's 40 x 352^2 ends on geqrf_cluster (288^2 on 2 CTAs), 60 x 1024^2
  // too (256^2), 8 x 2048^2 and 2 x 4096^2 on 6 CTAs (384^2), 640 x 512^2 in the register
  // kernel (64^2); and the GPU test's cases (OneLaunchTail).
  auto tail = [&](int m, int n, int batch) { return make_plan(dev, make_geqrf_desc(m, n, batch, Layout::row_major)); };
  EXPECT_EQ(tail(352, 352, 40).tail.algorithm, Algorithm::cluster_blocked);
  EXPECT_EQ(tail(352, 352, 40).tail_at, 64);
  EXPECT_EQ(tail(352, 352, 40).tail.cluster_blk.ctas, 2);
  EXPECT_EQ(tail(1024, 1024, 60).tail.algorithm, Algorithm::cluster_blocked);
  EXPECT_EQ(tail(1024, 1024, 60).tail_at, 768);
  EXPECT_EQ(tail(2048, 2048, 8).tail.algorithm, Algorithm::cluster_blocked);
  EXPECT_EQ(tail(2048, 2048, 8).tail_at, 1664);
  EXPECT_EQ(tail(4096, 4096, 2).tail_at, 3712);
  EXPECT_EQ(tail(512, 512, 640).tail.algorithm, Algorithm::fused);
  EXPECT_EQ(tail(512, 512, 640).tail_at, 448);
  EXPECT_EQ(tail(448, 448, 2).tail.algorithm, Algorithm::cluster_blocked);
  EXPECT_EQ(tail(700, 700, 4).tail.algorithm, Algorithm::cluster_blocked);
  EXPECT_EQ(tail(300, 300, 200).tail.algorithm, Algorithm::cta_blocked);
  EXPECT_EQ(tail(520, 520, 130).tail.algorithm, Algorithm::cta_blocked);
  EXPECT_EQ(tail(520, 520, 130).outer_nb, 64);
  EXPECT_EQ(tail(600, 200, 64).tail.algorithm, Algorithm::fused);
  EXPECT_EQ(tail(600, 200, 64).tail_at, 160);
  // No tail of one panel: the register kernel would take the last 12, 28 or 32 columns here.
  EXPECT_EQ(tail(1000, 300, 40).tail_at, 0);
  EXPECT_EQ(tail(1300, 700, 6).tail_at, 0);
  EXPECT_EQ(tail(1024, 512, 100).tail_at, 0);
  EXPECT_EQ(tail(300, 300, 600).tail.algorithm, Algorithm::fused);
  // The tf32x3 trailing update (Math::tf32x3) keeps its own loop.
  DeviceInfo tf = dev;
  tf.tf32x3 = true;
  EXPECT_EQ(make_plan(tf, make_geqrf_desc(352, 352, 40, Layout::row_major)).tail_at, 0);
}

// The row split that larfb_stripe's cluster variant assumes: one CTA up to 1024 rows; then
// at most 16 CTAs of at most 512 rows (a multiple of 32), every one of them holding rows,
// two per SM by shared memory; nothing past 8192 rows.
TEST(CudaPolicy, StripeClustersSplitTheRows) {
  const DeviceInfo dev = h200();
  for (int rows = 1; rows <= kLarfbStripeClusterMaxRows + 64; rows += rows < 1100 ? 37 : 97) {
    const int S = larfb_stripe_cluster(rows);
    if (rows > kLarfbStripeClusterMaxRows) {
      EXPECT_EQ(S, 0) << rows;
      continue;
    }
    if (rows <= kLarfbStripeMaxRows) {
      EXPECT_EQ(S, 1) << rows;
      EXPECT_LE(larfb_stripe_max_smem_bytes(rows), dev.smem_per_block_optin) << rows;
      continue;
    }
    ASSERT_GE(S, 2) << rows;
    ASSERT_LE(S, kLarfbStripeMaxCluster) << rows;
    const int cap = stripe_split_rows(rows, S);
    EXPECT_EQ(cap % 32, 0) << rows;
    EXPECT_LE(cap, kLarfbStripeSplitRows) << rows;
    EXPECT_LT((S - 1) * cap, rows) << rows;  // the last CTA holds rows too
    EXPECT_GE(S * cap, rows) << rows;
    EXPECT_LE(2 * (larfb_stripe_max_smem_bytes(rows) + 1024), dev.smem_per_sm) << rows;  // 1 KiB reserved per CTA
  }
  EXPECT_EQ(larfb_stripe_cluster(kLarfbStripeClusterMaxRows), kLarfbStripeMaxCluster);
}

// Updates taller than one CTA's stripe: the next panel's columns always on larfb_stripe;
// the trailing matrix's up to kStripeWideMaxRows rows at any batch, cuBLAS above.
TEST(CudaPolicy, TallWideUpdatesOnTheStripeUpToABound) {
  const DeviceInfo dev = h200();
  const GeqrfPlan p2 = make_plan(dev, make_geqrf_desc(4096, 4096, 2));
  EXPECT_TRUE(stripe_update_for(p2, 4096, 4032));
  EXPECT_TRUE(stripe_update_for(p2, 4096, 64));  // the next panel's columns
  EXPECT_TRUE(stripe_update_for(make_plan(dev, make_geqrf_desc(2048, 2048, 9)), 2048, 1984));
  const GeqrfPlan p1 = make_plan(dev, make_geqrf_desc(8192, 8192, 1));
  EXPECT_FALSE(stripe_update_for(p1, 8192, 8128));  // past kStripeWideMaxRows
  EXPECT_TRUE(stripe_update_for(p1, 8192, p1.outer_nb));
  EXPECT_TRUE(stripe_update_for(p1, kStripeWideMaxRows, 4032));  // later in the same matrix
  EXPECT_FALSE(stripe_update_for(p1, kStripeWideMaxRows + 1, 4032));
  const GeqrfPlan p30 = make_plan(dev, make_geqrf_desc(1536, 1536, 30));
  EXPECT_TRUE(stripe_update_for(p30, 1536, 1472));   // many matrices: still the stripe
  EXPECT_TRUE(stripe_update_for(make_plan(dev, make_geqrf_desc(1100, 1100, 1000)), 1100, 1036));
  EXPECT_TRUE(stripe_update_for(make_plan(dev, make_geqrf_desc(512, 512, 640)), 512, 448));
  PlanHints hints;
  hints.stripe_wide = 0;
  EXPECT_FALSE(stripe_update_for(make_plan(dev, make_geqrf_desc(4096, 4096, 2), hints), 4096, 4032));
  EXPECT_TRUE(stripe_update_for(make_plan(dev, make_geqrf_desc(4096, 4096, 2), hints), 4096, 64));
  hints.stripe_wide = 1;
  EXPECT_TRUE(stripe_update_for(make_plan(dev, make_geqrf_desc(8192, 8192, 1), hints), 8192, 8128));
  hints.stripe_update = 0;
  EXPECT_FALSE(stripe_update_for(make_plan(dev, make_geqrf_desc(512, 512, 640), hints), 512, 448));
}

TEST(CudaPolicy, FusedUpdatesOnlyByHintOrWithoutStripes) {
  const DeviceInfo dev = h200();
  PlanHints no_stripe;
  no_stripe.cta = 0;  // the blocked path, also where geqr2_cta would take the matrix
  no_stripe.stripe_update = 0;
  EXPECT_TRUE(make_plan(dev, make_geqrf_desc(176, 176, 40), no_stripe).fused_update);
  EXPECT_TRUE(make_plan(dev, make_geqrf_desc(256, 1000, 1), no_stripe).fused_update);
  EXPECT_FALSE(make_plan(dev, make_geqrf_desc(300, 300, 40), no_stripe).fused_update);    // more rows: cuBLAS
  EXPECT_FALSE(make_plan(dev, make_geqrf_desc(4096, 4096, 2), no_stripe).fused_update);
  EXPECT_FALSE(make_plan(dev, make_geqrf_desc(176, 176, 1000), no_stripe).fused_update);  // fills the GPU: cuBLAS
  EXPECT_FALSE(make_plan(dev, make_geqrf_desc(1024, 1024, 60), no_stripe).fused_update);  // two-level
  PlanHints hints;
  hints.cta = 0;
  hints.fused_update = 1;
  EXPECT_TRUE(make_plan(dev, make_geqrf_desc(176, 176, 1000), hints).fused_update);
  EXPECT_FALSE(make_plan(dev, make_geqrf_desc(1024, 1024, 60), hints).fused_update);  // never for two-level
  hints.fused_update = 0;
  EXPECT_FALSE(make_plan(dev, make_geqrf_desc(176, 176, 40), hints).fused_update);
}

}  // namespace
}  // namespace batchqr::cuda
