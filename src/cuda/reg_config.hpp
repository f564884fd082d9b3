// Internal: the configurations of the register-resident geqr2 (geqr2_reg.cuh) that are
// compiled, shared by the policy (host) and the launcher (geqr2_reg_launch.cuh).
#pragma once

namespace batchqr::cuda {

// R rows per warp, CT column tiles of 32 per lane, at most max_warps warps per CTA (the
// kernel's launch bounds: 16 warps leave 128 registers per thread, 32 warps 64, where a
// 32-row warp spills). geqr2_reg_launch.cuh instantiates exactly these.
struct RegShape {
  int rows_per_warp;
  int col_tiles;
  int max_warps;
};
inline constexpr RegShape kRegShapes[] = {{2, 1, 16},  {4, 1, 16},  {8, 1, 16},  {16, 1, 16}, {32, 1, 16},
                                          {32, 1, 32}, {4, 2, 16},  {8, 2, 16},  {16, 2, 16}, {32, 2, 16}};
inline constexpr int kMaxRegColTiles = 2;

}  // namespace batchqr::cuda
