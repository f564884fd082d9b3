// Internal: FP64 factorizations of 32 x 32 matrices by one warp, for the Cholesky QR panel
// (geqr2_chol.cu). Lane j works on column j, held in 32 registers; loops over those
// registers are unrolled, so that their indices stay static.
#pragma once

#include <cfloat>
#include <math.h>
#include <type_traits>

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

// The Cholesky QR panel's column equilibration: 1 / e_j, with e_j = 2^floor(log2 |a_j|) the
// power of two at or below column j's norm |a_j| = sqrt(g_jj); 1 where g_jj is not positive
// and finite. Scaling FP32 data (or its Gram matrix) by it is exact in FP64.
BATCHQR_SMALL_FN double equilibration_scale(double gjj) {
  if (!(gjj > 0.0 && gjj <= DBL_MAX)) return 1.0;
  int e = 0;
  frexp(sqrt(gjj), &e);  // |a_j| = f 2^e, f in [0.5, 1)
  return ldexp(1.0, 1 - e);
}

#ifdef __CUDACC__
// `count` threads of the CTA meet at barrier `id`. Every thread that meets barrier 0 this
// way must give the same count (`bar.sync 0` without one faulted beside `bar.sync 0, 256`).
// The warps meet it from different places (cholesky_r, cholesky_rit, idle steps), so the
// non-aligned form: `bar.sync` is `barrier.sync.aligned`, which requires one instruction
// for all (compute-sanitizer synccheck reported the divergence).
BATCHQR_SMALL_FN void named_barrier(int id, int count) {
  asm volatile("barrier.sync %0, %1;" ::"r"(id), "r"(count) : "memory");
}
#endif

// Two consecutive doubles (16-byte aligned on the device: one shared-memory access).
BATCHQR_SMALL_FN void load2(const double* p, double& a, double& b) {
#ifdef __CUDACC__
  const double2 v = *reinterpret_cast<const double2*>(p);
  a = v.x;
  b = v.y;
#else
  a = p[0];
  b = p[1];
#endif
}

// The factorizations below run their 32 steps as rolled loops over registers that
// rotate: at step k a lane's array holds rows k, k + 1, ... of its column, the pivot row in
// slot 0, and each update writes slot i - 1 from slot i. Unrolled over k (static register
// indices without rotation) their code came to ~45k instructions, executed once per
// launch: the warp then waited on instruction fetch (docs/perf-notes.md v13). The steps
// run in four phases of eight; phase p updates only the S = 32 - 8p slots that can still
// hold rows of the matrix. Slots past the matrix's last row take whatever the vectors
// they are updated with hold there (stale entries, never NaN-checked) and are never read
// into a row of the matrix: row 32 and beyond never reach slot 0. Each factorization is
// split over warps that meet once per step at a barrier: the factor on one warp, each
// inverse carried alongside on a warp of its own; the LU runs one barrier behind the
// Cholesky factorization, on warps of its own (33 barriers for both, not 64). A step's
// vectors go through double-buffered shared memory (by the parity of k), so that one
// barrier per step orders them.

// step(k, std::integral_constant<int, S>) for k = 0 .. 31, each phase a rolled loop.
template <int S, class Step>
BATCHQR_SMALL_FN void phase(int k0, Step& step) {
#pragma unroll 1
  for (int k = k0; k < k0 + 8; ++k) step(k, std::integral_constant<int, S>{});
}
template <class Step>
BATCHQR_SMALL_FN void steps(Step&& step) {
  phase<32>(0, step);
  phase<24>(8, step);
  phase<16>(16, step);
  phase<8>(24, step);
}

// x[i - 1] = x[i] - v[i] f for i = 1 .. S - 1, x[S - 1] = 0; v read in pairs (16-byte
// aligned). first() runs as soon as the new x[0] (the next step's pivot row) is formed, so
// that the next pivot's latency overlaps the rest of the update.
template <int S, class First>
BATCHQR_SMALL_FN void rotate_update(Col& x, const double* v, double f, First first) {
  double a, b;
  load2(v, a, b);
  x[0] = fma(-b, f, x[1]);
  first();
#pragma unroll
  for (int j = 1; j < S / 2; ++j) {
    load2(v + 2 * j, a, b);
    x[2 * j - 1] = fma(-a, f, x[2 * j]);
    x[2 * j] = fma(-b, f, x[2 * j + 1]);
  }
  x[S - 1] = 0.0;
}
struct NoFirst {
  BATCHQR_SMALL_FN void operator()() const {}
};

