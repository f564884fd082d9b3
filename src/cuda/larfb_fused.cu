#include "cuda/larfb_fused.hpp"

#include <climits>

#include "cuda/alignment.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/matrix_view.cuh"
#include "cuda/smem_vec.cuh"

namespace batchqr::cuda {
namespace {

constexpr int NB = 32;   // reflectors per panel
constexpr int TN = 32;   // columns of C per CTA
constexpr int NT = 256;  // threads per CTA
constexpr int RC = 64;   // rows of V and C staged per step
constexpr int LDC = 33;  // sC row stride: conflict-free staging in either layout
constexpr int LDV = 36;  // sV / sWt row stride: float4-aligned, conflict-free float4 reads
static_assert(NT == 256 && TN == 32, "the thread mappings below assume 256 threads and 32 columns");

// Rows r0 .. r0 + RC of V (zeros past the panel's rows) into sV[r][k], coalesced: V^T
// stores row r of V contiguously.
__device__ __forceinline__ void stage_v(const float* vt, std::int64_t vt_ld, int r0, int rn, float (*sV)[LDV]) {
  for (int i = threadIdx.x; i < RC * NB; i += NT) {
    const int r = i / NB, k = i % NB;
    sV[r][k] = r < rn ? vt[(r0 + r) * vt_ld + k] : 0.0f;
  }
}

// Each CTA: one matrix, one tile of up to 32 columns of C, all rows in steps of RC.
//   W  (32 x 32): thread (w, l) owns W[4w .. 4w + 3][l], summed over the staged rows;
//   W2 = T^T W in shared memory (stored transposed, sWt[c][k]);
//   C -= V W2: each thread updates 8 elements of each staged step, reading C in the
//   order of the layout (consecutive threads, consecutive addresses).
template <Layout L>
__global__ void __launch_bounds__(NT) larfb_fused_kernel(const LarfbOperands p) {
  __shared__ __align__(16) float sV[RC][LDV];
  __shared__ float sC[RC][LDC];
  __shared__ __align__(16) float sWt[TN][LDV];  // W (as sWt[c][k]), then W2
  const int tiles = (p.ncols + TN - 1) / TN;
  const std::int64_t mat = blockIdx.x / tiles;
  const int tile = static_cast<int>(blockIdx.x - mat * tiles);
  const int tid = threadIdx.x;
  const int cn = min(TN, p.ncols - tile * TN);
  const MatrixView<L> C = MatrixView<L>{p.a + mat * p.stride, p.ld}.offset(p.j0, p.col0 + tile * TN);
  const float* vt = p.vt + mat * p.vt_stride;
  constexpr bool kCol = L == Layout::col_major;

  // --- W = V^T C ------------------------------------------------------------------------
  const int c1 = tid & 31, k1 = (tid >> 5) * 4;
  float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  for (int r0 = 0; r0 < p.rows; r0 += RC) {
    const int rn = min(RC, p.rows - r0);
    stage_v(vt, p.vt_ld, r0, rn, sV);
    for (int i = tid; i < RC * TN; i += NT) {
      const int r = kCol ? i % RC : i / TN, c = kCol ? i / RC : i % TN;
      sC[r][c] = r < rn && c < cn ? C(r0 + r, c) : 0.0f;
    }
    __syncthreads();
#pragma unroll 8
    for (int r = 0; r < RC; ++r) {
      const float x = sC[r][c1];
      const float4 v = *reinterpret_cast<const float4*>(&sV[r][k1]);
      acc[0] = fmaf(v.x, x, acc[0]);
      acc[1] = fmaf(v.y, x, acc[1]);
      acc[2] = fmaf(v.z, x, acc[2]);
      acc[3] = fmaf(v.w, x, acc[3]);
    }
    __syncthreads();
  }

  // --- W2 = T^T W (T upper triangular) ----------------------------------------------------
#pragma unroll
  for (int q = 0; q < 4; ++q) sWt[c1][k1 + q] = acc[q];
  __syncthreads();
  const float* T = p.t + mat * p.t_stride;
  float w2[4];
#pragma unroll
  for (int q = 0; q < 4; ++q) {
    const int k = k1 + q;
    float s = 0.0f;
    for (int i = 0; i <= k; ++i) s = fmaf(__ldg(T + static_cast<std::int64_t>(i) * p.t_ld + k), sWt[c1][i], s);
    w2[q] = s;
  }
  __syncthreads();  // every thread has read W
#pragma unroll
  for (int q = 0; q < 4; ++q) sWt[c1][k1 + q] = w2[q];
  __syncthreads();

  // --- C -= V W2 --------------------------------------------------------------------------
  // Column-major: thread t keeps row t % 64 of V in registers and walks 8 columns;
  // row-major: it keeps column t % 32 of W2 in registers and walks 8 rows.
  const int fixed = kCol ? tid % RC : tid % TN;
  float keep[NB];
  if constexpr (!kCol) load_float4s(&sWt[fixed][0], keep);
  for (int r0 = 0; r0 < p.rows; r0 += RC) {
    const int rn = min(RC, p.rows - r0);
    stage_v(vt, p.vt_ld, r0, rn, sV);
    __syncthreads();
    if constexpr (kCol) load_float4s(&sV[fixed][0], keep);
#pragma unroll 2
    for (int q = 0; q < RC * TN / NT; ++q) {
      const int r = kCol ? fixed : tid / TN + q * (NT / TN);
      const int c = kCol ? tid / RC + q * (NT / RC) : fixed;
      // The other operand: W2 column c (column-major) or V row r (row-major), as float4
      // broadcasts (c, resp. r, is the same across a warp).
      const float* other = kCol ? &sWt[c][0] : &sV[r][0];
      float s0 = 0.0f, s1 = 0.0f;
#pragma unroll
      for (int k4 = 0; k4 < NB; k4 += 4) {
        const float4 f = *reinterpret_cast<const float4*>(other + k4);
        s0 = fmaf(keep[k4], f.x, s0);
        s1 = fmaf(keep[k4 + 1], f.y, s1);
        s0 = fmaf(keep[k4 + 2], f.z, s0);
        s1 = fmaf(keep[k4 + 3], f.w, s1);
      }
      if (r < rn && c < cn) C(r0 + r, c) -= s0 + s1;
    }
    __syncthreads();  // sV is restaged
  }
}

}  // namespace

bool larfb_fused_can_implement(const LarfbOperands& p, std::int64_t batch) {
  if (p.jb != NB || p.ncols <= 0 || p.rows <= 0 || batch <= 0) return false;
  if (!batch_rows_aligned<16>(p.vt, p.vt_ld, p.vt_stride)) return false;
  const std::int64_t tiles = (p.ncols + TN - 1) / TN;
  return batch <= INT_MAX / tiles;
}

Status launch_larfb_fused(Layout layout, const LarfbOperands& p, std::int64_t batch, cudaStream_t stream) {
  if (!larfb_fused_can_implement(p, batch)) return Status::not_supported;
  const unsigned grid = static_cast<unsigned>(batch * ((p.ncols + TN - 1) / TN));
  if (layout == Layout::row_major) larfb_fused_kernel<Layout::row_major><<<grid, NT, 0, stream>>>(p);
  else larfb_fused_kernel<Layout::col_major><<<grid, NT, 0, stream>>>(p);
  BATCHQR_CUDA_TRY(cudaGetLastError());
  return Status::success;
}

}  // namespace batchqr::cuda
