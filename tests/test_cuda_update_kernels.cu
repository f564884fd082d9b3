// Each trailing-update kernel and each panel kernel of the blocked path forced on
// (PlanHints), whatever the policy would pick for the shape, so that every kernel is
// tested even where the policy does not choose it today: larfb_stripe (K = 32 one level,
// K = 32 and 64 two level, one CTA or a cluster per stripe), larfb_fused, the three
// cuBLAS products; geqr2_wcol and the register panel for every panel of up to 1024 rows;
// the Cholesky QR panel and its fallback.
// Every result goes through the gate.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "batchqr/check/validate_device.hpp"
#include "cuda/geqrf_device.hpp"
#include "cuda/larfb_stripe64.hpp"
#include "cuda/mma_tf32.cuh"
#include "cuda/policy.hpp"
#include "cuda/tensor_map.hpp"
#include "test_util.hpp"

namespace batchqr::test {
namespace {

using check::Distribution;
using cuda::GeqrfOperation;
using cuda::GeqrfPlan;
using cuda::PlanHints;

// One m16n8k8 TF32 product per pass: operands as given (raw) and with their low 13 bits
// cleared (clean). split_tf32 relies on the two being equal bit for bit.
__global__ void tf32_operand_bits_kernel(const float* a, const float* b, float* raw, float* clean, int passes) {
  const int lane = threadIdx.x;
  for (int p = 0; p < passes; ++p) {
    std::uint32_t ar[4], ac[4], br[2], bc[2];
    for (int i = 0; i < 4; ++i) {
      ar[i] = __float_as_uint(a[(p * 32 + lane) * 4 + i]);
      ac[i] = ar[i] & 0xffffe000u;
    }
    for (int i = 0; i < 2; ++i) {
      br[i] = __float_as_uint(b[(p * 32 + lane) * 2 + i]);
      bc[i] = br[i] & 0xffffe000u;
    }
    float dr[4] = {0.0f, 0.0f, 0.0f, 0.0f}, dc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    cuda::mma_tf32(dr, ar, br);
    cuda::mma_tf32(dc, ac, bc);
    for (int i = 0; i < 4; ++i) {
      raw[(p * 32 + lane) * 4 + i] = dr[i];
      clean[(p * 32 + lane) * 4 + i] = dc[i];
    }
  }
}

class UpdateKernels : public ::testing::Test {
 protected:
  void SetUp() override {
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) GTEST_SKIP() << "no CUDA device";
    ASSERT_EQ(cuda::query_device(-1, &dev_), Status::success);
    ASSERT_EQ(GeqrfOperation::initialize(dev_), Status::success);
    ASSERT_EQ(cuda::create_resources(&res_), Status::success);
    created_ = true;
  }
  void TearDown() override {
    if (created_) cuda::destroy_resources(res_);
  }

  // Factors `d` under `hints` and checks the gate; `expect` says which update the plan
  // must have chosen (3 stripe 3xTF32, 2 stripe FP32, 1 fused, 0 cuBLAS; -1 any), so that
  // a test cannot pass on another.
  void expect_accurate(const GeqrfDesc& d, const PlanHints& blocked_hints, int expect, Distribution dist, double cond) {
    PlanHints hints = blocked_hints;
    hints.cta = 0;  // the blocked path, also for shapes that geqr2_cta would take
    const GeqrfPlan plan = cuda::make_plan(dev_, d, hints);
    ASSERT_EQ(plan.algorithm, cuda::Algorithm::blocked);
    if (expect >= 0)
      ASSERT_EQ(plan.stripe_update ? (plan.stripe_math == cuda::StripeMath::tf32x3 ? 3 : 2) : plan.fused_update ? 1 : 0,
                expect);
    const std::uint64_t seed = fresh_seed();
    check_batch(d, hints, generate_batch(d, dist, cond, seed), describe(d, dist, cond, seed));
  }

  // Factors the host batch `h` under `hints` and checks the gate.
  void check_batch(const GeqrfDesc& d, const PlanHints& hints, const std::vector<float>& h, const std::string& name) {
    const GeqrfPlan plan = cuda::make_plan(dev_, d, hints);
    const std::string what = name + " outer " + std::to_string(plan.outer_nb);
    const std::size_t bytes = h.size() * sizeof(float);
    float *a0 = nullptr, *a = nullptr, *tau = nullptr;
    void* ws = nullptr;
    ASSERT_EQ(cudaMalloc(&a0, bytes), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&a, bytes), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&tau, std::max<std::size_t>(tau_extent(d), 1) * sizeof(float)), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&ws, std::max<std::size_t>(plan.workspace_bytes, 1)), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(a0, h.data(), bytes, cudaMemcpyHostToDevice), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(a, h.data(), bytes, cudaMemcpyHostToDevice), cudaSuccess);
    GeqrfOperation::Arguments args{d, a, tau};
    EXPECT_EQ(GeqrfOperation::run(dev_, res_, args, plan, ws, plan.workspace_bytes, nullptr), Status::success) << what;
    check::GateReport rep;
    EXPECT_TRUE(check::validate_device(d, a0, a, tau, &rep, nullptr)) << what;
    EXPECT_TRUE(rep.pass()) << what;
    EXPECT_LE(rep.worst_factor, factor_bound(d.m, d.n)) << what;
    EXPECT_LE(rep.worst_orth, orth_bound(d.m, d.n)) << what;
    // Padding between matrices is never written.
    std::vector<float> out(h.size());
    ASSERT_EQ(cudaMemcpy(out.data(), a, bytes, cudaMemcpyDeviceToHost), cudaSuccess);
    for (std::size_t i = 0; i < h.size(); ++i)
      if (h[i] == 12345.0f) ASSERT_EQ(out[i], 12345.0f) << what << " index " << i;
    cudaFree(ws);
    cudaFree(tau);
    cudaFree(a);
    cudaFree(a0);
  }

  // Factors the host batch `h` under `hints` into `a` and `tau` (host copies).
  void factor(const GeqrfDesc& d, const PlanHints& hints, const std::vector<float>& h, std::vector<float>& a_out,
              std::vector<float>& tau_out) {
    const GeqrfPlan plan = cuda::make_plan(dev_, d, hints);
    const std::size_t bytes = h.size() * sizeof(float), ntau = std::max<std::size_t>(tau_extent(d), 1);
    float *a = nullptr, *tau = nullptr;
    void* ws = nullptr;
    ASSERT_EQ(cudaMalloc(&a, bytes), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&tau, ntau * sizeof(float)), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&ws, std::max<std::size_t>(plan.workspace_bytes, 1)), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(a, h.data(), bytes, cudaMemcpyHostToDevice), cudaSuccess);
    ASSERT_EQ(cudaMemset(tau, 0, ntau * sizeof(float)), cudaSuccess);
    GeqrfOperation::Arguments args{d, a, tau};
    EXPECT_EQ(GeqrfOperation::run(dev_, res_, args, plan, ws, plan.workspace_bytes, nullptr), Status::success);
    a_out.resize(h.size());
    tau_out.resize(ntau);
    ASSERT_EQ(cudaMemcpy(a_out.data(), a, bytes, cudaMemcpyDeviceToHost), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(tau_out.data(), tau, ntau * sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
    cudaFree(ws);
    cudaFree(tau);
    cudaFree(a);
  }

  cuda::DeviceInfo dev_;
  cuda::Resources res_;
  bool created_ = false;
};

