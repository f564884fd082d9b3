// Internal: how a geqrf problem is mapped onto kernels. Every choice is a function of
// (m, n, batch) and the device properties; docs/policy.md is the table, docs/perf-notes.md the measurements.
#pragma once

#include <cstddef>
#include <cstdint>

#include "batchqr/types.hpp"
#include "cuda/device_info.hpp"
#include "cuda/reg_config.hpp"

namespace batchqr::cuda {

enum class Algorithm {
  warp,     // one warp per matrix (geqr2_warp_kernel): m, n <= 32, no CTA barrier
  fused,    // one geqr2_reg launch factors the whole matrix in registers (unblocked)
  blocked,  // geqr2 panel of width nb, then larfb on the trailing matrix, per panel
};

// A register-resident geqr2 configuration (geqr2_reg.cuh): R rows per warp, CT column
// tiles of 32 per lane, `warps` warps. Valid when warps * R >= rows and CT * 32 >= ncols.
struct RegConfig {
  int rows_per_warp = 0;  // R; 0: no configuration fits
  int col_tiles = 0;      // CT
  int max_warps = 0;      // the compiled shape's launch bound (kRegShapes)
  int warps = 0;
};

// One of kRegShapes (reg_config.hpp) for a rows x ncols panel or matrix, or none
// (rows_per_warp == 0): at most 64 columns and 1024 rows (one column tile) or 512 (two).
RegConfig reg_config(const DeviceInfo& dev, int rows, int ncols, std::int64_t batch);

struct PanelPlan {
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

struct GeqrfPlan {
  Algorithm algorithm = Algorithm::blocked;
  RegConfig fused_reg;           // fused: the register configuration
  Trailing trailing = Trailing::gemm;
  int nb = 32;                   // panel width (blocked)
  std::int64_t batch_chunk = 1;  // matrices per pass; bounds the workspace
  // Workspace per matrix, in floats:
  std::size_t t_floats = 0;      // T factor
  std::size_t w_floats = 0;      // larfb partials of the largest panel (mma_tf32x3), or W and W2 (gemm)
  std::size_t vt_floats = 0;     // V^T of the largest panel (gemm)
  std::size_t blas_bytes = 0;    // once: cuBLAS workspace (gemm)
  std::size_t workspace_bytes = 0;
};

// cuBLAS workspace handed to the library for each call (its recommendation for Hopper),
// so that it never allocates (CUDA graph capture).
inline constexpr std::size_t kBlasWorkspace = std::size_t{32} << 20;

// Cluster sizes up to 8 are portable; larger panels are factored in global memory.
inline constexpr int kMaxCluster = 8;
// The workspace of the blocked algorithm is bounded to about this per pass (larger
// batches are factored in chunks, which are still large enough to fill the GPU).
inline constexpr std::size_t kMaxWorkspace = std::size_t{256} << 20;
// larfb splits rows until a launch has about this many CTAs per SM (8 fit by shared memory
// and threads), keeping at least kMinSplitRows rows per CTA.
inline constexpr int kLarfbCtasPerSm = 8;
inline constexpr int kMinSplitRows = 256;

// Shared-memory layout of one panel (rows x ncols) split over `cluster` CTAs.
PanelPlan panel_plan(const DeviceInfo& dev, int rows, int ncols, int nrefl, bool with_t,
                     std::int64_t batch);
LarfbSplit larfb_split(const DeviceInfo& dev, std::int64_t batch, int rows, int tiles);
GeqrfPlan make_plan(const DeviceInfo& dev, const GeqrfDesc& desc);
// Warps per geqr2 CTA: one per column up to 32, at least 8.
int panel_warps(int ncols);

}  // namespace batchqr::cuda
