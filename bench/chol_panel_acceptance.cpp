// Which panels would the Cholesky QR panel accept? A CPU study (no GPU): matrices of the
// contract's distributions (the library's generator) are factored by blocked Householder QR
// in FP32 (LAPACK sgeqrf on each 32-column panel, sormqr on the trailing columns), and at
// every panel start j the trailing panel A(j:m, j:j+w) is put through geqr2_chol's checks
// (src/cuda/geqr2_chol.cu): G = A^T A in FP64 from the FP32 panel, its Cholesky factor R with
// every pivot positive, kappa_F(R) = ||R||_F ||R^-1||_F <= kCholMaxKappa, ||R||_F <= FLT_MAX,
// every diagonal entry >= 2^-100. w = 32 (the kernel) and w = 64 (a wider panel, at even
// panels), each also on the column-equilibrated panel (G scaled by powers of two to a unit-ish
// diagonal first). Reports per case the share of panels accepted, the matrices with any rejection,
// and how a rejection at panel p predicts one at p + 1 (whether a flag kept per matrix would
// send the right matrices straight to the Householder panel). Not part of the library.
//
//   chol_panel_acceptance [m n batch dist cond]...   (default: a built-in list)
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "study_cases.hpp"

extern "C" {
void sgeqrf_(const int* m, const int* n, float* a, const int* lda, float* tau, float* work, const int* lwork, int* info);
void sormqr_(const char* side, const char* trans, const int* m, const int* n, const int* k, const float* a,
             const int* lda, const float* tau, float* c, const int* ldc, float* work, const int* lwork, int* info);
void dpotrf_(const char* uplo, const int* n, double* a, const int* lda, int* info);
void dtrtri_(const char* uplo, const char* diag, const int* n, double* a, const int* lda, int* info);
}

