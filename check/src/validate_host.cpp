// CPU validator: Q from dorgqr on the exact FP64 images of H and tau, then BLAS-3 in FP64.
#include <algorithm>
#include <cmath>
#include <limits>
#include <thread>
#include <vector>

#include "batchqr/check/validate.hpp"
#include "cpu/blas_threads.hpp"

extern "C" {
void dorgqr_(const int* m, const int* n, const int* k, double* a, const int* lda, const double* tau,
             double* work, const int* lwork, int* info);
void dgemm_(const char* ta, const char* tb, const int* m, const int* n, const int* k,
            const double* alpha, const double* a, const int* lda, const double* b, const int* ldb,
            const double* beta, double* c, const int* ldc);
void dormqr_(const char* side, const char* trans, const int* m, const int* n, const int* k, const double* a,
             const int* lda, const double* tau, double* c, const int* ldc, double* work, const int* lwork, int* info);
void dsyrk_(const char* uplo, const char* trans, const int* n, const int* k, const double* alpha,
            const double* a, const int* lda, const double* beta, double* c, const int* ldc);
}

namespace batchqr::check {

void summarize(GateReport& r) {
  r.worst_factor = r.worst_orth = r.worst_leak = r.worst_recon = 0;
  r.worst_factor_index = -1;
  r.nonfinite = r.failures = 0;
  for (std::size_t b = 0; b < r.matrices.size(); ++b) {
    const MatrixReport& m = r.matrices[b];
    if (!m.finite) ++r.nonfinite;
    if (!m.pass()) ++r.failures;
    // NaN compares false: a non-finite matrix is reported through `nonfinite`.
    if (m.factor > r.worst_factor || r.worst_factor_index < 0) {
      r.worst_factor = std::max(r.worst_factor, m.factor);
      r.worst_factor_index = static_cast<std::int64_t>(b);
    }
    r.worst_orth = std::max(r.worst_orth, m.orth);
    r.worst_leak = std::max(r.worst_leak, m.leak);
    r.worst_recon = std::max(r.worst_recon, m.recon);
  }
}

namespace {

double scaled(double resid, double denom) {
  if (denom > 0) return resid / denom;
  return resid == 0 ? 0.0 : std::numeric_limits<double>::infinity();
}

struct Buffers {
  std::vector<double> A, R, Q, QtA, QtQ, QR, tau, work;
};

MatrixReport check_one(const GeqrfDesc& d, const float* a, const float* h, const float* tau, Buffers& B) {
  const int m = static_cast<int>(d.m), n = static_cast<int>(d.n), k = std::min(m, n);
  auto at = [&](const float* p, int i, int j) {
    return static_cast<double>(d.layout == Layout::row_major ? p[static_cast<std::int64_t>(i) * d.ld + j]
                                                             : p[i + static_cast<std::int64_t>(j) * d.ld]);
  };
  auto ix = [m](int i, int j) { return static_cast<std::size_t>(i) + static_cast<std::size_t>(j) * m; };
  MatrixReport rep;
  const double inf = std::numeric_limits<double>::infinity();
  auto nonfinite = [&] {
    rep.finite = false;
    rep.factor = rep.orth = rep.leak = rep.recon = inf;
    return rep;
  };
  B.A.assign(static_cast<std::size_t>(m) * n, 0.0);
  B.R.assign(static_cast<std::size_t>(m) * n, 0.0);
  B.Q.assign(static_cast<std::size_t>(m) * k, 0.0);  // reflectors, then the thin Q
  B.tau.assign(static_cast<std::size_t>(std::max(k, 1)), 0.0);
  bool finite = true;
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < m; ++i) {
      const double hv = at(h, i, j);
      finite &= std::isfinite(hv);
      B.A[ix(i, j)] = at(a, i, j);
      if (i <= j) B.R[ix(i, j)] = hv;
      else if (j < k) B.Q[ix(i, j)] = hv;
    }
  for (int j = 0; j < k; ++j) {
    B.tau[j] = tau[j];
    finite &= std::isfinite(B.tau[j]);
  }
  if (!finite) return nonfinite();
  int info = 0, lwork = -1;
  double opt = 0;
  // Q^T A (m x n) with the reflectors as they are, then the thin Q (m x k) from them.
  B.QtA = B.A;
  dormqr_("L", "T", &m, &n, &k, B.Q.data(), &m, B.tau.data(), B.QtA.data(), &m, &opt, &lwork, &info);
  int lwork2 = -1;
  double opt2 = 0;
  dorgqr_(&m, &k, &k, B.Q.data(), &m, B.tau.data(), &opt2, &lwork2, &info);
  lwork = std::max({1, static_cast<int>(opt), static_cast<int>(opt2)});
  B.work.resize(static_cast<std::size_t>(lwork));
  dormqr_("L", "T", &m, &n, &k, B.Q.data(), &m, B.tau.data(), B.QtA.data(), &m, B.work.data(), &lwork, &info);
  if (info != 0) return nonfinite();
  dorgqr_(&m, &k, &k, B.Q.data(), &m, B.tau.data(), B.work.data(), &lwork, &info);
  for (double v : B.Q) finite &= std::isfinite(v);
  for (double v : B.QtA) finite &= std::isfinite(v);
  if (info != 0 || !finite) return nonfinite();
  const double one = 1.0, zero = 0.0;
  B.QtQ.assign(static_cast<std::size_t>(k) * k, 0.0);
  dsyrk_("U", "T", &k, &m, &one, B.Q.data(), &m, &zero, B.QtQ.data(), &k);
  // Q R = Q_thin R[0:k, :] (R is zero below row k).
  B.QR.assign(static_cast<std::size_t>(m) * n, 0.0);
  dgemm_("N", "N", &m, &n, &k, &one, B.Q.data(), &m, B.R.data(), &m, &zero, B.QR.data(), &m);

