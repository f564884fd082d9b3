// Internal: host-side encoding of TMA tensor maps (tma.cuh) through the driver's
// cuTensorMapEncodeTiled, reached with cudaGetDriverEntryPointByVersion (no link against
// libcuda).
#pragma once

#include <cuda.h>

#include <cstdint>

namespace batchqr::cuda {

// A 3-D FP32 tensor of dims {d0, d1, d2} (d0 contiguous; dims 1 and 2 stride1 and stride2
// bytes apart), read in boxes of {box0, box1, 1} elements with 128-byte swizzle (box0 * 4
// <= 128) and zeros outside the tensor. False (map unusable) where the driver has no
// entry point or rejects the layout (addresses or strides not 16-byte multiples, ...).
bool encode_tensor_map_3d(CUtensorMap* map, const void* base, std::uint64_t d0, std::uint64_t d1, std::uint64_t d2,
                          std::uint64_t stride1_bytes, std::uint64_t stride2_bytes, unsigned box0, unsigned box1);

}  // namespace batchqr::cuda
