#include "cuda/larfb_fused.hpp"

#include <climits>

#include "cuda/cuda_check.hpp"
#include "cuda/matrix_view.cuh"

namespace batchqr::cuda {
namespace {

constexpr int NB = 32, TN = kLarfbFusedTile, NW = kLarfbFusedWarps, LDW = TN + 1;

// Row r of V (32 values) from V^T, as eight float4 loads that every lane of the warp
// shares (the same address: one broadcast transaction each).
__device__ __forceinline__ void load_v_row(const float* vt, std::int64_t vt_ld, int r, float (&v)[NB]) {
  const float4* q = reinterpret_cast<const float4*>(vt + r * vt_ld);
#pragma unroll
  for (int k4 = 0; k4 < NB / 4; ++k4) {
    const float4 f = __ldg(q + k4);
    v[4 * k4] = f.x;
    v[4 * k4 + 1] = f.y;
    v[4 * k4 + 2] = f.z;
    v[4 * k4 + 3] = f.w;
  }
}

// Lane l owns column l of the CTA's tile; warp w owns rows [w * rb, (w + 1) * rb).
template <Layout L>
__global__ void __launch_bounds__(NW * 32) larfb_fused_kernel(const LarfbOperands p) {
  __shared__ float sPart[NW][NB][LDW];  // each warp's rows of V^T C
  __shared__ float sW[NB][LDW];         // W, then W2
  const int tiles = (p.ncols + TN - 1) / TN;
  const std::int64_t mat = blockIdx.x / tiles;
  const int tile = static_cast<int>(blockIdx.x - mat * tiles);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const bool col_ok = tile * TN + lane < p.ncols;
  const MatrixView<L> C = MatrixView<L>{p.a + mat * p.stride, p.ld}.offset(p.j0, p.col0 + tile * TN);
  const float* vt = p.vt + mat * p.vt_stride;
  const int rb = (p.rows + NW - 1) / NW;
  const int r_lo = warp * rb, r_hi = min(p.rows, r_lo + rb);

  // W partials: this warp's rows.
  float acc[NB];
#pragma unroll
  for (int k = 0; k < NB; ++k) acc[k] = 0.0f;
  for (int r = r_lo; r < r_hi; ++r) {
    const float x = col_ok ? C(r, lane) : 0.0f;
    float v[NB];
    load_v_row(vt, p.vt_ld, r, v);
#pragma unroll
    for (int k = 0; k < NB; ++k) acc[k] = fmaf(v[k], x, acc[k]);
  }
#pragma unroll
  for (int k = 0; k < NB; ++k) sPart[warp][k][lane] = acc[k];
  __syncthreads();

  // W = sum of the partials in warp order; W2 = T^T W (T upper triangular). Thread (w, l)
  // forms rows k = w, w + NW, ... of column l.
  constexpr int KPT = NB / NW;
#pragma unroll
  for (int q = 0; q < KPT; ++q) {
    const int k = warp + q * NW;
    float s = 0.0f;
#pragma unroll
    for (int w = 0; w < NW; ++w) s += sPart[w][k][lane];
    sW[k][lane] = s;
  }
  __syncthreads();
  const float* T = p.t + mat * p.t_stride;
  float w2[KPT];
#pragma unroll
  for (int q = 0; q < KPT; ++q) {
    const int k = warp + q * NW;
    float s = 0.0f;
    for (int i = 0; i <= k; ++i) s = fmaf(__ldg(T + static_cast<std::int64_t>(i) * p.t_ld + k), sW[i][lane], s);
    w2[q] = s;
  }
  __syncthreads();  // every thread has read W
#pragma unroll
  for (int q = 0; q < KPT; ++q) sW[warp + q * NW][lane] = w2[q];
  __syncthreads();

  // C -= V W2, this warp's rows.
  float w2c[NB];
#pragma unroll
  for (int k = 0; k < NB; ++k) w2c[k] = sW[k][lane];
  if (!col_ok) return;
  for (int r = r_lo; r < r_hi; ++r) {
    float v[NB];
    load_v_row(vt, p.vt_ld, r, v);
    float s0 = 0.0f, s1 = 0.0f;
#pragma unroll
    for (int k = 0; k < NB; k += 2) {
      s0 = fmaf(v[k], w2c[k], s0);
      s1 = fmaf(v[k + 1], w2c[k + 1], s1);
    }
    C(r, lane) -= s0 + s1;
  }
}

}  // namespace

bool larfb_fused_can_implement(const LarfbOperands& p, std::int64_t batch) {
  if (p.jb != NB || p.ncols <= 0 || p.rows <= 0 || batch <= 0) return false;
  if (p.vt_ld % 4 != 0 || p.vt_stride % 4 != 0 || reinterpret_cast<std::uintptr_t>(p.vt) % 16 != 0) return false;
  const std::int64_t tiles = (p.ncols + TN - 1) / TN;
  return batch <= INT_MAX / tiles;
}

Status launch_larfb_fused(Layout layout, const LarfbOperands& p, std::int64_t batch, cudaStream_t stream) {
  if (!larfb_fused_can_implement(p, batch)) return Status::not_supported;
  const unsigned grid = static_cast<unsigned>(batch * ((p.ncols + TN - 1) / TN));
  if (layout == Layout::row_major) larfb_fused_kernel<Layout::row_major><<<grid, NW * 32, 0, stream>>>(p);
  else larfb_fused_kernel<Layout::col_major><<<grid, NW * 32, 0, stream>>>(p);
  BATCHQR_CUDA_TRY(cudaGetLastError());
  return Status::success;
}

}  // namespace batchqr::cuda
