// larfb: apply Q^T = I - V T^T V^T of one panel to the trailing matrix,
//   C := C - V (T^T (V^T C)),
// as two kernels over a grid of (matrix, strip of kLarfbTileN columns, row slice):
//   larfb_vtc_kernel     W_s = V_s^T C_s for the rows of slice s (a 32 x 32 partial),
//   larfb_update_kernel  W = sum_s W_s (fixed order), W2 = T^T W, C_s -= V_s W2.
// Splitting the rows gives few large matrices enough CTAs; the partials are summed in
// slice order, so results do not depend on scheduling.
//
// V is read straight from the factored panel in A (the unit diagonal and the zeros above
// it are applied while staging), T from the workspace written by geqr2_kernel. The two
// products run in 3xTF32 on tensor cores (FP32-grade).
#pragma once

#include <cstdint>

#include "cuda/geqr2.cuh"
#include "cuda/matrix_view.cuh"
#include "cuda/mma_tf32.cuh"

namespace batchqr::cuda {

inline constexpr int kLarfbTileN = 32;
inline constexpr int kLarfbThreads = 256;
inline constexpr int kLarfbChunk = 32;  // rows staged per step
inline constexpr int kLarfbPartial = kMaxPanelWidth * kLarfbTileN;

struct LarfbArgs {
  float* a;                  // first matrix of the (chunk of the) batch
  std::int64_t ld, stride;
  const float* t;            // T factors, kMaxPanelWidth^2 floats per matrix
  float* w;                  // W partials, tiles * splits * kLarfbPartial floats per matrix
  int j0;                    // panel origin (row and column)
  int rows;                  // m - j0
  int jb;                    // reflectors in the panel (<= kMaxPanelWidth)
  int ncols;                 // trailing columns: n - j0 - jb
  int tiles;                 // ceil(ncols / kLarfbTileN)
  int splits;                // row slices
  int rows_per_split;        // a multiple of kLarfbChunk
};

namespace larfb_detail {

constexpr int NB = kMaxPanelWidth, TN = kLarfbTileN, KC = kLarfbChunk, NT = kLarfbThreads;

struct Block {
  std::int64_t mat;
  int tile, split, c0, cn, r_lo, r_hi;
};

__device__ __forceinline__ Block block_of(const LarfbArgs& p) {
  Block b;
  const std::int64_t per_mat = static_cast<std::int64_t>(p.tiles) * p.splits;
  b.mat = blockIdx.x / per_mat;
  const int rem = static_cast<int>(blockIdx.x - b.mat * per_mat);
  b.tile = rem / p.splits;
  b.split = rem - b.tile * p.splits;
  b.c0 = b.tile * TN;
  b.cn = min(TN, p.ncols - b.c0);
  b.r_lo = b.split * p.rows_per_split;
  b.r_hi = min(p.rows, b.r_lo + p.rows_per_split);
  return b;
}

// Rows [r0, r0 + KC) of V (unit lower trapezoid; zero past r_hi) into s[KC][LDS].
template <Layout L, int LDS>
__device__ __forceinline__ void stage_v(float (*s)[LDS], const MatrixView<L>& V, int r0, int r_hi, int jb) {
  for (int idx = threadIdx.x; idx < KC * NB; idx += NT) {
    const int r = L == Layout::row_major ? idx / NB : idx % KC;
    const int c = L == Layout::row_major ? idx % NB : idx / KC;
    const int gr = r0 + r;
    float v = 0.0f;
    if (gr < r_hi && c < jb) v = gr > c ? V(gr, c) : (gr == c ? 1.0f : 0.0f);
    s[r][c] = v;
  }
}

// Rows [r0, r0 + KC) of the strip C (zero past r_hi and past cn columns) into s[KC][LDS].
template <Layout L, int LDS>
__device__ __forceinline__ void stage_c(float (*s)[LDS], const MatrixView<L>& C, int r0, int r_hi, int cn) {
  for (int idx = threadIdx.x; idx < KC * TN; idx += NT) {
    const int r = L == Layout::row_major ? idx / TN : idx % KC;
    const int c = L == Layout::row_major ? idx % TN : idx / KC;
    s[r][c] = (r0 + r < r_hi && c < cn) ? C(r0 + r, c) : 0.0f;
  }
}

}  // namespace larfb_detail

// W_s = V_s^T C_s: one 32 x 32 partial per (matrix, strip, row slice).
template <Layout L>
__global__ void __launch_bounds__(kLarfbThreads) larfb_vtc_kernel(const LarfbArgs p) {
  using namespace larfb_detail;
  // Row stride 40 (= 8 mod 32): the tensor-core fragment reads are conflict-free.
  __shared__ float sV[KC][40];
  __shared__ float sC[KC][40];
  __shared__ float red[4][NB][TN + 1];  // four partial sums, added in a fixed order

  const Block blk = block_of(p);
  const int tid = threadIdx.x;
  const MatrixView<L> A{p.a + blk.mat * p.stride, p.ld};
  const MatrixView<L> V = A.offset(p.j0, p.j0);
  const MatrixView<L> C = A.offset(p.j0, p.j0 + p.jb + blk.c0);

  // Warp w: k-step ks = w % 4 of each chunk, rows mt*16.. of W (mt = w / 4), all 32 columns.
  const int warp = tid >> 5, lane = tid & 31, g = lane >> 2, t = lane & 3;
  const int ks = warp % 4, mt = warp / 4;
  float acc[4][4] = {};
  for (int r0 = blk.r_lo; r0 < blk.r_hi; r0 += KC) {
    stage_v(sV, V, r0, blk.r_hi, p.jb);
    stage_c(sC, C, r0, blk.r_hi, blk.cn);
    __syncthreads();
    // A = V^T: A[m][k] = sV[k][m].
    std::uint32_t ab[4], as[4];
    split_tf32(sV[ks * 8 + t][mt * 16 + g], ab[0], as[0]);
    split_tf32(sV[ks * 8 + t][mt * 16 + g + 8], ab[1], as[1]);
    split_tf32(sV[ks * 8 + t + 4][mt * 16 + g], ab[2], as[2]);
    split_tf32(sV[ks * 8 + t + 4][mt * 16 + g + 8], ab[3], as[3]);
#pragma unroll
    for (int nt = 0; nt < 4; ++nt) {
      std::uint32_t bb[2], bs[2];
      split_tf32(sC[ks * 8 + t][nt * 8 + g], bb[0], bs[0]);
      split_tf32(sC[ks * 8 + t + 4][nt * 8 + g], bb[1], bs[1]);
      mma_3xtf32(acc[nt], ab, as, bb, bs);
    }
    __syncthreads();
  }
#pragma unroll
  for (int nt = 0; nt < 4; ++nt) {
    red[ks][mt * 16 + g][nt * 8 + 2 * t] = acc[nt][0];
    red[ks][mt * 16 + g][nt * 8 + 2 * t + 1] = acc[nt][1];
    red[ks][mt * 16 + g + 8][nt * 8 + 2 * t] = acc[nt][2];
    red[ks][mt * 16 + g + 8][nt * 8 + 2 * t + 1] = acc[nt][3];
  }
  __syncthreads();
  float* out = p.w + (blk.mat * p.tiles * p.splits + static_cast<std::int64_t>(blk.tile) * p.splits + blk.split) *
                         kLarfbPartial;
  for (int idx = tid; idx < NB * TN; idx += NT) {
    const int i = idx / TN, c = idx % TN;
    out[idx] = ((red[0][i][c] + red[1][i][c]) + red[2][i][c]) + red[3][i][c];
  }
}

// C_s -= V_s (T^T sum_s W_s).
template <Layout L>
__global__ void __launch_bounds__(kLarfbThreads) larfb_update_kernel(const LarfbArgs p) {
  using namespace larfb_detail;
  // Row stride 36 (= 4 mod 32): the tensor-core A-fragment reads are conflict-free.
  __shared__ float sV[KC][36];
  __shared__ float sT[NB][NB + 1];
  __shared__ float sW[NB][TN + 1];
  __shared__ float sW2[NB][40];

  const Block blk = block_of(p);
  const int tid = threadIdx.x;
  const MatrixView<L> A{p.a + blk.mat * p.stride, p.ld};
  const MatrixView<L> V = A.offset(p.j0, p.j0);
  const MatrixView<L> C = A.offset(p.j0, p.j0 + p.jb + blk.c0);

  const float* T = p.t + blk.mat * (NB * NB);
  const float* Wp = p.w + (blk.mat * p.tiles * p.splits + static_cast<std::int64_t>(blk.tile) * p.splits) *
                              kLarfbPartial;
  for (int idx = tid; idx < NB * NB; idx += NT) sT[idx / NB][idx % NB] = T[idx];
  for (int idx = tid; idx < NB * TN; idx += NT) {
    float s = 0.0f;
    for (int q = 0; q < p.splits; ++q) s += Wp[static_cast<std::int64_t>(q) * kLarfbPartial + idx];
    sW[idx / TN][idx % TN] = s;
  }
  __syncthreads();
  for (int idx = tid; idx < NB * TN; idx += NT) {
    const int i = idx / TN, c = idx % TN;
    float s = 0.0f;
    for (int l = 0; l <= i; ++l) s = fmaf(sT[l][i], sW[l][c], s);
    sW2[i][c] = s;
  }
  __syncthreads();

  // Warp w: the 16 x 8 output tile (rows mt*16.., columns nt*8..) of each chunk, K = 32.
  const int warp = tid >> 5, lane = tid & 31, g = lane >> 2, t = lane & 3;
  const int mt = warp / 4, nt = warp % 4;
  std::uint32_t bb[4][2], bs[4][2];  // W2 fragments, the same for every chunk
#pragma unroll
  for (int ks = 0; ks < 4; ++ks) {
    split_tf32(sW2[ks * 8 + t][nt * 8 + g], bb[ks][0], bs[ks][0]);
    split_tf32(sW2[ks * 8 + t + 4][nt * 8 + g], bb[ks][1], bs[ks][1]);
  }
  for (int r0 = blk.r_lo; r0 < blk.r_hi; r0 += KC) {
    __syncthreads();
    stage_v(sV, V, r0, blk.r_hi, p.jb);
    __syncthreads();
    float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
    for (int ks = 0; ks < 4; ++ks) {
      std::uint32_t ab[4], as[4];
      split_tf32(sV[mt * 16 + g][ks * 8 + t], ab[0], as[0]);
      split_tf32(sV[mt * 16 + g + 8][ks * 8 + t], ab[1], as[1]);
      split_tf32(sV[mt * 16 + g][ks * 8 + t + 4], ab[2], as[2]);
      split_tf32(sV[mt * 16 + g + 8][ks * 8 + t + 4], ab[3], as[3]);
      mma_3xtf32(acc, ab, as, bb[ks], bs[ks]);
    }
    const int ra = r0 + mt * 16 + g, rb = ra + 8;
    const int ca = nt * 8 + 2 * t, cb = ca + 1;
    if (ra < blk.r_hi) {
      if (ca < blk.cn) C(ra, ca) -= acc[0];
      if (cb < blk.cn) C(ra, cb) -= acc[1];
    }
    if (rb < blk.r_hi) {
      if (ca < blk.cn) C(rb, ca) -= acc[2];
      if (cb < blk.cn) C(rb, cb) -= acc[3];
    }
  }
}

}  // namespace batchqr::cuda
