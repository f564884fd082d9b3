// The warp-level FP64 factorizations of the Cholesky QR panel (src/cuda/small_fp64.cuh),
// run on the host: one thread per lane, shuffles and named barriers emulated, so that the
// routines' index arithmetic (rotating registers, slots past a matrix's end, the warps
// that carry the inverses one step behind) is checked on any machine, with fresh data.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "test_util.hpp"

namespace {

// A reusable barrier for `count` threads (C++17 has no std::barrier).
class Barrier {
 public:
  explicit Barrier(int count) : count_(count) {}
  void arrive_and_wait() {
    std::unique_lock<std::mutex> lock(m_);
    const long gen = generation_;
    if (++arrived_ == count_) {
      arrived_ = 0;
      ++generation_;
      cv_.notify_all();
    } else {
      cv_.wait(lock, [&] { return generation_ != gen; });
    }
  }

 private:
  std::mutex m_;
  std::condition_variable cv_;
  int count_, arrived_ = 0;
  long generation_ = 0;
};

// One emulated CTA: `warps` warps of 32 threads.
struct Cta {
  explicit Cta(int warps) : slots(warps) {
    for (int w = 0; w < warps; ++w) warp_bar.push_back(std::make_unique<Barrier>(32));
  }
  std::vector<std::unique_ptr<Barrier>> warp_bar;
  std::vector<std::array<double, 32>> slots;
  std::map<int, std::unique_ptr<Barrier>> named;
  std::mutex named_mutex;
};

thread_local Cta* t_cta = nullptr;
thread_local int t_warp = 0, t_lane = 0;

}  // namespace

// The CUDA intrinsics small_fp64.cuh uses, for threads of an emulated warp.
inline double __shfl_sync(unsigned, double v, int src) {
  auto& s = t_cta->slots[t_warp];
  s[t_lane] = v;
  t_cta->warp_bar[t_warp]->arrive_and_wait();
  const double r = s[src];
  t_cta->warp_bar[t_warp]->arrive_and_wait();
  return r;
}
inline double rsqrt(double x) { return 1.0 / std::sqrt(x); }
inline float __frcp_rn(float x) { return 1.0f / x; }
using std::fma;
using std::sqrt;
namespace batchqr::cuda::small {
inline void named_barrier(int id, int count) {
  Barrier* b = nullptr;
  {
    std::lock_guard<std::mutex> lock(t_cta->named_mutex);
    auto& p = t_cta->named[id];
    if (!p) p = std::make_unique<Barrier>(count);
    b = p.get();
  }
  b->arrive_and_wait();
}
}  // namespace batchqr::cuda::small

#include "cuda/small_fp64.cuh"

