// The bit operations of the 3xTF32 operand split (src/cuda/tf32_split.hpp), checked on the
// host against references in FP64: big is FP32 rounded to TF32 as cvt.rna.tf32 rounds,
// small = x - big is exact and small, what the tensor cores read of small loses at most
// 2^-21 |x|, and the three products of the split reproduce a b to 2^-19 |a b|. Random
// values from a fresh seed over the whole normal range, plus edge cases.
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>

#include "cuda/tf32_split.hpp"
#include "test_util.hpp"

namespace batchqr::test {
namespace {

std::uint32_t bits(float x) {
  std::uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
}
float value(std::uint32_t u) {
  float x;
  std::memcpy(&x, &u, sizeof x);
  return x;
}

// x rounded to 11 significant bits, to nearest, ties away from zero (normal x); inf past FLT_MAX.
double tf32_rna_reference(float x) {
  int e = 0;
  const double m = std::frexp(static_cast<double>(x), &e);  // |m| in [0.5, 1)
  const double r = std::floor(std::fabs(m) * 2048.0 + 0.5);
  const double y = std::ldexp(r, e - 11);
  return std::copysign(y > FLT_MAX ? std::numeric_limits<double>::infinity() : y, static_cast<double>(x));
}

struct Split {
  float big, small;
};
Split split(float x) {
  const float big = value(cuda::tf32_round_bits(bits(x)));
  return {big, x - big};
}
// What the tensor cores read of an operand.
double seen(float x) { return static_cast<double>(value(cuda::tf32_truncate_bits(bits(x)))); }

float random_normal_float(std::mt19937_64& gen) {
  std::uniform_int_distribution<std::uint32_t> mant(0, (1u << 23) - 1), expo(1, 254), sign(0, 1);
  return value((sign(gen) << 31) | (expo(gen) << 23) | mant(gen));
}

TEST(Tf32Split, BigIsRoundToNearestTiesAway) {
  std::mt19937_64 gen(fresh_seed());
  for (int i = 0; i < 200000; ++i) {
    const float x = random_normal_float(gen);
    const float big = split(x).big;
    ASSERT_EQ(bits(big) & 0x1fffu, 0u) << x;
    ASSERT_EQ(static_cast<double>(big), tf32_rna_reference(x)) << x;
  }
  // Ties: 1 + 2^-11 (halfway between 1 and 1 + 2^-10) rounds away from zero.
  EXPECT_EQ(split(1.0f + 0x1p-11f).big, 1.0f + 0x1p-10f);
  EXPECT_EQ(split(-(1.0f + 0x1p-11f)).big, -(1.0f + 0x1p-10f));
  EXPECT_EQ(split(1.0f + 0x1p-12f).big, 1.0f);
  // The carry into the exponent, and past FLT_MAX (as cvt.rna.tf32).
  EXPECT_EQ(split(std::nextafter(2.0f, 0.0f)).big, 2.0f);
  EXPECT_TRUE(std::isinf(split(FLT_MAX).big));
  EXPECT_TRUE(std::isinf(split(std::numeric_limits<float>::infinity()).big));
  EXPECT_EQ(split(0.0f).big, 0.0f);
  EXPECT_EQ(split(0.0f).small, 0.0f);
}

TEST(Tf32Split, SmallIsExactAndLosesAtMost2ToMinus21) {
  std::mt19937_64 gen(fresh_seed());
  for (int i = 0; i < 200000; ++i) {
    float x = random_normal_float(gen);
    if (std::fabs(x) > 0x1p120f || std::fabs(x) < 0x1p-100f) continue;  // keep small normal
    const Split s = split(x);
    const double ax = std::fabs(static_cast<double>(x));
    ASSERT_EQ(static_cast<double>(s.big) + static_cast<double>(s.small), static_cast<double>(x)) << x;
    ASSERT_LE(std::fabs(static_cast<double>(s.small)), 0x1p-11 * ax) << x;
    ASSERT_LE(std::fabs(static_cast<double>(s.small) - seen(s.small)), 0x1p-21 * ax) << x;
  }
}

TEST(Tf32Split, ThreeProductsReproduceTheProduct) {
  std::mt19937_64 gen(fresh_seed());
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_int_distribution<int> scale(-40, 40);
  for (int i = 0; i < 200000; ++i) {
    const float a = std::ldexp(normal(gen), scale(gen)), b = std::ldexp(normal(gen), scale(gen));
    if (a == 0.0f || b == 0.0f) continue;
    const Split sa = split(a), sb = split(b);
    // The tensor cores multiply what they read, exactly, and accumulate in FP32 (not modelled).
    const double approx = seen(sa.big) * seen(sb.big) + seen(sa.big) * seen(sb.small) + seen(sa.small) * seen(sb.big);
    const double exact = static_cast<double>(a) * static_cast<double>(b);
    ASSERT_LE(std::fabs(approx - exact), 0x1p-19 * std::fabs(exact)) << a << " * " << b;
  }
}

}  // namespace
}  // namespace batchqr::test
