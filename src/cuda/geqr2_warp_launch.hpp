// Internal: launching geqr2_warp_kernel (geqr2_warp.cuh), one warp per tiny matrix.
#pragma once

#include <cuda_runtime.h>

#include "batchqr/status.hpp"
#include "batchqr/types.hpp"

namespace batchqr::cuda {

struct Geqr2WarpArgs;

// Rows per lane of the compiled kernel that holds an m x n matrix (8, 16 or 32), or 0
// when none does (m > 32 or n > 32). Host code: the policy uses it too.
int warp_qr_rows(int m, int n);

Status launch_geqr2_warp(Layout layout, const Geqr2WarpArgs& args, cudaStream_t stream);

}  // namespace batchqr::cuda
