// Internal: how a geqrf problem is mapped onto kernels. Every choice is a function of
// (m, n, batch) and the device properties; docs/policy.md is the table, docs/perf-notes.md the measurements.
#pragma once

#include <cstddef>
#include <cstdint>

#include "batchqr/types.hpp"
#include "cuda/device_info.hpp"
#include "cuda/geqr2_chol.hpp"
#include "cuda/geqr2_cta.hpp"
#include "cuda/geqrf_cluster.hpp"
#include "cuda/geqrf_cta.hpp"
#include "cuda/larfb_operands.hpp"
#include "cuda/reg_config.hpp"

namespace batchqr::cuda {

enum class Algorithm {
  warp,     // one warp per matrix (geqr2_warp_kernel): m, n <= 32, no CTA barrier
  fused,    // one geqr2_reg launch factors the whole matrix in registers (unblocked)
  cta,      // one geqr2_cta launch: the whole matrix in one CTA's registers, warps owning columns (unblocked)
  cta_blocked,  // one geqrf_cta launch: the whole matrix in one CTA's shared memory, panels of 8 on one warp
  cluster_blocked,  // one geqrf_cluster launch: geqrf_cta's steps on a cluster's shared memory, columns dealt out
  blocked,  // geqr2 panel of width nb, then larfb on the trailing matrix, per panel
};

// A register-resident geqr2 configuration (geqr2_reg.cuh): R rows per warp, CT column
// tiles of 32 per lane, `warps` warps. Valid when warps * R >= rows and CT * 32 >= ncols.
struct RegConfig {
  int rows_per_warp = 0;  // R; 0: no configuration fits
  int col_tiles = 0;      // CT
  int max_warps = 0;      // the compiled shape's launch bound (kRegShapes)
  int warps = 0;
  int cluster = 1;        // CTAs per matrix (> 1: a panel split over a cluster, W * R rows each)
};

// One of kRegShapes (reg_config.hpp) for a rows x ncols panel or matrix, or none
// (rows_per_warp == 0): at most 64 columns and 1024 rows (one column tile) or 512 (two).
// force_rows_per_warp > 0 (tuning clients, PanelHints): a shape with that R where one
// holds the panel, else the policy's.
RegConfig reg_config(const DeviceInfo& dev, int rows, int ncols, std::int64_t batch, int force_rows_per_warp = 0);
// A panel of more than 1024 rows (at most 32 columns) split over a cluster of 2, 4 or 8
// CTAs: 16 rows per warp and at most 16 warps per CTA (up to 2048 rows), else 32 rows per
// warp (up to 8192 rows), the fewest CTAs; none (rows_per_warp == 0) past that or without
// cluster launch. force_rows_per_warp > 0 (tuning clients): only shapes of that R.
// force_cluster > 1 (tuning clients): exactly that many CTAs, for any panel of at least
// 32 * force_cluster rows.
RegConfig reg_cluster_config(const DeviceInfo& dev, int rows, int ncols, int force_rows_per_warp = 0,
                             int force_cluster = 0);

// Overrides of the panel-kernel choice, for tuning clients (bench/); the defaults mean
// "the policy's".
struct PanelHints {
  int rows_per_warp = 0;  // register panels: this R where a compiled shape of it holds the panel
  int reg_cluster = -1;   // 0 / 1: panels of more than 1024 rows never / always on reg_cluster_config;
                          // c > 1: every panel of >= 32 c rows on a cluster of c CTAs
  int wcol = -1;          // 0 / 1: panels of at most 1024 rows never / always on geqr2_wcol; -1: the policy's
  int wcol_min_rows = 0;  // > 0: the policy's geqr2_wcol rule with this lower bound (exclusive) on the rows
  int chol = -1;          // the Cholesky QR panel (geqr2_chol.hpp): -1 where the policy takes it; 0 never;
                          // 1 panels of more than 1024 rows only; 2 also geqr2_wcol's panels at any batch;
                          // 3 as 2, but its panels of at most 512 rows on its one-CTA form
  int chol_rows = 0;      // > 0: at most this many rows per CTA of the Cholesky QR panel's cluster form, which
                          // takes 2 or more CTAs: it then leaves a panel of at most this many rows to the
                          // Householder panels (hint 3's one-CTA form still takes those of <= 512 rows)
  int chol_short_rows = 0;  // > 0: geqr2_wcol's panels that the cluster form takes on CTAs of at most this many
                            // rows, still at least two (the policy's: 256); chol_rows, where given, wins
};

struct PanelPlan {
  int wcol_rows_per_lane = 0;  // > 0: geqr2_wcol_kernel of that configuration (first choice)
  RegConfig reg;         // reg.rows_per_warp > 0: geqr2_reg_kernel; else geqr2_kernel below
  int warps = 8;         // per CTA: 8, 16 or 32 (warp w owns columns w, w + warps, ...)
  int cluster = 1;       // CTAs per matrix
  int rows_per_cta = 0;
  int lds = 0;           // shared-memory leading dimension (odd: conflict-free staging)
  bool in_smem = true;   // false: the panel is factored in place in global memory
  std::size_t smem_bytes = 0;
};

// Row slices of one larfb launch (see larfb.cuh).
struct LarfbSplit {
  int splits = 1;
  int rows_per_split = 0;  // a multiple of kLarfbChunk
};

// How the blocked algorithm applies each panel to the trailing matrix.
enum class Trailing {
  gemm,        // three cuBLAS SGEMMs per panel (larfb_gemm.hpp); FP32
  mma_tf32x3,  // batchqr's larfb kernels on tensor cores (larfb.cuh); 3xTF32
};

// One launch that factors a whole matrix (any algorithm but blocked) with its kernel's
// configuration; algorithm == blocked: none (the blocked path).
struct OneLaunchPlan {
  Algorithm algorithm = Algorithm::blocked;
  RegConfig fused_reg;           // fused: the register configuration
  CtaConfig cta;                 // cta: the compiled shape
  CtaBlkConfig cta_blk;          // cta_blocked: the compiled shape
  ClusterBlkConfig cluster_blk;  // cluster_blocked: the compiled shape and cluster size
};

// A whole plan: a one-launch plan (the base), or (algorithm == blocked) the blocked path below.
struct GeqrfPlan : OneLaunchPlan {
  Trailing trailing = Trailing::gemm;
  int nb = 32;                   // panel width (blocked)
  // gemm: width of the blocks whose update reaches the whole trailing matrix (a multiple
  // of nb, at most kMaxOuterWidth). Inside such a block, panels of width nb update only
  // the block's own columns (two-level blocking); outer_nb == nb is LAPACK's one level.
  int outer_nb = 32;
  bool look_ahead = true;        // gemm: outer panels on the side stream, overlapping updates
  // look_ahead: the next outer block's columns are updated on the side stream too, right
  // after the block's panels, instead of on the caller's stream (geqrf_driver.cu)
  bool next_on_side = false;
  // gemm, one level: each 32-column panel's update is one larfb_fused launch (larfb_fused.hpp)
  // instead of three cuBLAS products, where the panel allows it (32 reflectors, aligned V^T)
  bool fused_update = false;
  // gemm: every update that larfb_stripe takes (32 or 64 reflectors, at most 8192 rows) is
  // one larfb_stripe launch (larfb_stripe.hpp): C read once, not twice; ahead of fused_update.
  // Except (stripe_update_for): an update wider than an outer block (of the trailing matrix)
  // and taller than one CTA's stripe only up to stripe_wide_rows rows.
  bool stripe_update = false;
  StripeMath stripe_math = StripeMath::tf32x3;
  int stripe_wide_rows = 0;
  // gemm, outer blocks of 64 (row-major, sm_90a): their trailing updates on larfb_stripe64
  // (larfb_stripe64.hpp) where it takes them.
  bool stripe64 = false;
  int stripe64_ctas = 0;  // its persistent grid: one CTA per SM
  // gemm, outer blocks of 64: larft_merge_pair's CTAs per matrix; 0: merge_pair_ctas() per
  // outer block (its rows differ).
  int merge_ctas = 0;
  PanelHints panel;              // as PlanHints gave them (panel_plan() decides per panel)
  // gemm: LAPACK's crossover (geqrf's nx): the blocked loop stops at column tail_at (a
  // multiple of outer_nb; 0: it runs to the end) and one launch of `tail` factors the
  // trailing (m - tail_at) x (n - tail_at) matrices, the first that the policy takes whole
  // (one_launch_plan) at the chunk's batch and that are wider than one panel.
  int tail_at = 0;
  OneLaunchPlan tail;
  // gemm with the look-ahead: each chunk runs as this many parts (1 or 2) side by side, the
  // second on the context's second lane (Resources::lane2, stream2), so that one part's
  // panels run beside the other's trailing update; every choice that depends on the batch
  // (kernels, tail, panels, merges) is the whole chunk's. The second lane's cuBLAS handles
  // take two more workspaces. Off while the caller's stream is being captured, as the
  // look-ahead is.
  int interleave = 1;
  // The first part's matrices (0: half the chunk, rounded up; at most all but one), and
  // whether the two parts are enqueued one outer block of each in turn (else the first
  // part, then the second).
  std::int64_t interleave_first = 0;
  bool interleave_by_block = true;
  // Rows per CTA of larfb_stripe's cluster form on the updates the next panel waits for
  // (0: its default, larfb_stripe_cluster).
  int chain_split_rows = 0;
  std::int64_t batch_chunk = 1;  // matrices per pass; bounds the workspace
  // Workspace per matrix, in floats:
  std::size_t t_floats = 0;      // T factor (outer_nb^2 for gemm)
  std::size_t w_floats = 0;      // larfb partials of the largest panel (mma_tf32x3), or W and W2 (gemm)
  std::size_t vt_floats = 0;     // V^T of the largest outer panel (gemm)
  std::size_t w_inner_floats = 0;  // W and W2 of the updates inside an outer panel (gemm, two-level)
  std::size_t s_floats = 0;      // Gram blocks for the outer T (gemm, two-level)
  std::size_t blas_bytes = 0;    // once per cuBLAS handle: its workspace (gemm; two handles, four interleaved)
  std::size_t workspace_bytes = 0;
};

// Overrides of policy choices, for tuning clients (bench/); zero means "the policy's".
struct PlanHints {
  // The whole-matrix kernels, wherever a compiled shape holds the matrix (past warp): 0 none,
  // 1 geqr2_cta, 2 geqrf_cta, 3 geqrf_cluster; -1: the policy's.
  int cta = -1;
  int cluster_ctas = 0;  // geqrf_cluster's CTAs per matrix (at least the fewest that hold it); 0: the policy's
  int outer_nb = 0;
  int look_ahead = -1;  // 0 off; 1 on, the next block's columns on the caller's stream; 2 on, on the side
                        // stream; -1: the policy's
  int fused_update = -1;  // 0 / 1: off / on (one-level plans only); -1: the policy's
  int stripe_update = -1;  // 0: off; 1: on, FP32; 2: on, 3xTF32; -1: the policy's
  int stripe_wide = -1;  // wide updates taller than a CTA's stripe: 0 never, 1 always on larfb_stripe; -1: the policy's
  int stripe64 = -1;     // 0: never larfb_stripe64; 1: wherever it can; -1: the policy's
  int merge_ctas = 0;    // larft_merge_pair's CTAs per matrix (1..8, where clusters launch); 0: the policy's
  int tail = -1;         // 0: the blocked path runs to the end (no GeqrfPlan::tail); -1: the policy's
  int interleave = -1;   // 1: one part per chunk; 2: two where the plan has the look-ahead; -1: the policy's
  std::int64_t interleave_first = 0;  // the interleave's first part's matrices; 0: the policy's (half)
  int interleave_order = -1;  // 0: part by part; 1: block by block; -1: the policy's
  int chain_split_rows = 0;   // rows per CTA of the chain's larfb_stripe updates; 0: the policy's; -1: none
  PanelHints panel;       // the blocked path's panel kernels
};

// cuBLAS workspace handed to the library for each call (its recommendation for Hopper),
// so that it never allocates (CUDA graph capture).
inline constexpr std::size_t kBlasWorkspace = std::size_t{32} << 20;

// Cluster sizes up to 8 are portable; larger panels are factored in global memory.
inline constexpr int kMaxCluster = 8;
// The workspace of the blocked algorithm is bounded to about this per pass (larger
// batches are factored in chunks, which are still large enough to fill the GPU).
inline constexpr std::size_t kMaxWorkspace = std::size_t{1} << 30;
// larfb splits rows until a launch has about this many CTAs per SM (8 fit by shared memory
// and threads), keeping at least kMinSplitRows rows per CTA.
inline constexpr int kLarfbCtasPerSm = 8;
inline constexpr int kMinSplitRows = 256;

// The Cholesky QR panel's configuration for a rows x ncols panel of each of `batch`
// matrices (cluster 0: not taken), for panels of exactly 32 columns:
// - taller than one CTA's register panel (1024 rows), on at most kCholMaxRowsPerCta rows
//   per CTA, where the Householder panel it falls back to is a cluster's register panel;
// - geqr2_wcol's panels of more than kCholShortMinRows (and at most 1024) rows of at most
//   kCholShortMaxBatch matrices, or of more than kCholShortWaveMinRows rows while the
//   batch's CTAs (one per SM) fit in one wave, so that they take no SM from the trailing
//   update beside them; on CTAs of at most 256 rows (at least two), geqr2_wcol being the
//   fallback (measured from 193 rows, v14, when geqr2_wcol began there);
// - geqr2_wcol's panels of many matrices on one CTA each (chol_one_cta_panel below).
inline constexpr std::int64_t kCholShortMaxBatch = 8;
inline constexpr int kCholShortMinRows = 192;
inline constexpr int kCholShortWaveMinRows = 768;
// Whether a geqr2_wcol panel of `rows` x 32 of each of `batch` matrices goes to the Cholesky
// QR panel's one-CTA form (two CTAs per SM; geqr2_wcol the fallback): panels of more than
// kCholOneCtaMinRows rows (where geqr2_wcol also holds two CTAs per SM, not three) and at
// most kCholMaxRowsPerCta, while the batch fills at least kCholOneCtaMinWaves waves of two
// CTAs per SM.
inline constexpr int kCholOneCtaMinRows = 256;
inline constexpr std::int64_t kCholOneCtaMinWaves = 1;
bool chol_one_cta_panel(const DeviceInfo& dev, int rows, std::int64_t batch);
CholConfig chol_panel_config(const DeviceInfo& dev, int rows, int ncols, std::int64_t batch, const PanelPlan& pp,
                             const PanelHints& hints);

// Shared-memory layout of one panel (rows x ncols) split over `cluster` CTAs.
PanelPlan panel_plan(const DeviceInfo& dev, int rows, int ncols, int nrefl, bool with_t,
                     std::int64_t batch, const PanelHints& hints = {});
LarfbSplit larfb_split(const DeviceInfo& dev, std::int64_t batch, int rows, int tiles);
GeqrfPlan make_plan(const DeviceInfo& dev, const GeqrfDesc& desc, const PlanHints& hints = {});
// The one-launch kernel the policy takes for an m x n matrix of each of `batch` matrices
// (warp, cluster_blocked, cta_blocked, cta, fused, in that order, as hints.cta allows), or
// none (algorithm == blocked): make_plan's first choice, and the blocked path's tail.
OneLaunchPlan one_launch_plan(const DeviceInfo& dev, int m, int n, std::int64_t batch, const PlanHints& hints = {});
// Outer blocks of 64 columns from this many elements of trailing matrix per column step
// (batch x k^2) on (outer_width, policy.cu).
inline constexpr double kTwoLevelMinWork = 3e7;
// The policy's outer block width for the gemm trailing update (see GeqrfPlan::outer_nb).
int outer_width(const DeviceInfo& dev, int m, int n, std::int64_t batch);
// An update wider than an outer block (the trailing matrix's) and taller than one CTA's
// stripe goes to larfb_stripe up to kStripeWideMaxRows rows, to cuBLAS above: the split
// stripes won up to 6000 rows and lost at 8192 (docs/policy.md, "trailing update").
inline constexpr int kStripeWideMaxRows = 6144;
// Whether outer blocks of 64 take larfb_stripe64 (row-major, sm_90a, where it can implement
// the update): from kStripe64MinItemsPerSm items (matrices x 64-column stripes of the
// whole width) per SM. With few items per SM its one CTA per SM hides less latency than
// larfb_stripe's two (docs/policy.md, "trailing update").
inline constexpr int kStripe64MinItemsPerSm = 24;
bool stripe64_update(const DeviceInfo& dev, int n, std::int64_t batch);
// larft_merge_pair's CTAs per matrix (a cluster) for V of `rows` rows: one where the batch
// fills the SMs; else up to kMergePairMaxCtas, at most the SMs per matrix, each CTA with
// at least kMergePairMinRows rows. One CTA walks its rows in dependent passes of 64 (25 us
// at 4096 rows; docs/perf-notes.md v30), while 2 or 8 matrices leave the other SMs idle.
inline constexpr int kMergePairMinRows = 256;
int merge_pair_ctas(const DeviceInfo& dev, int rows, std::int64_t batch);
// Whether the plan sends the update of `ncols` columns of `rows` rows to larfb_stripe
// (where the kernel can implement it; see GeqrfPlan::stripe_update).
bool stripe_update_for(const GeqrfPlan& plan, int rows, int ncols);
// Whether a one-level gemm plan applies each panel with larfb_fused (see GeqrfPlan).
inline constexpr int kFusedUpdateMaxRows = 256;
bool fused_update(const DeviceInfo& dev, int m, std::int64_t batch);
// Whether the policy factors an m x n matrix with geqrf_cta (blocked, one CTA per matrix)
// where a compiled shape holds it: within one wave of one CTA per SM, within two for 65-192
// columns, and within four where m and n are both 65-128. Ahead of geqr2_cta (cta_geqrf) and
// the register kernel.
inline constexpr int kCtaBlkTwoWavesMaxCols = 192;
inline constexpr int kCtaBlkFourWavesMaxDim = 128;  // bounds rows and columns
bool cta_blocked_geqrf(const DeviceInfo& dev, int m, int n, std::int64_t batch);
// The geqrf_cluster configuration the policy picks for an m x n matrix where a compiled shape
// holds it, or none: from kClusterBlkMinCols columns, while the clusters fit in one wave of
// one CTA per SM. On up to kClusterBlkExtraCtas more CTAs than the fewest that hold the
// matrix, as many as stay resident at once: each CTA's share of the trailing update, which
// bounds the first half of the panels, shrinks.
inline constexpr int kClusterBlkMinCols = 128;
inline constexpr int kClusterBlkExtraCtas = 2;
ClusterBlkConfig cluster_blocked_geqrf(const DeviceInfo& dev, int m, int n, std::int64_t batch);
// Whether geqrf_cluster (where cluster_blocked_geqrf takes the matrix) goes ahead of geqrf_cta
// for a matrix that both hold: from 192 rows, or from 176 rows with at least 192 columns.
// Below that both kernels are bound by the same panel chain (176^2, 184^2 level).
inline constexpr int kClusterOverCtaMinRows = 192;
inline constexpr int kClusterOverCtaWideMinRows = 176;
inline constexpr int kClusterOverCtaWideMinCols = 192;
bool cluster_ahead_of_cta(int m, int n);
// Whether the policy factors an m x n matrix with geqr2_cta where a compiled shape holds
// it (and geqrf_cta does not take it): past 64 columns while the batch fits in two waves (one CTA per SM); at most 64
// columns, where the register kernel is the alternative, for m <= 64 within two waves and
// m <= 128 within one.
bool cta_geqrf(const DeviceInfo& dev, int m, int n, std::int64_t batch);
// Whether a panel goes to geqr2_wcol (where one of its configurations holds it).
bool wcol_panel(const DeviceInfo& dev, int rows, int ncols, std::int64_t batch, int min_rows = 0);
// Whether the blocked path (with the look-ahead) runs a chunk of `batch` matrices as two
// interleaved parts (GeqrfPlan::interleave): from kInterleaveMinBatchPerSm4 / 4 of a matrix
// per SM (99 on the H200).
inline constexpr int kInterleaveMinBatchPerSm4 = 3;
bool interleave_batch(const DeviceInfo& dev, std::int64_t batch);
// Rows per CTA of larfb_stripe's cluster form on the blocked path's updates that the next
// panel waits for (GeqrfPlan::chain_split_rows): kChainSplitRows where m > kChainSplitRows
// and those updates' CTAs at that split, batch x ceil(m / kChainSplitRows) per stripe,
// take at most half the SMs; else 0 (larfb_stripe's own form).
inline constexpr int kChainSplitRows = 256;
int chain_split_rows(const DeviceInfo& dev, int m, std::int64_t batch);
// Warps per geqr2 CTA: one per column up to 32, at least 8.
int panel_warps(int ncols);

}  // namespace batchqr::cuda
