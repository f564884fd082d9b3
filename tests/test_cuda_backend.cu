// The CUDA backend against the gate (validated on the GPU in FP64). Skipped, with a
// message, where no CUDA device is visible.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <thread>

#include "batchqr/check/validate_device.hpp"
#include "test_util.hpp"

namespace batchqr {
namespace {

using check::Distribution;

#define REQUIRE_GPU()                                                              \
  do {                                                                             \
    if (!cuda_available()) GTEST_SKIP() << "no CUDA device visible: GPU test skipped"; \
  } while (0)

#define CUDA_OK(expr) ASSERT_EQ((expr), cudaSuccess) << #expr

template <typename T>
struct Dev {
  T* p = nullptr;
  std::size_t n = 0;
  explicit Dev(std::size_t count) : n(count) {
    if (cudaMalloc(&p, std::max<std::size_t>(count, 1) * sizeof(T)) != cudaSuccess) p = nullptr;
  }
  ~Dev() {
    if (p) cudaFree(p);
  }
  Dev(const Dev&) = delete;
  Dev& operator=(const Dev&) = delete;
  void upload(const std::vector<T>& h) { ASSERT_EQ(cudaMemcpy(p, h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice), cudaSuccess); }
  std::vector<T> download() const {
    std::vector<T> h(n);
    EXPECT_EQ(cudaMemcpy(h.data(), p, n * sizeof(T), cudaMemcpyDeviceToHost), cudaSuccess);
    return h;
  }
};

// Every test runs once per arithmetic of the trailing updates.
class Gpu : public ::testing::TestWithParam<Math> {
 protected:
  void SetUp() override {
    REQUIRE_GPU();
    options_.math = GetParam();
    ASSERT_EQ(create_context(Backend::cuda, &ctx_, options_), Status::success);
  }
  void TearDown() override { destroy_context(ctx_); }

  struct Result {
    std::vector<float> h, tau;
    check::GateReport gate;
  };

  // Factors a host batch on the GPU (tau poisoned first), validates on the GPU.
  Result run(const GeqrfDesc& d, const std::vector<float>& a, cudaStream_t stream = nullptr) {
    Result r;
    Dev<float> da(a.size()), dh(a.size()), dt(std::max<std::size_t>(test::tau_extent(d), 1));
    da.upload(a);
    dh.upload(a);
    dt.upload(std::vector<float>(dt.n, std::numeric_limits<float>::quiet_NaN()));
    std::size_t ws = 0;
    EXPECT_EQ(geqrf_workspace_size(ctx_, d, &ws), Status::success);
    Dev<unsigned char> w(ws);
    EXPECT_EQ(geqrf(ctx_, d, dh.p, dt.p, ws ? w.p : nullptr, ws, stream), Status::success);
    EXPECT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    EXPECT_TRUE(check::validate_device(d, da.p, dh.p, dt.p, &r.gate, stream));
    r.h = dh.download();
    r.tau = dt.download();
    return r;
  }

  // The accuracy the CUDA backend promises: well inside the gate.
  // Every matrix passes the gate, and the worst factor residual stays under batchqr's bound.
  static void expect_gate(const Result& r, const GeqrfDesc& d, const std::string& what) {
    EXPECT_TRUE(r.gate.pass()) << what << " failures " << r.gate.failures << " nonfinite " << r.gate.nonfinite;
    EXPECT_LE(r.gate.worst_factor, test::factor_bound(d.m, d.n)) << what;
  }

  void expect_accurate(const GeqrfDesc& d, Distribution dist, double cond) {
    const std::uint64_t seed = test::fresh_seed();
    const auto a = test::generate_batch(d, dist, cond, seed);
    const Result r = run(d, a);
    const std::string what = test::describe(d, dist, cond, seed);
    expect_gate(r, d, what);
    EXPECT_LE(r.gate.worst_orth, test::orth_bound(d.m, d.n)) << what;
    // Padding between matrices and rows is never written.
    for (std::size_t i = 0; i < a.size(); ++i)
      if (a[i] == 12345.0f) ASSERT_EQ(r.h[i], 12345.0f) << what << " index " << i;
  }

