// The FP64 validator: it passes LAPACK's factors and rejects corrupted ones.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "test_util.hpp"

namespace batchqr {
namespace {

using check::Distribution;

struct Factored {
  GeqrfDesc d;
  std::vector<float> a, h, tau;
};

Factored factor_cpu(const GeqrfDesc& d, Distribution dist, double cond, std::uint64_t seed) {
  Factored f;
  f.d = d;
  f.a = test::generate_batch(d, dist, cond, seed);
  f.h = f.a;
  f.tau.assign(std::max<std::size_t>(test::tau_extent(d), 1), 0.0f);
  Context* ctx = nullptr;
  EXPECT_EQ(create_context(Backend::cpu, &ctx), Status::success);
  std::size_t ws = 0;
  EXPECT_EQ(geqrf_workspace_size(ctx, d, &ws), Status::success);
  std::vector<unsigned char> w(ws + 1);
  EXPECT_EQ(geqrf(ctx, d, f.h.data(), f.tau.data(), w.data(), ws), Status::success);
  destroy_context(ctx);
  return f;
}

float& elem(Factored& f, std::int64_t b, std::int64_t i, std::int64_t j) {
  const GeqrfDesc& d = f.d;
  return f.h[static_cast<std::size_t>(b * d.stride + (d.layout == Layout::row_major ? i * d.ld + j : i + j * d.ld))];
}

check::GateReport validate(const Factored& f) {
  return check::validate_host(f.d, f.a.data(), f.h.data(), f.tau.data());
}

TEST(Validator, AcceptsLapackFactors) {
  for (Layout layout : {Layout::row_major, Layout::col_major}) {
    const Factored f = factor_cpu(make_geqrf_desc(40, 40, 4, layout), Distribution::dense, 1.0, test::fresh_seed());
    const auto r = validate(f);
    EXPECT_TRUE(r.pass());
    EXPECT_EQ(r.matrices.size(), 4u);
    EXPECT_LT(r.worst_factor, 1.0);
    EXPECT_LT(r.worst_orth, 5.0);
    EXPECT_LT(r.worst_leak, 1.0);
    EXPECT_LT(r.worst_recon, 5.0);
    EXPECT_EQ(r.nonfinite, 0);
  }
}

TEST(Validator, RejectsPerturbedR) {
  Factored f = factor_cpu(make_geqrf_desc(40, 40, 4), Distribution::dense, 0.0, test::fresh_seed());
  elem(f, 2, 3, 10) += 1e-2f;  // an entry of R in matrix 2
  const auto r = validate(f);
  EXPECT_FALSE(r.pass());
  EXPECT_EQ(r.failures, 1);
  EXPECT_EQ(r.worst_factor_index, 2);
  EXPECT_GT(r.matrices[2].factor, check::kFactorGate);
  EXPECT_TRUE(r.matrices[0].pass());
}

TEST(Validator, RejectsPerturbedReflector) {
  Factored f = factor_cpu(make_geqrf_desc(40, 40, 2), Distribution::dense, 0.0, test::fresh_seed());
  // v_5 changes, tau_5 does not: H_5 is no longer orthogonal. The step has the sign of the
  // entry, so v^T v grows by at least 0.05^2 (a step against the sign could cancel).
  float& v = elem(f, 1, 20, 5);
  v += std::copysign(0.05f, v);
  const auto r = validate(f);
  EXPECT_FALSE(r.pass());
  EXPECT_GT(r.matrices[1].orth, check::kOrthGate);
}

TEST(Validator, RejectsWrongTau) {
  Factored f = factor_cpu(make_geqrf_desc(40, 40, 2, Layout::col_major), Distribution::dense, 0.0, test::fresh_seed());
  f.tau[f.d.tau_stride + 7] *= 1.01f;
  const auto r = validate(f);
  EXPECT_FALSE(r.pass());
  EXPECT_GT(r.matrices[1].orth, check::kOrthGate);
  EXPECT_GT(r.matrices[1].factor, check::kFactorGate);
  EXPECT_TRUE(r.matrices[0].pass());
}

TEST(Validator, RejectsNonOrthogonalQ) {
  Factored f = factor_cpu(make_geqrf_desc(30, 30, 1), Distribution::dense, 0.0, test::fresh_seed());
  f.tau[3] = 0.5f;  // a valid reflector needs tau = 2 / ||v||^2, in [1, 2]
  const auto r = validate(f);
  EXPECT_FALSE(r.pass());
  EXPECT_GT(r.worst_orth, check::kOrthGate);
}

TEST(Validator, RejectsNaNAndInf) {
  Factored f = factor_cpu(make_geqrf_desc(20, 20, 3), Distribution::dense, 0.0, test::fresh_seed());
  elem(f, 0, 15, 2) = std::numeric_limits<float>::quiet_NaN();
  f.tau[2 * f.d.tau_stride + 1] = std::numeric_limits<float>::infinity();
  const auto r = validate(f);
  EXPECT_FALSE(r.pass());
  EXPECT_EQ(r.nonfinite, 2);
  EXPECT_FALSE(r.matrices[0].finite);
  EXPECT_TRUE(r.matrices[1].pass());
  EXPECT_FALSE(r.matrices[2].finite);
}

TEST(Validator, ZeroMatrixScoresZero) {
  Factored f;
  f.d = make_geqrf_desc(5, 5, 1);
  f.a.assign(25, 0.0f);
  f.h = f.a;
  f.tau.assign(5, 0.0f);
  const auto r = validate(f);
  EXPECT_TRUE(r.pass());
  EXPECT_EQ(r.worst_factor, 0.0);
  EXPECT_EQ(r.worst_orth, 0.0);
  f.h[6] = 1.0f;  // a nonzero R for A = 0 cannot be right
  EXPECT_FALSE(validate(f).pass());
}

TEST(Validator, TallAndWide) {
  for (auto [m, n] : {std::pair{50, 20}, {20, 50}, {1, 9}, {9, 1}}) {
    const Factored f = factor_cpu(make_geqrf_desc(m, n, 2, Layout::col_major), Distribution::dense, 1.0, test::fresh_seed());
    EXPECT_TRUE(validate(f).pass()) << m << "x" << n;
  }
}

}  // namespace
}  // namespace batchqr
