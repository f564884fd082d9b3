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
#include "cuda/geqrf_device.hpp"
#include "cuda/geqr2_wcol.hpp"
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
    if (query_device(-1, &dev) != Status::success || geqr2_wcol_initialize(dev) != Status::success) {
      std::fprintf(stderr, "no usable CUDA device\n");
      return 1;
    }
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
    // As the blocked path runs a panel (n <= 32): with T and V^T out, the policy's register
    // panel against geqr2_wcol.
    if (n <= kMaxPanelWidth && m >= n && geqr2_wcol_rows_per_lane(m) > 0) {
      float *t = nullptr, *vt = nullptr;
      cudaMalloc(&t, static_cast<std::size_t>(batch) * kMaxPanelWidth * kMaxPanelWidth * 4);
      cudaMalloc(&vt, static_cast<std::size_t>(batch) * m * kMaxPanelWidth * 4);
      Geqr2RegArgs g{};
      g.a = a;
      g.ld = n;
      g.stride = static_cast<std::int64_t>(m) * n;
      g.tau = tau;
      g.tau_stride = n;
      g.t_out = t;
      g.t_stride = kMaxPanelWidth * kMaxPanelWidth;
      g.t_ld = kMaxPanelWidth;
      g.vt_out = vt;
      g.vt_stride = static_cast<std::int64_t>(m) * kMaxPanelWidth;
      g.vt_ld = kMaxPanelWidth;
      g.rows = m;
      g.ncols = n;
      g.nrefl = n;
      for (int wcol : {0, 1}) {
        PanelHints hints;
        hints.wcol = wcol;
        const PanelPlan pp = panel_plan(dev, m, n, n, true, batch, hints);
        if (wcol == 0 && pp.reg.rows_per_warp == 0) continue;
        const float us = time_launches([&] {
          if (wcol != 0) launch_geqr2_wcol(Layout::row_major, g, pp.wcol_rows_per_lane, batch, nullptr);
          else launch_geqr2_reg(Layout::row_major, g, pp.reg, batch, nullptr);
        });
        const cudaError_t err = cudaGetLastError();
        char shape[64];
        if (wcol != 0) std::snprintf(shape, sizeof shape, "geqr2_wcol, %2d rows/lane", pp.wcol_rows_per_lane);
        else std::snprintf(shape, sizeof shape, "reg %3d %4d %5d c%d  ", pp.reg.rows_per_warp, pp.reg.max_warps,
                           pp.reg.warps, pp.reg.cluster);
        std::printf("%6d %5d %6d | panel+T %s | %10.2f %s\n", m, n, batch, shape, us,
                    err != cudaSuccess ? cudaGetErrorString(err) : "");
      }
      cudaFree(vt);
      cudaFree(t);
    }
    cudaFree(a);
    cudaFree(a0);
    cudaFree(tau);
  }
  return 0;
}
