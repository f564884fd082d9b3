// Which operand splits keep blocked Householder QR inside the contract's gate? A CPU study
// (no GPU): matrices of the contract's distributions (the library's generator, a seed of
// their own, --seed)
// are factored by right-looking blocked Householder QR in FP32 (LAPACK sgeqr2 on each panel
// of nb columns, slarft for T), and every trailing update C := C - V (T^T (V^T C)) has its two
// big products, W = V^T C and C -= V W2, done in an emulated tensor-core arithmetic; W2 = T^T W
// stays in FP32 (the library's is 3xTF32). Each result goes through the library's FP64 gate
// (batchqr::check::validate_host). The question behind it (docs/perf-notes.md v41): could
// the trailing updates run on FP16 tensor cores (twice TF32's rate on the H200) split three
// ways as 3xTF32 is, and what scaling would that need?
//
// Arithmetics (operands rounded to the format, big part b = rnd(x), small part s = rnd(x - b)):
//   fp32       SGEMM (no split): the reference
//   tf32x1     one product of TF32-rounded operands (plain TF32)
//   tf32x3     b b + b s + s b, TF32 parts (the library's 3xTF32; TF32 has FP32's exponent)
//   bf16x3     as tf32x3 with BF16 parts (8 bits of mantissa)
//   fp16x3     as tf32x3 with FP16 parts (11 bits, exponent -14..15), by scaling:
//     /none    the values as they are (overflow past 65504, subnormals below 2^-14)
//     /matrix  each operand of each product scaled by one power of two (its largest entry to
//              [2^14, 2^15)), undone exactly on the result
//     /column  V scaled by 2^14 (|V| <= 1), C and W2 by a power of two per column of C (the
//              column's largest entry to [2^14, 2^15)); as a kernel holding the column would
//     /chunk   as larfb_stripe64's FP16 form (wip/stripe64-fp16): W = V^T C summed over 32-row
//              chunks, each chunk's C scaled per column by that chunk's largest entry and its
//              product added to W in FP32 (round to nearest); C -= V W2 as /column
// Accumulation: "tc" emulates the tensor cores' FP32 accumulator (Fasi et al. 2021 for A100;
// assumed here for the H200): products exact, summed in FP64 per k-chunk (8 for TF32, 16 for
// FP16/BF16) with the accumulator, then truncated to FP32 (round toward zero); each of the
// three products of a chunk added in turn, the small ones first. "rn" sums the stacked
// products in one SGEMM (FP32, round to nearest). The product C -= V W2 starts from a zero
// accumulator and is subtracted from C in FP32.
// Reports per case and arithmetic the worst and median scaled factor residual and the worst
// orthogonality over the batch (gate: 20 and 100), and how many matrices fail or go non-finite.
// Not part of the library.
//
//   split_precision_study [--nb NB] [--acc tc|rn|both] [--only A[,A...]] [--seed S] [m n batch dist cond]...
//                         (default: a built-in list of the suite's cases at smaller batches)
// --only: these arithmetics (names as printed) and no others. Matrices are dealt out over
// the host's threads, each calling BLAS: run with OPENBLAS_NUM_THREADS=1.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "batchqr/check/validate.hpp"
#include "study_cases.hpp"

extern "C" {
void sgeqr2_(const int* m, const int* n, float* a, const int* lda, float* tau, float* work, int* info);
void slarft_(const char* direct, const char* storev, const int* n, const int* k, const float* v, const int* ldv,
             const float* tau, float* t, const int* ldt, std::size_t, std::size_t);
void sgemm_(const char* ta, const char* tb, const int* m, const int* n, const int* k, const float* alpha,
            const float* a, const int* lda, const float* b, const int* ldb, const float* beta, float* c,
            const int* ldc, std::size_t, std::size_t);
}

