#include "cuda/larft_merge.hpp"

#include <climits>

#include <cooperative_groups.h>

#include "cuda/cluster_launch.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/mma_tf32.cuh"

namespace batchqr::cuda {
namespace {

namespace cg = cooperative_groups;

constexpr int kThreads = 256;
constexpr int kBlock = kMergeBlock;

// T's diagonal blocks (nb x nb, row-major) into sT (ld ldt), zeros elsewhere.
__device__ __forceinline__ void load_diagonal_blocks(const float* T, float* sT, int nb, int ldt) {
  // Every entry is loaded (no branch around the load), so that the loads issue together.
  for (int idx = threadIdx.x; idx < nb * nb; idx += kThreads) {
    const int i = idx / nb, j = idx % nb;
    const float x = T[idx];
    sT[i * ldt + j] = i / kBlock == j / kBlock ? x : 0.0f;
  }
}

// Block column c (width w <= 32) of the merge: X(0:c, 0:w) = S(0:c, c-32 : c-32+w)
// T(c:c+w, c:c+w) into sX (ld ldx), a CTA barrier, then out(i, j, T(i, c + j)) for
// T(0:c, c:c+w) = -T(0:c, 0:c) X. Both blocks of T are upper triangular; s(i, l) =
// S(i, c - 32 + l). Lane j of warp q forms entries (q + 8 k, j) of both products together
// (lanes j >= w idle), so that each thread runs c / 8 independent chains instead of one chain
// after another; every entry sums its terms in ascending l.
template <class SAt, class Out>
__device__ __forceinline__ void merge_block_column(const float* sT, int ldt, int c, int w, SAt s, float* sX, int ldx,
                                                   Out out) {
  constexpr int kWarps = kThreads / 32, kMaxK = kMaxOuterWidth / kWarps;
  static_assert(kBlock % kWarps == 0, "c, a multiple of kBlock, splits evenly over the warps");
  const int j = threadIdx.x & 31, q = threadIdx.x >> 5, nk = c / kWarps;
  const bool active = j < w;
  float x[kMaxK];
#pragma unroll
  for (int k = 0; k < kMaxK; ++k) x[k] = 0.0f;
  if (active) {
    for (int l = 0; l <= j; ++l) {
      const float t = sT[(c + l) * ldt + c + j];
#pragma unroll
      for (int k = 0; k < kMaxK; ++k)
        if (k < nk) x[k] = fmaf(s(q + kWarps * k, l), t, x[k]);
    }
#pragma unroll
    for (int k = 0; k < kMaxK; ++k)
      if (k < nk) sX[(q + kWarps * k) * ldx + j] = x[k];
  }
  __syncthreads();
  if (!active) return;
#pragma unroll
  for (int k = 0; k < kMaxK; ++k) x[k] = 0.0f;
  for (int l = q; l < c; ++l) {
    const float xl = sX[l * ldx + j];
#pragma unroll
    for (int k = 0; k < kMaxK; ++k) {
      const int i = q + kWarps * k;
      if (k < nk && l >= i) x[k] = fmaf(sT[i * ldt + l], xl, x[k]);
    }
  }
#pragma unroll
  for (int k = 0; k < kMaxK; ++k)
    if (k < nk) out(q + kWarps * k, j, -x[k]);
}

// One CTA per matrix. T lives in shared memory (ld nb + 1 against bank conflicts on
// column walks), X = S(0:c, block) T(block, block) beside it.
__global__ void __launch_bounds__(kThreads) larft_merge_kernel(const LarftMergeArgs p) {
  extern __shared__ float smem[];
  const int nb = p.nb, ldt = nb + 1, lds = larft_merge_gram_rows(nb);
  float* sT = smem;               // nb x ldt
  float* sX = sT + nb * ldt;      // lds x 32, row-major
  const std::int64_t mat = blockIdx.x;
  float* T = p.t + mat * p.t_stride;
  const float* S = p.s + mat * p.s_stride;

  load_diagonal_blocks(T, sT, nb, ldt);
  __syncthreads();
  for (int c = kBlock; c < nb; c += kBlock) {
    merge_block_column(
        sT, ldt, c, min(kBlock, nb - c), [&](int i, int l) { return S[i + (c - kBlock + l) * lds]; }, sX, kBlock,
        [&](int i, int j, float x) { sT[i * ldt + c + j] = x; });
    __syncthreads();
  }
  for (int idx = threadIdx.x; idx < nb * nb; idx += kThreads) T[idx] = sT[(idx / nb) * ldt + idx % nb];
}

// Two inner panels. Warp w forms the Gram part of its 8-row chunks w, w + 8, ... of rows
// 32.. (m16n8k8: m = S's rows, the columns of V1; n = its columns, of V2; k = rows of V);
// lane (g, t) loads rows t and t + 4 of a chunk at columns g + 8q, q = 0..7 (q < 4: V1,
// the A operand; q >= 4: V2, B), 32 bytes per row per quarter warp. The warps' parts are
// summed in a fixed tree (bitwise reproducible), then the merge as above with c = w = 32.
// In a cluster of C CTAs (p.ctas), CTA q takes every C-th pass of 64 rows from the q-th;
// CTA 0 adds the others' sums in rank order (through distributed shared memory) and merges.
constexpr int kPairRows = 8 * (kThreads / 32);  // rows per pass of the 8 warps
__global__ void __launch_bounds__(kThreads) larft_merge_pair_kernel(const LarftMergePairArgs p) {
  constexpr int kNb = 2 * kBlock, kLdt = kNb + 1;
  __shared__ float sRed[4][32 * 32];  // the tree sum's slots: value e of lane l at [e * 32 + l]
  __shared__ float sT[kNb * kLdt];
  __shared__ float sS[kBlock * (kBlock + 1)];
  __shared__ float sX[kBlock * (kBlock + 1)];
  __shared__ float sY[kBlock * (kBlock + 1)];  // T12, apart from T11: the compiler reads T11's rows in pairs
  const int ctas = p.ctas;
  const int rank = static_cast<int>(blockIdx.x % static_cast<unsigned>(ctas));  // the cluster spans x
  const std::int64_t mat = blockIdx.x / static_cast<unsigned>(ctas);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, t = lane & 3;
  float* T = p.t + mat * p.t_stride;
  const float* V = p.vt + mat * p.vt_stride;

  if (rank == 0) load_diagonal_blocks(T, sT, kNb, kLdt);

  float acc[2][4][4] = {};  // [mt][nt]: S(16 mt + g (+8), 8 nt + 2 t (+1))
  for (int r0 = kBlock + 8 * warp + kPairRows * rank; r0 < p.rows; r0 += kPairRows * ctas) {
    float x[2][8];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      // Rows past the panel read the last row (no branch around the loads) and count as zero.
      const int r = r0 + t + 4 * h;
      const float* row = V + static_cast<std::int64_t>(min(r, p.rows - 1)) * kNb + g;
#pragma unroll
      for (int q = 0; q < 8; ++q) {
        const float v = __ldg(row + 8 * q);
        x[h][q] = r < p.rows ? v : 0.0f;
      }
    }
    std::uint32_t bb[4][2], bs[4][2];
#pragma unroll
    for (int nt = 0; nt < 4; ++nt) {
      split_tf32(x[0][4 + nt], bb[nt][0], bs[nt][0]);
      split_tf32(x[1][4 + nt], bb[nt][1], bs[nt][1]);
    }
#pragma unroll
    for (int mt = 0; mt < 2; ++mt) {
      std::uint32_t ab[4], as[4];
      split_tf32(x[0][2 * mt], ab[0], as[0]);
      split_tf32(x[0][2 * mt + 1], ab[1], as[1]);
      split_tf32(x[1][2 * mt], ab[2], as[2]);
      split_tf32(x[1][2 * mt + 1], ab[3], as[3]);
#pragma unroll
      for (int nt = 0; nt < 4; ++nt) mma_3xtf32(acc[mt][nt], ab, as, bb[nt], bs[nt]);
    }
  }
  auto park = [&](int slot) {
#pragma unroll
    for (int e = 0; e < 32; ++e) sRed[slot][e * 32 + lane] = acc[e >> 4][(e >> 2) & 3][e & 3];
  };
  auto gather = [&](const float* slot) {
#pragma unroll
    for (int e = 0; e < 32; ++e) acc[e >> 4][(e >> 2) & 3][e & 3] += slot[e * 32 + lane];
  };
  // Warps 4-7 onto 0-3, 2-3 onto 0-1, 1 onto 0.
  if (warp >= 4) park(warp - 4);
  __syncthreads();
  if (warp < 4) gather(sRed[warp]);
  __syncthreads();
  if (warp == 2 || warp == 3) park(warp - 2);
  __syncthreads();
  if (warp < 2) gather(sRed[warp]);
  __syncthreads();
  if (warp == 1) park(0);
  __syncthreads();
  if (warp == 0) gather(sRed[0]);
  if (ctas > 1) {
    cg::cluster_group cluster = cg::this_cluster();
    if (rank != 0 && warp == 0) park(1);  // (free since the tree's fourth barrier)
    cluster.sync();
    if (rank == 0 && warp == 0)
      for (int q = 1; q < ctas; ++q) gather(cluster.map_shared_rank(sRed[1], q));
    cluster.sync();  // the other CTAs' sums are read: they may exit
    if (rank != 0) return;
  }
  if (warp == 0) {
#pragma unroll
    for (int mt = 0; mt < 2; ++mt)
#pragma unroll
      for (int nt = 0; nt < 4; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e)
          sS[(16 * mt + g + 8 * (e >> 1)) * (kBlock + 1) + 8 * nt + 2 * t + (e & 1)] = acc[mt][nt][e];
  }
  __syncthreads();
  merge_block_column(
      sT, kLdt, kBlock, kBlock, [&](int i, int l) { return sS[i * (kBlock + 1) + l]; }, sX, kBlock + 1,
      [&](int i, int j, float x) { sY[i * (kBlock + 1) + j] = x; });
  __syncthreads();
  for (int idx = threadIdx.x; idx < kNb * kNb; idx += kThreads) {
    const int i = idx / kNb, j = idx % kNb;
    T[idx] = i < kBlock && j >= kBlock ? sY[i * (kBlock + 1) + j - kBlock] : sT[i * kLdt + j];
  }
}

std::size_t smem_bytes(int nb) {
  return sizeof(float) * (static_cast<std::size_t>(nb) * (nb + 1) + static_cast<std::size_t>(larft_merge_gram_rows(nb)) * kBlock);
}

}  // namespace

