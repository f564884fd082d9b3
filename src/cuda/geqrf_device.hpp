// Internal: the device-level geqrf operation (host side of the CUDA backend).
//
//   GeqrfOperation::Arguments args{desc, a, tau};
//   if (GeqrfOperation::can_implement(dev, args) == Status::success) {
//     size_t ws = GeqrfOperation::get_workspace_size(dev, desc);
//     GeqrfOperation::run(dev, blas, args, workspace, ws, stream);
//   }
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstddef>

#include "batchqr/geqrf.hpp"
#include "cuda/device_info.hpp"

namespace batchqr::cuda {

class GeqrfOperation {
 public:
  struct Arguments {
    GeqrfDesc desc;
    float* a = nullptr;
    float* tau = nullptr;
  };

  // Once per device: raises the kernels' shared-memory limits.
  static Status initialize(const DeviceInfo& dev);
  static Status can_implement(const DeviceInfo& dev, const Arguments& args);
  static std::size_t get_workspace_size(const DeviceInfo& dev, const GeqrfDesc& desc);
  // Enqueues the factorization on `stream`; never synchronizes or allocates. `blas` is
  // used (its stream and workspace are set) when the plan's trailing update is cuBLAS;
  // the caller must not use it concurrently.
  static Status run(const DeviceInfo& dev, cublasHandle_t blas, const Arguments& args, void* workspace,
                    std::size_t workspace_bytes, cudaStream_t stream);
};

}  // namespace batchqr::cuda
