// Internal: launching geqr2_reg_kernel for a RegConfig (one translation unit per layout,
// geqr2_reg_{row,col}.cu, keeps the many instantiations compiling in parallel).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "batchqr/status.hpp"
#include "cuda/geqr2_reg.cuh"
#include "cuda/policy.hpp"

namespace batchqr::cuda {

template <Layout L>
Status launch_geqr2_reg(const Geqr2RegArgs& args, const RegConfig& rc, std::int64_t batch, cudaStream_t stream);

inline Status launch_geqr2_reg(Layout layout, const Geqr2RegArgs& args, const RegConfig& rc, std::int64_t batch,
                               cudaStream_t stream) {
  return layout == Layout::row_major ? launch_geqr2_reg<Layout::row_major>(args, rc, batch, stream)
                                     : launch_geqr2_reg<Layout::col_major>(args, rc, batch, stream);
}

}  // namespace batchqr::cuda