  ContextOptions options_;
  Context* ctx_ = nullptr;
};

TEST_P(Gpu, EveryDistribution) {
  for (int di = 0; di < check::kNumDistributions; ++di)
    for (int n : {20, 32, 33, 100, 512})
      for (Layout layout : {Layout::row_major, Layout::col_major})
        expect_accurate(make_geqrf_desc(n, n, n == 512 ? 3 : 7, layout), static_cast<Distribution>(di), di % 3);
}

// Matrices scaled far from 1 (squares that underflow or overflow FP32) leave the fast
// norm of every kernel for its FP64 path, and still pass the gate; their neighbours in
// the batch are unaffected.
TEST_P(Gpu, ExtremeScalesTakeTheCarefulPath) {
  const float scales[] = {1.0f, 1e-30f, 1e30f, 1e-18f, 1e18f, 1e-35f};
  // 1500 x 40: panels of more than 1024 rows (a cluster's registers, or geqr2_kernel);
  // 600 x 40 and 300 x 300: geqr2_wcol's FP64 reflector
  // 48 x 48: geqr2_cta; 300 x 48: the register kernel
  for (auto [m, n] : {std::pair{24, 24}, {48, 48}, {300, 48}, {200, 200}, {1500, 40}, {600, 40}, {300, 300}})
    for (Layout layout : {Layout::row_major, Layout::col_major}) {
      const GeqrfDesc d = make_geqrf_desc(m, n, 6, layout);
      const std::uint64_t seed = test::fresh_seed();
      auto a = test::generate_batch(d, Distribution::dense, 1.0, seed);
      for (int b = 0; b < 6; ++b)
        for (std::int64_t i = 0; i < d.stride; ++i) a[b * d.stride + i] *= scales[b];
      expect_gate(run(d, a), d, test::describe(d, Distribution::dense, 1.0, seed));
    }
}

TEST_P(Gpu, ManySizesRandomBatches) {
  std::mt19937_64 rng(test::fresh_seed());
  for (int n : {1, 2, 3, 31, 32, 33, 100, 176, 257, 352, 512, 640, 1000, 1024, 2048}) {
    const std::int64_t batch = n >= 1000 ? 1 + static_cast<std::int64_t>(rng() % 3)
                                         : 1 + static_cast<std::int64_t>(rng() % (n >= 300 ? 9 : 40));
    const Layout layout = (rng() & 1) ? Layout::row_major : Layout::col_major;
    expect_accurate(make_geqrf_desc(n, n, batch, layout), Distribution::mixed, 2.0);
  }
}

TEST_P(Gpu, TallAndWide) {
  for (auto [m, n] : {std::pair{300, 640}, {100, 777}, {4, 3000}, {777, 100}, {3000, 4}, {2048, 64}, {1, 50},
                      {50, 1}, {513, 512}, {512, 513}, {6000, 40}, {1100, 33}})
    for (Layout layout : {Layout::row_major, Layout::col_major})
      expect_accurate(make_geqrf_desc(m, n, 2, layout), Distribution::dense, 1.0);
}

// Each kernel of the policy: one warp per tiny matrix, fused, cta_blocked, cluster_blocked and cta (whole matrix on chip), blocked with a one-CTA
// panel, blocked with panels of more than 1024 rows in a cluster's registers, in a
// cluster's shared memory (more than 8192 rows), and in global memory (too tall for both).
TEST_P(Gpu, EveryKernelPath) {
  for (auto [m, n] : {std::pair{32, 32}, {8, 8}, {16, 16}, {1, 1}, {5, 32}, {32, 7}, {13, 9}, {24, 24}})
    for (Layout layout : {Layout::row_major, Layout::col_major})
      expect_accurate(make_geqrf_desc(m, n, 37, layout), Distribution::mixed, 2.0);     // warp
  for (Layout layout : {Layout::row_major, Layout::col_major}) {
    expect_accurate(make_geqrf_desc(300, 48, 50, layout), Distribution::dense, 1.0);    // fused (tall)
    expect_accurate(make_geqrf_desc(64, 64, 300, layout), Distribution::dense, 1.0);    // fused (many)
    expect_accurate(make_geqrf_desc(64, 64, 50, layout), Distribution::dense, 1.0);     // cta_blocked
    expect_accurate(make_geqrf_desc(176, 176, 40, layout), Distribution::mixed, 2.0);  // cta_blocked
    expect_accurate(make_geqrf_desc(64, 64, 200, layout), Distribution::dense, 1.0);    // cta
    expect_accurate(make_geqrf_desc(192, 192, 150, layout), Distribution::mixed, 2.0);  // cta_blocked, two waves
    expect_accurate(make_geqrf_desc(300, 300, 40, layout), Distribution::mixed, 2.0);  // cluster_blocked (2 CTAs)
  }
  expect_accurate(make_geqrf_desc(512, 512, 200), Distribution::mixed, 2.0);           // blocked, 1 CTA
  for (Layout layout : {Layout::row_major, Layout::col_major}) {
    // One level, each update one larfb_stripe launch (batch below the SM count), except the
    // last panel's (4 reflectors: cuBLAS), with rows not a multiple of 8 and a narrow last stripe;
    // and one level with cuBLAS updates (batch 140).
    expect_accurate(make_geqrf_desc(100, 150, 5, layout), Distribution::mixed, 2.0);
    expect_accurate(make_geqrf_desc(250, 230, 3, layout), Distribution::mixed, 2.0);
    expect_accurate(make_geqrf_desc(200, 150, 140, layout), Distribution::mixed, 2.0);
  }
  expect_accurate(make_geqrf_desc(4096, 4096, 1, Layout::col_major), Distribution::dense, 1.0);  // register cluster
  for (Layout layout : {Layout::row_major, Layout::col_major})
    expect_accurate(make_geqrf_desc(10000, 40, 2, layout), Distribution::dense, 1.0);  // geqr2_kernel, cluster smem
  expect_accurate(make_geqrf_desc(20000, 40, 2), Distribution::dense, 1.0);            // global panel
  expect_accurate(make_geqrf_desc(20000, 40, 2, Layout::col_major), Distribution::rowscale, 0.0);
}

// Two-level blocking as the policy picks it (policy.cu outer_width: 64-column outer blocks
// once k >= 512 and batch x k^2 >= 3e7), with a last outer block that is partial and still
// has a trailing matrix (560 = 8 x 64 + 48, merged from 32 + 16), or has none (580: + 4,
// 520: + 8); one level at k < 512 (300). More shapes of partial blocks, under a forced
// outer width: UpdateKernels.TwoLevelPartialBlocks.
TEST_P(Gpu, TwoLevelBlocking) {
  for (Layout layout : {Layout::row_major, Layout::col_major})
    for (auto [m, n] : {std::pair{560, 600}, {600, 520}, {300, 640}}) {
      expect_accurate(make_geqrf_desc(m, n, std::min(m, n) >= 512 ? 112 : 16, layout), Distribution::mixed, 2.0);
    }
  GeqrfDesc d = make_geqrf_desc(580, 580, 96, Layout::col_major);
  d.ld += 3;
  d.stride = 580 * d.ld + 7;
  d.tau_stride = 583;
  expect_accurate(d, Distribution::band, 1.0);
}

TEST_P(Gpu, PaddedStrides) {
  for (Layout layout : {Layout::row_major, Layout::col_major})
    for (auto [m, n] : {std::pair{40, 40}, {300, 200}, {250, 180}}) {  // 250: larfb_stripe updates
      GeqrfDesc d = make_geqrf_desc(m, n, 3, layout);
      d.ld += 5;
      d.stride = (layout == Layout::row_major ? m : n) * d.ld + 3;
      d.tau_stride = std::min(m, n) + 2;
      expect_accurate(d, Distribution::dense, 1.0);
    }
}

// Including geqrf_cta (176 x 40: the look-ahead's warps meet on named barriers) and geqr2_cta
// (192 x 150: its warps hand reflectors through mbarriers, in any timing).
TEST_P(Gpu, BitwiseReproducible) {
  for (auto [m, n] : {std::pair{32, 32}, {176, 176}, {192, 192}, {512, 512}, {2048, 2048}}) {
    const GeqrfDesc d = make_geqrf_desc(m, n, n > 1000 ? 2 : n == 176 ? 40 : n == 192 ? 150 : 8);
    const auto a = test::generate_batch(d, Distribution::mixed, 2.0, test::fresh_seed());
    const Result r1 = run(d, a), r2 = run(d, a);
    EXPECT_EQ(std::memcmp(r1.h.data(), r2.h.data(), r1.h.size() * 4), 0) << n;
    EXPECT_EQ(std::memcmp(r1.tau.data(), r2.tau.data(), r1.tau.size() * 4), 0) << n;
  }
}

TEST_P(Gpu, ZeroMatrixGivesZeroTau) {
  for (int n : {16, 100, 512}) {  // warp, cta_blocked, blocked
    const GeqrfDesc d = make_geqrf_desc(n, n, 2);
    const std::vector<float> a(static_cast<std::size_t>(2) * n * n, 0.0f);
    const Result r = run(d, a);
    for (float t : r.tau) ASSERT_EQ(t, 0.0f);
    for (float x : r.h) ASSERT_EQ(x, 0.0f);
  }
}

// Documented behaviour: NaN in a matrix makes that matrix's factors NaN; the others are
// factored as if it were absent.
TEST_P(Gpu, NaNStaysInItsMatrix) {
  for (int n : {24, 64, 100, 600}) {  // warp, cta (200 matrices), cta_blocked, blocked
    const GeqrfDesc d = make_geqrf_desc(n, n, n == 64 ? 200 : 3);
    auto a = test::generate_batch(d, Distribution::dense, 0.0, test::fresh_seed());
    auto clean = a;
    a[d.stride + 5 * n + 3] = std::numeric_limits<float>::quiet_NaN();
    const Result r = run(d, a), rc = run(d, clean);
    EXPECT_FALSE(r.gate.matrices[1].finite);
    EXPECT_TRUE(r.gate.matrices[0].pass());
    EXPECT_TRUE(r.gate.matrices[2].pass());
    // The clean matrices are bitwise what they are without the NaN neighbour.
    for (int b : {0, 2})
      EXPECT_EQ(std::memcmp(r.h.data() + b * d.stride, rc.h.data() + b * d.stride, d.stride * 4), 0);
  }
}

TEST_P(Gpu, RejectsHostPointersAndTooLittleWorkspace) {
  const GeqrfDesc d = make_geqrf_desc(600, 600, 2);
  std::vector<float> host(600 * 600 * 2), htau(1200);
  Dev<float> a(host.size()), tau(1200);
  std::size_t ws = 0;
  ASSERT_EQ(geqrf_workspace_size(ctx_, d, &ws), Status::success);
  ASSERT_GT(ws, 0u);
  Dev<unsigned char> w(ws);
  EXPECT_EQ(geqrf(ctx_, d, host.data(), tau.p, w.p, ws), Status::invalid_pointer);
  EXPECT_EQ(geqrf(ctx_, d, a.p, htau.data(), w.p, ws), Status::invalid_pointer);
  EXPECT_EQ(geqrf(ctx_, d, a.p, tau.p, w.p, ws - 1), Status::insufficient_workspace);
  EXPECT_EQ(geqrf(ctx_, d, a.p, tau.p, nullptr, ws), Status::null_pointer);
}

TEST_P(Gpu, CapturedInACudaGraph) {
  const GeqrfDesc d = make_geqrf_desc(600, 600, 4);
  const auto a = test::generate_batch(d, Distribution::dense, 1.0, test::fresh_seed());
  const Result eager = run(d, a);
  cudaStream_t s;
  CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  Dev<float> dh(a.size()), dt(test::tau_extent(d));
  dh.upload(a);
  std::size_t ws = 0;
  ASSERT_EQ(geqrf_workspace_size(ctx_, d, &ws), Status::success);
  Dev<unsigned char> w(ws);
  cudaGraph_t graph;
  CUDA_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  ASSERT_EQ(geqrf(ctx_, d, dh.p, dt.p, w.p, ws, s), Status::success);
  CUDA_OK(cudaStreamEndCapture(s, &graph));
  cudaGraphExec_t exec;
  CUDA_OK(cudaGraphInstantiate(&exec, graph, 0));
  CUDA_OK(cudaGraphLaunch(exec, s));
  CUDA_OK(cudaStreamSynchronize(s));
  EXPECT_EQ(dh.download(), eager.h);
  EXPECT_EQ(dt.download(), eager.tau);
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(s);
}

TEST_P(Gpu, ThreadsWithSeparateContextsAndStreams) {
  const GeqrfDesc d = make_geqrf_desc(300, 300, 5);
  const auto a = test::generate_batch(d, Distribution::mixed, 2.0, test::fresh_seed());
  const Result ref = run(d, a);
  std::vector<std::vector<float>> out(4);
  std::vector<std::thread> pool;
  for (int t = 0; t < 4; ++t)
    pool.emplace_back([&, t] {
      Context* c = nullptr;
      if (create_context(Backend::cuda, &c, options_) != Status::success) return;
      cudaStream_t s;
      cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
      float *h = nullptr, *tau = nullptr;
      void* w = nullptr;
      std::size_t ws = 0;
      geqrf_workspace_size(c, d, &ws);
      cudaMalloc(&h, a.size() * 4);
      cudaMalloc(&tau, test::tau_extent(d) * 4);
      cudaMalloc(&w, std::max<std::size_t>(ws, 1));
      for (int rep = 0; rep < 5; ++rep) {
        cudaMemcpyAsync(h, a.data(), a.size() * 4, cudaMemcpyHostToDevice, s);
        geqrf(c, d, h, tau, w, ws, s);
      }
      out[t].resize(a.size());
      cudaMemcpyAsync(out[t].data(), h, a.size() * 4, cudaMemcpyDeviceToHost, s);
      cudaStreamSynchronize(s);
      cudaFree(h);
      cudaFree(tau);
      cudaFree(w);
      cudaStreamDestroy(s);
      destroy_context(c);
    });
  for (auto& th : pool) th.join();
  for (int t = 0; t < 4; ++t) EXPECT_EQ(out[t], ref.h) << "thread " << t;
}

// More than 2^31 elements in the batch: 64 distinct 512 x 512 matrices tiled 9000 times.
// The first 64 outputs pass the gate, and every later copy must equal (bitwise) the
// output of its original in the same call (the plan, hence the arithmetic, is the
// same for every matrix of a call), so every matrix past the 2^31 boundary was
// addressed correctly.
TEST_P(Gpu, BatchBeyond2To31Elements) {
  constexpr int n = 512, distinct = 64;
  constexpr std::int64_t batch = 9000;
  const std::size_t mat = static_cast<std::size_t>(n) * n;
  ASSERT_GT(batch * static_cast<std::int64_t>(mat), std::int64_t{1} << 31);
  std::size_t free_b = 0, total_b = 0;
  CUDA_OK(cudaMemGetInfo(&free_b, &total_b));
  if (free_b < batch * mat * 4 + (std::size_t{3} << 30)) GTEST_SKIP() << "needs ~13 GB of free device memory";
  const GeqrfDesc small = make_geqrf_desc(n, n, distinct);
  const auto a = test::generate_batch(small, Distribution::mixed, 2.0, test::fresh_seed());
  const GeqrfDesc d = make_geqrf_desc(n, n, batch);
  Dev<float> big(batch * mat), tau(batch * n), src(a.size());
  ASSERT_NE(big.p, nullptr);
  src.upload(a);
  for (std::int64_t b = 0; b < batch; b += distinct) {
    const std::int64_t cnt = std::min<std::int64_t>(distinct, batch - b);
    CUDA_OK(cudaMemcpy(big.p + b * mat, src.p, cnt * mat * 4, cudaMemcpyDeviceToDevice));
  }
  std::size_t ws = 0;
  ASSERT_EQ(geqrf_workspace_size(ctx_, d, &ws), Status::success);
  Dev<unsigned char> w(ws);
  ASSERT_EQ(geqrf(ctx_, d, big.p, tau.p, w.p, ws), Status::success);
  CUDA_OK(cudaDeviceSynchronize());
  check::GateReport gate;
  ASSERT_TRUE(check::validate_device(small, src.p, big.p, tau.p, &gate));
  EXPECT_TRUE(gate.pass());
  EXPECT_LE(gate.worst_factor, 1.0);
  std::vector<float> ref(a.size()), rtau(static_cast<std::size_t>(distinct) * n), h(mat), t(n);
  CUDA_OK(cudaMemcpy(ref.data(), big.p, ref.size() * 4, cudaMemcpyDeviceToHost));
  CUDA_OK(cudaMemcpy(rtau.data(), tau.p, rtau.size() * 4, cudaMemcpyDeviceToHost));
  std::vector<std::int64_t> check_list;
  for (std::int64_t b = distinct; b < batch; b += 97) check_list.push_back(b);
  for (std::int64_t b = batch - distinct; b < batch; ++b) check_list.push_back(b);
  for (std::int64_t bb : check_list) {
    CUDA_OK(cudaMemcpy(h.data(), big.p + bb * mat, mat * 4, cudaMemcpyDeviceToHost));
    CUDA_OK(cudaMemcpy(t.data(), tau.p + bb * n, n * 4, cudaMemcpyDeviceToHost));
    const std::size_t o = static_cast<std::size_t>(bb % distinct);
    ASSERT_EQ(std::memcmp(h.data(), ref.data() + o * mat, mat * 4), 0) << "matrix " << bb;
    ASSERT_EQ(std::memcmp(t.data(), rtau.data() + o * n, n * 4), 0) << "matrix " << bb;
  }
}

INSTANTIATE_TEST_SUITE_P(Math, Gpu, ::testing::Values(Math::fp32, Math::tf32x3),
                         [](const ::testing::TestParamInfo<Math>& i) {
                           return std::string(i.param == Math::fp32 ? "fp32" : "tf32x3");
                         });

}  // namespace
}  // namespace batchqr
