// Internal: the configurations of the register-resident geqr2 (geqr2_reg.cuh) that are
// compiled, shared by the policy (host) and the kernel's launch bounds (device).
#pragma once

#ifdef __CUDACC__
#define BATCHQR_HOST_DEVICE __host__ __device__
#else
#define BATCHQR_HOST_DEVICE
#endif

namespace batchqr::cuda {

// R rows per warp, CT column tiles of 32 per lane. geqr2_reg_launch.cuh instantiates
// exactly these pairs.
struct RegShape {
  int rows_per_warp;
  int col_tiles;
};
inline constexpr RegShape kRegShapes[] = {{2, 1}, {4, 1}, {8, 1}, {16, 1}, {32, 1},
                                          {4, 2}, {8, 2}, {16, 2}, {32, 2}};
inline constexpr int kMaxRegColTiles = 2;

// The largest warp count of a configuration: 32 while R * CT floats of the matrix leave
// room for 1024 threads (64 registers each): single-tile panels up to R = 32, else
// R * CT <= 16; otherwise 16 (128 registers each).
BATCHQR_HOST_DEVICE constexpr int geqr2_reg_max_warps(int R, int CT) {
  return (CT == 1 ? R <= 32 : R * CT <= 16) ? 32 : 16;
}

}  // namespace batchqr::cuda
