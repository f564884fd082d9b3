// Internal: launching geqr2_wcol_kernel (geqr2_wcol.cuh), the panel kernel whose warps
// own columns, for panels of at most 32 columns and kWcolMaxRows rows.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "batchqr/status.hpp"
#include "batchqr/types.hpp"
#include "cuda/device_info.hpp"

namespace batchqr::cuda {

struct Geqr2RegArgs;

inline constexpr int kWcolMaxRows = 1024;
// The policy's lower bound (exclusive): shorter panels stay on the register panel
// (docs/perf-notes.md v37: 192 until then).
inline constexpr int kWcolMinRows = 128;

// Rows per lane of the compiled configuration that holds `rows` rows (0: none does).
int geqr2_wcol_rows_per_lane(int rows);
// Dynamic shared memory of that configuration, in bytes.
std::size_t geqr2_wcol_smem(int rows_per_lane);
// Raises the kernels' shared-memory limits (once per device, before the first launch).
Status geqr2_wcol_initialize(const DeviceInfo& dev);
// One CTA per matrix; args as for geqr2_reg's panel variant (no cluster).
Status launch_geqr2_wcol(Layout layout, const Geqr2RegArgs& args, int rows_per_lane, std::int64_t batch,
                         cudaStream_t stream);

}  // namespace batchqr::cuda