GeqrfDesc padded(int m, int n, std::int64_t batch, Layout layout) {
  GeqrfDesc d = make_geqrf_desc(m, n, batch, layout);
  d.ld += 3;  // padding after every row or column, and between matrices (never written)
  d.stride = (layout == Layout::col_major ? n : m) * d.ld + 5;
  return d;
}

// The TMA form of larfb_stripe (row-major, 3xTF32) needs its tensor maps: they encode for
// the layouts it is given (16-byte rows and matrices) and are refused otherwise, which
// sends the stripe to its cp.async form (Stripe: padded cases, updates from column 257).
TEST_F(UpdateKernels, TensorMapsEncode) {
  float* a = nullptr;
  ASSERT_EQ(cudaMalloc(&a, sizeof(float) * 4 * 520 * 520), cudaSuccess);
  CUtensorMap map;
  EXPECT_TRUE(cuda::encode_tensor_map_3d(&map, a, 520, 520, 4, 520 * 4, 520 * 520 * 4, 32, 8));
  EXPECT_TRUE(cuda::encode_tensor_map_3d(&map, a, 64, 300, 4, 64 * 4, 64 * 520 * 4, 32, 8));
  EXPECT_FALSE(cuda::encode_tensor_map_3d(&map, a, 500, 500, 4, 503 * 4, 503 * 500 * 4, 32, 8));  // rows 2012 bytes apart
  EXPECT_FALSE(cuda::encode_tensor_map_3d(&map, a + 1, 520, 520, 4, 520 * 4, 520 * 520 * 4, 32, 8));  // base 4-byte aligned
  EXPECT_FALSE(cuda::encode_tensor_map_3d(&map, a, 520, 520, 4, 520 * 4, 520 * 520 * 4, 64, 8));  // box rows of 256 bytes
  cudaFree(a);
}

// larfb_stripe in both maths: one level (K = 32), two level (K = 32 inside the block, 64
// outside), rows not a multiple of 8 or 256, stripes narrower than 32, the 1024 rows of
// one CTA, stripes split over clusters of up to 16 CTAs (a last block shorter than the
// others), and updates it does not take (more than 8192 rows) left to cuBLAS in the same
// call.
TEST_F(UpdateKernels, Stripe) {
  for (int math : {1, 2}) {
    PlanHints one, two;
    one.outer_nb = 32;
    one.stripe_update = math;
    two.outer_nb = 64;
    two.stripe_update = math;
    const int want = math + 1;
    for (Layout layout : {Layout::row_major, Layout::col_major}) {
      expect_accurate(make_geqrf_desc(176, 176, 7, layout), one, want, Distribution::mixed, 2.0);
      expect_accurate(make_geqrf_desc(301, 250, 5, layout), one, want, Distribution::dense, 1.0);
      expect_accurate(make_geqrf_desc(257, 300, 3, layout), two, want, Distribution::mixed, 2.0);
      expect_accurate(make_geqrf_desc(520, 530, 17, layout), two, want, Distribution::mixed, 2.0);
      expect_accurate(make_geqrf_desc(1024, 1000, 2, layout), two, want, Distribution::dense, 1.0);
      expect_accurate(make_geqrf_desc(1100, 300, 2, layout), one, want, Distribution::dense, 1.0);  // 2 x 384 + 332 rows
      expect_accurate(make_geqrf_desc(2500, 130, 2, layout), two, want, Distribution::mixed, 2.0);  // 4 x 512 + 452
      expect_accurate(padded(1500, 100, 2, layout), two, want, Distribution::dense, 1.0);
      expect_accurate(make_geqrf_desc(4100, 70, 1, layout), one, want, Distribution::dense, 1.0);  // 8 x 480 + 260
      expect_accurate(make_geqrf_desc(8200, 40, 1, layout), one, want, Distribution::dense, 1.0);  // first: cuBLAS
      expect_accurate(padded(200, 150, 4, layout), one, want, Distribution::band, 1.0);
      expect_accurate(make_geqrf_desc(100, 1000, 3, layout), two, want, Distribution::mixed, 2.0);  // wide
      expect_accurate(make_geqrf_desc(200, 200, 300, layout), one, want, Distribution::dense, 1.0);  // batch > SMs
    }
  }
}

