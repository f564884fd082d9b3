// The kernel-selection policy: docs/policy.md is the table, docs/perf-notes.md the
// measurements behind it.
#include <algorithm>

#include "cuda/geqr2.cuh"
#include "cuda/geqr2_chol.hpp"
#include "cuda/geqr2_reg.cuh"
#include "cuda/geqr2_warp_launch.hpp"
#include "cuda/geqr2_wcol.hpp"
#include "cuda/larfb.cuh"
#include "cuda/larfb_stripe.hpp"
#include "cuda/larfb_stripe64.hpp"
#include "cuda/larft_merge.hpp"
#include "cuda/policy.hpp"

namespace batchqr::cuda {
namespace {

std::size_t panel_bytes(int rows_per_cta, int ncols, int nrefl, int cluster, bool with_t, bool in_smem) {
  Geqr2Args a{};
  a.lds = rows_per_cta | 1;
  a.ncols = ncols;
  a.nrefl = nrefl;
  a.cluster = cluster;
  a.t_out = with_t ? reinterpret_cast<float*>(16) : nullptr;  // only its null-ness matters
  return geqr2_smem_bytes(a, in_smem);
}

}  // namespace

int panel_warps(int ncols) { return ncols >= 32 ? 32 : (ncols >= 16 ? 16 : 8); }

RegConfig reg_config(const DeviceInfo& dev, int rows, int ncols, std::int64_t batch, int force_rows_per_warp) {
  RegConfig rc;
  const int ct = (ncols + 31) / 32;
  if (ct < 1 || ct > kMaxRegColTiles || rows < 1) return rc;
  for (const RegShape& s : kRegShapes) {  // the fewest-warp shape of the forced R first
    const int w = (rows + s.rows_per_warp - 1) / s.rows_per_warp;
    if (s.rows_per_warp == force_rows_per_warp && s.col_tiles == ct && w <= s.max_warps)
      return RegConfig{s.rows_per_warp, ct, s.max_warps, w};
  }
  // While the batch leaves SMs idle (batch < SMs), latency rules: one tile takes the fewest
  // rows per warp with at most 16 warps (else the 32-warp shapes), two tiles 8 rows per
  // warp. With a CTA for every SM, throughput rules: 32 rows per warp, the fewest warps.
  // Measured (docs/perf-notes.md v4, v5; bench/geqr2_reg_sweep): every column is a chain of
  // latencies, which more warps shorten, until the per-warp share of the cross-warp sums
  // (one per column tile) and the issue slots of other CTAs dominate; e.g. 640 panels of
  // 256 x 32: 263 us with 16 warps of 16 rows, 172 us with 8 warps of 32 rows.
  const int min_r = batch >= dev.sm_count ? 32 : (ct == 1 ? 0 : 8);
  for (int pass = 0; pass < 2 && rc.rows_per_warp == 0; ++pass) {
    for (const RegShape& s : kRegShapes) {  // ascending R for each CT
      if (s.col_tiles != ct || (s.max_warps > 16) != (pass == 1) || s.rows_per_warp < min_r) continue;
      const int w = (rows + s.rows_per_warp - 1) / s.rows_per_warp;
      if (w <= s.max_warps) {
        rc.rows_per_warp = s.rows_per_warp;
        rc.col_tiles = ct;
        rc.max_warps = s.max_warps;
        rc.warps = w;
        break;
      }
    }
  }
  return rc;
}

RegConfig reg_cluster_config(const DeviceInfo& dev, int rows, int ncols, int force_rows_per_warp, int force_cluster) {
  RegConfig rc;
  if (!dev.cluster_launch || ncols < 1 || ncols > kMaxPanelWidth) return rc;
  const bool forced = force_cluster > 1;
  // Forced (tuning clients): exactly that many CTAs wherever rank 0 still holds the first
  // 32 rows. Else only past what one CTA holds.
  if (forced ? force_cluster > kMaxCluster || (rows + force_cluster - 1) / force_cluster < 32 : rows <= 32 * 32)
    return rc;
  // As in one CTA, fewer rows per warp shorten a column step (176x32: 16 rows per warp
  // 47 us, 32 rows 58 us, docs/perf-notes.md v7): 16 rows per warp while 8 CTAs of 16
  // warps hold the panel, then 32.
  constexpr RegShape kClusterShapes[] = {{16, 1, 16}, {32, 1, 16}, {32, 1, 32}};
  for (const RegShape& s : kClusterShapes) {
    if (force_rows_per_warp > 0 && s.rows_per_warp != force_rows_per_warp) continue;
    for (int cs = forced ? force_cluster : 2; cs <= (forced ? force_cluster : kMaxCluster); cs *= 2) {
      const int w = ((rows + cs - 1) / cs + s.rows_per_warp - 1) / s.rows_per_warp;
      if (w <= s.max_warps) return RegConfig{s.rows_per_warp, 1, s.max_warps, w, cs};
    }
  }
  return rc;
}

bool stripe_update_for(const GeqrfPlan& plan, int rows, int ncols) {
  if (!plan.stripe_update) return false;
  if (ncols <= plan.outer_nb || rows <= kLarfbStripeMaxRows) return true;
  return rows <= plan.stripe_wide_rows;
}

PanelPlan panel_plan(const DeviceInfo& dev, int rows, int ncols, int nrefl, bool with_t, std::int64_t batch,
                     const PanelHints& hints) {
  const std::size_t budget = dev.smem_per_block_optin;
  PanelPlan p;
  if (ncols <= kMaxPanelWidth && hints.reg_cluster <= 1 && hints.rows_per_warp == 0 &&
      (hints.wcol >= 0 ? hints.wcol != 0 : wcol_panel(dev, rows, ncols, batch, hints.wcol_min_rows))) {
    p.wcol_rows_per_lane = geqr2_wcol_rows_per_lane(rows);
    if (p.wcol_rows_per_lane > 0) {
      p.smem_bytes = geqr2_wcol_smem(p.wcol_rows_per_lane);
      if (p.smem_bytes <= budget) return p;
      p.wcol_rows_per_lane = 0;
    }
  }
  if (ncols <= kMaxPanelWidth) {
    // A register panel over a cluster, where `rc` is one.
    auto in_cluster = [&](const RegConfig& rc) {
      if (rc.rows_per_warp == 0) return false;
      p.reg = rc;
      p.cluster = rc.cluster;
      p.smem_bytes = geqr2_reg_smem_bytes(rc.warps, rc.max_warps, 32, 1, true);
      return true;
    };
    if (hints.reg_cluster > 1 &&
        in_cluster(reg_cluster_config(dev, rows, ncols, hints.rows_per_warp, hints.reg_cluster)))
      return p;
    p.reg = reg_config(dev, rows, ncols, batch, hints.rows_per_warp);
    if (p.reg.rows_per_warp > 0) {
      p.smem_bytes = geqr2_reg_smem_bytes(p.reg.warps, p.reg.max_warps, p.reg.rows_per_warp, p.reg.col_tiles);
      return p;
    }
    // Taller panels in the registers of a cluster (one cluster barrier per column) rather
    // than in geqr2_kernel (two): 3-12% faster at 2048-8192 rows (docs/perf-notes.md v8).
    if (hints.reg_cluster != 0 && in_cluster(reg_cluster_config(dev, rows, ncols, hints.rows_per_warp))) return p;
  }
  p.warps = panel_warps(ncols);
  // Smallest cluster whose CTAs each hold their share of the panel.
  int cs = 1;
  auto rows_of = [&](int c) { return (rows + c - 1) / c; };
  while (panel_bytes(rows_of(cs), ncols, nrefl, cs, with_t, true) > budget && cs < kMaxCluster) cs *= 2;
  if (panel_bytes(rows_of(cs), ncols, nrefl, cs, with_t, true) > budget || (cs > 1 && !dev.cluster_launch)) {
    p.cluster = 1;
    p.rows_per_cta = rows;
    p.lds = rows | 1;
    p.in_smem = false;
    p.smem_bytes = panel_bytes(rows, ncols, nrefl, 1, with_t, false);
    return p;
  }
  // Few matrices: spread each panel over more SMs while every CTA keeps >= 128 rows.
  if (dev.cluster_launch)
    while (cs < kMaxCluster && batch * cs < dev.sm_count && rows_of(2 * cs) >= 128) cs *= 2;
  p.cluster = cs;
  p.rows_per_cta = rows_of(cs);
  p.lds = p.rows_per_cta | 1;
  p.in_smem = true;
  p.smem_bytes = panel_bytes(p.rows_per_cta, ncols, nrefl, cs, with_t, true);
  return p;
}

CholConfig chol_panel_config(const DeviceInfo& dev, int rows, int ncols, std::int64_t batch, const PanelPlan& pp,
                             const PanelHints& hints) {
  if (hints.chol == 0 || ncols != kCholWidth) return {};
  // Taller than one CTA's register panel, whose cluster variant is the fallback; or a
  // geqr2_wcol panel, geqr2_wcol the fallback. Measured (docs/perf-notes.md v14, whole
  // factorizations, geqr2_wcol's panels by Cholesky QR on CTAs of <= 256 rows against
  // none): 1024 x 1, 2, 4, 8 -23, -23, -21, -18%; 768 x 1, 4, 8 -16, -16, -3%; 512 x 1, 2, 4
  // -10, -10, -3%; 384 x 1 -7%, x 4 +-2%; 256 x 1, 4 -5%; 4096 x 2 -4%. With 16 matrices
  // mixed (1024 -5%, 768 and 512 -1%, 384 +3 to +7%), 1024 x 30 -1 to +2%, x 60 +1 to +7%:
  // the panels' CTAs then take SMs from the trailing update that runs beside them. CTAs of
  // 512 rows instead of 256 lost at 1024 rows (1024 x 4 1.78 against 1.67 ms). With v39's
  // and v41's panel, past 8 matrices while the panel's CTAs fit in one wave (v42, queued ms,
  // two rounds, dense / mixed, against none): on panels of more than 768 rows 1024^2 x30
  // -4.7 / -2.4%, x16 -3.1 / +0.3%, 900^2 x30 -6.1 / -2.0%, 1536^2 x20 -4.3 / -3.4%; on
  // those of more than 512 rows too, larger gains there (1024^2 x30 -10 / -6%, 1536^2 x20
  // -7 / -7%) but losses at 768^2 x40 (+2 / +5%) and 600^2 x40 (0 / +4%).
  const bool tall = rows > 32 * 32 && pp.wcol_rows_per_lane == 0 && pp.reg.rows_per_warp > 0 && pp.reg.cluster >= 2;
  // The one-CTA form on geqr2_wcol's panels of many matrices (chol_one_cta_panel).
  if (pp.wcol_rows_per_lane > 0 && rows <= kCholMaxRowsPerCta &&
      (hints.chol == 3 || (hints.chol == -1 && chol_one_cta_panel(dev, rows, batch))))
    return geqr2_chol_one_cta_config(rows);
  const bool wcol = pp.wcol_rows_per_lane > 0;
  if (!tall && !(wcol && (hints.chol >= 2 || (hints.chol == -1 && rows > kCholShortMinRows)))) return {};
  const int short_cap = hints.chol_short_rows > 0 ? std::min(hints.chol_short_rows, kCholMaxRowsPerCta) : 256;
  const int cap = hints.chol_rows > 0 ? hints.chol_rows
                                      : (tall ? kCholMaxRowsPerCta : std::min(short_cap, ((rows + 1) / 2 + 31) / 32 * 32));
  const CholConfig c = geqr2_chol_config(dev, rows, cap);
  if (tall || hints.chol >= 2 || batch <= kCholShortMaxBatch) return c;
  // Past kCholShortMaxBatch matrices: panels of more than kCholShortWaveMinRows rows whose CTAs fit in one wave.
  return rows > kCholShortWaveMinRows && batch * c.cluster <= static_cast<std::int64_t>(dev.sm_count) ? c : CholConfig{};
}

bool chol_one_cta_panel(const DeviceInfo& dev, int rows, std::int64_t batch) {
  // Measured (docs/perf-notes.md v18, whole factorizations, row-major, ms, geqr2_wcol against
  // the one-CTA form on every geqr2_wcol panel of at most 512 rows): 512^2 x640 4.79 / 4.61,
  // 400^2 x640 3.56 / 3.48, 512^2 x264 2.26 / 2.19, but 256^2 x640 (panels of 193-256 rows,
  // where geqr2_wcol holds three CTAs per SM) 1.27 / 1.31, 640^2 x300 (its panels of <= 512
  // rows: 1.14 waves) 4.69 / 4.95, 1024^2 x60 3.93 / 4.27, 352^2 x40 0.561 / 0.556. With v39's
  // factorizations (the LU beside the Cholesky factorization; geqrf_outer_sweep --chol 3
  // against the policy, queued ms, dense / mixed): 512^2 x264 1.75 / 1.89 against 1.92 /
  // 2.01; so from one wave. The rule from one wave against two (v42, queued ms, two rounds,
  // dense / mixed): 640^2 x300 4.05 / 4.15 against 4.21 / 4.30, 400^2 x300 1.38 / 1.47
  // against 1.49 / 1.53, 450^2 x400 2.84 / 2.96 against 3.04 / 3.09. Below one wave dense
  // gains and mixed loses (352^2 x40 0.359 / 0.44 against 0.382 / 0.425).
  return rows > kCholOneCtaMinRows && rows <= kCholMaxRowsPerCta &&
         batch >= kCholOneCtaMinWaves * 2 * static_cast<std::int64_t>(dev.sm_count);
}

bool wcol_panel(const DeviceInfo&, int rows, int ncols, std::int64_t, int min_rows) {
  // Measured (docs/perf-notes.md v9; ncu, each panel inside 512 x 640, row-major): geqr2_wcol
  // against the register panel, us per launch: 512 rows 177 / 231, 384 139 / 210, 288 138 /
  // 153, 224 99 / 153, but 192 97 / 95, 128 87 / 81, 32 66 / 43. Its column chain costs
  // about the same at any height up to its configuration's, while the register panel's
  // shortens with the rows. Whole factorizations, all panels on it against none: 1024 x 60
  // 5.17 / 5.53 ms, 512 x 640 6.46 / 6.81, 256 x 40 0.389 / 0.398, 176 x 40 0.265 / 0.238.
  // Re-measured on v36's kernels (v37): the panels alone, us per launch with T, geqr2_wcol
  // against the register panel, at 640 matrices 192 rows 98 / 127, 160 95 / 110, 128 80 /
  // 85, 96 78 / 71, at 300 matrices 192 rows 53 / 87; whole factorizations from 129 rows
  // against from 193 (queued ms): 256^2 x640 1.18 / 1.20, 300^2 x600 1.85 / 1.88, 200^2
  // x1000 1.27 / 1.29, 640^2 x300 4.52 / 4.56, 190x400 x132 0.39 / 0.43, 192x1000 x40 0.322
  // / 0.331, 150x600 x1 0.176 / 0.185, column-major 256^2 x640 1.47 / 1.54; 512^2 x640,
  // 512^2 x264, 400^2 x264 level. From 97 rows: no better than from 129.
  return ncols <= kMaxPanelWidth && rows > (min_rows > 0 ? min_rows : kWcolMinRows) && rows <= kWcolMaxRows;
}

int chain_split_rows(const DeviceInfo& dev, int m, std::int64_t batch) {
  // Measured (docs/perf-notes.md v38, geqrf_outer_sweep --chain-split-rows 256 / 0, row-major,
  // dense, queued ms, two rounds): 4096^2 x2 9.25 / 9.78, 2048^2 x8 4.45 / 4.63, 3000^2 x4
  // 6.90 / 7.15, 1024^2 x8 1.42 / 1.60 (32-64 CTAs at the split); slower where the split
  // gives 180-300 CTAs: 1536^2 x30 5.91 / 5.79, 1024^2 x60 3.72 / 3.59, 768^2 x100 2.77 /
  // 2.63; 512^2 x640 level. 128 rows per CTA: slower than 256 everywhere measured.
  if (m <= kChainSplitRows) return 0;
  const std::int64_t ctas = batch * ((m + kChainSplitRows - 1) / kChainSplitRows);
  return 2 * ctas <= dev.sm_count ? kChainSplitRows : 0;
}

bool interleave_batch(const DeviceInfo& dev, std::int64_t batch) {
  // Measured (docs/perf-notes.md v37, geqrf_outer_sweep --interleave 2 / 1, row-major, dense,
  // queued ms, two rounds): 512^2 x640 4.05, 4.04 / 4.20, 4.23; 640^2 x300 4.22 / 4.50;
  // 768^2 x100 2.64 / 2.73; 384^2 x640 2.69 / 2.88; 256^2 x640 1.10 / 1.18; 300^2 x600 1.71
  // / 1.85; 200^2 x1000 1.18 / 1.27; 400^2 x264 1.36 / 1.45; 160^2 x300 0.287 / 0.295;
  // column-major 512^2 x640 5.12 / 5.23; 1024^2 x60 level (3.60 / 3.61); 2048^2 x8 slower
  // (4.70 / 4.65), as are 8 and 2 matrices with --split. Without work queued ahead, with the
  // parts enqueued block by block (v38): 768^2 x100 2.64 / 2.72-2.79 against part by part,
  // 300^2 x600 1.69-1.71 / 1.74-1.77, 512^2 x640 4.06-4.07 / 4.07-4.14.
  return 4 * batch >= static_cast<std::int64_t>(kInterleaveMinBatchPerSm4) * dev.sm_count;
}

LarfbSplit larfb_split(const DeviceInfo& dev, std::int64_t batch, int rows, int tiles) {
  LarfbSplit sp;
  const std::int64_t ctas = batch * tiles;
  const std::int64_t target = static_cast<std::int64_t>(kLarfbCtasPerSm) * dev.sm_count;
  std::int64_t s = 1;
  if (ctas < target) s = std::min<std::int64_t>((target + ctas - 1) / ctas, std::max(1, rows / kMinSplitRows));
  const int per = (static_cast<int>((rows + s - 1) / s) + kLarfbChunk - 1) / kLarfbChunk * kLarfbChunk;
  sp.rows_per_split = std::max(per, kLarfbChunk);
  sp.splits = (rows + sp.rows_per_split - 1) / sp.rows_per_split;
  return sp;
}

bool stripe64_update(const DeviceInfo& dev, int n, std::int64_t batch) {
  const double items = static_cast<double>(batch) * ((n + 63) / 64);
  return items >= static_cast<double>(kStripe64MinItemsPerSm) * std::max(dev.sm_count, 1);
}

int merge_pair_ctas(const DeviceInfo& dev, int rows, std::int64_t batch) {
  if (!dev.cluster_launch || batch <= 0) return 1;
  const std::int64_t per_matrix = std::max<std::int64_t>(dev.sm_count / batch, 1);
  const int by_rows = std::max(1, (rows - kMergeBlock) / kMergePairMinRows);
  return static_cast<int>(std::min<std::int64_t>({per_matrix, by_rows, kMergePairMaxCtas}));
}

int outer_width(const DeviceInfo&, int m, int n, std::int64_t batch) {
  // Measured (docs/perf-notes.md v5, v10, v14; bench/geqrf_outer_sweep --outer 32|64, device
  // time, H200). Outer blocks of 64 columns make the trailing updates K = 64 (faster per
  // FLOP) but put two panels, an inner update and a T merge in series per block: they win
  // once each step's trailing matrix, batch x k^2, is large, and lose to one level below
  // (ms, one level / 64): 1024 x 16 2.36 / 2.75, x 24 2.99 / 3.16, x 30 3.43 / 3.33, x 60
  // 5.57 / 4.46; 768 x 16 1.53 / 1.81, x 30 1.86 / 2.05, x 40 2.15 / 2.15, x 100 (v10) 3.96 /
  // 3.58; 1536 x 8 3.68 / 4.07, x 16 6.12 / 5.65, x 30 9.47 / 7.55; 2048 x 8 7.40 / 7.00;
  // 512 x 132 1.73 / 1.73 (v10), x 640 6.44 / 6.00, x 40 0.96 / 1.15. The same bound holds
  // for a few large matrices (v24, split stripes at two CTAs per SM): 4096 x 2 12.62 /
  // 10.71, 3000 x 4 9.29 / 7.84, 8192 x 1 42.9 / 34.5; below it 4096 x 1 8.82 / 9.30, 2048
  // x 4 4.09 / 4.22, and level at 1024 x 24 2.75 / 2.72. 96 and 128 lost to 64 everywhere
  // (v5, v14). Below k = 512 one level (v10).
  const double k = static_cast<double>(std::min(m, n));
  if (k >= 512 && static_cast<double>(batch) * k * k >= kTwoLevelMinWork) return 64;
  return kMaxPanelWidth;
}

bool fused_update(const DeviceInfo& dev, int m, std::int64_t batch) {
  // Measured (docs/perf-notes.md v6, v7; bench/geqrf_outer_sweep --fused-update, and the
  // suite): with a batch below the SM count and at most 256 rows, one launch per update is
  // as fast as three cuBLAS products on the device and enqueues 4x faster (176 x 1: 0.31 ms
  // against 0.78 per call). At 352 rows it loses on the device (352 x 40, device time 0.97
  // against 0.83 ms; suite 40x352 0.82 against 0.71), and so it does once the batch fills
  // the GPU (256 x 200: 1.04 against 0.92).
  return batch < dev.sm_count && m <= kFusedUpdateMaxRows;
}

bool cta_blocked_geqrf(const DeviceInfo& dev, int m, int n, std::int64_t batch) {
  // Measured (docs/perf-notes.md v19; bench/geqrf_outer_sweep --cta 2|1|0, row-major,
  // device time, ms, geqrf_cta / geqr2_cta / without either): square n x n x batch:
  // 48 x 40 0.034 / 0.037 / 0.050, x 264 0.066 / 0.043 / 0.064; 64 x 132 0.044 / 0.048 /
  // 0.080, x 264 0.084 / 0.055 / 0.081; 80 x 264 0.102 / 0.147 / 0.194, x 500 0.197 /
  // 0.282 / 0.176; 100 x 40 0.078 / 0.096 / 0.127, x 264 0.151 / 0.188 / 0.216; 128 x 40
  // 0.091 / 0.116 / 0.163, x 264 0.175 / 0.221 / 0.286, x 500 0.341 / 0.428 / 0.295; 176 x 1
  // 0.153 / 0.157 / 0.212, x 40 0.160 / 0.172 / 0.233, x 264 0.345 / 0.345 / 0.409; 192 x 40
  // 0.175 / 0.185 / 0.262, x 132 0.197 / 0.186 / 0.405, x 264 0.379 / 0.359 / 0.427; 224 x
  // 132 0.272 / - / 0.499; rectangular x 40: 256x128 0.154 / 0.185 / 0.187, 130x200 0.119 /
  // 0.186 / 0.186, 200x64 0.077 / 0.092 / 0.085 (register kernel); but 256x64 x 264 0.168 /
  // 0.181 / 0.112 and 120x60 x 264 0.095 / 0.098 / 0.083. One CTA of 512 threads per SM:
  // past one wave only where the panel chain keeps the alternatives slower.
  // With v21's kernel (docs/perf-notes.md v21, same columns): 48 x 264 0.052 / 0.043 /
  // 0.064; 64 x 264 0.068 / 0.055 / 0.080; 80 x 500 0.161 / 0.283 / 0.176; 100 x 500 0.240 /
  // 0.350 / 0.274; 128 x 500 0.287 / 0.428 / 0.297; 176 x 264 0.289 / 0.347 / 0.452; 192 x
  // 264 0.298 / 0.359 / 0.484; 256x128 x 264 0.255 / 0.357 / 0.276. So two waves up to 192
  // columns, and four for square matrices of 65-128 (tall ones past two waves not measured).
  const std::int64_t sms = dev.sm_count;
  if (n <= 2 * kMaxPanelWidth) return batch <= sms;
  if (m > 2 * kMaxPanelWidth && m <= kCtaBlkFourWavesMaxDim && n <= kCtaBlkFourWavesMaxDim && batch <= 4 * sms)
    return true;
  return batch <= (n <= kCtaBlkTwoWavesMaxCols ? 2 : 1) * sms;
}

ClusterBlkConfig cluster_blocked_geqrf(const DeviceInfo& dev, int m, int n, std::int64_t batch) {
  // CTAs per matrix, measured on the H200 (docs/perf-notes.md v27). The kernel launched alone,
  // best of 8, ms, from the fewest up: 352^2 x1 0.333 / 0.309 / 0.308 / 0.303 (6) / 0.301 (8),
  // x20 0.331 / 0.306 / 0.303; 256^2 x1 0.213 / 0.196 / 0.190 / 0.191 (6); 300^2 x30 0.299 /
  // 0.258 / 0.253; 416^2 x1 0.409 / 0.396 / 0.396 / 0.396 (8); past the resident clusters two
  // waves: 256^2 x40 0.211 on 2, 0.380 on 3. This rule against the fewest
  // (bench/geqrf_outer_sweep [--cta 3 --cluster-ctas 1], row-major): 256^2 x1 0.184 / 0.206,
  // 300^2 x30 0.283 / 0.328, 352^2 x1 0.336 / 0.364, 416^2 x20 0.430 / 0.445.
  ClusterBlkConfig cfg = geqrf_cluster_config(dev, m, n);
  auto resident = [&](int ctas) -> std::int64_t {
    return dev.whole_sm_clusters[ctas] > 0 ? dev.whole_sm_clusters[ctas] : dev.sm_count / ctas;
  };
  if (cfg.rows == 0 || n < kClusterBlkMinCols || batch > resident(cfg.ctas)) return {};
  const int most = std::min(geqrf_cluster_max_ctas(n), cfg.ctas + kClusterBlkExtraCtas);
  for (int c = cfg.ctas + 1; c <= most; ++c)
    if (batch <= resident(c)) cfg.ctas = c;
  return cfg;
}

bool cluster_ahead_of_cta(int m, int n) {
  // Measured (docs/perf-notes.md v31; bench/geqrf_outer_sweep --cta 2|3 --outer 32,
  // row-major, queued device time, ms, geqrf_cta / geqrf_cluster on the policy's CTAs):
  // 192^2 x1 0.128 / 0.117, x40 0.149 / 0.145, x66 0.148 / 0.145; 200^2 x1 0.151 / 0.135,
  // x40 0.174 / 0.165, x60 0.175 / 0.165; 224^2 x1 0.177 / 0.147, x40 0.203 / 0.184; 256x200
  // x1 0.171 / 0.148, x40 0.195 / 0.180; 200x130 x40 0.125 / 0.119; 224x160 x40 0.144 /
  // 0.138; 192x140 x20 0.096 / 0.095; 180x256 x40 0.158 / 0.132; 176x256 x40 0.156 / 0.130;
  // level at 176^2 x40 (0.135 / 0.135) and 184^2 x40 (0.140 / 0.140); column-major 200^2 x40
  // 0.172 / 0.165, 224^2 x40 0.197 / 0.184.
  return m >= kClusterOverCtaMinRows || (m >= kClusterOverCtaWideMinRows && n >= kClusterOverCtaWideMinCols);
}

bool cta_geqrf(const DeviceInfo& dev, int m, int n, std::int64_t batch) {
  // Measured (docs/perf-notes.md v15; bench/geqrf_outer_sweep --cta 1|0, row-major, device
  // time, ms, geqr2_cta / the previous choice). Past 64 columns against the blocked path:
  // 176^2 x 1 0.157 / 0.214, x 40 0.172 / 0.235, x 132 0.173 / 0.386, x 264 0.345 / 0.419,
  // x 500 0.649 / 0.608, x 1000 1.29 / 1.07; 100^2 x 40 0.096 / 0.127, x 132 0.096 / 0.181,
  // x 264 0.188 / 0.202, x 500 0.350 / 0.270, x 1000 0.695 / 0.462; 128^2 x 264 0.221 /
  // 0.242, x 1000 0.854 / 0.496; 80^2 x 1000 0.556 / 0.270. One CTA per matrix holds an SM
  // (512 threads of 128 registers): it wins while the batch fits in two waves.
  // At most 64 columns against the register kernel (fused), which keeps tall matrices:
  // 33^2 x 1 0.025 / 0.034, x 264 0.032 / 0.049, x 1000 0.112 / 0.064; 64^2 x 1 0.044 /
  // 0.062, x 40 0.048 / 0.068, x 264 0.055 / 0.081, x 1000 0.198 / 0.107; 100x48 x 40 0.043
  // / 0.062; but 120x60 x 264 0.098 / 0.083, 200x64 x 40 0.092 / 0.085, 256x64 x 40 0.093 /
  // 0.094, x 264 0.181 / 0.111.
  const std::int64_t sms = dev.sm_count;
  if (n > 2 * kMaxPanelWidth) return batch <= 2 * sms;
  return (m <= 64 && batch <= 2 * sms) || (m <= 128 && batch <= sms);
}

OneLaunchPlan one_launch_plan(const DeviceInfo& dev, int m, int n, std::int64_t batch, const PlanHints& hints) {
  OneLaunchPlan one;
  auto take = [&](Algorithm a) {
    one.algorithm = a;
    return one;
  };
  // Tiny matrices: one warp each, no CTA barriers (docs/perf-notes.md: the CTA kernel's
  // per-column chain of barriers and cross-warp sums cost ~1 us per column at any shape).
  if (warp_qr_rows(m, n) > 0) return take(Algorithm::warp);
  // A geqrf_cluster launch of cfg; a hint's CTA count clamped to [the fewest that hold the
  // matrix, the most].
  auto on_cluster = [&](ClusterBlkConfig cfg) {
    if (hints.cluster_ctas > 0)
      cfg.ctas = std::max(geqrf_cluster_config(dev, m, n).ctas, std::min(hints.cluster_ctas, geqrf_cluster_max_ctas(n)));
    one.cluster_blk = cfg;
    return take(Algorithm::cluster_blocked);
  };
  // geqrf_cluster ahead of geqrf_cta where its split update pays (cluster_ahead_of_cta).
  if (hints.cta == -1 && cluster_ahead_of_cta(m, n)) {
    const ClusterBlkConfig cfg = cluster_blocked_geqrf(dev, m, n, batch);
    if (cfg.rows > 0) return on_cluster(cfg);
  }
  // The whole matrix in one CTA's shared memory, blocked (geqrf_cta): for few matrices.
  if (hints.cta == 2 || hints.cta == -1) {
    one.cta_blk = geqrf_cta_config(dev, m, n);
    if (one.cta_blk.rows_per_lane > 0 && (hints.cta == 2 || cta_blocked_geqrf(dev, m, n, batch)))
      return take(Algorithm::cta_blocked);
    one.cta_blk = {};
  }
  // Past one CTA's shared memory, the same on a cluster (geqrf_cluster): for few matrices.
  if (hints.cta == 3 || hints.cta == -1) {
    ClusterBlkConfig cfg = cluster_blocked_geqrf(dev, m, n, batch);
    if (cfg.rows == 0 && hints.cta == 3) cfg = geqrf_cluster_config(dev, m, n);
    if (cfg.rows > 0) return on_cluster(cfg);
  }
  // The whole matrix in one CTA's registers, warps owning columns (geqr2_cta): ahead of the
  // register kernel below.
  one.cta = hints.cta == 0 || hints.cta == 2 ? CtaConfig{} : geqr2_cta_config(dev, m, n);
  if (one.cta.rows_per_lane > 0 && (hints.cta == 1 || cta_geqrf(dev, m, n, batch))) return take(Algorithm::cta);
  one.cta = {};
  // The whole matrix in one CTA's registers: one launch, no T factor, no trailing passes.
  // Only up to two column tiles (reg_config): past that every column step updates the whole
  // width (BLAS-2) and the blocked path with GEMM updates was faster (docs/perf-notes.md).
  one.fused_reg = reg_config(dev, m, n, batch);
  if (one.fused_reg.rows_per_warp > 0) return take(Algorithm::fused);
  one.fused_reg = {};
  return one;
}

GeqrfPlan make_plan(const DeviceInfo& dev, const GeqrfDesc& d, const PlanHints& hints) {
  GeqrfPlan plan;
  const int m = static_cast<int>(d.m), n = static_cast<int>(d.n), k = std::min(m, n);
  // A one-launch plan: the whole matrix, the whole batch, no workspace.
  const OneLaunchPlan whole = one_launch_plan(dev, m, n, d.batch, hints);
  if (whole.algorithm != Algorithm::blocked) {
    static_cast<OneLaunchPlan&>(plan) = whole;
    plan.nb = k;
    plan.batch_chunk = d.batch;
    return plan;
  }
  plan.algorithm = Algorithm::blocked;
  plan.trailing = dev.tf32x3 ? Trailing::mma_tf32x3 : Trailing::gemm;
  plan.nb = std::min(kMaxPanelWidth, k);
  plan.panel = hints.panel;
  if (plan.trailing == Trailing::gemm) {
    int outer = hints.outer_nb > 0 ? hints.outer_nb : outer_width(dev, m, n, d.batch);
    outer = std::max(plan.nb, std::min({outer, kMaxOuterWidth, k}) / plan.nb * plan.nb);
    plan.outer_nb = outer;
    if (hints.look_ahead >= 0) plan.look_ahead = hints.look_ahead != 0;
    // The next block's columns on the side stream (look-ahead form 2) for two-level plans of
    // row-major matrices. Measured (docs/perf-notes.md v35, geqrf_outer_sweep --look-ahead 1
    // / 2, queued ms, two rounds): 512^2 x640 4.30 / 4.23 (-1.6%), 640^2 x300 -1.4%, 1024^2
    // x60 -0.7 to -2%, 768^2 x100 -0.7 to -1.2%, 1536^2 x30 -0.4%, 2048^2 x8 -0.4 to -0.8%,
    // 3000^2 x4 -0.4 to -1%, 8192^2 x1 -1.6%, 4096^2 x2 -1.2 to +0.7%; column-major level
    // (512^2 x640 0%, 1024^2 x60 +1.2%, 2048^2 x8 -0.6%); one level mixed: 1024^2 x8 -5 to
    // -7%, but 352^2 x40 +7%, 1024^2 x16 +4%, 256^2 x200 +3%.
    plan.next_on_side = plan.look_ahead && (hints.look_ahead == 2 ||
                                            (hints.look_ahead == -1 && outer > plan.nb && d.layout == Layout::row_major));
    // larfb_stripe (3xTF32) takes every update it can implement (32 or 64 reflectors, at most
    // 8192 rows, V^T 16-byte aligned) but the tall wide ones that stripe_update_for leaves
    // to cuBLAS (kStripeWideMaxRows); cuBLAS the rest. Measured (docs/perf-notes.md v8, v10;
    // bench/geqrf_outer_sweep --stripe, row-major, device time, against the previous choice):
    // one level, few matrices: 176 x 40 0.255 against 0.287 ms (larfb_fused), 352 x 40 0.657
    // against 0.723 (cuBLAS, which also took 1.1 ms of host time per call against 0.2); one
    // level, 1000 matrices (v10): 100 x 1000 0.458 against 0.496, 200 x 1000 1.46 against
    // 1.61, 400 x 1000 5.93 against 7.04, 256 x 200 0.618 against 0.762; two level (v10):
    // 512 x 640 6.08 against 6.35, 768 x 100 3.60 against 3.82, 1024 x 60 4.78 against 5.39,
    // 640 x 300 5.63 against 5.78. Before v10's cheaper operand split cuBLAS kept up once the
    // batch filled the GPU, and the rule depended on it.
    plan.stripe_update = hints.stripe_update != 0;  // -1 (the policy's choice): on
    plan.stripe_wide_rows = hints.stripe_wide == 0   ? 0
                            : hints.stripe_wide == 1 ? kLarfbStripeClusterMaxRows
                                                     : kStripeWideMaxRows;
    if (hints.stripe_update == 1) plan.stripe_math = StripeMath::fp32;
    // larfb_fused only where a hint asks for it or larfb_stripe is not planned: every
    // update it takes (32 reflectors, <= 256 rows) larfb_stripe takes too, and faster.
    plan.fused_update = outer == plan.nb && (hints.fused_update >= 0 ? hints.fused_update != 0
                                                                      : !plan.stripe_update && fused_update(dev, m, d.batch));
    // The outer blocks' updates of 64 reflectors on larfb_stripe64 where it exists (row-major,
    // sm_90a). Measured: docs/perf-notes.md v29.
    plan.stripe64 = hints.stripe64 != 0 && plan.stripe_update && plan.stripe_math == StripeMath::tf32x3 &&
                    outer == 2 * kMergeBlock && d.layout == Layout::row_major &&
                    larfb_stripe64_available(dev.cc_major, dev.cc_minor) &&
                    (hints.stripe64 == 1 || stripe64_update(dev, n, d.batch));
    if (plan.stripe64) plan.stripe64_ctas = dev.sm_count;
    plan.merge_ctas = dev.cluster_launch ? std::clamp(hints.merge_ctas, 0, kMergePairMaxCtas) : 1;
    plan.t_floats = static_cast<std::size_t>(std::max(outer, kMaxPanelWidth)) * std::max(outer, kMaxPanelWidth);
    plan.vt_floats = static_cast<std::size_t>(m) * outer;
    plan.w_floats = 2 * static_cast<std::size_t>(outer) * n;
    if (outer > plan.nb) {
      plan.w_inner_floats = 2 * static_cast<std::size_t>(plan.nb) * outer;
      plan.s_floats = static_cast<std::size_t>(outer - kMaxPanelWidth) * (outer - kMaxPanelWidth);
    }
    // The side stream's update of the next block's columns (outer reflectors, at most outer
    // columns) takes the inner updates' W, if cuBLAS applies it.
    if (plan.next_on_side) plan.w_inner_floats = std::max(plan.w_inner_floats, 2 * static_cast<std::size_t>(outer) * outer);
    // Two parts side by side where the batch is large enough (interleave_batch).
    plan.interleave = plan.look_ahead && d.batch >= 2 &&
                              (hints.interleave >= 0 ? hints.interleave >= 2 : interleave_batch(dev, d.batch))
                          ? 2
                          : 1;
    plan.interleave_first = std::max<std::int64_t>(0, hints.interleave_first);
    plan.interleave_by_block = hints.interleave_order != 0;
    plan.chain_split_rows = hints.chain_split_rows > 0   ? hints.chain_split_rows
                            : hints.chain_split_rows == 0 ? chain_split_rows(dev, m, d.batch)
                                                          : 0;
    plan.blas_bytes = kBlasWorkspace;
    // two handles per lane, each aligned to 256 bytes
    const std::size_t once = 2 * static_cast<std::size_t>(plan.interleave) * (plan.blas_bytes + 256);
    // T and V^T twice: the look-ahead panel writes one pair while updates read the other.
    // ... and one int per matrix: the Cholesky QR panel's flags (geqr2_chol.hpp).
    const std::size_t per =
        (2 * plan.t_floats + 2 * plan.vt_floats + plan.w_floats + plan.w_inner_floats + plan.s_floats) * sizeof(float) +
        sizeof(int);
    plan.batch_chunk = std::max<std::int64_t>(1, std::min<std::int64_t>(d.batch, kMaxWorkspace / per));
    plan.workspace_bytes = once + static_cast<std::size_t>(plan.batch_chunk) * per;
    // LAPACK's crossover: once the trailing matrices are ones that the policy factors whole,
    // one launch finishes them instead of the blocked path's panels, updates and merges,
    // whose chain of launches costs more at those sizes (the rules above and
    // docs/perf-notes.md v36). The tail's kernels need no workspace.
    // Not where at most one panel of columns remains: that panel is one launch already, and
    // panel_plan's choice for it (geqr2_wcol past 192 rows) beat the register kernel that
    // the whole-matrix rules take there (v36: 1300x700 x6, tail of 28 columns, +1.8%;
    // 1024x512 x100, 32 columns, +1.2%).
    if (hints.tail != 0) {
      for (int j = outer; j < k && n - j > plan.nb; j += outer) {
        const OneLaunchPlan tail = one_launch_plan(dev, m - j, n - j, plan.batch_chunk, hints);
        if (tail.algorithm == Algorithm::blocked) continue;
        plan.tail_at = j;
        plan.tail = tail;
        break;
      }
    }
    return plan;
  }
  plan.t_floats = static_cast<std::size_t>(kMaxPanelWidth) * kMaxPanelWidth;
  // Workspace per matrix for a given chunk size: T plus the largest panel's partials.
  auto w_floats_for = [&](std::int64_t chunk) {
    std::size_t w = 0;
    for (int j0 = 0; j0 < k; j0 += plan.nb) {
      const int jb = std::min(plan.nb, k - j0), trailing = n - j0 - jb;
      if (trailing <= 0) continue;
      const int tiles = (trailing + kLarfbTileN - 1) / kLarfbTileN;
      const LarfbSplit sp = larfb_split(dev, chunk, m - j0, tiles);
      w = std::max(w, static_cast<std::size_t>(tiles) * sp.splits * kLarfbPartial);
    }
    return w;
  };
  plan.batch_chunk = d.batch;
  plan.w_floats = w_floats_for(plan.batch_chunk);
  const std::size_t per = (plan.t_floats + plan.w_floats) * sizeof(float);
  if (static_cast<std::size_t>(d.batch) * per > kMaxWorkspace) {
    plan.batch_chunk = std::max<std::int64_t>(1, static_cast<std::int64_t>(kMaxWorkspace / per));
    plan.w_floats = w_floats_for(plan.batch_chunk);
  }
  plan.workspace_bytes = static_cast<std::size_t>(plan.batch_chunk) * (plan.t_floats + plan.w_floats) * sizeof(float);
  return plan;
}

}  // namespace batchqr::cuda
