// larfb of one 32-column panel as a single kernel, for small trailing matrices:
//   W  := V^T C,   W2 := T^T W,   C := C - V W2
// one CTA per (matrix, 32-column tile of C), W and W2 kept in shared memory.
//
// Why: with three cuBLAS products (larfb_gemm.hpp) a small update costs three launches and
// two round trips of W through global memory, which is most of its time when the trailing
// matrix has a few hundred rows (docs/perf-notes.md, v6). Tiles of C are independent, so
// one launch does it all. FP32 products and sums; each warp sums its rows of V^T C and the
// warps' sums are added in warp order, so results do not depend on scheduling.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "batchqr/status.hpp"
#include "batchqr/types.hpp"

namespace batchqr::cuda {

inline constexpr int kLarfbFusedTile = 32;   // columns of C per CTA
inline constexpr int kLarfbFusedWarps = 8;   // each sums a contiguous block of rows

struct LarfbFusedArgs {
  float* a;                 // first matrix of the (chunk of the) batch
  std::int64_t ld, stride;
  const float* vt;          // V^T (jb x rows, column-major, ld vt_ld: row r of V contiguous), vt_stride apart
  std::int64_t vt_stride;
  int vt_ld;
  const float* t;           // T (row-major, rows t_ld apart, zeros below the diagonal), t_stride apart
  std::int64_t t_stride;
  int t_ld;
  int j0;                   // panel origin (row and column)
  int col0;                 // first column of A to update
  int rows;                 // m - j0
  int jb;                   // reflectors in the panel
  int ncols;                // columns to update: col0 .. col0 + ncols
};

// The kernel reads rows of V as float4: it takes panels of exactly 32 reflectors with
// vt_ld and vt_stride multiples of 4 and vt 16-byte aligned, and a grid of at most
// INT_MAX CTAs. Other updates go to larfb_gemm (the driver decides per update).
bool larfb_fused_can_implement(const LarfbFusedArgs& args, std::int64_t batch);
Status launch_larfb_fused(Layout layout, const LarfbFusedArgs& args, std::int64_t batch, cudaStream_t stream);

}  // namespace batchqr::cuda
