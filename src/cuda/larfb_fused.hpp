// larfb of one 32-column panel as a single kernel, for small trailing matrices:
//   W  := V^T C,   W2 := T^T W,   C := C - V W2
// one CTA per (matrix, 32-column tile of C), W and W2 kept in shared memory.
//
// Why: with three cuBLAS products (larfb_gemm.hpp) a small update costs three launches and
// two round trips of W through global memory, which is most of its time when the trailing
// matrix has a few hundred rows (docs/perf-notes.md, v6). Tiles of C are independent, so
// one launch does it all. Rows of V and C pass through shared memory in steps of 64, read
// in the order of the layout (coalesced for row- and column-major C). FP32 products and
// sums, each entry of W summed over the rows in order: results do not depend on scheduling.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "batchqr/status.hpp"
#include "batchqr/types.hpp"
#include "cuda/larfb_operands.hpp"

namespace batchqr::cuda {

// The kernel reads rows of V as float4: it takes panels of exactly 32 reflectors with
// vt_ld and vt_stride multiples of 4 and vt 16-byte aligned, and a grid of at most
// INT_MAX CTAs. Other updates go to larfb_gemm (the driver decides per update).
bool larfb_fused_can_implement(const LarfbOperands& args, std::int64_t batch);
Status launch_larfb_fused(Layout layout, const LarfbOperands& args, std::int64_t batch, cudaStream_t stream);

}  // namespace batchqr::cuda
