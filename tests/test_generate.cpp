// The contract's input distributions and suite definitions.
#include <gtest/gtest.h>

#include <cmath>

#include "batchqr/check/suite.hpp"
#include "test_util.hpp"

namespace batchqr {
namespace {

using check::Distribution;

float at(const std::vector<float>& a, const GeqrfDesc& d, std::int64_t b, std::int64_t i, std::int64_t j) {
  return a[static_cast<std::size_t>(b * d.stride + (d.layout == Layout::row_major ? i * d.ld + j : i + j * d.ld))];
}

TEST(Generate, DeterministicAndIndependentOfBatchAndLayout) {
  const std::uint64_t seed = test::fresh_seed();
  for (int di = 0; di < check::kNumDistributions; ++di) {
    const auto dist = static_cast<Distribution>(di);
    const GeqrfDesc r5 = make_geqrf_desc(9, 7, 5, Layout::row_major);
    const GeqrfDesc c3 = make_geqrf_desc(9, 7, 3, Layout::col_major);
    const auto a = test::generate_batch(r5, dist, 1.0, seed);
    const auto again = test::generate_batch(r5, dist, 1.0, seed);
    const auto other = test::generate_batch(r5, dist, 1.0, seed + 1);
    const auto col = test::generate_batch(c3, dist, 1.0, seed);
    EXPECT_EQ(a, again) << check::to_string(dist);
    if (dist != Distribution::mixed) {
      // (mixed may draw a different kind per matrix for another batch size's fix-up)
      for (int b = 0; b < 3; ++b)
        for (int i = 0; i < 9; ++i)
          for (int j = 0; j < 7; ++j) ASSERT_EQ(at(a, r5, b, i, j), at(col, c3, b, i, j)) << check::to_string(dist);
    }
    if (dist != Distribution::diagonal) EXPECT_NE(a, other) << check::to_string(dist);
  }
}

TEST(Generate, StructureOfEachDistribution) {
  const std::uint64_t seed = test::fresh_seed();
  const int n = 64;
  const GeqrfDesc d = make_geqrf_desc(n, n, 2, Layout::col_major);
  auto col_norm = [&](const std::vector<float>& a, int b, int j) {
    double s = 0;
    for (int i = 0; i < n; ++i) s += static_cast<double>(at(a, d, b, i, j)) * at(a, d, b, i, j);
    return std::sqrt(s);
  };
  {
    const auto a = test::generate_batch(d, Distribution::upper, 1.0, seed);
    for (int j = 0; j < n; ++j)
      for (int i = j + 1; i < n; ++i) ASSERT_EQ(at(a, d, 0, i, j), 0.0f);
  }
  {
    const auto a = test::generate_batch(d, Distribution::diagonal, 3.0, seed);
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < n; ++i) {
        if (i != j) ASSERT_EQ(at(a, d, 1, i, j), 0.0f);
        else ASSERT_NEAR(std::fabs(at(a, d, 1, i, j)), std::pow(10.0, -3.0 * j / (n - 1)), 1e-6);
      }
  }
  {
    const auto a = test::generate_batch(d, Distribution::rankdef, 0.0, seed);
    for (int j = 3 * n / 4; j < n; ++j) EXPECT_EQ(col_norm(a, 0, j), 0.0);
    EXPECT_GT(col_norm(a, 0, 0), 1.0);
  }
  {
    const auto a = test::generate_batch(d, Distribution::nearrank, 0.0, seed);
    const int r = 3 * n / 4;
    for (int c = 0; c < n - r; ++c) {
      double diff = 0;
      for (int i = 0; i < n; ++i) diff = std::max(diff, std::fabs(double(at(a, d, 0, i, r + c)) - at(a, d, 0, i, c)));
      EXPECT_LT(diff, 1e-3);
      EXPECT_GT(diff, 0.0);
    }
  }
  {
    const auto a = test::generate_batch(d, Distribution::clustered, 0.0, seed);
    EXPECT_GT(col_norm(a, 0, 0), 1.0);
    EXPECT_LT(col_norm(a, 0, n - 1), 1e-4);
    EXPECT_NEAR(col_norm(a, 0, n / 2) / std::sqrt(n) / std::sqrt(check::kEps32), 1.0, 0.35);
  }
  {
    const auto a = test::generate_batch(d, Distribution::band, 0.0, seed);
    const int w = 2;  // max(2, min(32, 64 / 32))
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < n; ++i)
        if (std::abs(i - j) > w) ASSERT_EQ(at(a, d, 0, i, j), 0.0f);
  }
  {
    const auto a = test::generate_batch(d, Distribution::nearcollinear, 0.0, seed);
    double diff = 0;
    for (int i = 0; i < n; ++i) diff = std::max(diff, std::fabs(double(at(a, d, 0, i, 5)) - at(a, d, 0, i, 40)));
    EXPECT_LT(diff, 2e-3);
  }
  {
    const auto a = test::generate_batch(d, Distribution::rowscale, 0.0, seed);
    double first = 0, last = 0;
    for (int j = 0; j < n; ++j) {
      first = std::max(first, double(std::fabs(at(a, d, 0, 0, j))));
      last = std::max(last, double(std::fabs(at(a, d, 0, n - 1, j))));
    }
    EXPECT_LT(last, first * 1e-3);
  }
}

