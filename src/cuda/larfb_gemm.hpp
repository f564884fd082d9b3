// larfb by three strided-batched SGEMMs (cuBLAS), the LAPACK/rocSOLVER way:
//   W  := V^T C        (jb x ncols)
//   W2 := T^T W        (jb x ncols; T upper triangular, stored with zeros below)
//   C  := C - V W2
// which is C := (I - V T^T V^T) C = Q^T C. FP32 products and sums throughout. The layout
// of V^T and T: larfb_operands.hpp.
#pragma once

#include <cublas_v2.h>

#include <cstdint>

#include "batchqr/status.hpp"
#include "batchqr/types.hpp"
#include "cuda/larfb_operands.hpp"

namespace batchqr::cuda {

struct LarfbGemmArgs : LarfbOperands {
  float* w;                 // two jb x ncols scratch matrices per matrix: W at w, W2 at w + w_stride / 2
  std::int64_t w_stride;
};

// Enqueues the three products on the handle's stream. `ld` and the batch must fit in an int.
Status larfb_gemm(cublasHandle_t handle, Layout layout, const LarfbGemmArgs& args, std::int64_t batch);

// The Gram blocks a two-level T needs (larft_merge.hpp): S = V(32:, 0:ms)^T V(32:, 32:nb)
// with ms = larft_merge_gram_rows(nb), the start of the last inner block, from V^T (nb x
// rows, ld nb); S is ms x (nb - 32) column-major (ld ms), s_stride apart. Rows above 32
// contribute nothing: V(0:32, 32:) is zero.
Status gram_offdiag(cublasHandle_t handle, const float* vt, std::int64_t vt_stride, int nb, int rows, float* s,
                    std::int64_t s_stride, std::int64_t batch);

}  // namespace batchqr::cuda
