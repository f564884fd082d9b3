// The CUDA backend: device discovery, pointer checks, and the call into GeqrfOperation.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <mutex>
#include <new>

#include "api/backend.hpp"
#include "cuda/geqrf_cluster.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/geqrf_device.hpp"

namespace batchqr::detail {
namespace {

using cuda::DeviceInfo;
using cuda::GeqrfOperation;

// Makes the context's device current for the duration of a call, then restores.
class DeviceGuard {
 public:
  explicit DeviceGuard(int device) {
    if (cudaGetDevice(&previous_) == cudaSuccess && previous_ != device) {
      ok_ = cudaSetDevice(device) == cudaSuccess;
      switched_ = ok_;
    }
  }
  ~DeviceGuard() {
    if (switched_) cudaSetDevice(previous_);
  }
  bool ok() const { return ok_; }

 private:
  int previous_ = -1;
  bool switched_ = false;
  bool ok_ = true;
};

// Device (or managed) memory of `device`; host memory is rejected.
bool device_accessible(const void* p, int device) {
  cudaPointerAttributes attr{};
  if (cudaPointerGetAttributes(&attr, p) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky-free error state of this query
    return false;
  }
  if (attr.type == cudaMemoryTypeManaged) return true;
  return attr.type == cudaMemoryTypeDevice && attr.device == device;
}

class CudaBackend final : public BackendImpl {
 public:
  CudaBackend(const DeviceInfo& dev, const cuda::Resources& res) : dev_(dev), res_(res) {}
  ~CudaBackend() override {
    DeviceGuard guard(dev_.device);
    cuda::destroy_resources(res_);
  }
  CudaBackend(const CudaBackend&) = delete;
  CudaBackend& operator=(const CudaBackend&) = delete;
  Backend kind() const noexcept override { return Backend::cuda; }

  Status workspace_size(const GeqrfDesc& d, std::size_t* bytes) const noexcept override {
    *bytes = GeqrfOperation::get_workspace_size(dev_, d);
    return Status::success;
  }

  Status geqrf(const GeqrfDesc& d, float* a, float* tau, void* workspace, std::size_t workspace_bytes,
               Stream stream) const noexcept override {
    DeviceGuard guard(dev_.device);
    if (!guard.ok()) return Status::backend_error;
    if (!device_accessible(a, dev_.device) || !device_accessible(tau, dev_.device)) return Status::invalid_pointer;
    if (workspace != nullptr && !device_accessible(workspace, dev_.device)) return Status::invalid_pointer;
    const GeqrfOperation::Arguments args{d, a, tau};
    const Status st = GeqrfOperation::can_implement(dev_, args);
    if (st != Status::success) return st;
    // The cuBLAS handle's stream and workspace and the events are per call: one call at a
    // time per context.
    std::lock_guard<std::mutex> lock(mutex_);
    return GeqrfOperation::run(dev_, res_, args, workspace, workspace_bytes, stream);
  }

 private:
  DeviceInfo dev_;
  cuda::Resources res_;
  mutable std::mutex mutex_;  // the handle, stream and events serve one call at a time
};

}  // namespace

bool cuda_backend_compiled() noexcept { return true; }

bool cuda_device_present() noexcept {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  return count > 0;
}

Status make_cuda_backend(const ContextOptions& options, std::unique_ptr<BackendImpl>* out) noexcept {
  if (!cuda_device_present()) return Status::backend_unavailable;
  DeviceInfo dev;
  Status rs = cuda::query_device(options.device, &dev);
  if (rs != Status::success) return rs;
  switch (options.math) {
    case Math::automatic: dev.tf32x3 = false; break;  // see docs/perf-notes.md
    case Math::tf32x3: dev.tf32x3 = true; break;
    case Math::fp32: dev.tf32x3 = false; break;
    default: return Status::not_supported;
  }
  DeviceGuard guard(dev.device);
  if (!guard.ok()) return Status::backend_error;
  const Status st = GeqrfOperation::initialize(dev);
  if (st != Status::success) return st;
  cuda::Resources res;
  rs = cuda::create_resources(&res);
  if (rs == Status::success) {
    out->reset(new (std::nothrow) CudaBackend(dev, res));
    if (*out) return Status::success;
    rs = Status::out_of_memory;
  }
  cuda::destroy_resources(res);
  return rs;
}

}  // namespace batchqr::detail

