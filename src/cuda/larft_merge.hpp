// larft for a two-level panel: the T factor of nb reflectors (nb <= kMaxOuterWidth) from the
// 32 x 32 T blocks of its inner panels and the Gram blocks S = V^T V between them
// (gram_offdiag in larfb_gemm.hpp). LAPACK's merge rule, one block column at a time:
//   T(0:c, c:c+w) = -T(0:c, 0:c) S(0:c, c:c+w) T(c:c+w, c:c+w)
// Blocks below the diagonal are zeroed, so T is stored whole (row-major, ld nb).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "batchqr/status.hpp"

namespace batchqr::cuda {

inline constexpr int kMaxOuterWidth = 128;
inline constexpr int kMergeBlock = 32;  // width of the inner panels whose T blocks are merged

// Rows of S = V(:, 0:ms)^T V(:, 32:nb) the merge reads: the start of the last inner block.
__host__ __device__ constexpr int larft_merge_gram_rows(int nb) { return (nb - 1) / kMergeBlock * kMergeBlock; }

struct LarftMergeArgs {
  float* t;                 // T of each matrix, nb x nb row-major, t_stride apart; diagonal blocks set
  std::int64_t t_stride;
  const float* s;           // S of each matrix (gram_offdiag): column-major, ld larft_merge_gram_rows(nb)
  std::int64_t s_stride;
  int nb;                   // 32 < nb <= kMaxOuterWidth
};

// Once per device: allows the kernel its shared memory (above the default 48 KB).
Status larft_merge_initialize();
Status launch_larft_merge(const LarftMergeArgs& args, std::int64_t batch, cudaStream_t stream);

// The merge of exactly two inner panels (nb = 64), in one launch: S = V(32:, 0:32)^T
// V(32:, 32:64) on the tensor cores in 3xTF32, then T12 = -T11 S T22; no Gram workspace.
// With ctas > 1 each matrix takes a thread-block cluster of that many CTAs, each forming S
// over its share of the rows; the first sums the shares in rank order (bitwise reproducible
// for a given ctas) and merges. For few matrices, whose one CTA each would leave most SMs
// idle while it walks thousands of rows (merge_pair_ctas in policy.hpp).
inline constexpr int kMergePairMaxCtas = 8;
struct LarftMergePairArgs {
  float* t;                 // as LarftMergeArgs::t, nb = 64
  std::int64_t t_stride;
  const float* vt;          // V of each matrix, rows x 64 row-major (ld 64), vt_stride apart
  std::int64_t vt_stride;
  int rows;                 // rows of V (>= 64)
  int ctas = 1;             // CTAs per matrix, 1 .. kMergePairMaxCtas (> 1: a cluster; sm_90)
};
Status launch_larft_merge_pair(const LarftMergePairArgs& args, std::int64_t batch, cudaStream_t stream);

}  // namespace batchqr::cuda