  double normA = 0, rf = 0, rl = 0, rr = 0, ro = 0;
  for (int j = 0; j < n; ++j) {
    double ca = 0, cf = 0, cl = 0, cr = 0;
    for (int i = 0; i < m; ++i) {
      ca += std::abs(B.A[ix(i, j)]);
      cf += std::abs(B.R[ix(i, j)] - B.QtA[ix(i, j)]);  // R is zero below the diagonal
      if (i > j) cl += std::abs(B.QtA[ix(i, j)]);
      cr += std::abs(B.QR[ix(i, j)] - B.A[ix(i, j)]);
    }
    normA = std::max(normA, ca);
    rf = std::max(rf, cf);
    rl = std::max(rl, cl);
    rr = std::max(rr, cr);
  }
  // Q^T Q is symmetric: only its upper triangle was formed.
  for (int j = 0; j < k; ++j) {
    double c = 0;
    for (int i = 0; i < k; ++i) {
      const double g = i <= j ? B.QtQ[i + static_cast<std::size_t>(j) * k] : B.QtQ[j + static_cast<std::size_t>(i) * k];
      c += std::abs(g - (i == j ? 1.0 : 0.0));
    }
    ro = std::max(ro, c);
  }
  const double N = std::max(m, n);
  rep.factor = scaled(rf, N * kEps32 * normA);
  rep.leak = scaled(rl, N * kEps32 * normA);
  rep.recon = scaled(rr, N * kEps32 * normA);
  rep.orth = ro / (N * kEps32);
  return rep;
}

}  // namespace

GateReport validate_host(const GeqrfDesc& d, const float* a, const float* h, const float* tau, int threads) {
  GateReport report;
  if (d.batch <= 0 || d.m <= 0 || d.n <= 0) return report;
  report.matrices.resize(static_cast<std::size_t>(d.batch));
  if (threads <= 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  threads = static_cast<int>(std::min<std::int64_t>(threads, d.batch));
  auto worker = [&](int t) {
    Buffers B;
    for (std::int64_t b = t; b < d.batch; b += threads)
      report.matrices[static_cast<std::size_t>(b)] =
          check_one(d, a + b * d.stride, h + b * d.stride, tau + b * d.tau_stride, B);
  };
  if (threads == 1) {
    worker(0);
  } else {
    const detail::SingleThreadedBlas blas_guard(true);
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) pool.emplace_back(worker, t);
    for (auto& th : pool) th.join();
  }
  summarize(report);
  return report;
}

}  // namespace batchqr::check