// larfb_stripe64, the outer blocks' updates of 64 reflectors (row-major, sm_90a): square,
// wide and tall, rows not a multiple of 32 or 64, last stripes narrower than 64, a batch
// past the SM count, rank-deficient and row-scaled inputs; then the same cases with it off
// (larfb_stripe), so that both stay covered.
TEST_F(UpdateKernels, Stripe64) {
  if (!cuda::larfb_stripe64_available(dev_.cc_major, dev_.cc_minor)) GTEST_SKIP() << "not an sm_90a device and build";
  struct Case {
    int m, n, batch;
    Distribution dist;
  };
  const Case cases[] = {{512, 512, 6, Distribution::mixed},  {333, 400, 5, Distribution::dense},
                        {200, 520, 3, Distribution::mixed},  {480, 300, 4, Distribution::rankdef},
                        {130, 130, 140, Distribution::dense}, {452, 452, 3, Distribution::rowscale},
                        {700, 260, 2, Distribution::nearcollinear}};
  for (int on : {1, 0}) {
    PlanHints two;
    two.outer_nb = 64;
    two.stripe_update = 2;
    two.stripe64 = on;
    two.cta = 0;  // the blocked path (as expect_accurate asks for it)
    for (const Case& c : cases) {
      const GeqrfDesc d = make_geqrf_desc(c.m, c.n, c.batch, Layout::row_major);
      ASSERT_EQ(cuda::make_plan(dev_, d, two).stripe64, on != 0) << c.m << "x" << c.n;
      expect_accurate(d, two, 3, c.dist, 2.0);
    }
  }
}

TEST_F(UpdateKernels, FusedAndCublas) {
  PlanHints fused, blas;
  fused.outer_nb = 32;
  fused.fused_update = 1;
  fused.stripe_update = 0;
  blas.outer_nb = 32;
  blas.fused_update = 0;
  blas.stripe_update = 0;
  for (Layout layout : {Layout::row_major, Layout::col_major}) {
    expect_accurate(make_geqrf_desc(176, 176, 7, layout), fused, 1, Distribution::mixed, 2.0);
    expect_accurate(make_geqrf_desc(301, 250, 5, layout), blas, 0, Distribution::dense, 1.0);
  }
}

// Every panel of up to 1024 rows on geqr2_wcol (its own configurations of 4 to 32 rows
// per lane), then on the register panel: rows not a multiple of 4 or 32, panels narrower
// than 32, padded strides, wide and tall, one and two level, both layouts.
TEST_F(UpdateKernels, PanelKernels) {
  for (int wcol : {1, 0}) {
    PlanHints one, two;
    one.outer_nb = 32;
    one.panel.wcol = wcol;
    two.outer_nb = 64;
    two.panel.wcol = wcol;
    for (Layout layout : {Layout::row_major, Layout::col_major}) {
      expect_accurate(make_geqrf_desc(176, 176, 7, layout), one, -1, Distribution::mixed, 2.0);
      expect_accurate(make_geqrf_desc(1000, 300, 3, layout), one, -1, Distribution::dense, 1.0);
      expect_accurate(make_geqrf_desc(1024, 1024, 2, layout), two, -1, Distribution::mixed, 2.0);
      expect_accurate(make_geqrf_desc(700, 650, 5, layout), two, -1, Distribution::nearcollinear, 1.0);
      expect_accurate(make_geqrf_desc(45, 300, 9, layout), one, -1, Distribution::dense, 1.0);  // wide
      expect_accurate(make_geqrf_desc(390, 77, 6, layout), one, -1, Distribution::rankdef, 1.0);
      expect_accurate(padded(333, 200, 4, layout), one, -1, Distribution::band, 1.0);
      expect_accurate(make_geqrf_desc(520, 520, 200, layout), two, -1, Distribution::mixed, 2.0);  // batch > SMs
    }
  }
}

// The one-CTA kernels forced on every compiled shape: geqr2_cta (the whole matrix in one
// CTA's registers: 8 to 32 rows per lane, one to three slots of 64 columns) and geqrf_cta
// (in shared memory, panels of 8: 64 to 256 rows in 32-row steps), each at its largest and
// at odd sizes, tall and wide, a single column, both layouts, padded strides, a batch beyond
// the SM count; rank-deficient matrices (exactly zero columns: H = I) and matrices scaled
// far from 1 (the FP64 reflector) beside ordinary ones. geqrf_cta also at sizes only it
// holds (more than 192 columns) and with panels that end past m (wide); its update takes
// both paths here: tensor-core tiles while more than 96 columns lie past the next panel
// (128 x 192, 176 x 176, 256 x 200, ...), FFMA below, and tiles cut at n (161 x 200).
TEST_F(UpdateKernels, CtaKernel) {
  for (int kernel : {1, 2}) {
    PlanHints cta;
    cta.cta = kernel;
    const cuda::Algorithm expected = kernel == 1 ? cuda::Algorithm::cta : cuda::Algorithm::cta_blocked;
    const float scales[] = {1.0f, 1e-30f, 1e30f, 1e-18f, 1e18f};
    std::vector<std::pair<int, int>> shapes = {
        {64, 128}, {33, 70},  {64, 192},  {20, 190},  {128, 128}, {100, 100}, {128, 192}, {64, 64},
        {40, 33},  {120, 60}, {190, 50},  {256, 64},  {30, 64},   {65, 150},  {192, 128}, {150, 120},
        {256, 128}, {250, 70}, {200, 3},  {176, 176}, {192, 192}, {181, 179}};
    if (kernel == 2) shapes.insert(shapes.end(), {{256, 200}, {224, 230}, {97, 256}, {161, 200}, {1, 40}});
    for (Layout layout : {Layout::row_major, Layout::col_major}) {
      for (auto [m, n] : shapes) {
        const GeqrfDesc d = make_geqrf_desc(m, n, 5, layout);
        ASSERT_EQ(cuda::make_plan(dev_, d, cta).algorithm, expected) << m << " x " << n << " kernel " << kernel;
        const std::uint64_t seed = fresh_seed();
        check_batch(d, cta, generate_batch(d, Distribution::mixed, 2.0, seed), describe(d, Distribution::mixed, 2.0, seed));
        check_batch(d, cta, generate_batch(d, Distribution::rankdef, 1.0, seed + 1),
                    describe(d, Distribution::rankdef, 1.0, seed + 1));
        auto a = generate_batch(d, Distribution::dense, 1.0, seed + 2);
        for (std::int64_t b = 0; b < d.batch; ++b)
          for (std::int64_t i = 0; i < d.stride; ++i) a[b * d.stride + i] *= scales[b];
        check_batch(d, cta, a, describe(d, Distribution::dense, 1.0, seed + 2) + " scaled 1, 1e-30, 1e30, 1e-18, 1e18");
      }
      for (const GeqrfDesc& d : {padded(176, 176, 3, layout), padded(90, 140, 4, layout), make_geqrf_desc(100, 100, 300, layout)}) {
        ASSERT_EQ(cuda::make_plan(dev_, d, cta).algorithm, expected);
        const std::uint64_t seed = fresh_seed();
        check_batch(d, cta, generate_batch(d, Distribution::mixed, 2.0, seed), describe(d, Distribution::mixed, 2.0, seed));
        check_batch(d, cta, generate_batch(d, Distribution::nearcollinear, 1.0, seed + 1),
                    describe(d, Distribution::nearcollinear, 1.0, seed + 1));
      }
    }
  }
}

