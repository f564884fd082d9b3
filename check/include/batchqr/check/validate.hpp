// batchqr::check: the accuracy gate of the QR contract, evaluated in FP64.
//
// For each matrix, with eps = 2^-23, N = max(m, n) (= n for the square matrices of the
// contract), k = min(m, n), Q = H_0 ... H_{k-1} applied in FP64 from the FP32 (H, tau),
// Q_k its first k columns (all of Q when m <= n) and R = triu(H):
//   factor  = ||R - Q^T A||_1      / (N eps ||A||_1)   gate: <= 20
//   orth    = ||Q_k^T Q_k - I||_1  / (N eps)           gate: <= 100
//   leak    = ||tril(Q^T A, -1)||_1 / (N eps ||A||_1)   diagnostic
//   recon   = ||Q R - A||_1        / (N eps ||A||_1)   diagnostic
// (Q_k instead of the full m x m Q keeps tall matrices O(m n k); for the square
// matrices of the contract the two are the same.)
// and H, tau must be finite. When ||A||_1 = 0 a zero residual scores 0, any other inf.
#pragma once

#include <cstdint>
#include <vector>

#include "batchqr/types.hpp"

namespace batchqr::check {

inline constexpr double kFactorGate = 20.0;
inline constexpr double kOrthGate = 100.0;
inline constexpr double kEps32 = 1.1920928955078125e-07;

struct MatrixReport {
  double factor = 0, orth = 0, leak = 0, recon = 0;  // scaled figures
  bool finite = true;                                 // H, tau and Q hold no NaN/Inf
  bool pass() const { return finite && factor <= kFactorGate && orth <= kOrthGate; }
};

struct GateReport {
  std::vector<MatrixReport> matrices;
  double worst_factor = 0, worst_orth = 0, worst_leak = 0, worst_recon = 0;
  std::int64_t worst_factor_index = -1;  // matrix with the largest factor residual
  std::int64_t nonfinite = 0;            // matrices with a NaN/Inf in H, tau or Q
  std::int64_t failures = 0;             // matrices that fail the gate
  bool pass() const { return failures == 0; }
};

// Folds per-matrix reports into the worst-case summary.
void summarize(GateReport& report);

// CPU reference validator (LAPACK/BLAS in FP64). `a` is the original input, `h`/`tau`
// the factors, all host memory described by `desc`.
GateReport validate_host(const GeqrfDesc& desc, const float* a, const float* h, const float* tau,
                         int threads = 0);

}  // namespace batchqr::check
