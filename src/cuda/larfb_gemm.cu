#include "cuda/larfb_gemm.hpp"

#include <climits>

#include "cuda/larft_merge.hpp"

namespace batchqr::cuda {
namespace {

Status to_status(cublasStatus_t s) {
  switch (s) {
    case CUBLAS_STATUS_SUCCESS: return Status::success;
    case CUBLAS_STATUS_ALLOC_FAILED: return Status::out_of_memory;
    case CUBLAS_STATUS_NOT_SUPPORTED:
    case CUBLAS_STATUS_ARCH_MISMATCH: return Status::not_supported;
    default: return Status::backend_error;
  }
}

}  // namespace

Status larfb_gemm(cublasHandle_t h, Layout layout, const LarfbGemmArgs& p, std::int64_t batch) {
  if (p.ld > INT_MAX || batch > INT_MAX) return Status::not_supported;
  const int ld = static_cast<int>(p.ld), nb = static_cast<int>(batch);
  const float one = 1.0f, zero = 0.0f, minus_one = -1.0f;
  float* w = p.w;
  float* w2 = p.w + p.w_stride / 2;
  cublasStatus_t s;
  if (layout == Layout::col_major) {
    float* c = p.a + p.j0 + static_cast<std::int64_t>(p.col0) * p.ld;
    // W (jb x ncols) = V^T C = Vt C
    s = cublasSgemmStridedBatched(h, CUBLAS_OP_N, CUBLAS_OP_N, p.jb, p.ncols, p.rows, &one, p.vt, p.vt_ld,
                                  p.vt_stride, c, ld, p.stride, &zero, w, p.jb, p.w_stride, nb);
    if (s != CUBLAS_STATUS_SUCCESS) return to_status(s);
    // W2 = T^T W: the stored T read column-major is T^T
    s = cublasSgemmStridedBatched(h, CUBLAS_OP_N, CUBLAS_OP_N, p.jb, p.ncols, p.jb, &one, p.t, p.t_ld, p.t_stride,
                                  w, p.jb, p.w_stride, &zero, w2, p.jb, p.w_stride, nb);
    if (s != CUBLAS_STATUS_SUCCESS) return to_status(s);
    // C -= V W2 = Vt^T W2
    s = cublasSgemmStridedBatched(h, CUBLAS_OP_T, CUBLAS_OP_N, p.rows, p.ncols, p.jb, &minus_one, p.vt, p.vt_ld,
                                  p.vt_stride, w2, p.jb, p.w_stride, &one, c, ld, p.stride, nb);
    return to_status(s);
  }
  // Row-major A is column-major A^T: C^T (ncols x rows) starts at element (j0, col0).
  float* ct = p.a + static_cast<std::int64_t>(p.j0) * p.ld + p.col0;
  // W^T (ncols x jb) = C^T V = C^T Vt^T
  s = cublasSgemmStridedBatched(h, CUBLAS_OP_N, CUBLAS_OP_T, p.ncols, p.jb, p.rows, &one, ct, ld, p.stride, p.vt,
                                p.vt_ld, p.vt_stride, &zero, w, p.ncols, p.w_stride, nb);
  if (s != CUBLAS_STATUS_SUCCESS) return to_status(s);
  // W2^T = W^T T = W^T (stored)^T
  s = cublasSgemmStridedBatched(h, CUBLAS_OP_N, CUBLAS_OP_T, p.ncols, p.jb, p.jb, &one, w, p.ncols, p.w_stride,
                                p.t, p.t_ld, p.t_stride, &zero, w2, p.ncols, p.w_stride, nb);
  if (s != CUBLAS_STATUS_SUCCESS) return to_status(s);
  // C^T -= W2^T V^T = W2^T Vt
  s = cublasSgemmStridedBatched(h, CUBLAS_OP_N, CUBLAS_OP_N, p.ncols, p.rows, p.jb, &minus_one, w2, p.ncols,
                                p.w_stride, p.vt, p.vt_ld, p.vt_stride, &one, ct, ld, p.stride, nb);
  return to_status(s);
}

Status gram_offdiag(cublasHandle_t h, const float* vt, std::int64_t vt_stride, int nb, int rows, float* s,
                    std::int64_t s_stride, std::int64_t batch) {
  if (batch > INT_MAX) return Status::not_supported;
  const float one = 1.0f, zero = 0.0f;
  constexpr int b = kMergeBlock;
  const int ms = larft_merge_gram_rows(nb), ns = nb - b, k = rows - b;
  const float* v0 = vt + static_cast<std::int64_t>(b) * nb;  // V^T columns from row b of V
  return to_status(cublasSgemmStridedBatched(h, CUBLAS_OP_N, CUBLAS_OP_T, ms, ns, k, &one, v0, nb, vt_stride,
                                             v0 + b, nb, vt_stride, &zero, s, ms, s_stride,
                                             static_cast<int>(batch)));
}

}  // namespace batchqr::cuda