namespace batchqr::cuda {

Status query_device(int device, DeviceInfo* out) {
  DeviceInfo dev;
  if (device >= 0) {
    dev.device = device;
  } else {
    BATCHQR_CUDA_TRY(cudaGetDevice(&dev.device));
  }
  int count = 0;
  BATCHQR_CUDA_TRY(cudaGetDeviceCount(&count));
  if (dev.device >= count) return Status::backend_unavailable;
  cudaDeviceProp prop{};
  BATCHQR_CUDA_TRY(cudaGetDeviceProperties(&prop, dev.device));
  dev.cc_major = prop.major;
  dev.cc_minor = prop.minor;
  dev.sm_count = prop.multiProcessorCount;
  dev.smem_per_block_optin = prop.sharedMemPerBlockOptin;
  dev.smem_per_sm = prop.sharedMemPerMultiprocessor;
  int cluster = 0;
  BATCHQR_CUDA_TRY(cudaDeviceGetAttribute(&cluster, cudaDevAttrClusterLaunch, dev.device));
  dev.cluster_launch = cluster != 0;
  if (dev.cc_major < 9) return Status::not_supported;  // the kernels are built for sm_90 and newer
  if (dev.cluster_launch) {
    detail::DeviceGuard guard(dev.device);
    if (!guard.ok()) return Status::backend_error;
    const Status st = geqrf_cluster_occupancy(&dev);
    if (st != Status::success) return st;
  }
  *out = dev;
  return Status::success;
}

namespace {

// What exists is left in *lane on failure, for destroy_lane.
Status create_lane(Lane* lane) {
  Status rs = Status::success;
  for (cublasHandle_t* h : {&lane->blas, &lane->blas_side}) {
    if (rs != Status::success) break;
    const cublasStatus_t bs = cublasCreate(h);
    if (bs != CUBLAS_STATUS_SUCCESS) {
      *h = nullptr;
      rs = bs == CUBLAS_STATUS_ALLOC_FAILED ? Status::out_of_memory : Status::backend_error;
    }
  }
  // Panels are on the critical path of the look-ahead: their stream gets the highest
  // priority, so the block scheduler gives them SMs ahead of the trailing updates.
  int least = 0, greatest = 0;
  if (rs == Status::success) rs = to_status(cudaDeviceGetStreamPriorityRange(&least, &greatest));
  if (rs == Status::success) rs = to_status(cudaStreamCreateWithPriority(&lane->side, cudaStreamNonBlocking, greatest));
  for (cudaEvent_t* e : {&lane->ev_fork, &lane->ev_panel, &lane->ev_next, &lane->ev_join, &lane->ev_done[0], &lane->ev_done[1]})
    if (rs == Status::success) rs = to_status(cudaEventCreateWithFlags(e, cudaEventDisableTiming));
  return rs;
}

void destroy_lane(const Lane& l) {
  if (l.blas != nullptr) cublasDestroy(l.blas);
  if (l.blas_side != nullptr) cublasDestroy(l.blas_side);
  if (l.side != nullptr) cudaStreamDestroy(l.side);
  for (cudaEvent_t e : {l.ev_fork, l.ev_panel, l.ev_next, l.ev_join, l.ev_done[0], l.ev_done[1]})
    if (e != nullptr) cudaEventDestroy(e);
}

}  // namespace

Status create_resources(Resources* out) {
  Resources res;
  Status rs = create_lane(&res);
  if (rs == Status::success) rs = create_lane(&res.lane2);
  if (rs == Status::success) rs = to_status(cudaStreamCreateWithFlags(&res.stream2, cudaStreamNonBlocking));
  for (cudaEvent_t* e : {&res.ev_split, &res.ev_merge})
    if (rs == Status::success) rs = to_status(cudaEventCreateWithFlags(e, cudaEventDisableTiming));
  *out = res;  // partially created on failure: destroy_resources releases what exists
  return rs;
}

void destroy_resources(const Resources& r) {
  destroy_lane(r);
  destroy_lane(r.lane2);
  if (r.stream2 != nullptr) cudaStreamDestroy(r.stream2);
  for (cudaEvent_t e : {r.ev_split, r.ev_merge})
    if (e != nullptr) cudaEventDestroy(e);
}

}  // namespace batchqr::cuda
