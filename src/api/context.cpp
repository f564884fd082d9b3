// Host API: argument checks, quick returns, then the backend.
#include <memory>
#include <new>

#include "api/backend.hpp"
#include "api/check_args.hpp"
#include "batchqr/geqrf.hpp"

namespace batchqr {

struct Context {
  static constexpr unsigned kAlive = 0xB47C0A11u;
  unsigned magic = kAlive;
  std::unique_ptr<detail::BackendImpl> impl;
};

namespace {
bool usable(const Context* ctx) { return ctx != nullptr && ctx->magic == Context::kAlive && ctx->impl; }
}  // namespace

bool cuda_available() noexcept { return detail::cuda_backend_compiled() && detail::cuda_device_present(); }

Status create_context(Backend backend, Context** ctx, const ContextOptions& options) noexcept {
  if (ctx == nullptr) return Status::null_pointer;
  *ctx = nullptr;
  std::unique_ptr<detail::BackendImpl> impl;
  Status st;
  switch (backend) {
    case Backend::cpu: st = detail::make_cpu_backend(options, &impl); break;
    case Backend::cuda: st = detail::make_cuda_backend(options, &impl); break;
    default: return Status::not_supported;
  }
  if (st != Status::success) return st;
  Context* c = new (std::nothrow) Context;
  if (c == nullptr) return Status::out_of_memory;
  c->impl = std::move(impl);
  *ctx = c;
  return Status::success;
}

Status destroy_context(Context* ctx) noexcept {
  if (ctx == nullptr) return Status::success;
  if (ctx->magic != Context::kAlive) return Status::invalid_handle;
  ctx->magic = 0;
  delete ctx;
  return Status::success;
}

Status context_backend(const Context* ctx, Backend* backend) noexcept {
  if (!usable(ctx)) return Status::invalid_handle;
  if (backend == nullptr) return Status::null_pointer;
  *backend = ctx->impl->kind();
  return Status::success;
}

Status geqrf_workspace_size(const Context* ctx, const GeqrfDesc& desc, std::size_t* bytes) noexcept {
  if (!usable(ctx)) return Status::invalid_handle;
  if (bytes == nullptr) return Status::null_pointer;
  *bytes = 0;
  const Status st = detail::check_desc(desc);
  if (st != Status::success) return st;
  if (detail::is_empty(desc)) return Status::success;
  return ctx->impl->workspace_size(desc, bytes);
}

Status geqrf(Context* ctx, const GeqrfDesc& desc, float* a, float* tau, void* workspace,
             std::size_t workspace_bytes, Stream stream) noexcept {
  if (!usable(ctx)) return Status::invalid_handle;
  Status st = detail::check_desc(desc);
  if (st != Status::success) return st;
  if (detail::is_empty(desc)) return Status::success;
  if (a == nullptr || tau == nullptr) return Status::null_pointer;
  std::size_t need = 0;
  st = ctx->impl->workspace_size(desc, &need);
  if (st != Status::success) return st;
  if (workspace_bytes < need) return Status::insufficient_workspace;
  if (need > 0 && workspace == nullptr) return Status::null_pointer;
  return ctx->impl->geqrf(desc, a, tau, workspace, workspace_bytes, stream);
}

}  // namespace batchqr
