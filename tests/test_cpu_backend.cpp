// The CPU backend (LAPACK) against the gate, on every distribution, both layouts,
// square, tall and wide, with padded strides.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <thread>
#include <vector>

#include "test_util.hpp"

namespace batchqr {
namespace {

using check::Distribution;

struct CpuRun {
  std::vector<float> a, h, tau;
  Status status;
};

// Factors `h` in place on the CPU backend with its own context and workspace.
Status factor_in_place(const GeqrfDesc& d, float* h, float* tau, int threads = 0) {
  Context* ctx = nullptr;
  ContextOptions o;
  o.num_threads = threads;
  Status st = create_context(Backend::cpu, &ctx, o);
  if (st != Status::success) return st;
  std::size_t ws = 0;
  st = geqrf_workspace_size(ctx, d, &ws);
  std::vector<unsigned char> w(ws);
  if (st == Status::success) st = geqrf(ctx, d, h, tau, w.data(), ws);
  destroy_context(ctx);
  return st;
}

CpuRun factor(const GeqrfDesc& d, Distribution dist, double cond, std::uint64_t seed, int threads = 0) {
  CpuRun r;
  r.a = test::generate_batch(d, dist, cond, seed);
  r.h = r.a;
  r.tau.assign(std::max<std::size_t>(test::tau_extent(d), 1), -1.0f);
  r.status = factor_in_place(d, r.h.data(), r.tau.data(), threads);
  return r;
}

void expect_gate(const GeqrfDesc& d, Distribution dist, double cond) {
  const std::uint64_t seed = test::fresh_seed();
  const CpuRun r = factor(d, dist, cond, seed);
  ASSERT_EQ(r.status, Status::success);
  const auto rep = check::validate_host(d, r.a.data(), r.h.data(), r.tau.data());
  EXPECT_TRUE(rep.pass()) << test::describe(d, dist, cond, seed) << " factor " << rep.worst_factor << " orth "
                          << rep.worst_orth << " nonfinite " << rep.nonfinite;
  EXPECT_LE(rep.worst_factor, test::factor_bound(d.m, d.n)) << test::describe(d, dist, cond, seed);
  EXPECT_LE(rep.worst_orth, test::orth_bound(d.m, d.n)) << test::describe(d, dist, cond, seed);
}

TEST(CpuBackend, EveryDistributionPassesTheGate) {
  for (int di = 0; di < check::kNumDistributions; ++di)
    for (int n : {1, 2, 3, 33, 100, 257})
      for (Layout layout : {Layout::row_major, Layout::col_major}) {
        const std::int64_t batch = n >= 100 ? 2 : 5;
        expect_gate(make_geqrf_desc(n, n, batch, layout), static_cast<Distribution>(di), di % 3);
      }
}

TEST(CpuBackend, TallAndWide) {
  for (auto [m, n] : {std::pair{50, 20}, {20, 50}, {1, 7}, {7, 1}, {300, 257}, {64, 200}})
    for (Layout layout : {Layout::row_major, Layout::col_major}) {
      expect_gate(make_geqrf_desc(m, n, 3, layout), Distribution::dense, 1.0);
      expect_gate(make_geqrf_desc(m, n, 3, layout), Distribution::mixed, 2.0);
    }
}

TEST(CpuBackend, RowAndColumnMajorGiveTheSameFactors) {
  const std::uint64_t seed = test::fresh_seed();
  for (auto [m, n] : {std::pair{33, 33}, {40, 25}, {25, 40}}) {
    const GeqrfDesc dr = make_geqrf_desc(m, n, 3, Layout::row_major);
    const GeqrfDesc dc = make_geqrf_desc(m, n, 3, Layout::col_major);
    const CpuRun r = factor(dr, Distribution::dense, 0.0, seed);
    const CpuRun c = factor(dc, Distribution::dense, 0.0, seed);
    for (int b = 0; b < 3; ++b) {
      for (int i = 0; i < m; ++i)
        for (int j = 0; j < n; ++j) {
          const float x = r.h[b * dr.stride + i * dr.ld + j], y = c.h[b * dc.stride + i + j * dc.ld];
          ASSERT_NEAR(x, y, 2e-4f * (1.0f + std::fabs(y))) << b << " " << i << " " << j;
        }
      // sgelqf (row-major) and sgeqrf (column-major) round differently; tau gets the same
      // relative tolerance as the factors (an absolute 1e-5 failed for one seed in ~10).
      for (int j = 0; j < std::min(m, n); ++j) {
        const float y = c.tau[b * dc.tau_stride + j];
        ASSERT_NEAR(r.tau[b * dr.tau_stride + j], y, 2e-4f * (1.0f + std::fabs(y))) << b << " " << j;
      }
    }
  }
}

// One context, its worker threads kept between calls, shared by several calling threads
// (calls take turns on the workers); every result must match a fresh single-call run.
TEST(CpuBackend, SharedContextManyCallsFromSeveralThreads) {
  Context* ctx = nullptr;
  ContextOptions o;
  o.num_threads = 3;
  ASSERT_EQ(create_context(Backend::cpu, &ctx, o), Status::success);
  const std::uint64_t seed = test::fresh_seed();
  constexpr int kCallers = 4, kCalls = 6;
  std::vector<int> bad(kCallers, 0);
  std::vector<std::thread> callers;
  for (int t = 0; t < kCallers; ++t)
    callers.emplace_back([&, t] {
      for (int c = 0; c < kCalls; ++c) {
        const int n = 20 + 7 * ((t + c) % 4);
        const GeqrfDesc d = make_geqrf_desc(n, n, 1 + (t + 2 * c) % 5, (t + c) % 2 ? Layout::col_major : Layout::row_major);
        const std::uint64_t s = seed + 1000 * t + c;
        std::vector<float> a = test::generate_batch(d, Distribution::dense, 1.0, s), h = a;
        std::vector<float> tau(test::tau_extent(d), -1.0f);
        std::size_t ws = 0;
        if (geqrf_workspace_size(ctx, d, &ws) != Status::success) ++bad[t];
        std::vector<unsigned char> w(ws);
        if (geqrf(ctx, d, h.data(), tau.data(), w.data(), ws) != Status::success) ++bad[t];
        const CpuRun ref = factor(d, Distribution::dense, 1.0, s, 1);
        if (h != ref.h || tau != ref.tau) ++bad[t];
      }
    });
  for (auto& c : callers) c.join();
  for (int t = 0; t < kCallers; ++t) EXPECT_EQ(bad[t], 0) << "caller " << t << ", seed " << seed;
  EXPECT_EQ(destroy_context(ctx), Status::success);
}

TEST(CpuBackend, PaddedStridesAreRespected) {
  for (Layout layout : {Layout::row_major, Layout::col_major}) {
    GeqrfDesc d = make_geqrf_desc(30, 20, 3, layout);
    d.ld += 7;
    d.stride = (layout == Layout::row_major ? 30 : 20) * d.ld + 11;
    d.tau_stride = 25;
    const std::uint64_t seed = test::fresh_seed();
    const CpuRun r = factor(d, Distribution::dense, 1.0, seed);
    ASSERT_EQ(r.status, Status::success);
    const auto rep = check::validate_host(d, r.a.data(), r.h.data(), r.tau.data());
    EXPECT_TRUE(rep.pass()) << test::describe(d, Distribution::dense, 1.0, seed);
    // Padding (sentinel 12345) and the gaps between tau vectors are untouched.
    for (std::size_t i = 0; i < r.h.size(); ++i)
      if (r.a[i] == 12345.0f) ASSERT_EQ(r.h[i], 12345.0f) << i;
    for (int b = 0; b < 2; ++b)
      for (int j = 20; j < 25; ++j) ASSERT_EQ(r.tau[b * 25 + j], -1.0f);
  }
}

TEST(CpuBackend, ZeroMatrixGivesZeroTau) {
  const GeqrfDesc d = make_geqrf_desc(16, 16, 2);
  std::vector<float> a(512, 0.0f), tau(32, 5.0f);
  ASSERT_EQ(factor_in_place(d, a.data(), tau.data()), Status::success);
  for (float t : tau) EXPECT_EQ(t, 0.0f);
  for (float x : a) EXPECT_EQ(x, 0.0f);
}

TEST(CpuBackend, NaNStaysInItsMatrix) {
  const GeqrfDesc d = make_geqrf_desc(12, 12, 3);
  const std::uint64_t seed = test::fresh_seed();
  std::vector<float> a = test::generate_batch(d, Distribution::dense, 0.0, seed);
  a[d.stride + 5 * 12 + 3] = std::numeric_limits<float>::quiet_NaN();  // matrix 1
  std::vector<float> h = a, tau(36, 0.0f);
  ASSERT_EQ(factor_in_place(d, h.data(), tau.data()), Status::success);
  const auto rep = check::validate_host(d, a.data(), h.data(), tau.data());
  EXPECT_FALSE(rep.matrices[1].finite);
  EXPECT_TRUE(rep.matrices[0].pass());
  EXPECT_TRUE(rep.matrices[2].pass());
}

TEST(CpuBackend, ThreadCountDoesNotChangeResults) {
  const GeqrfDesc d = make_geqrf_desc(64, 64, 7);
  const std::uint64_t seed = test::fresh_seed();
  const CpuRun one = factor(d, Distribution::mixed, 2.0, seed, 1);
  const CpuRun many = factor(d, Distribution::mixed, 2.0, seed, 3);
  EXPECT_EQ(one.h, many.h);
  EXPECT_EQ(one.tau, many.tau);
}

}  // namespace
}  // namespace batchqr
