// Internal: the device-level geqrf operation (host side of the CUDA backend).
//
//   GeqrfOperation::Arguments args{desc, a, tau};
//   if (GeqrfOperation::can_implement(dev, args) == Status::success) {
//     size_t ws = GeqrfOperation::get_workspace_size(dev, desc);
//     GeqrfOperation::run(dev, resources, args, workspace, ws, stream);
//   }
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstddef>

#include "batchqr/geqrf.hpp"
#include "cuda/device_info.hpp"
#include "cuda/policy.hpp"

namespace batchqr::cuda {

// The blocked path's objects for one part of a chunk: cuBLAS handles, the look-ahead's
// side stream and its events.
struct Lane {
  cublasHandle_t blas = nullptr;   // trailing updates; its stream and workspace are set per call
  cublasHandle_t blas_side = nullptr;  // updates inside an outer panel, on `side` (own workspace)
  cudaStream_t side = nullptr;     // panels of the look-ahead (non-blocking)
  cudaEvent_t ev_fork = nullptr, ev_panel = nullptr, ev_next = nullptr, ev_join = nullptr;
  cudaEvent_t ev_done[2] = {nullptr, nullptr};  // a block's trailing updates done (by the parity of the block)
};

// Per-context objects a call uses: created once (never on the hot path), used by one call
// at a time. The context's own lane serves the first (or only) part of a chunk; lane2 and
// stream2 (which plays the caller's stream for it) the second part of the batch interleave
// (GeqrfPlan::interleave), forked off the caller's stream at ev_split and joined at ev_merge.
struct Resources : Lane {
  Lane lane2;
  cudaStream_t stream2 = nullptr;
  cudaEvent_t ev_split = nullptr, ev_merge = nullptr;
};

// The device's properties (device < 0: the current one); not_supported below sm_90.
Status query_device(int device, DeviceInfo* out);
// Creates (on the current device) and destroys what a context needs for its calls.
Status create_resources(Resources* out);
void destroy_resources(const Resources& res);

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
  // Enqueues the factorization on `stream`; never synchronizes or allocates. Work may fork
  // to res.side and always joins back into `stream` before returning.
  static Status run(const DeviceInfo& dev, const Resources& res, const Arguments& args, void* workspace,
                    std::size_t workspace_bytes, cudaStream_t stream);
  // The same with a given plan (tuning clients: make_plan with PlanHints); the workspace
  // must hold plan.workspace_bytes.
  static Status run(const DeviceInfo& dev, const Resources& res, const Arguments& args, const GeqrfPlan& plan,
                    void* workspace, std::size_t workspace_bytes, cudaStream_t stream);
};

}  // namespace batchqr::cuda
