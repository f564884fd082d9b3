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

// G = A^T A of an m x N panel, whole (returned) and its upper triangle into R (Ld apart), as
// the kernel's sum leaves it.
std::vector<double> gram(const std::vector<double>& a, int m, double* R) {
  std::vector<double> G(N * N);
  for (int i = 0; i < N; ++i)
    for (int j = 0; j < N; ++j) {
      double x = 0.0;
      for (int r = 0; r < m; ++r) x += a[r * N + i] * a[r * N + j];
      G[i * N + j] = x;
      if (i <= j) R[i * Ld + j] = x;
    }
  return G;
}

TEST(SmallFp64, CholeskyAndItsInverse) {
  for (double decades : {0.0, 2.0}) {
    const std::uint64_t seed = fresh_seed();
    const int m = 300;
    const auto a = random_panel(m, seed, decades);
    Smem s;
    double* R = s.mat(0);  // holds G (upper triangle only, as the kernel's sum leaves it), then R
    double* RIT = s.mat(1);
    const std::vector<double> G = gram(a, m, R);
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
  gram(a, 100, R);
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

// The Cholesky factorization and, one barrier behind it, the LU with signs of A_top - S R
// (the Householder reconstruction of Q_top = A_top R^-1) by columns and by rows, with R^-T,
// L^-1 and W^-1 alongside: six warps, as the kernel runs them, on the column-equilibrated
// panel A E^-1 as geqr2_chol gives it (G and A_top scaled by equilibration_scale). Columns
// graded over 12 and 30 decades too: without the equilibration kappa_F(R) would be ~1e12 and
// ~1e30, and the kernel would leave such panels to the Householder panel.
TEST(SmallFp64, ReconstructionLuOnCholesky) {
  constexpr double kMaxKappa = 3.0e3;  // geqr2_chol.hpp's kCholMaxKappa
  for (double decades : {0.0, 1.0, 3.0, 12.0, 30.0}) {
    const std::uint64_t seed = fresh_seed();
    const int m = 250;
    const auto a = random_panel(m, seed, decades);
    Smem s;
    double* R = s.mat(0);  // G (upper triangle), then R' = R E^-1
    double* RIT = s.mat(1);
    double* LU = s.mat(2);  // L and W' packed
    double* LI = s.mat(3);
    double* WIT = s.mat(4);
    gram(a, m, R);
    std::vector<double> esc(N), as(static_cast<std::size_t>(m) * N);  // 1 / e_j; A E^-1
    for (int j = 0; j < N; ++j) esc[j] = sm::equilibration_scale(R[j * Ld + j]);
    for (int i = 0; i < N; ++i)
      for (int j = i; j < N; ++j) R[i * Ld + j] *= esc[i] * esc[j];
    for (int r = 0; r < m; ++r)
      for (int j = 0; j < N; ++j) as[r * N + j] = a[r * N + j] * esc[j];
    for (int j = 0; j < N; ++j) {  // a power of two, within a factor 2 of 1 / |a_j|
      double nj = 0.0;
      for (int r = 0; r < m; ++r) nj += a[r * N + j] * a[r * N + j];
      const double ratio = std::sqrt(nj) * esc[j];
      EXPECT_TRUE(ratio >= 1.0 && ratio < 2.0) << ratio;
      int e = 0;
      EXPECT_EQ(std::frexp(esc[j], &e), 0.5);
    }
    std::vector<double> rsq(N), sign(N), rdiag(N), fr(32), fi(32);
    std::vector<double> rowv(2 * N, std::nan("")), colv(2 * N, std::nan("")), wrow(2 * N, std::nan(""));
    std::vector<double> fv(2 * N, std::nan(""));
    bool ok = false;
    constexpr int kCount = 6 * 32;
    run_cta(6, [&](int warp, int lane) {
      if (warp == 0) {
        sm::Col c;
        sm::load_col(R, lane, c);
        sm::named_barrier(3, 32);  // all lanes have read G
        const bool o = sm::cholesky_r(c, lane, R, rsq.data(), rowv.data(), fr[lane], 1, kCount);
        sm::named_barrier(1, kCount);
        if (lane == 0) ok = o;
      } else if (warp == 1) {
        sm::cholesky_rit(lane, rowv.data(), rsq.data(), RIT, fi[lane], 1, kCount);
        sm::named_barrier(1, kCount);
      } else if (warp == 2) {
        sm::Col c;
        for (int i = 0; i < N; ++i) c[i] = as[i * N + lane];
        sm::named_barrier(1, kCount);
        sm::lu_on_cholesky(c, lane, R, rsq.data(), LU, sign.data(), rdiag.data(), colv.data(), wrow.data(), fv.data(), 1,
                           kCount);
      } else if (warp == 3) {
        sm::named_barrier(1, kCount);
        sm::lu_li(lane, colv.data(), rdiag.data(), LU, LI, 1, kCount);
      } else if (warp == 4) {
        sm::named_barrier(1, kCount);
        sm::lu_ui(lane, wrow.data(), rdiag.data(), WIT, 1, kCount);
      } else {
        sm::Col x;
        for (int j = 0; j < N; ++j) x[j] = as[lane * N + j];
        sm::named_barrier(1, kCount);
        sm::lu_rows(x, lane, colv.data(), fv.data(), 1, kCount);
      }
    });
    ASSERT_TRUE(ok) << "seed " << seed;
    double sfr = 0.0, sfi = 0.0;
    for (int l = 0; l < 32; ++l) sfr += fr[l], sfi += fi[l];
    EXPECT_LE(std::sqrt(sfr * sfi), kMaxKappa) << "seed " << seed << ", decades " << decades;
    auto r_at = [&](int i, int j) { return i <= j ? R[i * Ld + j] : 0.0; };
    auto l_at = [&](int i, int j) { return i > j ? LU[i * Ld + j] : (i == j ? 1.0 : 0.0); };
    auto w_at = [&](int i, int j) { return i <= j ? LU[i * Ld + j] : 0.0; };
    auto rinv = [&](int i, int j) { return RIT[j * Ld + i]; };
    // Q_top = A_top R^-1 and U = W R^-1, in FP64 here.
    std::vector<double> q(N * N), u(N * N);
    for (int i = 0; i < N; ++i)
      for (int j = 0; j < N; ++j) {
        double x = 0.0, y = 0.0;
        for (int k = 0; k < N; ++k) {
          x += as[i * N + k] * rinv(k, j);
          y += w_at(i, k) * rinv(k, j);
        }
        q[i * N + j] = x;
        u[i * N + j] = y;
      }
    double e_lw = 0.0, e_lu = 0.0, e_li = 0.0, e_wi = 0.0, scale = 0.0;
    for (int i = 0; i < N; ++i)
      for (int j = 0; j < N; ++j) scale = std::max(scale, std::abs(as[i * N + j]));
    for (int i = 0; i < N; ++i) {
      EXPECT_EQ(std::abs(sign[i]), 1.0);
      EXPECT_GE(std::abs(u[i * N + i]), 1.0 - 1e-9) << "seed " << seed;
      EXPECT_NEAR(rdiag[i] * w_at(i, i), 1.0, 1e-14);
      for (int j = 0; j < N; ++j) {
        double lw = 0.0, lu = 0.0, lli = 0.0, wwi = 0.0;
        for (int k = 0; k < N; ++k) {
          lw += l_at(i, k) * w_at(k, j);
          lu += l_at(i, k) * u[k * N + j];
          lli += l_at(i, k) * LI[k * Ld + j];
          wwi += w_at(i, k) * WIT[j * Ld + k];  // (W W^-1)(i, j)
        }
        e_lw = std::max(e_lw, std::abs(lw - (as[i * N + j] - sign[i] * r_at(i, j))) / scale);
        e_lu = std::max(e_lu, std::abs(lu - (q[i * N + j] - (i == j ? sign[i] : 0.0))));
        e_li = std::max(e_li, std::abs(lli - (i == j ? 1.0 : 0.0)));
        e_wi = std::max(e_wi, std::abs(wwi - (i == j ? 1.0 : 0.0)));
      }
    }
    EXPECT_LT(e_lw, 1e-13) << "seed " << seed << ", decades " << decades;
    EXPECT_LT(e_lu, 1e-12) << "seed " << seed << ", decades " << decades;
    EXPECT_LT(e_li, 1e-12) << "seed " << seed << ", decades " << decades;
    EXPECT_LT(e_wi, 1e-12) << "seed " << seed << ", decades " << decades;

    // What geqr2_chol makes of them: V = [L; A_bot M] with M = W^-1 = E^-1 W'^-1, T = -(U S)
    // L^-T (U = W' R'^-1 = W R^-1) and the R of geqr2, S R = S R' E. The reflectors' Q = I -
    // V T V^T must be orthogonal and Q^T A = [S R; 0] (LAPACK's geqr2 output, up to rounding),
    // each column to within rounding of its own norm.
    std::vector<double> v(static_cast<std::size_t>(m) * N), t(N * N, 0.0);
    for (int r = 0; r < m; ++r)
      for (int j = 0; j < N; ++j) {
        if (r < N) {
          v[r * N + j] = l_at(r, j);
          continue;
        }
        double x = 0.0;
        for (int k = 0; k <= j; ++k) x += a[r * N + k] * (esc[k] * WIT[j * Ld + k]);  // (A M)(r, j), M(k, j) = W'^-T(j, k) / e_k
        v[r * N + j] = x;
      }
    for (int i = 0; i < N; ++i)
      for (int j = 0; j < N; ++j) {
        double x = 0.0;
        for (int k = 0; k <= j; ++k) x += u[i * N + k] * sign[k] * LI[j * Ld + k];  // L^-T(k, j) = L^-1(j, k)
        t[i * N + j] = -x;
      }
    // Q^T A = A - V T^T (V^T A), and the first N columns of Q, E - V T V_top^T.
    std::vector<double> vta(N * N, 0.0), c(N * N, 0.0), q1(static_cast<std::size_t>(m) * N);
    for (int i = 0; i < N; ++i)
      for (int j = 0; j < N; ++j)
        for (int r = 0; r < m; ++r) vta[i * N + j] += v[r * N + i] * a[r * N + j];
    for (int i = 0; i < N; ++i)
      for (int j = 0; j < N; ++j)
        for (int k = 0; k < N; ++k) c[i * N + j] += t[k * N + i] * vta[k * N + j];
    std::vector<double> colnorm(N, 0.0);
    for (int r = 0; r < m; ++r)
      for (int j = 0; j < N; ++j) colnorm[j] += a[r * N + j] * a[r * N + j];
    for (double& x : colnorm) x = std::sqrt(x);
    double e_r = 0.0, e_orth = 0.0;
    for (int r = 0; r < m; ++r)
      for (int j = 0; j < N; ++j) {
        double qta = a[r * N + j], qe = r == j ? 1.0 : 0.0;
        for (int k = 0; k < N; ++k) {
          qta -= v[r * N + k] * c[k * N + j];
          double tv = 0.0;  // (T V_top^T)(k, j)
          for (int p = 0; p < N; ++p) tv += t[k * N + p] * v[j * N + p];
          qe -= v[r * N + k] * tv;
        }
        const double want = r < N && r <= j ? sign[r] * r_at(r, j) / esc[j] : 0.0;
        e_r = std::max(e_r, std::abs(qta - want) / colnorm[j]);
        q1[r * N + j] = qe;
      }
    for (int i = 0; i < N; ++i)
      for (int j = 0; j < N; ++j) {
        double x = 0.0;
        for (int r = 0; r < m; ++r) x += q1[r * N + i] * q1[r * N + j];
        e_orth = std::max(e_orth, std::abs(x - (i == j ? 1.0 : 0.0)));
      }
    for (int i = 0; i < N; ++i)
      for (int j = 0; j < i; ++j) EXPECT_EQ(t[i * N + j], 0.0);  // larft's T is upper triangular
    EXPECT_LT(e_r, 1e-12) << "seed " << seed << ", decades " << decades;
    EXPECT_LT(e_orth, 1e-12) << "seed " << seed << ", decades " << decades;
  }
}

}  // namespace
}  // namespace batchqr::test