// geqrf_cluster forced on every compiled shape (192 to 416 rows in 32-row steps) on clusters
// of 2 to 4 CTAs: square, tall, wide (panels that end past m), columns not a multiple of 8
// (a partial last block), fewer 8-column blocks than would fill a larger cluster, padded
// strides, both layouts, more clusters than fit at once; rank-deficient matrices and matrices
// scaled far from 1 beside ordinary ones. The update takes both paths: tensor-core tiles while
// more than 48 of a CTA's columns lie right of the panel, FFMA below.
TEST_F(UpdateKernels, ClusterKernel) {
  PlanHints cl;
  cl.cta = 3;
  const float scales[] = {1.0f, 1e-30f, 1e30f, 1e-18f, 1e18f};
  const std::vector<std::pair<int, int>> shapes = {{352, 352}, {300, 300}, {416, 200}, {257, 400}, {100, 300},
                                                   {400, 416}, {320, 512}, {288, 130}, {350, 17},  {260, 263},
                                                   {384, 384}, {416, 416}, {30, 500}, {200, 200}, {177, 256},
                                                   {224, 140}, {192, 192}};
  for (Layout layout : {Layout::row_major, Layout::col_major}) {
    for (auto [m, n] : shapes) {
      const GeqrfDesc d = make_geqrf_desc(m, n, 5, layout);
      const cuda::GeqrfPlan plan = cuda::make_plan(dev_, d, cl);
      ASSERT_EQ(plan.algorithm, cuda::Algorithm::cluster_blocked) << m << " x " << n;
      const std::uint64_t seed = fresh_seed();
      const std::string shape = " cluster of " + std::to_string(plan.cluster_blk.ctas);
      check_batch(d, cl, generate_batch(d, Distribution::mixed, 2.0, seed),
                  describe(d, Distribution::mixed, 2.0, seed) + shape);
      check_batch(d, cl, generate_batch(d, Distribution::rankdef, 1.0, seed + 1),
                  describe(d, Distribution::rankdef, 1.0, seed + 1) + shape);
      auto a = generate_batch(d, Distribution::dense, 1.0, seed + 2);
      for (std::int64_t b = 0; b < d.batch; ++b)
        for (std::int64_t i = 0; i < d.stride; ++i) a[b * d.stride + i] *= scales[b];
      check_batch(d, cl, a, describe(d, Distribution::dense, 1.0, seed + 2) + shape + " scaled 1, 1e-30, 1e30, 1e-18, 1e18");
    }
    // and the fewest CTAs that hold the matrix (the policy takes more for few matrices)
    for (const GeqrfDesc& d : {padded(352, 352, 3, layout), padded(290, 310, 4, layout), make_geqrf_desc(300, 300, 100, layout),
                               make_geqrf_desc(352, 352, 39, layout), make_geqrf_desc(416, 416, 30, layout)}) {
      ASSERT_EQ(cuda::make_plan(dev_, d, cl).algorithm, cuda::Algorithm::cluster_blocked);
      const std::uint64_t seed = fresh_seed();
      check_batch(d, cl, generate_batch(d, Distribution::mixed, 2.0, seed), describe(d, Distribution::mixed, 2.0, seed));
      check_batch(d, cl, generate_batch(d, Distribution::nearcollinear, 1.0, seed + 1),
                  describe(d, Distribution::nearcollinear, 1.0, seed + 1));
    }
  }
}

// The Cholesky QR panel (panels of 32 columns and more than 1024 rows), at most 512 and at
// most 256 rows per CTA: clusters of 3 to 16 CTAs, a last CTA shorter than the others or
// empty, both layouts, padded strides, one and two level; rankdef's later panels fall back to
// the Householder panel. Then batches in which some matrices must fall back (a zero column,
// two equal columns, a scale whose R is tiny in FP32) beside matrices that must not, and one
// scaled by 1e30 that stays on it.
// Two-level blocking forced (64-column outer blocks) on 16 matrices: a last outer block
// that is partial and still has a trailing matrix (560 = 8 x 64 + 48, merged from 32 + 16;
// 540 = 8 x 64 + 28), or has none (580: + 4, 650: + 10, 520: + 8), wide and tall, and at
// k < 512 (300).
TEST_F(UpdateKernels, TwoLevelPartialBlocks) {
  PlanHints two;
  two.outer_nb = 64;
  for (Layout layout : {Layout::row_major, Layout::col_major})
    for (auto [m, n] : {std::pair{560, 600}, {540, 1000}, {700, 580}, {650, 650}, {600, 520}, {300, 640}}) {
      const GeqrfDesc d = make_geqrf_desc(m, n, 16, layout);
      ASSERT_EQ(cuda::make_plan(dev_, d, two).outer_nb, 64);
      expect_accurate(d, two, -1, Distribution::mixed, 2.0);
    }
  // Outer blocks of 96 and 128 columns (tuning hints only): larft_merge's block columns of 64
  // and 96 rows, and a partial last block (600 = 4 x 128 + 88, 6 x 96 + 24).
  for (int width : {96, 128}) {
    PlanHints wide;
    wide.outer_nb = width;
    for (Layout layout : {Layout::row_major, Layout::col_major})
      for (auto [m, n] : {std::pair{600, 600}, {700, 300}}) {
        const GeqrfDesc d = make_geqrf_desc(m, n, 5, layout);
        ASSERT_EQ(cuda::make_plan(dev_, d, wide).outer_nb, width);
        expect_accurate(d, wide, -1, Distribution::mixed, 2.0);
      }
  }
}

