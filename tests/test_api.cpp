// Host API: argument checks, quick returns, and that rejected calls write nothing.
#include <gtest/gtest.h>

#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "batchqr/batchqr.hpp"
#include "test_util.hpp"

namespace batchqr {
namespace {

class ApiTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(create_context(Backend::cpu, &ctx_), Status::success); }
  void TearDown() override { EXPECT_EQ(destroy_context(ctx_), Status::success); }

  // Calls geqrf on sentinel-filled buffers and checks that nothing was written.
  Status call_untouched(const GeqrfDesc& d, bool null_a = false, bool null_tau = false, std::size_t ws_bytes = 1 << 20,
                        bool null_ws = false) {
    std::vector<float> a(4096, 7.0f), tau(256, 9.0f);
    std::vector<unsigned char> ws(1 << 20, 0xAB);
    const Status st = geqrf(ctx_, d, null_a ? nullptr : a.data(), null_tau ? nullptr : tau.data(),
                            null_ws ? nullptr : ws.data(), ws_bytes);
    if (st != Status::success || d.m == 0 || d.n == 0 || d.batch == 0) {
      for (float v : a) EXPECT_EQ(v, 7.0f);
      for (float v : tau) EXPECT_EQ(v, 9.0f);
      for (unsigned char v : ws) EXPECT_EQ(v, 0xAB);
    }
    return st;
  }

  Context* ctx_ = nullptr;
};

TEST(Status, EveryCodeHasADistinctMessage) {
  std::set<std::string> seen;
  for (int s = 0; s <= static_cast<int>(Status::not_supported); ++s) {
    const char* msg = status_string(static_cast<Status>(s));
    ASSERT_NE(msg, nullptr);
    EXPECT_TRUE(seen.insert(msg).second) << msg;
  }
  EXPECT_STREQ(status_string(static_cast<Status>(999)), "unknown status code");
}

TEST(Context, CreateAndDestroy) {
  EXPECT_EQ(create_context(Backend::cpu, nullptr), Status::null_pointer);
  Context* c = nullptr;
  EXPECT_EQ(create_context(static_cast<Backend>(42), &c), Status::not_supported);
  EXPECT_EQ(c, nullptr);
  ContextOptions bad;
  bad.num_threads = -1;
  EXPECT_EQ(create_context(Backend::cpu, &c, bad), Status::not_supported);
  ASSERT_EQ(create_context(Backend::cpu, &c), Status::success);
  Backend b = Backend::cuda;
  EXPECT_EQ(context_backend(c, &b), Status::success);
  EXPECT_EQ(b, Backend::cpu);
  EXPECT_EQ(context_backend(c, nullptr), Status::null_pointer);
  EXPECT_EQ(destroy_context(c), Status::success);
  EXPECT_EQ(destroy_context(nullptr), Status::success);
}

TEST(Context, CudaUnavailableIsReported) {
  if (cuda_available()) GTEST_SKIP() << "a CUDA device is present; covered by the GPU tests";
  Context* c = nullptr;
  EXPECT_EQ(create_context(Backend::cuda, &c), Status::backend_unavailable);
  EXPECT_EQ(c, nullptr);
}

TEST_F(ApiTest, NullHandle) {
  const GeqrfDesc d = make_geqrf_desc(4, 4, 1);
  float a[16] = {}, tau[4] = {};
  std::size_t ws = 0;
  EXPECT_EQ(geqrf(nullptr, d, a, tau, nullptr, 0), Status::invalid_handle);
  EXPECT_EQ(geqrf_workspace_size(nullptr, d, &ws), Status::invalid_handle);
  EXPECT_EQ(geqrf_workspace_size(ctx_, d, nullptr), Status::null_pointer);
}

TEST_F(ApiTest, NegativeSizes) {
  for (auto [m, n, b] : {std::tuple{-1, 4, 1}, {4, -1, 1}, {4, 4, -1}}) {
    GeqrfDesc d = make_geqrf_desc(4, 4, 1);
    d.m = m;
    d.n = n;
    d.batch = b;
    EXPECT_EQ(call_untouched(d), Status::invalid_size) << m << " " << n << " " << b;
    std::size_t ws = 77;
    EXPECT_EQ(geqrf_workspace_size(ctx_, d, &ws), Status::invalid_size);
  }
  GeqrfDesc huge = make_geqrf_desc(4, 4, 1);
  huge.m = std::int64_t{1} << 32;
  huge.ld = 4;
  EXPECT_EQ(call_untouched(huge), Status::invalid_size);
}