Status larft_merge_initialize() {
  BATCHQR_CUDA_TRY(cudaFuncSetAttribute(larft_merge_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        static_cast<int>(smem_bytes(kMaxOuterWidth))));
  return Status::success;
}

Status launch_larft_merge(const LarftMergeArgs& args, std::int64_t batch, cudaStream_t stream) {
  if (args.nb <= kBlock || args.nb > kMaxOuterWidth || batch > INT_MAX) return Status::not_supported;
  if (batch == 0) return Status::success;
  larft_merge_kernel<<<static_cast<unsigned>(batch), kThreads, smem_bytes(args.nb), stream>>>(args);
  BATCHQR_CUDA_TRY(cudaGetLastError());
  return Status::success;
}

Status launch_larft_merge_pair(const LarftMergePairArgs& args, std::int64_t batch, cudaStream_t stream) {
  if (args.rows < 2 * kBlock || args.ctas < 1 || args.ctas > kMergePairMaxCtas || batch > INT_MAX / args.ctas)
    return Status::not_supported;
  if (batch == 0) return Status::success;
  const ClusterLaunch l(dim3(static_cast<unsigned>(batch * args.ctas)), dim3(kThreads), 0, stream, args.ctas);
  BATCHQR_CUDA_TRY(cudaLaunchKernelEx(&l.cfg, larft_merge_pair_kernel, args));
  return Status::success;
}

}  // namespace batchqr::cuda
