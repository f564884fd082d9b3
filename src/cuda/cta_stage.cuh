// Internal: the one-CTA whole-matrix kernels' (geqr2_cta, geqrf_cta) write-back of a matrix
// staged column by column in shared memory (column c, row r at c * col_stride + r), with
// coalesced global stores in either layout, and of its tau.
#pragma once

#include <cstdint>

#include "batchqr/types.hpp"
#include "cuda/matrix_view.cuh"

namespace batchqr::cuda {

// By NW warps: row-major, a warp per row (lanes along it); column-major, a warp per column
// (lanes down it). tau[0 .. nrefl) from sTau.
template <int NW, Layout L>
__device__ __forceinline__ void cta_write_back(const MatrixView<L>& A, const float* sA, int col_stride, int m, int n,
                                               float* tau, const float* sTau, int nrefl) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if constexpr (L == Layout::row_major) {
    for (int r = warp; r < m; r += NW)
      for (int c = lane; c < n; c += 32) A(r, c) = sA[c * col_stride + r];
  } else {
    for (int c = warp; c < n; c += NW)
      for (int r = lane; r < m; r += 32) A(r, c) = sA[c * col_stride + r];
  }
  for (int j = threadIdx.x; j < nrefl; j += NW * 32) tau[j] = sTau[j];
}

}  // namespace batchqr::cuda
