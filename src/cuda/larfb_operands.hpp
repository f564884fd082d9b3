// Internal: the operands of one larfb, C := (I - V T^T V^T) C, as the panel kernels leave
// them, shared by its implementations (larfb_gemm.hpp: cuBLAS; larfb_fused.hpp: one kernel).
// V^T is jb x rows, column-major with ld vt_ld >= jb (row r of V is contiguous, unit
// diagonal and zeros above it stored); T is row-major with rows t_ld apart (so T^T is
// column-major with ld t_ld), upper triangular with zeros below.
#pragma once

#include <cstdint>

namespace batchqr::cuda {

// How larfb_stripe forms its two products: FP32 FMAs, or tensor cores in 3xTF32
// (mma_tf32.cuh: FP32-grade).
enum class StripeMath { fp32, tf32x3 };

struct LarfbOperands {
  float* a;                 // first matrix of the (chunk of the) batch
  std::int64_t ld, stride;
  const float* vt;          // V^T of each matrix, vt_stride apart
  std::int64_t vt_stride;
  int vt_ld;
  const float* t;           // T of each matrix, t_stride apart
  std::int64_t t_stride;
  int t_ld;
  int j0;                   // panel origin (row and column)
  int col0;                 // first column of A to update (>= j0 + jb)
  int rows;                 // m - j0
  int jb;                   // reflectors in the panel
  int ncols;                // columns to update: col0 .. col0 + ncols
};

}  // namespace batchqr::cuda
