// Internal: FP64 factorizations of 32 x 32 matrices by one warp, for the Cholesky QR panel
// (geqr2_chol.cu). Lane j works on column j, held in 32 registers; loops over those
// registers are unrolled, so that their indices stay static.
#pragma once

#include <cfloat>

#ifdef __CUDACC__
#define BATCHQR_SMALL_FN __device__ __forceinline__
#else
// Host builds (tests/test_small_fp64.cpp) run these routines on threads that emulate a
// warp, and supply __shfl_sync, named_barrier, rsqrt and __frcp_rn.
#define BATCHQR_SMALL_FN inline
#endif

namespace batchqr::cuda::small {

inline constexpr int kN = 32;
inline constexpr int kSmallLd = 32;

using Col = double[kN];

BATCHQR_SMALL_FN void load_col(const double* X, int lane, Col& x) {
#pragma unroll
  for (int i = 0; i < kN; ++i) x[i] = X[i * kSmallLd + lane];
}

// 1 / x for x of magnitude in [2^-100, 2^100] (no denormals, no overflow): the FP32
// reciprocal refined by two Newton steps to FP64 accuracy, inline (IEEE division brings
// a slow-path call). NaN and infinities come out as NaN or 0.
BATCHQR_SMALL_FN double recip(double x) {
  double r = static_cast<double>(__frcp_rn(static_cast<float>(x)));
  r = r * fma(-x, r, 2.0);
  return r * fma(-x, r, 2.0);
}

#ifdef __CUDACC__
// `count` threads of the CTA meet at barrier `id`. Every thread that meets barrier 0 this
// way must give the same count (`bar.sync 0` without one faulted beside `bar.sync 0, 256`).
BATCHQR_SMALL_FN void named_barrier(int id, int count) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(count) : "memory");
}
#endif

// The factorizations below run their 32 steps as a rolled loop over registers that
// rotate: at step k a lane's array holds rows k, k + 1, ... of its column, the pivot row in
// slot 0, and each update writes slot i - 1 from slot i. Unrolled over k (static register
// indices without rotation) their code came to ~45k instructions, executed once per
// launch: the warp then waited on instruction fetch (docs/perf-notes.md v13). Slots past
// the matrix are never read for a valid slot; the reads that would serve them are
// predicated off (they would touch rows another warp is writing). Each factorization is split over
// warps that meet once per step at a named barrier: the factor on warp 0, each inverse
// carried alongside on a warp of its own.

// Cholesky G = R^T R, warp 0's part. In: c = column `lane` of G (rows <= lane are read).
// Out: R (zeros below the diagonal), row-major (kSmallLd) in shared memory, row k written
// at step k, and rsq[k] = 1 / sqrt(G_k(k, k)) for cholesky_rit; fr: this lane's sum of
// squares of column `lane` of R. Step k scales row k by rsq[k] and subtracts R(k, i) times it
// from each row i > k, R(k, i) read back from R's row k. False (the same on every lane)
// unless every pivot is positive and finite. (bar, count): the barrier shared with
// cholesky_rit, met once per step (by every thread it counts).
BATCHQR_SMALL_FN bool cholesky_r(Col& c, int lane, double* R, double* rsq, double& fr, int bar, int count) {
  bool ok = true;
  fr = 0.0;
#pragma unroll 1
  for (int k = 0; k < kN; ++k) {
    const double gkk = __shfl_sync(0xffffffffu, c[0], k);
    ok = ok && gkk > 0.0 && gkk <= DBL_MAX;
    const double r = rsqrt(gkk);
    const double rk = lane >= k ? c[0] * r : 0.0;  // R(k, lane)
    R[k * kSmallLd + lane] = rk;
    if (lane == 0) rsq[k] = r;
    fr = fma(rk, rk, fr);
    named_barrier(bar, count);
    const double* row = R + k * kSmallLd + k;  // row[i] = R(k, k + i)
#pragma unroll
    for (int i = 1; i < kN; ++i) c[i - 1] = fma(i < kN - k ? -row[i] : 0.0, rk, c[i]);
    c[kN - 1] = 0.0;
  }
  return ok;
}

