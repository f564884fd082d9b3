// Internal: validation of a GeqrfDesc, shared by every backend entry point.
#pragma once

#include <cstdint>

#include "batchqr/types.hpp"
#include "batchqr/status.hpp"

namespace batchqr::detail {

inline std::int64_t min_dim(const GeqrfDesc& d) { return d.m < d.n ? d.m : d.n; }

// Elements spanned by one matrix, from its first to its last element inclusive.
inline std::int64_t matrix_span(const GeqrfDesc& d) {
  if (d.m == 0 || d.n == 0) return 0;
  return d.layout == Layout::row_major ? (d.m - 1) * d.ld + d.n : (d.n - 1) * d.ld + d.m;
}

inline bool is_empty(const GeqrfDesc& d) { return d.m == 0 || d.n == 0 || d.batch == 0; }

// Checks sizes, layout, leading dimension and strides. Pointers are checked later,
// after the quick return for empty problems (LAPACK allows null pointers there).
inline Status check_desc(const GeqrfDesc& d) {
  constexpr std::int64_t kMaxDim = (std::int64_t{1} << 31) - 1;
  if (d.m < 0 || d.n < 0 || d.batch < 0) return Status::invalid_size;
  if (d.m > kMaxDim || d.n > kMaxDim) return Status::invalid_size;
  if (d.layout != Layout::row_major && d.layout != Layout::col_major) return Status::invalid_layout;
  const std::int64_t contiguous = d.layout == Layout::row_major ? d.n : d.m;
  if (d.ld < 1 || d.ld < contiguous || d.ld > kMaxDim) return Status::invalid_leading_dim;
  if (d.stride < 0 || d.tau_stride < 0) return Status::invalid_stride;
  if (is_empty(d)) return Status::success;
  // Overflow guard: the whole batch must be addressable with 64-bit offsets.
  const std::int64_t outer = d.layout == Layout::row_major ? d.m : d.n;
  if (outer - 1 > (INT64_MAX - contiguous) / d.ld) return Status::invalid_size;
  const std::int64_t span = matrix_span(d);
  if (d.batch > 1) {
    if (d.stride < span) return Status::invalid_stride;
    if (d.tau_stride < min_dim(d)) return Status::invalid_stride;
    if (d.batch - 1 > (INT64_MAX - span) / d.stride) return Status::invalid_size;
  }
  return Status::success;
}

}  // namespace batchqr::detail