TEST(Generate, MixedHoldsDenseAndNonDense) {
  for (int t = 0; t < 50; ++t) {
    check::GenSpec g;
    g.m = g.n = 8;
    g.batch = 2 + t % 3;
    g.dist = Distribution::mixed;
    g.seed = test::fresh_seed();
    int dense = 0, other = 0;
    for (std::int64_t b = 0; b < g.batch; ++b) (check::distribution_of(g, b) == Distribution::dense ? dense : other)++;
    EXPECT_GE(dense, 1);
    EXPECT_GE(other, 1);
  }
}

TEST(Suite, Definitions) {
  EXPECT_EQ(check::suite_qr_v2().size(), 14u);
  EXPECT_EQ(check::suite_smoke().size(), 22u);
  std::vector<check::CaseSpec> s;
  EXPECT_FALSE(check::suite_by_name("nope", &s));
  const auto q = check::suite_qr_v2();
  EXPECT_EQ(q[3].batch, 640);
  EXPECT_EQ(q[3].n, 512);
  EXPECT_EQ(check::inputs_per_case(q[0]), 50);   // 20x32: capped at 50
  EXPECT_EQ(check::inputs_per_case(q[3]), 1);    // 640x512 is larger than 256 MiB
  EXPECT_EQ(check::inputs_per_case(q[2]), 13);   // 256 MiB / (40*352*352*4)
}

TEST(Suite, ParseCase) {
  check::CaseSpec c;
  std::string err;
  ASSERT_TRUE(check::parse_case("batch=640,n=512,cond=2,case=mixed", &c, &err)) << err;
  EXPECT_EQ(c.batch, 640);
  EXPECT_EQ(c.m, 512);
  EXPECT_EQ(c.n, 512);
  EXPECT_EQ(c.cond, 2.0);
  EXPECT_EQ(c.dist, Distribution::mixed);
  ASSERT_TRUE(check::parse_case("batch=4,m=3000,n=4", &c, &err)) << err;
  EXPECT_EQ(c.m, 3000);
  EXPECT_EQ(c.dist, Distribution::dense);
  EXPECT_FALSE(check::parse_case("batch=4", &c, &err));
  EXPECT_NE(err.find("n="), std::string::npos);
  EXPECT_FALSE(check::parse_case("batch=4,n=5,case=weird", &c, &err));
  EXPECT_FALSE(check::parse_case("batch=-4,n=5", &c, &err));
  EXPECT_FALSE(check::parse_case("batch=4,n=5,color=red", &c, &err));
  EXPECT_FALSE(check::parse_case("batch=4,n", &c, &err));
  // Sizes past int (the library's dimensions, the baselines' batch) or past long long.
  ASSERT_TRUE(check::parse_case("batch=2147483647,n=2147483647", &c, &err)) << err;
  EXPECT_FALSE(check::parse_case("batch=2147483648,n=5", &c, &err));
  EXPECT_NE(err.find("at most 2147483647"), std::string::npos) << err;
  EXPECT_FALSE(check::parse_case("batch=4,n=5,m=99999999999999999999", &c, &err));
  EXPECT_NE(err.find("m must be at most"), std::string::npos) << err;
}

}  // namespace
}  // namespace batchqr