TEST_F(ApiTest, InvalidLayout) {
  GeqrfDesc d = make_geqrf_desc(4, 4, 1);
  d.layout = static_cast<Layout>(5);
  EXPECT_EQ(call_untouched(d), Status::invalid_layout);
}

TEST_F(ApiTest, LeadingDimensionTooSmall) {
  GeqrfDesc r = make_geqrf_desc(6, 5, 2, Layout::row_major);
  r.ld = 4;  // < n
  EXPECT_EQ(call_untouched(r), Status::invalid_leading_dim);
  GeqrfDesc c = make_geqrf_desc(6, 5, 2, Layout::col_major);
  c.ld = 5;  // < m
  EXPECT_EQ(call_untouched(c), Status::invalid_leading_dim);
  c.ld = 0;
  EXPECT_EQ(call_untouched(c), Status::invalid_leading_dim);
  GeqrfDesc z = make_geqrf_desc(0, 0, 1);  // ld must still be >= 1, as in LAPACK
  z.ld = 0;
  EXPECT_EQ(call_untouched(z), Status::invalid_leading_dim);
}

TEST_F(ApiTest, OverlappingStrides) {
  GeqrfDesc d = make_geqrf_desc(6, 5, 3);
  d.stride = 29;  // span is 30
  EXPECT_EQ(call_untouched(d), Status::invalid_stride);
  d = make_geqrf_desc(6, 5, 3);
  d.tau_stride = 4;  // < min(m, n)
  EXPECT_EQ(call_untouched(d), Status::invalid_stride);
  d = make_geqrf_desc(6, 5, 3);
  d.stride = -1;
  EXPECT_EQ(call_untouched(d), Status::invalid_stride);
  // A single matrix needs no stride.
  d = make_geqrf_desc(6, 5, 1);
  d.stride = 0;
  d.tau_stride = 0;
  EXPECT_EQ(call_untouched(d), Status::success);
}

TEST_F(ApiTest, BatchTooLargeToAddress) {
  GeqrfDesc d = make_geqrf_desc(8, 8, 1);
  d.batch = std::int64_t{1} << 62;
  EXPECT_EQ(call_untouched(d), Status::invalid_size);
}

TEST_F(ApiTest, NullPointers) {
  const GeqrfDesc d = make_geqrf_desc(6, 5, 2);
  EXPECT_EQ(call_untouched(d, true, false), Status::null_pointer);
  EXPECT_EQ(call_untouched(d, false, true), Status::null_pointer);
  std::size_t need = 0;
  ASSERT_EQ(geqrf_workspace_size(ctx_, d, &need), Status::success);
  ASSERT_GT(need, 0u);  // the CPU backend needs LAPACK work space
  EXPECT_EQ(call_untouched(d, false, false, need, true), Status::null_pointer);
}

TEST_F(ApiTest, InsufficientWorkspace) {
  const GeqrfDesc d = make_geqrf_desc(6, 5, 2);
  std::size_t need = 0;
  ASSERT_EQ(geqrf_workspace_size(ctx_, d, &need), Status::success);
  EXPECT_EQ(call_untouched(d, false, false, need - 1), Status::insufficient_workspace);
  EXPECT_EQ(call_untouched(d, false, false, need), Status::success);
}

TEST_F(ApiTest, EmptyProblemsReturnAtOnce) {
  for (auto [m, n, b] : {std::tuple{0, 5, 3}, {5, 0, 3}, {5, 5, 0}, {0, 0, 0}}) {
    GeqrfDesc d = make_geqrf_desc(m, n, b);
    std::size_t ws = 99;
    EXPECT_EQ(geqrf_workspace_size(ctx_, d, &ws), Status::success);
    EXPECT_EQ(ws, 0u);
    // Null pointers are fine when there is nothing to do.
    EXPECT_EQ(geqrf(ctx_, d, nullptr, nullptr, nullptr, 0), Status::success);
    EXPECT_EQ(call_untouched(d), Status::success);
  }
}

}  // namespace
}  // namespace batchqr