// The look-ahead's two forms (PlanHints::look_ahead 1 and 2: the next outer block's columns
// updated on the caller's stream or on the side stream) run the same launches on the same
// data in another stream order: their results agree bit for bit, and pass the gate. Outer
// blocks of 32 (one level), 64 and 128, wide and tall matrices, partial last blocks,
// batches cut into chunks, larfb_stripe, larfb_stripe64 and cuBLAS updates.
TEST_F(UpdateKernels, LookAheadForms) {
  struct Case {
    int m, n, batch, outer, stripe, stripe64;  // PlanHints::stripe_update, stripe64
    Layout layout;
  };
  const Case cases[] = {
      {700, 700, 4, 64, -1, 0, Layout::row_major},   {700, 700, 4, 64, -1, -1, Layout::col_major},
      {520, 900, 3, 64, -1, 1, Layout::row_major},   {1100, 300, 2, 64, -1, -1, Layout::col_major},
      {600, 600, 3, 32, -1, -1, Layout::row_major},  {600, 600, 3, 128, -1, -1, Layout::row_major},
      {512, 512, 150, 64, -1, 1, Layout::row_major}, {650, 650, 3, 64, 0, -1, Layout::col_major},
      {300, 1000, 2, 64, 0, -1, Layout::row_major},  {2100, 256, 2, 64, -1, -1, Layout::row_major}};
  for (const Case& c : cases) {
    const GeqrfDesc d = make_geqrf_desc(c.m, c.n, c.batch, c.layout);
    PlanHints hints[2];
    for (int f = 0; f < 2; ++f) {
      hints[f].cta = 0;
      hints[f].outer_nb = c.outer;
      hints[f].stripe_update = c.stripe;
      hints[f].stripe64 = c.stripe64;
      hints[f].look_ahead = f + 1;
      // The chain's split form (GeqrfPlan::chain_split_rows) sums W in another order, and form
      // 2 gives it the next block's columns also where form 1 updates them with the rest:
      // both forms on larfb_stripe's own form here (ChainSplitStripes checks the split).
      hints[f].chain_split_rows = -1;
    }
    ASSERT_FALSE(cuda::make_plan(dev_, d, hints[0]).next_on_side);
    ASSERT_TRUE(cuda::make_plan(dev_, d, hints[1]).next_on_side);
    const std::uint64_t seed = fresh_seed();
    const std::vector<float> h = generate_batch(d, Distribution::mixed, 2.0, seed);
    const std::string name = describe(d, Distribution::mixed, 2.0, seed) + " outer " + std::to_string(c.outer);
    std::vector<float> out[2], taus[2];
    for (int f = 0; f < 2; ++f) {
      check_batch(d, hints[f], h, name + " look-ahead " + std::to_string(f + 1));
      factor(d, hints[f], h, out[f], taus[f]);
    }
    // cuBLAS may pick other kernels for the side stream's handle: bitwise only without it.
    if (c.stripe != 0) {
      EXPECT_EQ(std::memcmp(out[0].data(), out[1].data(), out[0].size() * sizeof(float)), 0) << name;
      EXPECT_EQ(std::memcmp(taus[0].data(), taus[1].data(), taus[0].size() * sizeof(float)), 0) << name;
    }
  }
}

