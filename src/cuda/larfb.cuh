// larfb: apply Q^T = I - V T^T V^T of one panel to the trailing matrix,
//   C := C - V (T^T (V^T C)),
// one CTA per (matrix, strip of kTileN trailing columns), FP32 on CUDA cores.
//
// V is read straight from the factored panel in A (unit diagonal and zeros above it
// are applied while staging), T from the workspace written by geqr2_kernel.
// Phase 1 W = V^T C (K = rows, split four ways over the CTA, reduced in a fixed order),
// phase 2 W := T^T W, phase 3 C -= V W with W held in registers.
#pragma once

#include <cstdint>

#include "cuda/geqr2.cuh"
#include "cuda/matrix_view.cuh"

namespace batchqr::cuda {

struct LarfbArgs {
  float* a;                 // first matrix of the (chunk of the) batch
  std::int64_t ld, stride;
  const float* t;           // T factors, kMaxPanelWidth^2 floats per matrix
  int j0;                   // panel origin (row and column)
  int rows;                 // m - j0
  int jb;                   // reflectors in the panel (<= kMaxPanelWidth)
  int ncols;                // trailing columns: n - j0 - jb
  int tiles;                // ceil(ncols / kTileN)
};

inline constexpr int kLarfbTileN = 32;
inline constexpr int kLarfbThreads = 256;

template <Layout L>
__global__ void __launch_bounds__(kLarfbThreads) larfb_kernel(const LarfbArgs p) {
  constexpr int NB = kMaxPanelWidth, TN = kLarfbTileN, KC = 32, NT = kLarfbThreads;
  __shared__ float sV[KC][NB + 1];
  __shared__ float sC[KC][TN + 1];
  __shared__ float sW[4][NB][TN + 1];
  __shared__ float sT[NB][NB + 1];

  const std::int64_t mat = blockIdx.x / p.tiles;
  const int c0 = static_cast<int>(blockIdx.x - mat * p.tiles) * TN;
  const int tid = threadIdx.x;
  const MatrixView<L> A{p.a + mat * p.stride, p.ld};
  const MatrixView<L> V = A.offset(p.j0, p.j0);
  const MatrixView<L> C = A.offset(p.j0, p.j0 + p.jb + c0);
  const int cn = min(TN, p.ncols - c0);  // columns of this strip

  // Stage rows [r0, r0 + KC) of V (masked to the unit lower trapezoid) into sV.
  auto stage_v = [&](int r0) {
    for (int idx = tid; idx < KC * NB; idx += NT) {
      const int r = L == Layout::row_major ? idx / NB : idx % KC;
      const int c = L == Layout::row_major ? idx % NB : idx / KC;
      const int gr = r0 + r;
      float v = 0.0f;
      if (gr < p.rows && c < p.jb) v = gr > c ? V(gr, c) : (gr == c ? 1.0f : 0.0f);
      sV[r][c] = v;
    }
  };

  // ---- phase 1: W = V^T C ------------------------------------------------------------
  const int split = tid / 64;            // rows split, r % 4 == split
  const int ti = (tid % 64) / 8, tj = tid % 8;
  float acc[4][4] = {};
  for (int r0 = 0; r0 < p.rows; r0 += KC) {
    stage_v(r0);
    for (int idx = tid; idx < KC * TN; idx += NT) {
      const int r = L == Layout::row_major ? idx / TN : idx % KC;
      const int c = L == Layout::row_major ? idx % TN : idx / KC;
      sC[r][c] = (r0 + r < p.rows && c < cn) ? C(r0 + r, c) : 0.0f;
    }
    __syncthreads();
#pragma unroll
    for (int kk = split; kk < KC; kk += 4) {
      float av[4], bv[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) av[i] = sV[kk][ti * 4 + i];
#pragma unroll
      for (int i = 0; i < 4; ++i) bv[i] = sC[kk][tj * 4 + i];
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int jj = 0; jj < 4; ++jj) acc[i][jj] = fmaf(av[i], bv[jj], acc[i][jj]);
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int jj = 0; jj < 4; ++jj) sW[split][ti * 4 + i][tj * 4 + jj] = acc[i][jj];
  for (int idx = tid; idx < NB * NB; idx += NT) sT[idx / NB][idx % NB] = p.t[mat * NB * NB + idx];
  __syncthreads();
  for (int idx = tid; idx < NB * TN; idx += NT) {
    const int i = idx / TN, c = idx % TN;
    sW[0][i][c] = ((sW[0][i][c] + sW[1][i][c]) + sW[2][i][c]) + sW[3][i][c];
  }
  __syncthreads();

  // ---- phase 2: W2 = T^T W (into sW[1]) ------------------------------------------------
  for (int idx = tid; idx < NB * TN; idx += NT) {
    const int i = idx / TN, c = idx % TN;
    float s = 0.0f;
    for (int l = 0; l <= i; ++l) s = fmaf(sT[l][i], sW[0][l][c], s);
    sW[1][i][c] = s;
  }
  __syncthreads();

  // ---- phase 3: C -= V W2 -----------------------------------------------------------------
  if constexpr (L == Layout::row_major) {
    // Lane = column (coalesced rows); each thread: 4 rows x 1 column, W2 column in registers.
    const int tx = tid % 32, ty = tid / 32;
    float w[NB];
#pragma unroll
    for (int l = 0; l < NB; ++l) w[l] = sW[1][l][tx];
    for (int r0 = 0; r0 < p.rows; r0 += KC) {
      __syncthreads();
      stage_v(r0);
      __syncthreads();
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const int r = ty * 4 + i;
        float s = 0.0f;
#pragma unroll
        for (int l = 0; l < NB; ++l) s = fmaf(sV[r][l], w[l], s);
        if (r0 + r < p.rows && tx < cn) C(r0 + r, tx) -= s;
      }
    }
  } else {
    // Lane = row (coalesced columns); each thread: 1 row x 4 columns.
    const int tx = tid % 32, ty = tid / 32;
    for (int r0 = 0; r0 < p.rows; r0 += KC) {
      __syncthreads();
      stage_v(r0);
      __syncthreads();
      float vr[NB];
#pragma unroll
      for (int l = 0; l < NB; ++l) vr[l] = sV[tx][l];
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const int c = ty * 4 + i;
        float s = 0.0f;
#pragma unroll
        for (int l = 0; l < NB; ++l) s = fmaf(vr[l], sW[1][l][c], s);
        if (r0 + tx < p.rows && c < cn) C(r0 + tx, c) -= s;
      }
    }
  }
}

}  // namespace batchqr::cuda