namespace {

constexpr double kMaxKappa = 3.0e3;  // geqr2_chol.hpp's kCholMaxKappa

// geqr2_chol's acceptance of an m x w panel (column-major, ld lda).
// equilibrate: the checks on A D^-1 instead, D = diag(2^e_j) with 2^e_j the power of two
// nearest below |a_j| (G scaled to D^-1 G D^-1, exactly, before the Cholesky factorization).
bool accepts(const float* a, int lda, int m, int w, bool equilibrate, double* kappa = nullptr) {
  if (kappa) *kappa = INFINITY;
  std::vector<double> g(static_cast<std::size_t>(w) * w, 0.0);
  for (int i = 0; i < w; ++i)
    for (int j = i; j < w; ++j) {
      double s = 0;
      for (int r = 0; r < m; ++r) s += static_cast<double>(a[r + static_cast<std::size_t>(i) * lda]) * a[r + static_cast<std::size_t>(j) * lda];
      g[i * w + j] = s;  // upper triangle, row-major
    }
  if (equilibrate) {
    std::vector<double> d(w);
    for (int i = 0; i < w; ++i) {
      int e = 0;
      std::frexp(std::sqrt(g[i * w + i]), &e);
      d[i] = g[i * w + i] > 0 ? std::ldexp(1.0, -(e - 1)) : 1.0;  // 1 / 2^floor(log2 |a_i|)
    }
    for (int i = 0; i < w; ++i)
      for (int j = i; j < w; ++j) g[i * w + j] *= d[i] * d[j];
  }
  // G's upper triangle row-major is its lower one column-major: LAPACK's G = L L^T, L = R^T.
  // dpotrf fails (info > 0) at the first pivot that is not positive, as the kernel's check.
  int info = 0;
  dpotrf_("L", &w, g.data(), &w, &info);
  if (info != 0) return false;
  double fr = 0, fi = 0;
  for (int j = 0; j < w; ++j) {
    if (!(g[j + j * w] >= 0x1p-100)) return false;
    for (int i = j; i < w; ++i) fr += g[i + j * w] * g[i + j * w];
  }
  if (!(std::sqrt(fr) <= static_cast<double>(FLT_MAX))) return false;
  dtrtri_("L", "N", &w, g.data(), &w, &info);  // L^-1 = R^-T: ||R^-1||_F
  if (info != 0) return false;
  for (int j = 0; j < w; ++j)
    for (int i = j; i < w; ++i) fi += g[i + j * w] * g[i + j * w];
  if (kappa) *kappa = std::sqrt(fr * fi);
  return std::sqrt(fr * fi) <= kMaxKappa;
}

struct Tally {
  long panels32 = 0, ok32 = 0, panels64 = 0, ok64 = 0, ok32e = 0, ok64e = 0;  // e: equilibrated
  long matrices = 0, any_flag32 = 0, any_flag64 = 0;
  long after_flag = 0, after_flag_flag = 0, after_ok = 0, after_ok_flag = 0;  // w = 32, consecutive panels
  long kappa_dec[5] = {};  // rejected equilibrated 32-column panels by kappa_F: < 1e4, < 1e5, < 1e6, larger, no R
  void add(const Tally& t) {
    panels32 += t.panels32, ok32 += t.ok32, panels64 += t.panels64, ok64 += t.ok64, ok32e += t.ok32e, ok64e += t.ok64e;
    matrices += t.matrices, any_flag32 += t.any_flag32, any_flag64 += t.any_flag64;
    after_flag += t.after_flag, after_flag_flag += t.after_flag_flag, after_ok += t.after_ok,
        after_ok_flag += t.after_ok_flag;
    for (int i = 0; i < 5; ++i) kappa_dec[i] += t.kappa_dec[i];
  }
};

// One matrix (column-major m x n, ld m), factored in place.
Tally study(float* a, int m, int n, int min_rows) {
  Tally t;
  t.matrices = 1;
  constexpr int nb = 32;
  const int k = std::min(m, n);
  std::vector<float> tau(nb), work(static_cast<std::size_t>(std::max(m, n)) * nb * 2 + 64);
  const int lwork = static_cast<int>(work.size());
  int prev = -1;  // the previous 32-wide panel: 1 accepted, 0 flagged
  bool f32 = false, f64 = false;
  for (int j = 0; j < k; j += nb) {
    const int rows = m - j, w = std::min(nb, k - j);
    float* p = a + j + static_cast<std::size_t>(j) * m;
    if (w == nb && rows >= min_rows) {
      const bool ok = accepts(p, m, rows, nb, false);
      double kap = 0;
      const bool oke = accepts(p, m, rows, nb, true, &kap);
      t.ok32e += oke;
      if (!oke) ++t.kappa_dec[!(kap < INFINITY) ? 4 : kap < 1e4 ? 0 : kap < 1e5 ? 1 : kap < 1e6 ? 2 : 3];
      ++t.panels32;
      t.ok32 += ok;
      f32 |= !ok;
      if (prev == 0) {
        ++t.after_flag;
        t.after_flag_flag += !ok;
      } else if (prev == 1) {
        ++t.after_ok;
        t.after_ok_flag += !ok;
      }
      prev = ok;
      if (j % 64 == 0 && k - j >= 64 && rows >= 64) {
        const bool ok64 = accepts(p, m, rows, 64, false);
        t.ok64e += accepts(p, m, rows, 64, true);
        ++t.panels64;
        t.ok64 += ok64;
        f64 |= !ok64;
      }
    } else {
      prev = -1;
    }
    int info = 0;
    sgeqrf_(&rows, &w, p, &m, tau.data(), work.data(), &lwork, &info);
    const int right = n - j - w;
    if (right > 0)
      sormqr_("L", "T", &rows, &right, &w, p, &m, tau.data(), p + static_cast<std::size_t>(w) * m, &m, work.data(),
              &lwork, &info);
  }
  t.any_flag32 = f32;
  t.any_flag64 = f64;
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  using batchqr::study::Case;
  std::vector<Case> cases;
  if (!batchqr::study::parse_cases(std::vector<std::string>(argv + 1, argv + argc), &cases)) {
    std::fprintf(stderr, "usage: chol_panel_acceptance [m n batch dist cond]...\n");
    return 2;
  }
  if (cases.empty()) {
    for (const char* d : {"dense", "rankdef", "nearrank", "clustered", "band", "rowscale", "nearcollinear"}) {
      cases.push_back({512, 512, 16, d, 2});
      cases.push_back({1024, 1024, 8, d, 2});
    }
    cases.push_back({512, 512, 64, "mixed", 2});
    cases.push_back({1024, 1024, 32, "mixed", 2});
    cases.push_back({2048, 2048, 4, "mixed", 1});
    cases.push_back({512, 512, 16, "dense", 4});
    cases.push_back({1024, 1024, 4, "nearrank", 0});
    cases.push_back({1024, 1024, 4, "rankdef", 0});
  }
  // The panels the library would give the Cholesky QR panel: more than 192 rows (v37's rule;
  // the few-matrix rule from 193 rows, the one-CTA form from 257).
  const int min_rows = 193;
  std::printf("geqr2_chol's checks on the trailing panels of blocked Householder QR (FP32), panels of >= %d rows\n",
              min_rows);
  std::printf("%-28s %6s %7s %7s %6s %7s %7s %10s %10s %13s %13s\n", "case", "p32", "ok32", "ok32 eq", "p64", "ok64",
              "ok64 eq", "mat flag32", "mat flag64", "P(f|f prev)", "P(f|ok prev)");
  std::printf("  (then: the rejected equilibrated 32-column panels by kappa_F(R'): < 1e4, < 1e5, < 1e6, larger, no R)\n");
  for (const Case& c : cases) {
    std::vector<float> a;
    if (!batchqr::study::generate_case(c, 20261204, &a)) {
      std::fprintf(stderr, "bad case %dx%dx%d %s\n", c.m, c.n, c.batch, c.dist.c_str());
      return 2;
    }
    const int nt = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    std::vector<Tally> part(nt);
    std::vector<std::thread> pool;
    for (int w = 0; w < nt; ++w)
      pool.emplace_back([&, w] {
        for (int b = w; b < c.batch; b += nt)
          part[w].add(study(a.data() + static_cast<std::size_t>(b) * c.m * c.n, c.m, c.n, min_rows));
      });
    for (auto& th : pool) th.join();
    Tally t;
    for (const Tally& x : part) t.add(x);
    char label[64];
    std::snprintf(label, sizeof label, "%dx%dx%d %s c%g", c.batch, c.m, c.n, c.dist.c_str(), c.cond);
    auto pct = [](long a, long b) { return b ? 100.0 * static_cast<double>(a) / static_cast<double>(b) : 0.0; };
    std::printf("%-28s %6ld %6.1f%% %6.1f%% %6ld %6.1f%% %6.1f%% %6ld/%-3ld %6ld/%-3ld %6.1f%% (%ld) %6.1f%% (%ld)\n", label,
                t.panels32, pct(t.ok32, t.panels32), pct(t.ok32e, t.panels32), t.panels64, pct(t.ok64, t.panels64),
                pct(t.ok64e, t.panels64), t.any_flag32, t.matrices, t.any_flag64,
                t.matrices, pct(t.after_flag_flag, t.after_flag), t.after_flag, pct(t.after_ok_flag, t.after_ok),
                t.after_ok);
    if (t.panels32 > t.ok32e)
      std::printf("  rejected (eq) by kappa: %ld %ld %ld %ld %ld\n", t.kappa_dec[0], t.kappa_dec[1], t.kappa_dec[2],
                  t.kappa_dec[3], t.kappa_dec[4]);
    std::fflush(stdout);
  }
  return 0;
}