// Cholesky G = R^T R, warp 0's part. In: c = column `lane` of G (rows <= lane are read).
// Out: R (zeros below the diagonal), row-major (kSmallLd) in shared memory, row k written
// at step k; rsq[k] = 1 / sqrt(G_k(k, k)) and rowv (2 x 32 doubles, 16-byte aligned) = row k
// of R from its diagonal on, for cholesky_rit; fr: this lane's sum of squares of column
// `lane` of R. Step k scales row k by rsq[k] and subtracts R(k, i) times it from each row
// i > k. False (the same on every lane) unless every pivot is positive and finite.
// (bar, count): the barrier shared with cholesky_rit, met once per step.
BATCHQR_SMALL_FN bool cholesky_r(Col& c, int lane, double* R, double* rsq, double* rowv, double& fr, int bar,
                                 int count) {
  bool ok = true;
  fr = 0.0;
  double g = __shfl_sync(0xffffffffu, c[0], 0);
  double r = rsqrt(g);
  steps([&](int k, auto sc) {
    constexpr int S = decltype(sc)::value;
    ok = ok && g > 0.0 && g <= DBL_MAX;
    const double rk = lane >= k ? c[0] * r : 0.0;  // R(k, lane)
    R[k * kSmallLd + lane] = rk;
    double* row = rowv + (k & 1) * kN;  // row[i] = R(k, k + i)
    if (lane >= k) row[lane - k] = rk;
    if (lane == 0) rsq[k] = r;
    fr = fma(rk, rk, fr);
    named_barrier(bar, count);
    rotate_update<S>(c, row, rk, [&] {
      g = __shfl_sync(0xffffffffu, c[0], (k + 1) & 31);
      r = rsqrt(g);
    });
  });
  return ok;
}

// R^-T alongside cholesky_r (warp 1): the same row operations on the identity. Out: R^-T
// (= R^-1 transposed), row-major, and fi: this lane's sum of squares of column `lane` of it.
BATCHQR_SMALL_FN void cholesky_rit(int lane, const double* rowv, const double* rsq, double* RIT, double& fi, int bar,
                                   int count) {
  Col rit;
#pragma unroll
  for (int i = 0; i < kN; ++i) rit[i] = i == lane ? 1.0 : 0.0;
  fi = 0.0;
  steps([&](int k, auto sc) {
    constexpr int S = decltype(sc)::value;
    named_barrier(bar, count);
    const double ik = rit[0] * rsq[k];  // R^-T(k, lane)
    RIT[k * kSmallLd + lane] = ik;
    fi = fma(ik, ik, fi);
    rotate_update<S>(rit, rowv + (k & 1) * kN, ik, NoFirst{});
  });
}

// LU without pivoting of A_top - S R (LAPACK's orhr_col on Q_top = A_top R^-1, with R
// multiplied back in: Q_top - S = L U gives A_top - S R = L W with W = U R), one barrier
// behind cholesky_r, so that the two 32-step factorizations overlap instead of following
// each other. Step k needs only row k of R: the rows below k of R's columns are zero, so
// S R reaches the active matrix's row k alone, and is subtracted there at step k. The
// Schur complements of A_top - S R are those of Q_top - S times R's trailing block, so the
// pivot before the sign is d = q R(k, k), q the Q form's, and s_k = -sign(d) is that form's
// choice (|U(k, k)| = |q - s_k| >= 1); W(k, k) = d - s_k R(k, k) = U(k, k) R(k, k). Warp 2's part. In: c = column `lane` of
// A_top; R (row k written by cholesky_r before its step-k barrier) and rsq[k] = 1 / R(k, k).
// The caller meets barrier (bar, count) once before, cholesky_r's warps once after their
// steps. Out: W (on and above the diagonal) into LU, row-major (kSmallLd), row k at step k
// (lu_li writes L below it); sign[k] = s_k, rdiag[k] = 1 / W(k, k). Per step, through
// shared memory (2 x 32 doubles each, 16-byte aligned): colv = column k of the active
// matrix, rows k .. (unscaled: L(k + i, k) = colv[i] rdiag[k]), which lu_rows publishes, for
// the update and lu_li; rowv = row k of W from its diagonal on, for lu_ui (which then forms
// W^-1 = R^-1 U^-1, the M of the V pass); fv = the multipliers W(k, k + j) / W(k, k), for
// lu_rows.
BATCHQR_SMALL_FN void lu_on_cholesky(Col& c, int lane, const double* R, const double* rsq, double* LU, double* sign,
                                     double* rdiag, const double* colv, double* rowv, double* fv, int bar, int count) {
  double s, rw, rrow;  // s_k, 1 / W(k, k), R(k, lane)
  auto pivot = [&](int k, double d) {
    s = d >= 0.0 ? -1.0 : 1.0;
    const double rk = rsq[k];
    rw = recip(fma(d, rk, -s)) * rk;  // U(k, k) = d / R(k, k) - s_k: |U(k, k)| >= 1
    rrow = R[k * kSmallLd + lane];
  };
  pivot(0, __shfl_sync(0xffffffffu, c[0], 0));
  steps([&](int k, auto sc) {
    constexpr int S = decltype(sc)::value;
    if (lane == 0) {
      sign[k] = s;
      rdiag[k] = rw;
    }
    const double wkj = fma(-s, rrow, c[0]);  // W(k, lane) for lanes from k on
    const double f = wkj * rw;
    if (lane >= k) {
      LU[k * kSmallLd + lane] = wkj;
      rowv[(k & 1) * kN + lane - k] = wkj;
      fv[(k & 1) * kN + lane - k] = f;
    }
    named_barrier(bar, count);  // also cholesky_r's row k + 1 and lu_rows' column k
    // Row k + i -= L(k + i, k) W(k, lane) for lanes past k; the other lanes' slots are no
    // longer read (their columns of L are lu_li's).
    rotate_update<S>(c, colv + (k & 1) * kN, f, [&] { pivot((k + 1) & 31, __shfl_sync(0xffffffffu, c[0], (k + 1) & 31)); });
  });
}

