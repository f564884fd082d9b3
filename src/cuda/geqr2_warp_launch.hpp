// Internal: launching geqr2_warp_kernel (geqr2_warp.cuh), one warp per tiny matrix.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "batchqr/status.hpp"
#include "batchqr/types.hpp"

namespace batchqr::cuda {

struct Geqr2WarpArgs {
  float* a;  // first matrix of the (chunk of the) batch
  std::int64_t ld, stride;
  float* tau;
  std::int64_t tau_stride;
  std::int64_t batch;
  int m, n;
};

// Rows per lane of the compiled kernel that holds an m x n matrix (8, 16 or 32), or 0
// when none does (m > 32 or n > 32). Host code: the policy uses it too.
int warp_qr_rows(int m, int n);

Status launch_geqr2_warp(Layout layout, const Geqr2WarpArgs& args, cudaStream_t stream);

}  // namespace batchqr::cuda