namespace {

enum class Format { fp32, tf32, bf16, fp16 };
enum class Scaling { none, matrix, column, chunk };

struct Arith {
  const char* name;
  Format fmt;
  int terms;  // 1: b b; 3: b b + b s + s b
  Scaling scaling;
};

const Arith kAriths[] = {
    {"fp32", Format::fp32, 1, Scaling::none},           {"tf32x1", Format::tf32, 1, Scaling::none},
    {"tf32x3", Format::tf32, 3, Scaling::none},         {"bf16x3", Format::bf16, 3, Scaling::none},
    {"fp16x3/none", Format::fp16, 3, Scaling::none},    {"fp16x3/matrix", Format::fp16, 3, Scaling::matrix},
    {"fp16x3/column", Format::fp16, 3, Scaling::column},       {"fp16x3/chunk", Format::fp16, 3, Scaling::chunk},
};

std::uint32_t bits(float x) {
  std::uint32_t u;
  std::memcpy(&u, &x, 4);
  return u;
}
float from_bits(std::uint32_t u) {
  float x;
  std::memcpy(&x, &u, 4);
  return x;
}

// x rounded to the format: TF32 to nearest, ties away (cvt.rna.tf32.f32); BF16 and FP16 to
// nearest even (cvt.rn), FP16 with its subnormals and overflow to inf.
float round_to(Format f, float x) {
  switch (f) {
    case Format::fp32:
      return x;
    case Format::tf32:
      return std::isfinite(x) ? from_bits((bits(x) + 0x1000u) & 0xffffe000u) : x;
    case Format::bf16: {
      if (!std::isfinite(x)) return x;
      const std::uint32_t u = bits(x);
      return from_bits((u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u);
    }
    case Format::fp16:
      return static_cast<float>(static_cast<_Float16>(x));
  }
  return x;
}

int chunk_of(Format f) { return f == Format::tf32 ? 8 : 16; }

// The FP32 value of the double d rounded toward zero.
float rz(double d) {
  float f = static_cast<float>(d);
  if (std::fabs(static_cast<double>(f)) > std::fabs(d)) f = std::nextafter(f, 0.0f);
  return f;
}

// The power of two that takes max |x| to [2^14, 2^15) (1 for zero or non-finite maxima), at
// most 2^126 (as the kernel's f16_scale, so that its inverse is a float).
float fp16_scale(float maxabs) {
  if (!(maxabs > 0) || !std::isfinite(maxabs)) return 1.0f;
  int e = 0;
  std::frexp(maxabs, &e);  // maxabs in [2^(e-1), 2^e)
  return std::ldexp(1.0f, std::min(15 - e, 126));
}

// A split operand: big and small parts of x * scale, column-major rows x cols (ld rows).
struct Split {
  std::vector<float> big, small;
};

// x (rows x cols, ld) times col_scale[j] (or 1) split into the format's parts.
Split split(const Arith& ar, const float* x, int ld, int rows, int cols, const std::vector<float>& col_scale) {
  Split s;
  s.big.resize(static_cast<std::size_t>(rows) * cols);
  s.small.assign(static_cast<std::size_t>(rows) * cols, 0.0f);
  for (int j = 0; j < cols; ++j) {
    const float sc = col_scale.empty() ? 1.0f : col_scale[j];
    for (int i = 0; i < rows; ++i) {
      const float v = x[i + static_cast<std::size_t>(j) * ld] * sc;
      const float b = round_to(ar.fmt, v);
      s.big[i + static_cast<std::size_t>(j) * rows] = b;
      if (ar.terms == 3) s.small[i + static_cast<std::size_t>(j) * rows] = round_to(ar.fmt, v - b);
    }
  }
  return s;
}

// P (p x q) := A^T B for split A (k x p) and B (k x q), both column-major with ld k: the
// stacked products summed as the accumulation mode says.
void split_product(const Arith& ar, bool tc, const Split& a, const Split& b, int k, int p, int q, float* out) {
  if (!tc) {  // one SGEMM over the stacked K: [Ab As Ab]^T [Bb; Bb; Bs]
    const int kk = ar.terms * k;
    // x's parts stacked along K (ld kk): the given parts in turn, as many as the terms.
    auto stack = [&](int cols, const std::vector<float>* const (&parts)[3]) {
      std::vector<float> out(static_cast<std::size_t>(kk) * cols);
      for (int j = 0; j < cols; ++j)
        for (int t = 0; t < ar.terms; ++t)
          for (int i = 0; i < k; ++i)
            out[t * k + i + static_cast<std::size_t>(j) * kk] = (*parts[t])[i + static_cast<std::size_t>(j) * k];
      return out;
    };
    const std::vector<float>* const ap[3] = {&a.big, &a.small, &a.big};
    const std::vector<float>* const bp[3] = {&b.big, &b.big, &b.small};
    const std::vector<float> as = stack(p, ap), bs = stack(q, bp);
    const float one = 1.0f, zero = 0.0f;
    sgemm_("T", "N", &p, &q, &kk, &one, as.data(), &kk, bs.data(), &kk, &zero, out, &p, 1, 1);
    return;
  }
  const int ch = chunk_of(ar.fmt);
  for (int j = 0; j < q; ++j) {
    const float* bb = b.big.data() + static_cast<std::size_t>(j) * k;
    const float* bsm = b.small.data() + static_cast<std::size_t>(j) * k;
    for (int i = 0; i < p; ++i) {
      const float* ab = a.big.data() + static_cast<std::size_t>(i) * k;
      const float* asm_ = a.small.data() + static_cast<std::size_t>(i) * k;
      float acc = 0.0f;
      for (int c0 = 0; c0 < k; c0 += ch) {
        const int c1 = std::min(k, c0 + ch);
        if (ar.terms == 3) {
          double s1 = acc, s2 = 0;
          for (int r = c0; r < c1; ++r) s1 += static_cast<double>(asm_[r]) * bb[r];
          acc = rz(s1);
          s2 = acc;
          for (int r = c0; r < c1; ++r) s2 += static_cast<double>(ab[r]) * bsm[r];
          acc = rz(s2);
        }
        double s = acc;
        for (int r = c0; r < c1; ++r) s += static_cast<double>(ab[r]) * bb[r];
        acc = rz(s);
      }
      out[i + static_cast<std::size_t>(j) * p] = acc;
    }
  }
}

// Columns' largest magnitudes of x (rows x cols, ld).
std::vector<float> col_max(const float* x, int ld, int rows, int cols) {
  std::vector<float> m(cols, 0.0f);
  for (int j = 0; j < cols; ++j)
    for (int i = 0; i < rows; ++i) m[j] = std::max(m[j], std::fabs(x[i + static_cast<std::size_t>(j) * ld]));
  return m;
}

// The per-column scales of an operand under the arithmetic's scaling (empty: none). fixed > 0:
// every column by that.
std::vector<float> scales(const Arith& ar, const float* x, int ld, int rows, int cols, float fixed) {
  if (ar.fmt != Format::fp16 || ar.scaling == Scaling::none) return {};
  if (fixed > 0) return std::vector<float>(cols, fixed);
  std::vector<float> m = col_max(x, ld, rows, cols);
  if (ar.scaling == Scaling::matrix) {
    const float all = *std::max_element(m.begin(), m.end());
    return std::vector<float>(cols, fp16_scale(all));
  }
  for (float& v : m) v = fp16_scale(v);
  return m;
}

// C (rows x nc, ld) := C - V T^T V^T C for the jb reflectors of V (rows x jb, ld, unit lower
// trapezoidal, explicit) and T (jb x jb upper, ld jb).
void trailing_update(const Arith& ar, bool tc, const float* v, int ldv, const float* t, float* c, int ldc, int rows,
                     int jb, int nc) {
  const float one = 1.0f, zero = 0.0f, minus_one = -1.0f;
  std::vector<float> w(static_cast<std::size_t>(jb) * nc), w2(static_cast<std::size_t>(jb) * nc);
  if (ar.fmt == Format::fp32) {
    sgemm_("T", "N", &jb, &nc, &rows, &one, v, &ldv, c, &ldc, &zero, w.data(), &jb, 1, 1);
    sgemm_("T", "N", &jb, &nc, &jb, &one, t, &jb, w.data(), &jb, &zero, w2.data(), &jb, 1, 1);
    sgemm_("N", "N", &rows, &nc, &jb, &minus_one, v, &ldv, w2.data(), &jb, &one, c, &ldc, 1, 1);
    return;
  }
  const bool fp16 = ar.fmt == Format::fp16;
  const bool by_col = ar.scaling == Scaling::column || ar.scaling == Scaling::chunk;
  if (fp16 && ar.scaling == Scaling::chunk) {
    // W = sum over 32-row chunks of V_q^T C_q, each with its own column scales.
    std::fill(w.begin(), w.end(), 0.0f);
    std::vector<float> wq(w.size());
    for (int r0 = 0; r0 < rows; r0 += 32) {
      const int rq = std::min(32, rows - r0);
      const std::vector<float> svq(jb, 0x1p14f);
      std::vector<float> scq = col_max(c + r0, ldc, rq, nc);
      for (float& x : scq) x = fp16_scale(x);
      const Split vq = split(ar, v + r0, ldv, rq, jb, svq), cq = split(ar, c + r0, ldc, rq, nc, scq);
      split_product(ar, tc, vq, cq, rq, jb, nc, wq.data());
      for (int j = 0; j < nc; ++j)
        for (int k = 0; k < jb; ++k) {
          const std::size_t at = k + static_cast<std::size_t>(j) * jb;
          w[at] = std::fma(wq[at], (1.0f / 0x1p14f) / scq[j], w[at]);
        }
    }
  } else {
  // W = V^T C: both operands K-major over the rows.
  const std::vector<float> sv = scales(ar, v, ldv, rows, jb, by_col ? 0x1p14f : 0.0f);
  const std::vector<float> sc = scales(ar, c, ldc, rows, nc, 0.0f);
  const Split vs = split(ar, v, ldv, rows, jb, sv), cs = split(ar, c, ldc, rows, nc, sc);
  split_product(ar, tc, vs, cs, rows, jb, nc, w.data());
  if (fp16 && ar.scaling != Scaling::none)  // undo both scales (powers of two: exact)
    for (int j = 0; j < nc; ++j)
      for (int k = 0; k < jb; ++k) w[k + static_cast<std::size_t>(j) * jb] /= sv[k] * sc[j];
  }
  sgemm_("T", "N", &jb, &nc, &jb, &one, t, &jb, w.data(), &jb, &zero, w2.data(), &jb, 1, 1);
  // P = V W2 = (V^T)^T W2: V^T (jb x rows) and W2 (jb x nc), K-major over the reflectors.
  std::vector<float> vt(static_cast<std::size_t>(jb) * rows);
  for (int k = 0; k < jb; ++k)
    for (int r = 0; r < rows; ++r) vt[k + static_cast<std::size_t>(r) * jb] = v[r + static_cast<std::size_t>(k) * ldv];
  const std::vector<float> svt = scales(ar, vt.data(), jb, jb, rows, by_col ? 0x1p14f : 0.0f);
  const std::vector<float> sw = scales(ar, w2.data(), jb, jb, nc, 0.0f);
  const Split vts = split(ar, vt.data(), jb, jb, rows, svt), w2s = split(ar, w2.data(), jb, jb, nc, sw);
  std::vector<float> p(static_cast<std::size_t>(rows) * nc);
  split_product(ar, tc, vts, w2s, jb, rows, nc, p.data());
  for (int j = 0; j < nc; ++j)
    for (int r = 0; r < rows; ++r) {
      float x = p[r + static_cast<std::size_t>(j) * rows];
      if (fp16 && ar.scaling != Scaling::none) x /= svt[r] * sw[j];
      c[r + static_cast<std::size_t>(j) * ldc] -= x;
    }
}

// Blocked Householder QR of the column-major m x n matrix a (ld m) in place, tau (min(m, n)).
void blocked_qr(const Arith& ar, bool tc, int nb, float* a, int m, int n, float* tau) {
  const int k = std::min(m, n);
  std::vector<float> work(static_cast<std::size_t>(nb) + 1), v(static_cast<std::size_t>(m) * nb),
      t(static_cast<std::size_t>(nb) * nb);
  for (int j = 0; j < k; j += nb) {
    const int rows = m - j, jb = std::min(nb, k - j), right = n - j - jb;
    float* p = a + j + static_cast<std::size_t>(j) * m;
    int info = 0;
    sgeqr2_(&rows, &jb, p, &m, tau + j, work.data(), &info);
    if (right <= 0) continue;
    // V explicit (unit diagonal, zeros above) and T.
    for (int c = 0; c < jb; ++c)
      for (int r = 0; r < rows; ++r)
        v[r + static_cast<std::size_t>(c) * rows] =
            r < c ? 0.0f : r == c ? 1.0f : p[r + static_cast<std::size_t>(c) * m];
    std::fill(t.begin(), t.end(), 0.0f);
    slarft_("F", "C", &rows, &jb, v.data(), &rows, tau + j, t.data(), &jb, 1, 1);
    trailing_update(ar, tc, v.data(), rows, t.data(), p + static_cast<std::size_t>(jb) * m, m, rows, jb, right);
  }
}

struct Summary {
  double worst_factor = 0, median_factor = 0, worst_orth = 0;
  long failures = 0, nonfinite = 0;
};

Summary run(const Arith& ar, bool tc, int nb, const std::vector<float>& a0, int m, int n, int batch) {
  std::vector<float> h(a0), tau(static_cast<std::size_t>(std::min(m, n)) * batch);
  const std::size_t per = static_cast<std::size_t>(m) * n;
  const int nt = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::vector<std::thread> pool;
  for (int w = 0; w < nt; ++w)
    pool.emplace_back([&, w] {
      for (int b = w; b < batch; b += nt)
        blocked_qr(ar, tc, nb, h.data() + b * per, m, n, tau.data() + static_cast<std::size_t>(b) * std::min(m, n));
    });
  for (auto& th : pool) th.join();
  const auto desc = batchqr::make_geqrf_desc(m, n, batch, batchqr::Layout::col_major);
  batchqr::check::GateReport g = batchqr::check::validate_host(desc, a0.data(), h.data(), tau.data());
  Summary s;
  std::vector<double> f;
  for (const auto& r : g.matrices) f.push_back(r.factor);
  std::sort(f.begin(), f.end());
  s.worst_factor = g.worst_factor;
  s.median_factor = f.empty() ? 0 : f[f.size() / 2];
  s.worst_orth = g.worst_orth;
  s.failures = g.failures;
  s.nonfinite = g.nonfinite;
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  using batchqr::study::Case;
  int nb = 32;
  std::uint64_t seed = 20261205;
  std::string acc = "both", only;
  std::vector<std::string> rest;
  for (int i = 1; i < argc; ++i) {
    const std::string s = argv[i];
    if (s == "--nb" && i + 1 < argc) nb = std::atoi(argv[++i]);
    else if (s == "--acc" && i + 1 < argc) acc = argv[++i];
    else if (s == "--seed" && i + 1 < argc) seed = std::strtoull(argv[++i], nullptr, 10);
    else if (s == "--only" && i + 1 < argc) only = "," + std::string(argv[++i]) + ",";
    else rest.push_back(s);
  }
  std::vector<Case> cases;
  if (!batchqr::study::parse_cases(rest, &cases) || nb < 1 || (acc != "tc" && acc != "rn" && acc != "both")) {
    std::fprintf(stderr,
                 "usage: split_precision_study [--nb NB] [--acc tc|rn|both] [--only A[,A...]] [--seed S] "
                 "[m n batch dist cond]...\n");
    return 2;
  }
  if (cases.empty()) {
    for (const char* d : {"dense", "upper", "diagonal", "rankdef", "nearrank", "clustered", "band", "nearcollinear",
                          "rowscale"})
      cases.push_back({512, 512, 8, d, 2});
    for (const char* d : {"rankdef", "clustered", "rowscale", "nearcollinear"}) cases.push_back({512, 512, 8, d, 0});
    cases.push_back({512, 512, 32, "mixed", 2});
    cases.push_back({1024, 1024, 4, "mixed", 2});
    cases.push_back({1024, 1024, 4, "nearrank", 0});
    cases.push_back({512, 512, 8, "dense", 6});
  }
  std::printf("blocked Householder QR, panels of %d columns (sgeqr2), trailing products in the arithmetic below;\n"
              "scaled factor residual worst / median, orthogonality worst (gate 20 / 100), seed %llu\n",
              nb, static_cast<unsigned long long>(seed));
  std::printf("%-30s %-14s %-3s %10s %10s %9s %5s %5s\n", "case", "arithmetic", "acc", "factor", "median", "orth",
              "fail", "nonfin");
  for (const Case& c : cases) {
    std::vector<float> a;
    if (!batchqr::study::generate_case(c, seed, &a)) {
      std::fprintf(stderr, "bad case %dx%dx%d %s\n", c.m, c.n, c.batch, c.dist.c_str());
      return 2;
    }
    char label[64];
    std::snprintf(label, sizeof label, "%dx%dx%d %s c%g", c.batch, c.m, c.n, c.dist.c_str(), c.cond);
    for (const Arith& ar : kAriths)
      for (int mode = 0; mode < 2; ++mode) {
        const bool tc = mode == 0;
        if (ar.fmt == Format::fp32 && tc) continue;  // SGEMM only
        if ((tc && acc == "rn") || (!tc && acc == "tc")) continue;
        if (!only.empty() && only.find("," + std::string(ar.name) + ",") == std::string::npos) continue;
        const Summary s = run(ar, tc, nb, a, c.m, c.n, c.batch);
        std::printf("%-30s %-14s %-3s %10.4g %10.4g %9.4g %5ld %5ld\n", label, ar.name, tc ? "tc" : "rn",
                    s.worst_factor, s.median_factor, s.worst_orth, s.failures, s.nonfinite);
        std::fflush(stdout);
      }
  }
  return 0;
}
