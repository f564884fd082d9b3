#include "batchqr/status.hpp"

namespace batchqr {

const char* status_string(Status s) noexcept {
  switch (s) {
    case Status::success: return "success";
    case Status::invalid_handle: return "invalid handle: the context is null or was created for another backend";
    case Status::invalid_size: return "invalid size: m, n and batch must be >= 0 and each matrix dimension < 2^31";
    case Status::invalid_layout: return "invalid layout: must be Layout::row_major or Layout::col_major";
    case Status::invalid_leading_dim: return "invalid leading dimension: ld must be >= max(1, n) for row-major or >= max(1, m) for column-major";
    case Status::invalid_stride: return "invalid stride: the batch stride or tau stride makes two matrices overlap";
    case Status::null_pointer: return "null pointer: a, tau, or a workspace of nonzero required size is null";
    case Status::invalid_pointer: return "invalid pointer: memory not accessible by the backend (host memory for CUDA or device memory for CPU)";
    case Status::insufficient_workspace: return "insufficient workspace: workspace_bytes is smaller than geqrf_workspace_size() returned";
    case Status::backend_unavailable: return "backend unavailable: not compiled in, or no CUDA device present";
    case Status::backend_error: return "backend error: the CUDA runtime or LAPACK reported a failure";
    case Status::out_of_memory: return "out of memory";
    case Status::not_supported: return "not supported by this backend or build";
  }
  return "unknown status code";
}

}  // namespace batchqr
