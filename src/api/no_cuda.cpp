// Built when the CUDA backend is not compiled in: the CUDA backend reports itself absent.
#include "api/backend.hpp"

namespace batchqr::detail {

bool cuda_backend_compiled() noexcept { return false; }
bool cuda_device_present() noexcept { return false; }
Status make_cuda_backend(const ContextOptions&, std::unique_ptr<BackendImpl>*) noexcept {
  return Status::backend_unavailable;
}

}  // namespace batchqr::detail
