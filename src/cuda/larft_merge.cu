#include "cuda/larft_merge.hpp"

#include <climits>

#include "cuda/cuda_check.hpp"

namespace batchqr::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kBlock = kMergeBlock;

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

  // Diagonal blocks in, zeros elsewhere.
  for (int idx = threadIdx.x; idx < nb * nb; idx += kThreads) {
    const int i = idx / nb, j = idx % nb;
    sT[i * ldt + j] = i / kBlock == j / kBlock ? T[idx] : 0.0f;
  }
  __syncthreads();
  for (int c = kBlock; c < nb; c += kBlock) {
    const int w = min(kBlock, nb - c);
    // X(0:c, 0:w) = S(0:c, c-32 : c-32+w) T(c:c+w, c:c+w); the block of T is upper triangular.
    for (int idx = threadIdx.x; idx < c * w; idx += kThreads) {
      const int i = idx / w, j = idx % w;
      float x = 0.0f;
      for (int l = 0; l <= j; ++l) x = fmaf(S[i + (c - kBlock + l) * lds], sT[(c + l) * ldt + c + j], x);
      sX[i * kBlock + j] = x;
    }
    __syncthreads();
    // T(0:c, c:c+w) = -T(0:c, 0:c) X; T(0:c, 0:c) is upper triangular.
    for (int idx = threadIdx.x; idx < c * w; idx += kThreads) {
      const int i = idx / w, j = idx % w;
      float x = 0.0f;
      for (int l = i; l < c; ++l) x = fmaf(sT[i * ldt + l], sX[l * kBlock + j], x);
      sT[i * ldt + c + j] = -x;
    }
    __syncthreads();
  }
  for (int idx = threadIdx.x; idx < nb * nb; idx += kThreads) T[idx] = sT[(idx / nb) * ldt + idx % nb];
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

}  // namespace batchqr::cuda