// The batch interleave (GeqrfPlan::interleave): each chunk as two parts side by side on
// the context's two lanes, every matrix through the gate, against one part on the same
// shapes: odd and even batches (parts of ceil and floor of half), one and two level, both
// layouts, padded, mixed inputs (the Cholesky QR panel's flags per part: 2048 rows),
// rank-deficient and near-collinear ones; both enqueue orders (bit for bit the same) and
// uneven parts; and the policy's own choice at 200 matrices.
TEST_F(UpdateKernels, BatchInterleave) {
  struct Case {
    int m, n, batch, outer;
    Distribution dist;
    double cond;
  };
  const Case cases[] = {{300, 300, 7, 32, Distribution::mixed, 2.0},   {520, 520, 4, 64, Distribution::mixed, 2.0},
                        {200, 260, 2, 32, Distribution::dense, 1.0},   {700, 650, 3, 64, Distribution::nearcollinear, 1.0},
                        {2048, 160, 3, 64, Distribution::mixed, 2.0},  {390, 77, 5, 32, Distribution::rankdef, 1.0}};
  for (Layout layout : {Layout::row_major, Layout::col_major}) {
    for (const Case& c : cases) {
      for (int parts : {2, 1}) {
        PlanHints h;
        h.outer_nb = c.outer;
        h.interleave = parts;
        const GeqrfDesc d = make_geqrf_desc(c.m, c.n, c.batch, layout);
        PlanHints blocked = h;
        blocked.cta = 0;
        ASSERT_EQ(cuda::make_plan(dev_, d, blocked).interleave, parts) << c.m << "x" << c.n << "x" << c.batch;
        expect_accurate(d, h, -1, c.dist, c.cond);
      }
    }
    PlanHints on;
    on.interleave = 2;
    expect_accurate(padded(333, 200, 5, layout), on, -1, Distribution::band, 1.0);
    // The two enqueue orders (part by part, block by block) run the same kernels on the
    // same parts: the same bits. Uneven parts (1 + 6, 6 + 1, and a first part asked larger
    // than the chunk: all but one matrix).
    {
      const GeqrfDesc d = make_geqrf_desc(520, 520, 5, layout);
      const std::uint64_t seed = fresh_seed();
      const std::vector<float> h = generate_batch(d, Distribution::mixed, 2.0, seed);
      std::vector<float> out[2], taus[2];
      for (int order : {0, 1}) {
        PlanHints o;
        o.cta = 0;
        o.outer_nb = 64;
        o.interleave = 2;
        o.interleave_order = order;
        ASSERT_EQ(cuda::make_plan(dev_, d, o).interleave_by_block, order == 1);
        const std::string name = describe(d, Distribution::mixed, 2.0, seed) + " order " + std::to_string(order);
        check_batch(d, o, h, name);
        factor(d, o, h, out[order], taus[order]);
      }
      EXPECT_EQ(std::memcmp(out[0].data(), out[1].data(), out[0].size() * sizeof(float)), 0) << seed;
      EXPECT_EQ(std::memcmp(taus[0].data(), taus[1].data(), taus[0].size() * sizeof(float)), 0) << seed;
      for (std::int64_t first : {1, 6, 100}) {
        PlanHints u;
        u.outer_nb = 32;
        u.interleave = 2;
        u.interleave_first = first;
        expect_accurate(make_geqrf_desc(300, 300, 7, layout), u, -1, Distribution::mixed, 2.0);
      }
    }
    PlanHints policy;
    ASSERT_EQ(cuda::make_plan(dev_, make_geqrf_desc(256, 256, 200, layout), policy).interleave, 2);
    expect_accurate(make_geqrf_desc(256, 256, 200, layout), policy, -1, Distribution::mixed, 2.0);
  }
}

// The updates the next panel waits for on larfb_stripe's cluster form at 256 and 128 rows
// per CTA (GeqrfPlan::chain_split_rows; 700 rows: 3 and 6 CTAs where its own form takes one):
// rows not a multiple of the split, one and two levels, both look-ahead forms, both layouts,
// padded, mixed inputs; every matrix through the gate; and the policy's own choice at 1024^2
// x8.
TEST_F(UpdateKernels, ChainSplitStripes) {
  struct Case {
    int m, n, batch, outer, look_ahead;
  };
  const Case cases[] = {{1100, 300, 2, 64, 2}, {2100, 200, 2, 64, 1}, {700, 650, 3, 32, 2}, {1500, 260, 1, 64, 2}};
  for (Layout layout : {Layout::row_major, Layout::col_major}) {
    for (const Case& c : cases) {
      for (int split : {256, 128}) {
        PlanHints h;
        h.outer_nb = c.outer;
        h.look_ahead = c.look_ahead;
        h.chain_split_rows = split;
        const GeqrfDesc d = make_geqrf_desc(c.m, c.n, c.batch, layout);
        PlanHints blocked = h;
        blocked.cta = 0;
        ASSERT_EQ(cuda::make_plan(dev_, d, blocked).chain_split_rows, split) << c.m << "x" << c.n;
        expect_accurate(d, h, -1, Distribution::mixed, 2.0);
      }
    }
    PlanHints h;
    h.chain_split_rows = 256;
    expect_accurate(padded(900, 300, 2, layout), h, -1, Distribution::rowscale, 1.0);
    PlanHints policy;
    ASSERT_EQ(cuda::make_plan(dev_, make_geqrf_desc(1024, 1024, 8, layout), policy).chain_split_rows, 256);
    expect_accurate(make_geqrf_desc(1024, 1024, 8, layout), policy, -1, Distribution::mixed, 2.0);
  }
}

