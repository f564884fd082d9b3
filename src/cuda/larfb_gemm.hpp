// larfb by three strided-batched SGEMMs (cuBLAS), the LAPACK/rocSOLVER way:
//   W  := V^T C        (jb x ncols)
//   W2 := T^T W        (jb x ncols; T upper triangular, stored with zeros below)
//   C  := C - V W2
// which is C := (I - V T^T V^T) C = Q^T C. FP32 products and sums throughout.
// The panel kernel writes V^T (jb x rows, column-major, ld = jb: row r of V is contiguous)
// and T (row-major 32 x 32, i.e. T^T column-major with ld 32).
#pragma once

#include <cublas_v2.h>

#include <cstdint>

#include "batchqr/status.hpp"
#include "batchqr/types.hpp"

namespace batchqr::cuda {

struct LarfbGemmArgs {
  float* a;                 // first matrix of the (chunk of the) batch
  std::int64_t ld, stride;
  const float* vt;          // V^T of each matrix, vt_stride apart
  std::int64_t vt_stride;
  const float* t;           // T of each matrix, 32 x 32 row-major, t_stride apart
  std::int64_t t_stride;
  float* w;                 // two jb x ncols scratch matrices per matrix: W at w, W2 at w + w_stride / 2
  std::int64_t w_stride;
  int j0;                   // panel origin (row and column)
  int col0;                 // first column of A to update (>= j0 + jb)
  int rows;                 // m - j0
  int jb;                   // reflectors in the panel (<= 32)
  int ncols;                // columns to update: col0 .. col0 + ncols
};

// Enqueues the three products on the handle's stream. `ld` and the batch must fit in an int.
Status larfb_gemm(cublasHandle_t handle, Layout layout, const LarfbGemmArgs& args, std::int64_t batch);

}  // namespace batchqr::cuda
