// Shared helpers for the batchqr tests.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "batchqr/batchqr.hpp"
#include "batchqr/check/generate.hpp"
#include "batchqr/check/validate.hpp"

namespace batchqr::test {

// A fresh seed per run (printed, so a failure can be replayed with BATCHQR_TEST_SEED).
inline std::uint64_t fresh_seed() {
  static const std::uint64_t base = [] {
    if (const char* s = std::getenv("BATCHQR_TEST_SEED")) return static_cast<std::uint64_t>(std::strtoull(s, nullptr, 10));
    std::random_device rd;
    const std::uint64_t v = (static_cast<std::uint64_t>(rd()) << 32) ^ rd();
    std::printf("[batchqr tests] base seed %llu (replay with BATCHQR_TEST_SEED=%llu)\n",
                static_cast<unsigned long long>(v), static_cast<unsigned long long>(v));
    return v;
  }();
  static std::uint64_t counter = 0;
  return base + 0x9E3779B97F4A7C15ull * ++counter;
}

// The accuracy batchqr promises (well inside the gate of 20 / 100): scaled factor
// residual <= 1 and orthogonality <= 5. For tiny matrices the scaling by N eps makes
// plain FP32 rounding score above that (LAPACK reaches 1.4 at N = 2), so below N = 8
// the bounds are 4 and 10.
inline double factor_bound(std::int64_t m, std::int64_t n) { return std::max(m, n) < 8 ? 4.0 : 1.0; }
inline double orth_bound(std::int64_t m, std::int64_t n) { return std::max(m, n) < 8 ? 10.0 : 5.0; }

// Element count a strided batch occupies (whole strides, so padding is included).
inline std::size_t batch_extent(const GeqrfDesc& d) {
  if (d.batch == 0 || d.m == 0 || d.n == 0) return 0;
  const std::int64_t span = d.layout == Layout::row_major ? (d.m - 1) * d.ld + d.n : (d.n - 1) * d.ld + d.m;
  return static_cast<std::size_t>((d.batch - 1) * d.stride + span);
}
// Index of element (i, j) of matrix b of a strided batch.
inline std::size_t element_index(const GeqrfDesc& d, std::int64_t b, std::int64_t i, std::int64_t j) {
  return static_cast<std::size_t>(b * d.stride + (d.layout == Layout::row_major ? i * d.ld + j : j * d.ld + i));
}
inline std::size_t tau_extent(const GeqrfDesc& d) {
  const std::int64_t k = d.m < d.n ? d.m : d.n;
  if (d.batch == 0 || k == 0) return 0;
  return static_cast<std::size_t>((d.batch - 1) * d.tau_stride + k);
}

// Host batch generated per the contract (padding filled with a sentinel).
inline std::vector<float> generate_batch(const GeqrfDesc& d, check::Distribution dist, double cond,
                                         std::uint64_t seed, float pad = 12345.0f) {
  std::vector<float> a(batch_extent(d), pad);
  check::GenSpec g;
  g.m = d.m;
  g.n = d.n;
  g.batch = d.batch;
  g.cond = cond;
  g.dist = dist;
  g.seed = seed;
  check::generate(g, d, a.data());
  return a;
}

inline std::string describe(const GeqrfDesc& d, check::Distribution dist, double cond, std::uint64_t seed) {
  char buf[200];
  std::snprintf(buf, sizeof buf, "%lldx%lldx%lld %s %s cond=%g seed=%llu", static_cast<long long>(d.batch),
                static_cast<long long>(d.m), static_cast<long long>(d.n),
                d.layout == Layout::row_major ? "row" : "col", check::to_string(dist), cond,
                static_cast<unsigned long long>(seed));
  return buf;
}

}  // namespace batchqr::test
