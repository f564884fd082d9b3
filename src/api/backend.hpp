// Internal: the interface every backend implements. The host API (context.cpp) has
// already validated the descriptor and handled quick returns before calling in.
#pragma once

#include <cstddef>
#include <memory>

#include "batchqr/geqrf.hpp"

namespace batchqr::detail {

class BackendImpl {
 public:
  virtual ~BackendImpl() = default;
  virtual Backend kind() const noexcept = 0;
  // desc is valid and non-empty (m, n, batch > 0).
  virtual Status workspace_size(const GeqrfDesc& desc, std::size_t* bytes) const noexcept = 0;
  // Pointers are non-null and the workspace is at least workspace_size() bytes.
  virtual Status geqrf(const GeqrfDesc& desc, float* a, float* tau, void* workspace,
                       std::size_t workspace_bytes, Stream stream) const noexcept = 0;
};

Status make_cpu_backend(const ContextOptions& options, std::unique_ptr<BackendImpl>* out) noexcept;
// Returns backend_unavailable when built without CUDA or no device is visible.
Status make_cuda_backend(const ContextOptions& options, std::unique_ptr<BackendImpl>* out) noexcept;
bool cuda_backend_compiled() noexcept;
bool cuda_device_present() noexcept;

}  // namespace batchqr::detail
