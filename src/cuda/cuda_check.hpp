// Internal: CUDA runtime error handling for the backend.
#pragma once

#include <cuda_runtime.h>

#include "batchqr/status.hpp"

namespace batchqr::cuda {

inline Status to_status(cudaError_t e) {
  switch (e) {
    case cudaSuccess: return Status::success;
    case cudaErrorMemoryAllocation: return Status::out_of_memory;
    case cudaErrorNoDevice:
    case cudaErrorInsufficientDriver: return Status::backend_unavailable;
    default: return Status::backend_error;
  }
}

}  // namespace batchqr::cuda

// Returns the mapped Status from the enclosing function when a runtime call fails.
#define BATCHQR_CUDA_TRY(expr)                                            \
  do {                                                                    \
    const cudaError_t batchqr_err_ = (expr);                              \
    if (batchqr_err_ != cudaSuccess) return ::batchqr::cuda::to_status(batchqr_err_); \
  } while (0)
