// Internal: the one-CTA whole-matrix kernels' (geqr2_cta, geqrf_cta) row-major tile walk (their
// stage-in and write-back) and write-back of a matrix staged column by column in shared memory
// (column c, row r at c * col_stride + r), with coalesced global stores in either layout, and
// of its tau.
#pragma once

#include <cstdint>

#include "batchqr/types.hpp"
#include "cuda/matrix_view.cuh"

namespace batchqr::cuda {

// f(r, c) for every entry of rows [0, rows) x columns [0, n) of a row-major matrix, by NW
// warps: RT rows per warp and pass, 32 / RT lanes along each (the stage-in and write-back
// tiles of the whole-matrix CTA kernels).
template <int NW, int RT, class F>
__device__ __forceinline__ void cta_row_major_tiles(int rows, int n, F&& f) {
  static_assert(RT >= 1 && 32 % RT == 0, "RT rows of 32 / RT lanes");
  constexpr int CT = 32 / RT;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  for (int r = RT * warp + lane / CT; r < rows; r += RT * NW)
    for (int c = lane % CT; c < n; c += CT) f(r, c);
}

// By NW warps: row-major, RT rows per warp and store, 32 / RT lanes along each (RT = 1 for an
// odd col_stride; RT = 4 for one that is 8 mod 32, which keeps the loads at two lanes per
// bank); column-major, a warp per column (lanes down it). tau[0 .. nrefl) from sTau.
template <int NW, int RT = 1, Layout L>
__device__ __forceinline__ void cta_write_back(const MatrixView<L>& A, const float* sA, int col_stride, int m, int n,
                                               float* tau, const float* sTau, int nrefl) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if constexpr (L == Layout::row_major) {
    cta_row_major_tiles<NW, RT>(m, n, [&](int r, int c) { A(r, c) = sA[c * col_stride + r]; });
  } else {
    for (int c = warp; c < n; c += NW)
      for (int r = lane; r < m; r += 32) A(r, c) = sA[c * col_stride + r];
  }
  for (int j = threadIdx.x; j < nrefl; j += NW * 32) tau[j] = sTau[j];
}

}  // namespace batchqr::cuda
