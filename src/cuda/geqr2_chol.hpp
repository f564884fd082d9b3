// Internal: the Cholesky QR panel (geqr2_chol.cu) for panels of 32 columns: tall ones, and
// those of few or (one CTA each) of many matrices (chol_panel_config, policy.hpp). One
// thread-block cluster, or one CTA, per matrix factors the panel with one reduction instead
// of one per column:
// CholeskyQR in FP64, then LAPACK's Householder reconstruction (orhr_col), so that the
// output is geqr2's (V and R in place, tau) with larft's T and V^T.
//
// The columns are first scaled by powers of two near their norms (exact; Q, V, T and tau are
// unchanged), so that a panel is judged by its conditioning, not its columns' scales. Each
// matrix checks itself before anything is written (Cholesky pivots positive, a bound on the
// scaled panel's condition number, every column's norm at least 2^-100 and ||A||_F at most
// FLT_MAX, every result finite); a matrix that fails is left untouched and flagged, and the
// Householder panel then factors exactly those matrices (Geqr2RegArgs::only_flagged).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "batchqr/status.hpp"
#include "batchqr/types.hpp"
#include "cuda/device_info.hpp"

namespace batchqr::cuda {

struct Geqr2RegArgs;

inline constexpr int kCholThreads = 256;
inline constexpr int kCholWidth = 32;          // panels of exactly this many columns
inline constexpr int kCholMaxRowsPerCta = 512;
inline constexpr int kCholMaxCluster = 16;     // Hopper's non-portable cluster size
// kappa_F(R') = ||R'||_F ||R'^-1||_F (R' of the equilibrated panel) bounds its 2-norm
// condition number from above.
// Up to this bound the FP64 Cholesky QR leaves ||Q^T Q - I|| below ~eps64 * kappa^2 = 1e-9,
// far under FP32 rounding; past it the panel goes to the Householder kernel.
inline constexpr double kCholMaxKappa = 3.0e3;

// Rows per CTA and CTAs per matrix for a panel of `rows` x 32 (cluster 0: not this kernel;
// 1: the one-CTA form).
struct CholConfig {
  int cluster = 0;
  int rows_per_cta = 0;
};
// The one-CTA form (the panel in FP32 in shared memory, two CTAs per SM): panels of 32 to
// kCholMaxRowsPerCta rows; none otherwise.
CholConfig geqr2_chol_one_cta_config(int rows);
// The fewest CTAs of at most rows_per_cta_max rows each (a multiple of 32, at most
// kCholMaxRowsPerCta); none where one such CTA would hold the panel, past kCholMaxCluster
// CTAs, or without cluster launch.
CholConfig geqr2_chol_config(const DeviceInfo& dev, int rows, int rows_per_cta_max = kCholMaxRowsPerCta);

std::size_t geqr2_chol_smem(int rows_per_cta, int cluster);
// Raises the kernels' shared-memory limits and, where clusters launch, the cluster form's
// cluster-size limit (once per device).
Status geqr2_chol_initialize(bool cluster);
// Factors the j0-th panel (args.ncols == args.nrefl == 32) of every matrix of the batch;
// flag[b] = 1 where matrix b was left to the Householder panel, else 0.
Status launch_geqr2_chol(Layout layout, const Geqr2RegArgs& args, const CholConfig& cfg, int* flag,
                         std::int64_t batch, cudaStream_t stream);

}  // namespace batchqr::cuda
