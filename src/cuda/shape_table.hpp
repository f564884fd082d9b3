// Internal: a launcher's compiled shapes are a constexpr table; these turn a run-time choice
// (an entry of the table) into template arguments, and visit every entry (to raise each
// kernel's shared-memory limit).
#pragma once

#include <cstddef>
#include <type_traits>

#include "batchqr/status.hpp"

namespace batchqr::cuda {

// f(std::integral_constant<std::size_t, I>) for the first I < N with match(I); backend_error
// where none matches (the configurations a launcher accepts are its table's entries).
template <std::size_t N, std::size_t I = 0, class Match, class F>
Status with_shape(const Match& match, F&& f) {
  if constexpr (I == N) {
    return Status::backend_error;
  } else {
    if (match(I)) return f(std::integral_constant<std::size_t, I>{});
    return with_shape<N, I + 1>(match, f);
  }
}

// f(std::integral_constant<std::size_t, I>) for every I < N in order, up to the first error.
template <std::size_t N, std::size_t I = 0, class F>
Status for_each_shape(F&& f) {
  if constexpr (I == N) {
    return Status::success;
  } else {
    const Status st = f(std::integral_constant<std::size_t, I>{});
    return st != Status::success ? st : for_each_shape<N, I + 1>(f);
  }
}

}  // namespace batchqr::cuda