// R^-T alongside cholesky_r (warp 1): the same row operations on the identity. Out: R^-T
// (= R^-1 transposed), row-major, and fi: this lane's sum of squares of column `lane` of it.
BATCHQR_SMALL_FN void cholesky_rit(int lane, const double* R, const double* rsq, double* RIT, double& fi,
                                             int bar, int count) {
  Col rit;
#pragma unroll
  for (int i = 0; i < kN; ++i) rit[i] = i == lane ? 1.0 : 0.0;
  fi = 0.0;
#pragma unroll 1
  for (int k = 0; k < kN; ++k) {
    named_barrier(bar, count);
    const double ik = rit[0] * rsq[k];  // R^-T(k, lane)
    RIT[k * kSmallLd + lane] = ik;
    fi = fma(ik, ik, fi);
    const double* row = R + k * kSmallLd + k;
#pragma unroll
    for (int i = 1; i < kN; ++i) rit[i - 1] = fma(i < kN - k ? -row[i] : 0.0, ik, rit[i]);
    rit[kN - 1] = 0.0;
  }
}

// LU without pivoting of Q - S, S = diag(s) chosen on the way as s_k = -sign(pivot) so
// that |U(k, k)| >= 1 (LAPACK's orhr_col, Householder reconstruction); warp 0's part. In:
// c = column `lane` of Q. Out: L (unit, below the diagonal) and U (on and above) packed
// into LU, row-major (kSmallLd) in shared memory; sign[k] = s_k. Row k of the packed LU is
// final at step k (U(k, j) for j >= k, and the L(k, j) of earlier steps), so every lane
// stores one entry per step; column k of L, in lane k, reaches the others through bc (2 x
// 32 doubles, alternating by step). (bar, count): the barrier shared with lu_li and lu_ui,
// met once per step.
BATCHQR_SMALL_FN void lu_signs(Col& c, int lane, double* LU, double* sign, double* bc, int bar, int count) {
#pragma unroll 1
  for (int k = 0; k < kN; ++k) {
    const double d = __shfl_sync(0xffffffffu, c[0], k);
    const double s = d >= 0.0 ? -1.0 : 1.0;
    const double u = d - s;
    const double ru = recip(u);  // |u| >= 1, and <= 2 while Q is orthonormal
    if (lane == 0) sign[k] = s;
    const double ukj = lane == k ? u : c[0];  // U(k, lane) for lane >= k, L(k, lane) below
    LU[k * kSmallLd + lane] = ukj;
    double* b = bc + (k & 1) * kN;
    if (lane == k)
#pragma unroll
      for (int i = 1; i < kN; ++i) b[i] = c[i] * ru;  // L(k + i, k)
    named_barrier(bar, count);
#pragma unroll
    for (int i = 1; i < kN; ++i) {
      const double lik = b[i];
      c[i - 1] = lane > k ? fma(-lik, ukj, c[i]) : (lane == k ? lik : c[i]);
    }
    c[kN - 1] = 0.0;
  }
}

// L^-1 alongside lu_signs (warp 1): its row operations on the identity, L^-1 row-major.
BATCHQR_SMALL_FN void lu_li(int lane, const double* bc, double* LI, int bar, int count) {
  Col li;
#pragma unroll
  for (int i = 0; i < kN; ++i) li[i] = i == lane ? 1.0 : 0.0;
#pragma unroll 1
  for (int k = 0; k < kN; ++k) {
    named_barrier(bar, count);
    const double* b = bc + (k & 1) * kN;
    const double l0 = li[0];  // row k of L^-1, final
    LI[k * kSmallLd + lane] = l0;
#pragma unroll
    for (int i = 1; i < kN; ++i) li[i - 1] = fma(-b[i], l0, li[i]);
    li[kN - 1] = 0.0;
  }
}

// U^-1 alongside lu_signs (warp 2), one step behind it: lane `lane` solves for row `lane`
// of U^-1 (x U = e_lane) by columns, column j needing only rows 0..j of U. Out: UIT = U^-T
// row-major (UIT[j][i] = U^-1(i, j)).
BATCHQR_SMALL_FN void lu_ui(int lane, const double* LU, double* UIT, int bar, int count) {
  Col acc;  // acc[m]: column j + m's running sum
#pragma unroll
  for (int i = 0; i < kN; ++i) acc[i] = i == lane ? 1.0 : 0.0;
#pragma unroll 1
  for (int j = 0; j < kN; ++j) {
    named_barrier(bar, count);
    const double* row = LU + j * kSmallLd + j;  // row[m] = U(j, j + m)
    const double x = acc[0] * recip(row[0]);  // U^-1(lane, j)
    UIT[j * kSmallLd + lane] = x;
#pragma unroll
    for (int m = 1; m < kN; ++m) acc[m - 1] = fma(m < kN - j ? -row[m] : 0.0, x, acc[m]);
    acc[kN - 1] = 0.0;
  }
}

}  // namespace batchqr::cuda::small