// LAPACK's crossover (GeqrfPlan::tail): the blocked path stops at an outer block's first
// column and one launch factors the trailing matrices. Against the blocked path to the end
// (PlanHints::tail 0) on the same inputs: both pass the gate, and where the updates are
// larfb_stripe's everything outside the trailing block (the reflectors and R of the first
// tail_at columns, and R's rows above it) is bit for bit the same, since only the tail's
// launch differs. The tail's kernels: geqrf_cluster, geqrf_cta and the register kernel, in
// both layouts, padded (the tail's pointer is offset by tail_at (ld + 1)), one and two levels.
TEST_F(UpdateKernels, OneLaunchTail) {
  using cuda::Algorithm;
  struct Case {
    int m, n, batch;
    Layout layout;
    bool pad;
    Algorithm tail;
  };
  const Case cases[] = {{352, 352, 40, Layout::row_major, false, Algorithm::cluster_blocked},
                        {352, 352, 40, Layout::col_major, true, Algorithm::cluster_blocked},
                        {448, 448, 2, Layout::row_major, true, Algorithm::cluster_blocked},
                        {700, 700, 4, Layout::col_major, false, Algorithm::cluster_blocked},
                        {300, 300, 200, Layout::row_major, false, Algorithm::cta_blocked},
                        {520, 520, 130, Layout::row_major, false, Algorithm::cta_blocked},
                        {520, 520, 130, Layout::col_major, true, Algorithm::cta_blocked},
                        {600, 200, 64, Layout::col_major, false, Algorithm::fused},
                        {300, 300, 600, Layout::row_major, true, Algorithm::fused}};
  int covered[6] = {};
  for (const Case& c : cases) {
    if (c.tail == Algorithm::cluster_blocked && !dev_.cluster_launch) continue;
    const GeqrfDesc d = c.pad ? padded(c.m, c.n, c.batch, c.layout) : make_geqrf_desc(c.m, c.n, c.batch, c.layout);
    PlanHints hints[2];
    hints[1].tail = 0;
    // Without the tail the next block's columns are a chain update, which the split form
    // (GeqrfPlan::chain_split_rows) would sum in another order: both on larfb_stripe's own
    // form (ChainSplitStripes checks the split).
    hints[0].chain_split_rows = hints[1].chain_split_rows = -1;
    const GeqrfPlan plan = cuda::make_plan(dev_, d, hints[0]);
    ASSERT_EQ(plan.algorithm, Algorithm::blocked);
    ASSERT_GT(plan.tail_at, 0) << c.m << " x " << c.n << " x " << c.batch;
    ASSERT_EQ(plan.tail.algorithm, c.tail) << c.m << " x " << c.n << " x " << c.batch;
    ASSERT_EQ(cuda::make_plan(dev_, d, hints[1]).tail_at, 0);
    ++covered[static_cast<int>(c.tail)];
    const std::uint64_t seed = fresh_seed();
    const std::vector<float> h = generate_batch(d, Distribution::mixed, 2.0, seed);
    const std::string name = describe(d, Distribution::mixed, 2.0, seed) + " tail at " + std::to_string(plan.tail_at);
    std::vector<float> out[2], taus[2];
    for (int f = 0; f < 2; ++f) {
      check_batch(d, hints[f], h, name + (f == 0 ? " (tail)" : " (blocked to the end)"));
      factor(d, hints[f], h, out[f], taus[f]);
    }
    if (!plan.stripe_update) continue;
    const int j = plan.tail_at;
    for (std::int64_t b = 0; b < d.batch; ++b) {
      for (int i = 0; i < c.m; ++i)
        for (int col = 0; col < c.n; ++col) {
          if (i >= j && col >= j) continue;  // the tail's block
          const std::size_t at = element_index(d, b, i, col);
          ASSERT_EQ(std::memcmp(&out[0][at], &out[1][at], sizeof(float)), 0)
              << name << " matrix " << b << " (" << i << ", " << col << ")";
        }
      for (int q = 0; q < j; ++q)
        ASSERT_EQ(std::memcmp(&taus[0][b * d.tau_stride + q], &taus[1][b * d.tau_stride + q], sizeof(float)), 0)
            << name << " matrix " << b << " tau " << q;
    }
  }
  EXPECT_GT(covered[static_cast<int>(Algorithm::cta_blocked)], 0);
  EXPECT_GT(covered[static_cast<int>(Algorithm::fused)], 0);
}

// larft_merge_pair on clusters of 1-8 CTAs per matrix (and the policy's count): V of 1100,
// 2100 and 700 rows, and outer blocks whose V has fewer rows than the cluster has passes
// (300: the last merge's 108 rows leave CTAs without rows), both layouts.
TEST_F(UpdateKernels, MergePairClusters) {
  for (int ctas : {0, 1, 2, 3, 8}) {
    if (ctas > 1 && !dev_.cluster_launch) continue;
    PlanHints two;
    two.outer_nb = 64;
    two.cta = 0;  // the blocked path
    two.merge_ctas = ctas;
    for (Layout layout : {Layout::row_major, Layout::col_major}) {
      for (auto [m, n, batch] : {std::tuple{1100, 200, 2}, {2100, 130, 1}, {700, 260, 3}, {300, 300, 2}}) {
        const GeqrfDesc d = make_geqrf_desc(m, n, batch, layout);
        ASSERT_EQ(cuda::make_plan(dev_, d, two).outer_nb, 64);
        expect_accurate(d, two, -1, Distribution::mixed, 2.0);
      }
    }
  }
}