namespace batchqr::test {
namespace {

namespace sm = batchqr::cuda::small;
constexpr int N = sm::kN, Ld = sm::kSmallLd;

// Runs body(warp, lane) on `warps` emulated warps.
void run_cta(int warps, const std::function<void(int, int)>& body) {
  Cta cta(warps);
  std::vector<std::thread> threads;
  for (int w = 0; w < warps; ++w)
    for (int l = 0; l < 32; ++l)
      threads.emplace_back([&, w, l] {
        t_cta = &cta;
        t_warp = w;
        t_lane = l;
        body(w, l);
      });
  for (auto& t : threads) t.join();
}

// Shared memory as the kernel lays it out, poisoned with NaN, as are the step vectors:
// their entries past a matrix feed only slots past it, which must never reach a result.
struct Smem {
  std::vector<double> v = std::vector<double>(8 * N * Ld + 256, std::nan(""));
  double* mat(int i) { return v.data() + i * N * Ld; }
};

std::vector<double> random_panel(int m, std::uint64_t seed, double col_scale_decades) {
  std::mt19937_64 g(seed);
  std::normal_distribution<double> nd;
  std::vector<double> a(static_cast<std::size_t>(m) * N);
  for (int r = 0; r < m; ++r)
    for (int c = 0; c < N; ++c) a[r * N + c] = nd(g) * std::pow(10.0, -col_scale_decades * c / (N - 1));
  return a;
}

TEST(SmallFp64, CholeskyAndItsInverse) {
  for (double decades : {0.0, 2.0}) {
    const std::uint64_t seed = fresh_seed();
    const int m = 300;
    const auto a = random_panel(m, seed, decades);
    Smem s;
    double* R = s.mat(0);  // holds G (upper triangle only, as the kernel's sum leaves it), then R
    double* RIT = s.mat(1);
    std::vector<double> G(N * N);
    for (int i = 0; i < N; ++i)
      for (int j = 0; j < N; ++j) {
        double x = 0.0;
        for (int r = 0; r < m; ++r) x += a[r * N + i] * a[r * N + j];
        G[i * N + j] = x;
        if (i <= j) R[i * Ld + j] = x;
      }
    std::vector<double> rsq(N), fr(32), fi(32), rowv(2 * N, std::nan(""));
    bool ok = false;
    run_cta(2, [&](int warp, int lane) {
      if (warp == 0) {
        sm::Col c;
        sm::load_col(R, lane, c);
        sm::named_barrier(3, 32);  // all lanes have read G
        const bool o = sm::cholesky_r(c, lane, R, rsq.data(), rowv.data(), fr[lane], 1, 64);
        if (lane == 0) ok = o;
      } else {
        sm::cholesky_rit(lane, rowv.data(), rsq.data(), RIT, fi[lane], 1, 64);
      }
    });
    ASSERT_TRUE(ok) << "seed " << seed;
    double e_chol = 0.0, e_inv = 0.0, frob = 0.0;
    for (int i = 0; i < N; ++i)
      for (int j = 0; j < N; ++j) {
        if (i > j) EXPECT_EQ(R[i * Ld + j], 0.0);
        double rtr = 0.0, rri = 0.0;
        for (int k = 0; k < N; ++k) {
          rtr += R[k * Ld + i] * R[k * Ld + j];
          rri += R[i * Ld + k] * RIT[j * Ld + k];  // (R R^-1)(i, j)
        }
        e_chol = std::max(e_chol, std::abs(rtr - G[i * N + j]) / std::sqrt(G[i * N + i] * G[j * N + j]));
        e_inv = std::max(e_inv, std::abs(rri - (i == j ? 1.0 : 0.0)));
        frob += R[i * Ld + j] * R[i * Ld + j];
      }
    double fr_sum = 0.0;
    for (double x : fr) fr_sum += x;
    EXPECT_LT(e_chol, 1e-13) << "seed " << seed;
    EXPECT_LT(e_inv, 1e-10) << "seed " << seed;
    EXPECT_NEAR(fr_sum, frob, 1e-12 * frob);
  }
}

TEST(SmallFp64, CholeskyRejectsASingularGram) {
  const std::uint64_t seed = fresh_seed();
  auto a = random_panel(100, seed, 0.0);
  for (int r = 0; r < 100; ++r) a[r * N + 7] = 0.0;  // a zero column: a zero pivot
  Smem s;
  double* R = s.mat(0);
  for (int i = 0; i < N; ++i)
    for (int j = i; j < N; ++j) {
      double x = 0.0;
      for (int r = 0; r < 100; ++r) x += a[r * N + i] * a[r * N + j];
      R[i * Ld + j] = x;
    }
  std::vector<double> rsq(N), rowv(2 * N, std::nan(""));
  bool ok = true;
  run_cta(2, [&](int warp, int lane) {
    double f = 0.0;
    if (warp == 0) {
      sm::Col c;
      sm::load_col(R, lane, c);
      sm::named_barrier(3, 32);
      const bool o = sm::cholesky_r(c, lane, R, rsq.data(), rowv.data(), f, 1, 64);
      if (lane == 0) ok = o;
    } else {
      sm::cholesky_rit(lane, rowv.data(), rsq.data(), s.mat(1), f, 1, 64);
    }
  });
  EXPECT_FALSE(ok) << "seed " << seed;
}

// The LU with signs of the top block of an orthonormal Q, L^-1 and U^-1 alongside.
TEST(SmallFp64, ReconstructionLu) {
  const std::uint64_t seed = fresh_seed();
  const int m = 200;
  auto a = random_panel(m, seed, 1.0);
  // Q by modified Gram-Schmidt in FP64 (twice), its first 32 rows.
  for (int pass = 0; pass < 2; ++pass)
    for (int j = 0; j < N; ++j) {
      for (int p = 0; p < j; ++p) {
        double d = 0.0;
        for (int r = 0; r < m; ++r) d += a[r * N + p] * a[r * N + j];
        for (int r = 0; r < m; ++r) a[r * N + j] -= d * a[r * N + p];
      }
      double nrm = 0.0;
      for (int r = 0; r < m; ++r) nrm += a[r * N + j] * a[r * N + j];
      nrm = std::sqrt(nrm);
      for (int r = 0; r < m; ++r) a[r * N + j] /= nrm;
    }
  Smem s;
  double* LU = s.mat(0);  // Q_top, then L and U packed
  double* LI = s.mat(1);
  double* UIT = s.mat(2);
  for (int i = 0; i < N; ++i)
    for (int j = 0; j < N; ++j) LU[i * Ld + j] = a[i * N + j];
  std::vector<double> sign(N), rdiag(N), colv(2 * N, std::nan("")), rowv(2 * N, std::nan(""));
  run_cta(3, [&](int warp, int lane) {
    if (warp == 0) {
      sm::Col c;
      sm::load_col(LU, lane, c);
      sm::named_barrier(3, 32);
      sm::lu_signs(c, lane, LU, sign.data(), rdiag.data(), colv.data(), rowv.data(), 2, 96);
    } else if (warp == 1) {
      sm::lu_li(lane, colv.data(), rdiag.data(), LU, LI, 2, 96);
    } else {
      sm::lu_ui(lane, rowv.data(), rdiag.data(), UIT, 2, 96);
    }
  });
  double e_lu = 0.0, e_li = 0.0, e_ui = 0.0;
  for (int i = 0; i < N; ++i) {
    EXPECT_GE(std::abs(LU[i * Ld + i]), 1.0);
    EXPECT_EQ(std::abs(sign[i]), 1.0);
    for (int j = 0; j < N; ++j) {
      double lu = 0.0, lli = 0.0, uui = 0.0;
      for (int k = 0; k < N; ++k) {
        const double l = k < i ? LU[i * Ld + k] : (k == i ? 1.0 : 0.0);  // L(i, k)
        const double u = k <= j ? LU[k * Ld + j] : 0.0;                   // U(k, j)
        lu += l * u;
        lli += l * LI[k * Ld + j];
        uui += (i <= k ? LU[i * Ld + k] : 0.0) * UIT[j * Ld + k];  // U(i, k) U^-1(k, j)
      }
      e_lu = std::max(e_lu, std::abs(lu - (a[i * N + j] - (i == j ? sign[i] : 0.0))));
      e_li = std::max(e_li, std::abs(lli - (i == j ? 1.0 : 0.0)));
      e_ui = std::max(e_ui, std::abs(uui - (i == j ? 1.0 : 0.0)));
    }
  }
  EXPECT_LT(e_lu, 1e-13) << "seed " << seed;
  EXPECT_LT(e_li, 1e-12) << "seed " << seed;
  EXPECT_LT(e_ui, 1e-12) << "seed " << seed;
}

}  // namespace
}  // namespace batchqr::test
