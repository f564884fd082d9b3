// Tuning client: times every compiled register-geqr2 configuration (kRegShapes) that can
// hold an m x n matrix, fused (no T), for a few batch sizes, so that the policy's choice
// in policy.cu (reg_config) rests on measurements. Not part of the library.
//
//   geqr2_reg_sweep [m n batch]...   (default: a built-in list of small shapes)
#include <cuda_runtime.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "cuda/geqr2_reg_launch.hpp"
#include "cuda/geqr2_warp_launch.hpp"
#include "cuda/policy.hpp"

using namespace batchqr;
using namespace batchqr::cuda;

int main(int argc, char** argv) {
  std::vector<std::array<int, 3>> cases;
  for (int i = 1; i + 2 < argc; i += 3) cases.push_back({std::atoi(argv[i]), std::atoi(argv[i + 1]), std::atoi(argv[i + 2])});
  if (cases.empty())
    cases = {{8, 8, 1000}, {16, 16, 1000}, {32, 32, 20}, {32, 32, 1000}, {48, 48, 40}, {64, 64, 40},
             {64, 64, 1000}, {176, 32, 40}, {352, 32, 40}, {512, 32, 640}, {1024, 32, 60}};
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  std::printf("%6s %5s %6s | %3s %2s %4s %5s | %10s %s\n", "m", "n", "batch", "R", "CT", "maxW", "warps", "us/launch",
              "(policy)");
  for (const auto& c : cases) {
    const int m = c[0], n = c[1], batch = c[2];
    const std::size_t elems = static_cast<std::size_t>(m) * n * batch;
    std::vector<float> h(elems);
    std::mt19937 gen(7);
    std::normal_distribution<float> nd;
    for (auto& x : h) x = nd(gen);
    float *a = nullptr, *a0 = nullptr, *tau = nullptr;
    cudaMalloc(&a, elems * 4);
    cudaMalloc(&a0, elems * 4);
    cudaMalloc(&tau, static_cast<std::size_t>(batch) * n * 4);
    cudaMemcpy(a0, h.data(), elems * 4, cudaMemcpyHostToDevice);
    DeviceInfo dev;
    cudaDeviceGetAttribute(&dev.sm_count, cudaDevAttrMultiProcessorCount, 0);
    const RegConfig chosen = reg_config(dev, m, n, batch);
    auto time_launches = [&](auto&& launch) {
      const int reps = 20;
      float best = 1e30f;
      for (int round = 0; round < 3; ++round) {
        cudaMemcpy(a, a0, elems * 4, cudaMemcpyDeviceToDevice);
        cudaEventRecord(e0);
        for (int r = 0; r < reps; ++r) launch();
        cudaEventRecord(e1);
        cudaEventSynchronize(e1);
        float ms = 0;
        cudaEventElapsedTime(&ms, e0, e1);
        if (ms < best) best = ms;
      }
      return 1000.0f * best / reps;
    };
    if (warp_qr_rows(m, n) > 0) {
      Geqr2WarpArgs g{a, n, static_cast<std::int64_t>(m) * n, tau, n, batch, m, n};
      const float us = time_launches([&] { launch_geqr2_warp(Layout::row_major, g, nullptr); });
      const cudaError_t err = cudaGetLastError();
      std::printf("%6d %5d %6d | warp kernel, M=%2d      | %10.2f *%s\n", m, n, batch, warp_qr_rows(m, n), us,
                  err != cudaSuccess ? cudaGetErrorString(err) : "");
    }
    for (const RegShape& s : kRegShapes) {
      RegConfig rc{s.rows_per_warp, s.col_tiles, s.max_warps, (m + s.rows_per_warp - 1) / s.rows_per_warp};
      if (s.col_tiles != (n + 31) / 32 || rc.warps > s.max_warps) continue;
      if (s.max_warps > 16 && rc.warps <= 16) continue;  // same kernel as the 16-warp shape, fewer registers
      Geqr2RegArgs g{};
      g.a = a;
      g.ld = n;  // row-major
      g.stride = static_cast<std::int64_t>(m) * n;
      g.tau = tau;
      g.tau_stride = n;
      g.rows = m;
      g.ncols = n;
      g.nrefl = m < n ? m : n;
      const float us = time_launches([&] { launch_geqr2_reg(Layout::row_major, g, rc, batch, nullptr); });
      const cudaError_t err = cudaGetLastError();
      const bool is_policy = warp_qr_rows(m, n) == 0 && chosen.rows_per_warp == rc.rows_per_warp && chosen.max_warps == rc.max_warps;
      std::printf("%6d %5d %6d | %3d %2d %4d %5d | %10.2f %s%s\n", m, n, batch, rc.rows_per_warp, rc.col_tiles,
                  rc.max_warps, rc.warps, us, is_policy ? "*" : "",
                  err != cudaSuccess ? cudaGetErrorString(err) : "");
    }
    cudaFree(a);
    cudaFree(a0);
    cudaFree(tau);
  }
  return 0;
}
