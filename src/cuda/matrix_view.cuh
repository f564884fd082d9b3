// Internal: a strided view of one matrix in global memory, in either layout.
#pragma once

#include <cstdint>

#include "batchqr/types.hpp"

namespace batchqr::cuda {

template <Layout L>
struct MatrixView {
  float* p;
  std::int64_t ld;
  __device__ __forceinline__ float& operator()(std::int64_t i, std::int64_t j) const {
    return L == Layout::row_major ? p[i * ld + j] : p[i + j * ld];
  }
  // The view of the submatrix starting at (i, j).
  __device__ __forceinline__ MatrixView offset(std::int64_t i, std::int64_t j) const {
    return {&(*this)(i, j), ld};
  }
};

}  // namespace batchqr::cuda
