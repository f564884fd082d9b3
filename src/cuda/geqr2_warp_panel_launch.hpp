// Internal: launching geqr2_warp_panel_kernel (geqr2_warp_panel.cuh), one warp per panel.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "batchqr/status.hpp"
#include "batchqr/types.hpp"

namespace batchqr::cuda {

struct Geqr2RegArgs;  // geqr2_reg.cuh: the same arguments as the register panel

// Rows per lane of the compiled kernel that holds a rows x ncols panel (64, 96, 128, 160
// or 192), or 0 when none does (rows > 192 or ncols > 32). Host code: the policy uses it.
int warp_panel_rows(int rows, int ncols);

Status launch_geqr2_warp_panel(Layout layout, const Geqr2RegArgs& args, std::int64_t batch, cudaStream_t stream);

}  // namespace batchqr::cuda