TEST_F(UpdateKernels, CholPanel) {
  for (int cap : {0, 256}) {
    PlanHints one, two;
    one.outer_nb = 32;
    two.outer_nb = 64;
    one.panel.chol_rows = two.panel.chol_rows = cap;
    auto taken = [&](int m, std::int64_t batch, const PlanHints& hints) {
      const cuda::PanelPlan pp = cuda::panel_plan(dev_, m, 32, 32, true, batch, hints.panel);
      return cuda::chol_panel_config(dev_, m, 32, batch, pp, hints.panel).cluster > 0;
    };
    for (Layout layout : {Layout::row_major, Layout::col_major}) {
      ASSERT_TRUE(taken(1025, 3, one));
      expect_accurate(make_geqrf_desc(1025, 40, 3, layout), one, -1, Distribution::dense, 1.0);
      expect_accurate(make_geqrf_desc(2100, 130, 2, layout), two, -1, Distribution::mixed, 2.0);
      expect_accurate(padded(1500, 100, 2, layout), one, -1, Distribution::dense, 1.0);
      expect_accurate(make_geqrf_desc(4100, 70, 1, layout), one, -1, Distribution::dense, 1.0);
      ASSERT_EQ(taken(8192, 1, one), cap == 0);  // 16 CTAs of 512 rows; 32 of 256 are too many
      expect_accurate(make_geqrf_desc(8192, 33, 1, layout), one, -1, Distribution::rowscale, 0.0);
      expect_accurate(make_geqrf_desc(3000, 96, 4, layout), one, -1, Distribution::rankdef, 0.0);
      expect_accurate(make_geqrf_desc(2048, 2048, 1, layout), one, -1, Distribution::dense, 1.0);
    }
  }
  // Panels of 193-1024 rows too (CTAs of at most 256 rows, geqr2_wcol as the fallback): the
  // policy's at few matrices, with hint 2 at any batch.
  PlanHints short_one, short_two;
  short_one.outer_nb = 32;
  short_two.outer_nb = 64;
  short_one.panel.chol = short_two.panel.chol = 2;
  {
    const cuda::PanelPlan pp = cuda::panel_plan(dev_, 700, 32, 32, true, 3, short_one.panel);
    ASSERT_EQ(cuda::chol_panel_config(dev_, 700, 32, 3, pp, short_one.panel).cluster, 3);
  }
  // chol_short_rows: those panels on fewer, taller CTAs (at least two).
  PlanHints tall_ctas = short_two;
  tall_ctas.panel.chol_short_rows = 512;
  for (auto [rows, ctas] : {std::pair{700, 2}, {1024, 2}, {400, 2}, {193, 2}}) {
    const cuda::PanelPlan pp = cuda::panel_plan(dev_, rows, 32, 32, true, 3, tall_ctas.panel);
    ASSERT_EQ(cuda::chol_panel_config(dev_, rows, 32, 3, pp, tall_ctas.panel).cluster, ctas) << rows;
  }
  for (Layout layout : {Layout::row_major, Layout::col_major}) {
    expect_accurate(make_geqrf_desc(1000, 700, 3, layout), tall_ctas, -1, Distribution::mixed, 2.0);
    expect_accurate(make_geqrf_desc(700, 100, 3, layout), short_one, -1, Distribution::dense, 1.0);
    expect_accurate(make_geqrf_desc(1024, 1024, 2, layout), short_two, -1, Distribution::mixed, 2.0);
    expect_accurate(padded(300, 200, 5, layout), short_one, -1, Distribution::rankdef, 0.0);
    expect_accurate(make_geqrf_desc(520, 520, 17, layout), short_two, -1, Distribution::mixed, 2.0);
  }
  // The one-CTA form (hint 3): geqr2_wcol's panels of at most 512 rows, one CTA each, rows
  // past the panel zero-filled up to a multiple of 32.
  PlanHints one_cta_one, one_cta_two;
  one_cta_one.outer_nb = 32;
  one_cta_two.outer_nb = 64;
  one_cta_one.panel.chol = one_cta_two.panel.chol = 3;
  for (int rows : {193, 450, 512}) {
    const cuda::PanelPlan pp = cuda::panel_plan(dev_, rows, 32, 32, true, 3, one_cta_one.panel);
    ASSERT_EQ(cuda::chol_panel_config(dev_, rows, 32, 3, pp, one_cta_one.panel).cluster, 1) << rows;
  }
  for (Layout layout : {Layout::row_major, Layout::col_major}) {
    expect_accurate(make_geqrf_desc(512, 512, 5, layout), one_cta_two, -1, Distribution::mixed, 2.0);
    expect_accurate(make_geqrf_desc(450, 96, 7, layout), one_cta_one, -1, Distribution::dense, 1.0);
    expect_accurate(padded(300, 200, 5, layout), one_cta_one, -1, Distribution::rankdef, 0.0);
    expect_accurate(make_geqrf_desc(520, 520, 17, layout), one_cta_two, -1, Distribution::clustered, 0.0);
    expect_accurate(make_geqrf_desc(700, 300, 3, layout), one_cta_two, -1, Distribution::nearcollinear, 0.0);
  }
  for (const PlanHints& hints : {PlanHints{}, one_cta_one}) {
    for (Layout layout : {Layout::row_major, Layout::col_major}) {
      const bool one_cta = hints.panel.chol == 3;
      const GeqrfDesc d = make_geqrf_desc(one_cta ? 400 : 1500, 64, 6, layout);
      const std::uint64_t seed = fresh_seed();
      std::vector<float> h = generate_batch(d, Distribution::dense, 1.0, seed);
      auto at = [&](int b, int i, int j) -> float& { return h[element_index(d, b, i, j)]; };
      for (int i = 0; i < d.m; ++i) {
        at(1, i, 5) = 0.0f;          // a zero column: a zero pivot
        at(2, i, 7) = at(2, i, 3);   // two equal columns
        for (int j = 0; j < d.n; ++j) {
          at(3, i, j) *= 1e-35f;     // R below 2^-100
          at(4, i, j) *= 1e30f;      // still on the Cholesky panel
          // columns graded over 20 decades: on the Cholesky panel since its equilibration
          at(5, i, j) *= std::pow(10.0f, -20.0f * static_cast<float>(j) / static_cast<float>(d.n - 1));
        }
      }
      PlanHints h32 = hints;
      h32.outer_nb = 32;
      check_batch(d, h32, h, describe(d, Distribution::dense, 1.0, seed) + " with fallbacks");
    }
  }
}

// The tensor cores read only the top 19 bits of a .tf32 operand (split_tf32 passes the small
// part untruncated and relies on it): products of operands with random low bits equal
// those of the same operands with the low bits cleared, bit for bit.
TEST_F(UpdateKernels, Tf32OperandBits) {
  constexpr int kPasses = 64;
  std::mt19937 gen(static_cast<std::uint32_t>(fresh_seed()));
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> a(kPasses * 32 * 4), b(kPasses * 32 * 2);
  for (float& x : a) x = normal(gen);
  for (float& x : b) x = normal(gen);
  float *da = nullptr, *db = nullptr, *draw = nullptr, *dclean = nullptr;
  ASSERT_EQ(cudaMalloc(&da, a.size() * sizeof(float)), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&db, b.size() * sizeof(float)), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&draw, a.size() * sizeof(float)), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&dclean, a.size() * sizeof(float)), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(da, a.data(), a.size() * sizeof(float), cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(db, b.data(), b.size() * sizeof(float), cudaMemcpyHostToDevice), cudaSuccess);
  tf32_operand_bits_kernel<<<1, 32>>>(da, db, draw, dclean, kPasses);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  std::vector<float> raw(a.size()), clean(a.size());
  ASSERT_EQ(cudaMemcpy(raw.data(), draw, raw.size() * sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(clean.data(), dclean, clean.size() * sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
  int differ = 0;
  for (std::size_t i = 0; i < raw.size(); ++i) differ += std::memcmp(&raw[i], &clean[i], sizeof(float)) != 0;
  EXPECT_EQ(differ, 0) << "of " << raw.size() << " products";
  cudaFree(dclean);
  cudaFree(draw);
  cudaFree(db);
  cudaFree(da);
}

}  // namespace
}  // namespace batchqr::test