// The same LU by rows, alongside lu_on_cholesky (warp 7): lane i holds row i of the
// active matrix (x[j] = entry (i, k + j) at step k) and publishes its entry of column k
// (colv), which would otherwise leave lane k's registers as 16 stores of one lane per step;
// it applies lu_on_cholesky's multipliers (fv) by the same fma, operands swapped, so that
// both copies of the active matrix agree bit for bit. In: x = row `lane` of A_top. The
// caller meets barrier (bar, count) once before.
BATCHQR_SMALL_FN void lu_rows(Col& x, int lane, double* colv, const double* fv, int bar, int count) {
  steps([&](int k, auto sc) {
    constexpr int S = decltype(sc)::value;
    if (lane >= k) colv[(k & 1) * kN + lane - k] = x[0];
    named_barrier(bar, count);
    rotate_update<S>(x, fv + (k & 1) * kN, x[0], NoFirst{});
  });
}

// L^-1 alongside lu_on_cholesky (warp 3): its row operations on the identity, L^-1 row-major;
// also column k of L into LU below the diagonal.
BATCHQR_SMALL_FN void lu_li(int lane, const double* colv, const double* rdiag, double* LU, double* LI, int bar,
                            int count) {
  Col li;
#pragma unroll
  for (int i = 0; i < kN; ++i) li[i] = i == lane ? 1.0 : 0.0;
  steps([&](int k, auto sc) {
    constexpr int S = decltype(sc)::value;
    named_barrier(bar, count);
    const double* col = colv + (k & 1) * kN;
    const double ru = rdiag[k];
    if (lane >= 1 && lane < kN - k) LU[(k + lane) * kSmallLd + k] = col[lane] * ru;  // L(k + lane, k)
    const double l0 = li[0];  // row k of L^-1, final
    LI[k * kSmallLd + lane] = l0;
    rotate_update<S>(li, col, l0 * ru, NoFirst{});
  });
}

// U^-1 for the upper triangular U = lu_on_cholesky's W, alongside it (warp 5): lane
// `lane` solves for row `lane` of U^-1 (x U = e_lane) by columns, column j needing only
// rows 0..j of U. Out: UIT = U^-T row-major (UIT[j][i] = U^-1(i, j)).
BATCHQR_SMALL_FN void lu_ui(int lane, const double* rowv, const double* rdiag, double* UIT, int bar, int count) {
  Col acc;  // acc[m]: column j + m's running sum
#pragma unroll
  for (int i = 0; i < kN; ++i) acc[i] = i == lane ? 1.0 : 0.0;
  steps([&](int j, auto sc) {
    constexpr int S = decltype(sc)::value;
    named_barrier(bar, count);
    const double x = acc[0] * rdiag[j];  // U^-1(lane, j)
    UIT[j * kSmallLd + lane] = x;
    rotate_update<S>(acc, rowv + (j & 1) * kN, x, NoFirst{});
  });
}

}  // namespace batchqr::cuda::small
