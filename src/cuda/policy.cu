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
  // geqr2_wcol panel, geqr2_wcol the fallback. On geqr2_wcol's panels the CTAs take SMs
  // from the trailing update that runs beside them: there for few matrices
  // (kCholShortMaxBatch), or past them on panels of more than kCholShortWaveMinRows rows
  // whose CTAs fit in one wave. Measurements: docs/policy.md, "panel kernel".
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
  // Two CTAs per SM: it pays once the batch fills a wave of them (below, dense inputs gain
  // and mixed ones lose); panels of at most 256 rows stay on geqr2_wcol, which holds three
  // CTAs per SM there. Measurements: docs/policy.md, "panel kernel".
  return rows > kCholOneCtaMinRows && rows <= kCholMaxRowsPerCta &&
         batch >= kCholOneCtaMinWaves * 2 * static_cast<std::int64_t>(dev.sm_count);
}

bool wcol_panel(const DeviceInfo&, int rows, int ncols, std::int64_t, int min_rows) {
  // geqr2_wcol's column chain costs about the same at any height up to its configuration's,
  // while the register panel's shortens with the rows: from 129 rows geqr2_wcol (from 97 it
  // was no better). Measurements: docs/policy.md, "panel kernel".
  return ncols <= kMaxPanelWidth && rows > (min_rows > 0 ? min_rows : kWcolMinRows) && rows <= kWcolMaxRows;
}

int chain_split_rows(const DeviceInfo& dev, int m, std::int64_t batch) {
  // 256-row CTAs shorten the updates the next panel waits for while they take at most half
  // the SMs (the rest of the trailing update needs the others); 128 rows lost wherever
  // measured. Measurements: docs/policy.md, "the chain's stripe updates".
  if (m <= kChainSplitRows) return 0;
  const std::int64_t ctas = batch * ((m + kChainSplitRows - 1) / kChainSplitRows);
  return 2 * ctas <= dev.sm_count ? kChainSplitRows : 0;
}

bool interleave_batch(const DeviceInfo& dev, std::int64_t batch) {
  // Two parts side by side put one part's latency-bound panels beside the other's updates
  // once each part has most of a wave of matrices; with fewer, each part's launches only get
  // narrower. Measurements: docs/policy.md, "batch interleave".
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
  // Outer blocks of 64 columns make the trailing updates K = 64 (faster per FLOP, half the
  // passes over the trailing matrix) but put two panels, an inner update and a T merge in
  // series per block: they win once each step's trailing matrix, batch x k^2, is large
  // (a few large matrices included), and lose below it; 96 and 128 lost to 64 wherever
  // measured. Measurements: docs/policy.md, "outer block width".
  const double k = static_cast<double>(std::min(m, n));
  if (k >= 512 && static_cast<double>(batch) * k * k >= kTwoLevelMinWork) return 64;
  return kMaxPanelWidth;
}

bool fused_update(const DeviceInfo& dev, int m, std::int64_t batch) {
  // Below the SM count and at most 256 rows one launch per update is as fast on the device
  // as three cuBLAS products and enqueues 4x faster; taller, or once the batch fills the
  // GPU, it loses. Measurements: docs/policy.md, "trailing update".
  return batch < dev.sm_count && m <= kFusedUpdateMaxRows;
}

bool cta_blocked_geqrf(const DeviceInfo& dev, int m, int n, std::int64_t batch) {
  // One CTA of 512 threads per SM: within one wave it beats geqr2_cta and the blocked path;
  // past it only where the panel chain keeps those slower (two waves up to 192 columns, four
  // for 65-128 rows and columns; tall matrices past two waves not measured).
  // Measurements: docs/policy.md, "cta_blocked".
  const std::int64_t sms = dev.sm_count;
  if (n <= 2 * kMaxPanelWidth) return batch <= sms;
  if (m > 2 * kMaxPanelWidth && m <= kCtaBlkFourWavesMaxDim && n <= kCtaBlkFourWavesMaxDim && batch <= 4 * sms)
    return true;
  return batch <= (n <= kCtaBlkTwoWavesMaxCols ? 2 : 1) * sms;
}

ClusterBlkConfig cluster_blocked_geqrf(const DeviceInfo& dev, int m, int n, std::int64_t batch) {
  // More CTAs than the fewest that hold the matrix shorten the first half of the panels (each
  // CTA's share of the update bounds them) while the batch's clusters stay resident at once;
  // a second wave loses. Measurements: docs/policy.md, "cluster_blocked".
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
  // The cluster's split update pays from 192 rows, or from 176 with at least 192 columns; at
  // 176^2 and 184^2 both kernels are bound by the same panel chain (level).
  // Measurements: docs/policy.md, "cluster_blocked".
  return m >= kClusterOverCtaMinRows || (m >= kClusterOverCtaWideMinRows && n >= kClusterOverCtaWideMinCols);
}

bool cta_geqrf(const DeviceInfo& dev, int m, int n, std::int64_t batch) {
  // One CTA per matrix holds an SM (512 threads of 128 registers): it wins while the batch
  // fits in two waves; at most 64 columns, against the register kernel, for matrices of at
  // most 64 rows (two waves) or 128 (one). Measurements: docs/policy.md, "cta".
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
    // row-major matrices: -0.4 to -1.6% there, level on column-major ones, mixed at one
    // level. Measurements: docs/policy.md, "look-ahead".
    plan.next_on_side = plan.look_ahead && (hints.look_ahead == 2 ||
                                            (hints.look_ahead == -1 && outer > plan.nb && d.layout == Layout::row_major));
    // larfb_stripe (3xTF32) takes every update it can implement (32 or 64 reflectors, at most
    // 8192 rows, V^T 16-byte aligned) but the tall wide ones that stripe_update_for leaves
    // to cuBLAS (kStripeWideMaxRows); cuBLAS the rest. It passes over C once, cuBLAS's three
    // products twice. Measurements: docs/policy.md, "trailing update".
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
    // sm_90a) and the batch gives every SM enough stripes (stripe64_update). Measurements:
    // docs/policy.md, "trailing update".
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
    // whose chain of launches costs more at those sizes. The tail's kernels need no
    // workspace. Not where at most one panel of columns remains: that panel is one launch
    // already, and panel_plan's kernel for it beat the whole-matrix rules' choice there.
    // Measurements: docs/policy.md, "the blocked path's tail".
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
