// Internal: launching geqr2_cta_kernel (geqr2_cta.cuh), unblocked QR of a whole small
// matrix in one CTA's registers, as a device-level operation.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "batchqr/status.hpp"
#include "batchqr/types.hpp"
#include "cuda/device_info.hpp"

namespace batchqr::cuda {

struct Geqr2CtaArgs {
  float* a;  // first matrix of the (chunk of the) batch
  std::int64_t ld, stride;
  float* tau;
  std::int64_t tau_stride;
  int m, n;
};

// A compiled shape: rows_per_lane (RPL) x 8 rows, slots x 4 warps columns, on `warps`
// warps. rows_per_lane == 0: none holds the matrix.
struct CtaConfig {
  int rows_per_lane = 0;
  int slots = 0;
  int warps = 0;
};

inline constexpr int kCtaMaxRows = 256;
inline constexpr int kCtaMaxCols = 192;

// The smallest compiled shape that holds an m x n matrix (and whose staging fits the
// device's shared memory), or none.
CtaConfig geqr2_cta_config(const DeviceInfo& dev, int m, int n);
// Dynamic shared memory of a launch, in bytes.
std::size_t geqr2_cta_smem(const CtaConfig& cfg, int n);
// Raises the kernels' shared-memory limits (once per device, before the first launch).
Status geqr2_cta_initialize(const DeviceInfo& dev);
// One CTA per matrix; no workspace.
Status launch_geqr2_cta(Layout layout, const Geqr2CtaArgs& args, const CtaConfig& cfg, std::int64_t batch,
                        cudaStream_t stream);

}  // namespace batchqr::cuda
