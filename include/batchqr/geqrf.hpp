// batchqr: batched Householder QR of FP32 matrices, LAPACK geqrf output.
//
//   Context* ctx;  create_context(Backend::cuda, &ctx);
//   GeqrfDesc d = make_geqrf_desc(m, n, batch, Layout::row_major);
//   size_t ws;     geqrf_workspace_size(ctx, d, &ws);   // once, off the hot path
//   geqrf(ctx, d, a, tau, workspace, ws, stream);       // a is overwritten by H
//   destroy_context(ctx);
//
// Output (per matrix, as LAPACK sgeqrf): the upper triangle of H holds R; below the
// diagonal column j holds the Householder vector v_j without its implicit leading 1;
// tau holds min(m, n) coefficients; Q = H_0 H_1 ... H_{k-1}, H_j = I - tau_j v_j v_j^T.
// Signs follow LAPACK: beta = -sign(alpha) ||x||; a column already zero below the
// diagonal gives tau = 0.
//
// Non-finite input: batchqr does not scan its input. A NaN or Inf in a matrix turns
// the factors of that matrix into NaN from the first column it reaches onwards (that
// matrix's H and tau are then meaningless); the other matrices of the batch are
// factored as if it were absent. This holds for both backends.
#pragma once

#include <cstddef>

#include "batchqr/status.hpp"
#include "batchqr/types.hpp"

namespace batchqr {

// Opaque. Holds the backend's configuration (device properties, thread count) and its
// resources: for CUDA a cuBLAS handle, a side stream and events; for the CPU the worker
// threads (started at first use). One context may be shared by several threads: their
// calls take turns (CUDA: while enqueueing work, not for the GPU work itself; CPU: for
// the whole call). Threads with contexts of their own never wait for each other.
struct Context;

struct ContextOptions {
  int device = -1;       // CUDA backend: device ordinal; -1 = the current device
  int num_threads = 0;   // CPU backend: worker threads; 0 = std::thread::hardware_concurrency()
  Math math = Math::automatic;  // CUDA backend: arithmetic of the trailing updates
};

// True when this build has the CUDA backend and at least one device is visible.
bool cuda_available() noexcept;

Status create_context(Backend backend, Context** ctx, const ContextOptions& options = {}) noexcept;
Status destroy_context(Context* ctx) noexcept;  // null is accepted and ignored
Status context_backend(const Context* ctx, Backend* backend) noexcept;

// Bytes of workspace that geqrf needs for `desc` (device memory for the CUDA backend,
// host memory for the CPU backend). May be 0, in which case workspace may be null.
Status geqrf_workspace_size(const Context* ctx, const GeqrfDesc& desc, std::size_t* bytes) noexcept;

// Factors every matrix of the batch in place.
//  CUDA backend: a, tau and workspace are device pointers; the call only enqueues work
//    on `stream` (no synchronization, no allocation) and may be captured in a CUDA graph.
//    Results are bitwise reproducible for the same input, sizes and device.
//  CPU backend: a, tau and workspace are host pointers; `stream` is ignored and the call
//    returns when the results are written.
// Argument errors are reported before anything is written; m, n or batch of 0 return
// success at once.
Status geqrf(Context* ctx, const GeqrfDesc& desc, float* a, float* tau, void* workspace,
             std::size_t workspace_bytes, Stream stream = nullptr) noexcept;

}  // namespace batchqr
