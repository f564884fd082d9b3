// batchqr: status codes returned by every public call.
#pragma once

namespace batchqr {

// Every public function returns a Status; none throws.
enum class Status : int {
  success = 0,
  invalid_handle,          // null context, or a context used with the wrong backend
  invalid_size,            // m, n or batch negative, or too large to index
  invalid_layout,          // layout value out of range
  invalid_leading_dim,     // ld smaller than the contiguous extent of a column/row
  invalid_stride,          // batch or tau stride lets two matrices overlap
  null_pointer,            // a required pointer is null
  invalid_pointer,         // a pointer the backend cannot access (host memory given to CUDA, ...)
  insufficient_workspace,  // workspace smaller than geqrf_workspace_size() asked for
  backend_unavailable,     // backend not compiled in, or no device present
  backend_error,           // the CUDA runtime or LAPACK reported an error
  out_of_memory,           // an allocation made outside the hot path failed
  not_supported,           // a valid request this build cannot serve
};

// Human-readable description; never null.
const char* status_string(Status s) noexcept;

}  // namespace batchqr
