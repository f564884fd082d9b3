// The Cholesky QR panel: a panel of `rows` x 32 (rows > one CTA's share) factored by one
// thread-block cluster per matrix, CTA q holding rows q * RC .. q * RC + RC - 1 in FP64 in
// shared memory. With A the panel:
//
//   1. G = A^T A: each CTA's rows on the FP64 tensor cores (mma m8n8k4), its warps summed
//      in a fixed tree; the CTAs' sums added through distributed shared memory in rank
//      order, so that every CTA holds the same bits of G (the only cluster barrier).
//   2. In every CTA (the same arithmetic everywhere, so the same decision): G scaled to
//      E^-1 G E^-1 (E: powers of two near the columns' norms, so the steps below run on
//      A E^-1, exactly; the primes of the code's comments), G = R^T R
//      (Cholesky; R^-1 alongside on a second warp) and, one step behind it, the
//      Householder reconstruction (LAPACK orhr_col) of Q_top = A(0:32, :) R^-1: Q_top - S
//      = L U without pivoting, S = diag(+-1) chosen so that |U(k, k)| >= 1, factored as
//      A(0:32, :) - S R = L W with W = U R (L^-1 and W^-1 alongside on two more warps).
//      The reflectors are V = [L; A(32:, :) M] with M = R^-1 U^-1 = W^-1, T = -U S L^-T
//      with U = W R^-1 (larft's T of V, on the tensor cores), tau = diag(T), and the R of
//      geqr2 is S R.
//      The matrix is left to the Householder panel (flagged, nothing written) unless
//      every pivot is positive, kappa_F(R E^-1) <= kCholMaxKappa, S R is normal in FP32 and
//      every result is finite.
//   3. Every CTA forms its rows of V as A M (FP64 tensor cores) and
//      writes them, in place and as V^T; rank 0 also writes the top 32 rows (L below the
//      diagonal, S R on and above), tau and T.
//
// The one-CTA form (a panel of at most kCholMaxRowsPerCta rows, no cluster) keeps the panel
// in FP32 (its entries converted as the products read them) and reuses its small matrices'
// storage as their lives end, so that two CTAs share an SM (~106 KB each at 512 rows): at
// large batches the panel is a throughput problem, and the serial factorizations use three
// of the eight warps.
//
// In exact arithmetic this is the Householder QR of the panel (the reflectors are unique
// up to the signs S). In FP64 the Cholesky QR of a panel with kappa <= 3e3 is orthogonal to
// ~1e-9; the outputs are rounded to FP32 once.
#include <cooperative_groups.h>

#include <cfloat>
#include <cstdint>

#include "cuda/alignment.hpp"
#include "cuda/async_copy.cuh"
#include "cuda/cluster_launch.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/geqr2_chol.hpp"
#include "cuda/geqr2_reg.cuh"
#include "cuda/matrix_view.cuh"
#include "cuda/small_fp64.cuh"
#include "cuda/warp_reduce.cuh"

namespace batchqr::cuda {
namespace {

namespace cg = cooperative_groups;
using small::Col;
using small::kSmallLd;

// Row stride of the panel in shared memory, in doubles: 36 = 4 (mod 16) keeps the mma
// fragment loads (4 rows x 8 columns, or 8 rows x 4 columns, per half-warp) conflict-free.
constexpr int kLdA = 36;
constexpr int kWarps = kCholThreads / 32;
constexpr int kTiles = 10;  // 8 x 8 tiles of G on and above the diagonal
constexpr int kSmallDoubles = 32 * kSmallLd;

// D += A B on the FP64 tensor cores, m8n8k4: a = A(lane / 4, lane % 4), b = B(lane % 4,
// lane / 4), d = D(lane / 4, 2 (lane % 4) + {0, 1}).
__device__ __forceinline__ void dmma(double (&d)[2], double a, double b) {
  asm volatile("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0, %1}, {%2}, {%3}, {%0, %1};"
               : "+d"(d[0]), "+d"(d[1])
               : "d"(a), "d"(b));
}

// The 32 x 32 matrices are row-major, kSmallLd apart.
struct CholSmem {
  double* a;     // [RC][kLdA]: this CTA's rows, FP64 (cluster form)
  float* af;     // [RC][32]: the panel, FP32, columns swizzled by chol_swizzle (one-CTA form)
  double* top;   // the panel's first 32 rows (every CTA loads them), skewed: top_at
  double* gp;    // this CTA's part of G (read by the other CTAs until they arrive)
  double* r;     // G, then R
  double* rit;   // R^-T
  double* q;     // L and W packed
  double* li;    // L^-1
  double* u;     // U = W R^-1
  double* t;     // T = -U S L^-T
  double* uit;   // W^-T = M^T (in top's place, once the LU has read A_top)
  double* red;   // [4][kTiles][2][32]: the warps' tree sum of G (in li, u and t's place)
  double* vec;   // [2][32]: a step's row of R (cholesky_r, small_fp64.cuh)
  double* urow;  // [2][32]: a step's row of W (lu_on_cholesky)
  double* lcol;  // [2][32]: a step's column of the LU's active matrix (lu_rows)
  double* fv;    // [2][32]: a step's multipliers W(k, j) / W(k, k) (lu_on_cholesky)
  double* sign;  // [32]: S
  double* rsq;   // [32]: cholesky_r's 1 / sqrt(pivot) per step
  double* rdiag; // [32]: 1 / W(k, k), then [32] 1 / e_j (escale(): no pointer of its own,
                 // which would be one more register live through the factorizations)
  double* norms; // [3]: ||R'||_F^2, ||R'^-1||_F^2, ||A||_F^2
  // The columns' equilibration, 1 / e_j (small::equilibration_scale).
  __device__ __forceinline__ double* escale() const { return rdiag + 32; }
  int* ok;
};

constexpr int kSmallMatrices = 8;
constexpr int kTailDoubles = 4 * 64 + 4 * 32 + 3;  // vec, urow, lcol, fv, sign, rsq, rdiag, escale, norms (then the int ok)
static_assert(4 * kTiles * 64 <= 3 * kSmallDoubles, "red fits in three small matrices (li, u and t; one CTA: rit, q and li)");

// The step vectors, S, the per-step scalars, the norms and the flag, from x on (kTailDoubles
// doubles, then the int): the same in both forms.
__device__ __forceinline__ void carve_tail(CholSmem& s, double* x) {
  s.vec = x;
  s.urow = s.vec + 64;
  s.lcol = s.urow + 64;
  s.fv = s.lcol + 64;
  s.sign = s.fv + 64;
  s.rsq = s.sign + 32;
  s.rdiag = s.rsq + 32;
  s.norms = s.rdiag + 64;  // after escale()
  s.ok = reinterpret_cast<int*>(s.norms + 3);
}

__device__ __forceinline__ CholSmem carve(unsigned char* raw, int rc) {
  CholSmem s;
  s.af = nullptr;
  s.a = reinterpret_cast<double*>(raw);
  double* x = s.a + rc * kLdA;
  for (double** m : {&s.top, &s.gp, &s.r, &s.rit, &s.q, &s.li, &s.u, &s.t}) {
    *m = x;
    x += kSmallDoubles;
  }
  s.uit = s.top;
  s.red = s.li;
  carve_tail(s, x);  // 16-byte aligned: the small matrices are 8 KB each, the rows kLdA = 36 doubles
  return s;
}

// One-CTA form: the five 32 x 32 slots. R^-T's, the LU's and L^-1's (contiguous) hold the
// warps' tree sum of G first; U replaces R^-T and T replaces L^-1 once the products that
// read them are formed.
constexpr int kOneCtaSmall = 5;

// One-CTA form: column c of panel row r lies at r * 32 + (c ^ chol_swizzle(r)). Both
// fragment reads are then free of bank conflicts: G's (rows 4 k + 0..3, columns 8 b + 0..7)
// and the V pass's (rows 8 b + 0..7, columns 4 k + 0..3). Multiples of 4: float4 groups
// stay whole.
__host__ __device__ constexpr int chol_swizzle(int r) { return ((r & 3) << 3) ^ (((r >> 2) & 1) << 2); }

// Entry (r, c) of the cluster form's top rows: skewed, so that both the lanes that read a
// column each and those that read a row each (lu_on_cholesky, lu_rows) meet 32 banks.
__device__ __forceinline__ int top_at(int r, int c) { return r * kSmallLd + ((c + r) & 31); }

// Whether the panel's rows move in kBytes groups (rows_aligned; false for a column-major panel).
template <int kBytes, Layout L>
__device__ __forceinline__ bool rows_by(const MatrixView<L>& A, std::int64_t ld) {
  return L == Layout::row_major && rows_aligned<kBytes>(&A(0, 0), ld);
}

__device__ __forceinline__ CholSmem carve_one_cta(unsigned char* raw, int rc) {
  CholSmem s;
  s.a = nullptr;
  s.af = reinterpret_cast<float*>(raw);
  double* x = reinterpret_cast<double*>(s.af + rc * 32);  // rc is a multiple of 32: 16-byte aligned
  s.top = s.gp = nullptr;
  s.r = x;
  s.rit = x + kSmallDoubles;
  s.q = x + 2 * kSmallDoubles;
  s.li = x + 3 * kSmallDoubles;
  s.uit = x + 4 * kSmallDoubles;
  s.u = s.rit;
  s.t = s.li;
  s.red = s.rit;
  carve_tail(s, x + kOneCtaSmall * kSmallDoubles);
  return s;
}

// Tile h (0, 1) of the two 8 x 8 tiles of Z = X Y (32 x 32, FP64 tensor cores) that warp w
// forms, w and w + 8, with X(i, k) = x(i, k) and Y(k, j) = y(k, j): d[e] = Z(small_row(h),
// small_col(h, e)).
__device__ __forceinline__ int small_row(int h, int warp, int lane) { return 8 * ((warp + h * kWarps) >> 2) + (lane >> 2); }
__device__ __forceinline__ int small_col(int h, int e, int warp, int lane) {
  return 8 * ((warp + h * kWarps) & 3) + 2 * (lane & 3) + e;
}
template <class FX, class FY>
__device__ __forceinline__ void small_product_tile(FX x, FY y, double (&d)[2], int h, int warp, int lane) {
  const int tile = warp + h * kWarps, bi = tile >> 2, bj = tile & 3;
  d[0] = d[1] = 0.0;
#pragma unroll
  for (int ks = 0; ks < 8; ++ks)
    dmma(d, x(8 * bi + (lane >> 2), 4 * ks + (lane & 3)), y(4 * ks + (lane & 3), 8 * bj + (lane >> 2)));
}
// Z = scale X Y (row-major, kSmallLd), every warp's tiles formed before any is stored, so
// that Z may take the place of X or Y; a whole-CTA barrier before and after the stores.
template <class FX, class FY>
__device__ __forceinline__ void small_product(FX x, FY y, double* z, double scale, int warp, int lane) {
  double d[2][2];
#pragma unroll
  for (int h = 0; h < 2; ++h) small_product_tile(x, y, d[h], h, warp, lane);
  __syncthreads();
#pragma unroll
  for (int h = 0; h < 2; ++h)
#pragma unroll
    for (int e = 0; e < 2; ++e) z[small_row(h, warp, lane) * kSmallLd + small_col(h, e, warp, lane)] = scale * d[h][e];
  __syncthreads();
}

struct CholKernelArgs {
  Geqr2RegArgs p;
  int rows_per_cta;
  int* flag;
};

// kCluster: the cluster form (FP64 rows in shared memory, one cluster per matrix); else
// the one-CTA form (two CTAs per SM).
template <Layout L, bool kCluster>
__global__ void __launch_bounds__(kCholThreads, kCluster ? 1 : 2) geqr2_chol_kernel(const CholKernelArgs args) {
  const Geqr2RegArgs& p = args.p;
  const int cs = kCluster ? p.cluster : 1;
  const int rank = kCluster ? static_cast<int>(cg::this_cluster().block_rank()) : 0;
  const std::int64_t mat = blockIdx.x / cs;
  const int rc = args.rows_per_cta;
  const int rb = rank * rc;
  const int nloc = max(0, min(p.rows - rb, rc));
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  const CholSmem s = kCluster ? carve(smem_raw, rc) : carve_one_cta(smem_raw, rc);
  const MatrixView<L> A = MatrixView<L>{p.a + mat * p.stride, p.ld}.offset(p.j0, p.j0);
  // Entry (r, c) of this CTA's rows, in FP64.
  auto pa = [&](int r, int c) -> double {
    if constexpr (kCluster) return s.a[r * kLdA + c];
    else return static_cast<double>(s.af[r * 32 + (c ^ chol_swizzle(r))]);
  };

  // --- this CTA's rows and the first 32 rows, in FP64 ------------------------------------
  // Loads issued in two rounds of up to 32 per thread before their stores (one round trip
  // each, not one per element). The one-CTA form copies the panel as it is (cp.async).
  if constexpr (!kCluster) {
    // Row-major rows in 16-byte groups where every group is aligned (the swizzle moves
    // whole groups).
    const bool by16 = rows_by<16>(A, p.ld);
    if (by16) {
      for (int idx = tid; idx < rc * 8; idx += kCholThreads) {
        const int r = idx >> 3, c = 4 * (idx & 7);
        float* dst = s.af + r * 32 + (c ^ chol_swizzle(r));
        if (r < nloc) async_copy16(dst, &A(r, c));
        else *reinterpret_cast<float4*>(dst) = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
      }
    }
    for (int idx = by16 ? rc * 32 : tid; idx < rc * 32; idx += kCholThreads) {
      int r, c;
      if constexpr (L == Layout::row_major) {
        r = idx >> 5;
        c = idx & 31;
      } else {
        c = idx / rc;
        r = idx - c * rc;
      }
      float* dst = s.af + r * 32 + (c ^ chol_swizzle(r));
      if (r < nloc) async_copy(dst, &A(r, c));
      else *dst = 0.0f;
    }
    s.vec[tid] = 0.0;  // as below
    async_wait();
  } else {
    constexpr int kIter = kCholMaxRowsPerCta * 32 / kCholThreads / 2, kTopIter = 32 * 32 / kCholThreads;
    const int total = rc * 32;
    auto rc_of = [&](int idx, int rows, int& r, int& c) {
      if constexpr (L == Layout::row_major) {
        r = idx >> 5;
        c = idx & 31;
      } else {
        c = idx / rows;
        r = idx - c * rows;
      }
    };
    float w[kTopIter];
#pragma unroll
    for (int it = 0; it < kTopIter; ++it) {
      int r = 0, c = 0;
      rc_of(tid + it * kCholThreads, 32, r, c);
      w[it] = A(r, c);
    }
#pragma unroll 1
    for (int round = 0; round < 2; ++round) {
      float v[kIter];
#pragma unroll
      for (int it = 0; it < kIter; ++it) {
        const int idx = tid + (round * kIter + it) * kCholThreads;
        int r = 0, c = 0;
        rc_of(idx, rc, r, c);
        v[it] = idx < total && r < nloc ? A(rb + r, c) : 0.0f;
      }
#pragma unroll
      for (int it = 0; it < kIter; ++it) {
        const int idx = tid + (round * kIter + it) * kCholThreads;
        int r = 0, c = 0;
        rc_of(idx, rc, r, c);
        if (idx < total) s.a[r * kLdA + c] = static_cast<double>(v[it]);
      }
    }
#pragma unroll
    for (int it = 0; it < kTopIter; ++it) {
      int r = 0, c = 0;
      rc_of(tid + it * kCholThreads, 32, r, c);
      s.top[top_at(r, c)] = static_cast<double>(w[it]);
    }
    // The step vectors' entries past a matrix are read but never written: zeros, not
    // whatever shared memory held.
    static_assert(kCholThreads == 4 * 64);
    s.vec[tid] = 0.0;  // vec, urow, lcol and fv
  }
  __syncthreads();

  // --- 1. G = A^T A ----------------------------------------------------------------------
  {
    double g[kTiles][2];
#pragma unroll
    for (int t = 0; t < kTiles; ++t) g[t][0] = g[t][1] = 0.0;
    for (int ks = warp; 4 * ks < nloc; ks += kWarps) {  // rows past the panel are zero
      const int r = 4 * ks + (lane & 3), c = lane >> 2;
      const double x[4] = {pa(r, c), pa(r, c + 8), pa(r, c + 16), pa(r, c + 24)};
      int t = 0;
#pragma unroll
      for (int bi = 0; bi < 4; ++bi)
#pragma unroll
        for (int bj = bi; bj < 4; ++bj) dmma(g[t++], x[bi], x[bj]);
    }
    // The warps' tiles summed in a fixed tree: 4-7 onto 0-3, 2-3 onto 0-1, 1 onto 0.
#pragma unroll
    for (int half = kWarps / 2; half >= 1; half /= 2) {
      if (warp >= half && warp < 2 * half)
#pragma unroll
        for (int t = 0; t < kTiles; ++t)
#pragma unroll
          for (int e = 0; e < 2; ++e) s.red[((warp - half) * kTiles + t) * 64 + e * 32 + lane] = g[t][e];
      __syncthreads();
      if (warp < half)
#pragma unroll
        for (int t = 0; t < kTiles; ++t)
#pragma unroll
          for (int e = 0; e < 2; ++e) g[t][e] += s.red[(warp * kTiles + t) * 64 + e * 32 + lane];
      __syncthreads();
    }
    if (warp == 0) {
      double* gp = kCluster ? s.gp : s.r;  // one CTA: G itself
      int t = 0;
#pragma unroll
      for (int bi = 0; bi < 4; ++bi)
#pragma unroll
        for (int bj = bi; bj < 4; ++bj, ++t)
#pragma unroll
          for (int e = 0; e < 2; ++e) gp[(8 * bi + (lane >> 2)) * kSmallLd + 8 * bj + 2 * (lane & 3) + e] = g[t][e];
    }
  }
  if constexpr (kCluster) {
    cg::cluster_group cluster = cg::this_cluster();
    cluster.sync();
    // Every CTA sums the CTAs' parts in rank order (the upper triangle is all it reads).
    // Every remote load of a thread issued before the first add (one round trip, not one
    // per CTA and entry); the parts past the cluster are +0, which leaves each sum as it is.
    static_assert(32 * 32 % kCholThreads == 0);
#pragma unroll
    for (int it = 0; it < 32 * 32 / kCholThreads; ++it) {
      const int idx = tid + it * kCholThreads, i = idx >> 5, j = idx & 31;
      if (i > j) continue;
      double part[kCholMaxCluster];
#pragma unroll
      for (int q = 0; q < kCholMaxCluster; ++q) part[q] = q < cs ? cluster.map_shared_rank(s.gp, q)[idx] : 0.0;
      double sum = 0.0;
#pragma unroll
      for (int q = 0; q < kCholMaxCluster; ++q) sum += part[q];
      s.r[idx] = sum;
    }
    // This CTA has read the others' parts: they may leave once they are done (wait at exit).
    asm volatile("barrier.cluster.arrive.release;" ::: "memory");
  }
  __syncthreads();

  // --- 1b. column equilibration: G := E^-1 G E^-1 ----------------------------------------
  // e_j, a power of two near column j's norm, so the factorizations below run on A E^-1,
  // whose columns are of one scale: R' = R E^-1, W' = W E^-1, and Q, V, T are A E^-1's,
  // which are A's. A panel whose columns differ in scale by more than kCholMaxKappa is then
  // judged by its conditioning, not by its scaling. Exact: E holds powers of two.
  // S R = S R' E normal in FP32 follows from ||A||_F <= FLT_MAX (||R||_F = ||A||_F bounds
  // every entry), every column's norm >= 2^-100 and kappa_F(R') <= kCholMaxKappa (then
  // R(j, j) = R'(j, j) e_j >= |a_j| / (2 kCholMaxKappa) > 2^-113); norms[2] is -1 where not.
  if (warp == 0) {
    const double gjj = s.r[lane * kSmallLd + lane];
    s.escale()[lane] = small::equilibration_scale(gjj);
    const double tr = warp_allreduce_sum(gjj);  // ||A||_F^2
    const bool big = __all_sync(0xffffffffu, gjj >= 0x1p-200);
    if (lane == 0) s.norms[2] = big && sqrt(tr) <= static_cast<double>(FLT_MAX) ? tr : -1.0;
  }
  __syncthreads();
  // A_top := A_top E^-1 in place for the LU (the V pass reads only the rows below it). In the
  // one-CTA form's FP32 copy a product below FLT_MIN rounds, by at most 2^-149 of its column's
  // norm: far below FP32's rounding of the panel itself.
  for (int idx = tid; idx < 32 * 32; idx += kCholThreads) {
    const int i = idx >> 5, j = idx & 31;
    if (i <= j) s.r[i * kSmallLd + j] *= s.escale()[i] * s.escale()[j];
    if constexpr (kCluster) {
      s.top[top_at(i, j)] *= s.escale()[j];
    } else {
      float& x = s.af[i * 32 + (j ^ chol_swizzle(i))];
      x = static_cast<float>(static_cast<double>(x) * s.escale()[j]);
    }
  }
  __syncthreads();

  // --- 2. R, the reconstruction, the checks ---------------------------------------------
  // The factorizations (small_fp64.cuh) on warps of their own, the LU one barrier behind
  // the Cholesky factorization: warp 0 R, 1 R^-T, 2 the LU by columns, 7 the same LU by
  // rows, 3 L^-1, 5 W^-1 (warps 0 and 2, the chain, alone on their schedulers). They meet
  // 33 times at a whole-CTA barrier, which the idle warps meet too (racecheck is clean with
  // it, not with barriers of part of the CTA; docs/perf-notes.md v14). The products on
  // every warp.
  auto barrier = [] { small::named_barrier(0, kCholThreads); };
  if (warp == 0) {
    Col c;
    small::load_col(s.r, lane, c);
    __syncwarp();  // every lane has read G before row 0 of R replaces it
    double fr;
    const bool ok = small::cholesky_r(c, lane, s.r, s.rsq, s.vec, fr, 0, kCholThreads);
    barrier();  // the LU's last step
    fr = warp_allreduce_sum(fr);
    // R' finite, its diagonal inside recip's range (the LU's pivots take 1 / R'(k, k)).
    const bool rep = sqrt(fr) <= static_cast<double>(FLT_MAX) && s.r[lane * kSmallLd + lane] >= 0x1p-100;
    const bool all = __all_sync(0xffffffffu, ok && rep);
    if (lane == 0) {
      s.ok[0] = all ? 1 : 0;
      s.norms[0] = fr;
    }
  } else if (warp == 1) {
    double fi;
    small::cholesky_rit(lane, s.vec, s.rsq, s.rit, fi, 0, kCholThreads);
    barrier();
    fi = warp_allreduce_sum(fi);
    if (lane == 0) s.norms[1] = fi;
  } else if (warp == 2) {
    Col c;  // column `lane` of A_top E^-1 (read before W^-T takes top's place)
#pragma unroll
    for (int i = 0; i < small::kN; ++i) c[i] = kCluster ? s.top[top_at(i, lane)] : pa(i, lane);
    barrier();  // R's row 0
    small::lu_on_cholesky(c, lane, s.r, s.rsq, s.q, s.sign, s.rdiag, s.lcol, s.urow, s.fv, 0, kCholThreads);
  } else if (warp == 7) {
    Col x;  // row `lane` of A_top E^-1
#pragma unroll
    for (int j = 0; j < small::kN; ++j) x[j] = kCluster ? s.top[top_at(lane, j)] : pa(lane, j);
    barrier();
    small::lu_rows(x, lane, s.lcol, s.fv, 0, kCholThreads);
  } else if (warp == 3) {
    barrier();
    small::lu_li(lane, s.lcol, s.rdiag, s.q, s.li, 0, kCholThreads);
  } else if (warp == 5) {
    barrier();
    small::lu_ui(lane, s.urow, s.rdiag, s.uit, 0, kCholThreads);
  } else {
#pragma unroll 1
    for (int k = 0; k <= small::kN; ++k) barrier();
  }
  __syncthreads();
  // kappa_F(R') = ||R'||_F ||R'^-1||_F, and the scale checks above (false for NaN). (Written
  // as warp 0's, not thread 0's: the one-CTA form's factorization loops then keep their
  // registers; ptxas spilled in lu_on_cholesky's steps with the other spelling.)
  if (warp == 0) {
    if (lane == 0 && !(sqrt(s.norms[0] * s.norms[1]) <= kCholMaxKappa && s.norms[2] >= 0.0)) s.ok[0] = 0;
  }
  // U = W R^-1 (R^-1(k, j) = R^-T(j, k)), then T = -(U S) L^-T (one CTA: U into R^-T's
  // place, T into L^-1's). M = W^-1 is lu_ui's.
  small_product([&](int i, int k) { return k >= i ? s.q[i * kSmallLd + k] : 0.0; },
                [&](int k, int j) { return s.rit[j * kSmallLd + k]; }, s.u, 1.0, warp, lane);
  small_product([&](int i, int k) { return k >= i ? s.u[i * kSmallLd + k] * s.sign[k] : 0.0; },
                [&](int k, int j) { return s.li[j * kSmallLd + k]; }, s.t, -1.0, warp, lane);
  {
    bool fin = true;
    for (int idx = tid; idx < 32 * 32; idx += kCholThreads) fin = fin && isfinite(s.uit[idx]) && isfinite(s.t[idx]);
    if (__syncthreads_or(!fin) || *s.ok == 0) {
      if (rank == 0 && tid == 0) args.flag[mat] = 1;
      if constexpr (kCluster) asm volatile("barrier.cluster.wait.acquire;" ::: "memory");
      return;
    }
  }
  // W^-T := (E^-1 W'^-1)^T: M = W^-1 for A's columns, not A E^-1's.
  for (int idx = tid; idx < 32 * 32; idx += kCholThreads) s.uit[(idx >> 5) * kSmallLd + (idx & 31)] *= s.escale()[idx & 31];
  __syncthreads();
  if (rank == 0) {
    if (tid == 0) args.flag[mat] = 0;
    if (p.t_out != nullptr)
      for (int idx = tid; idx < 32 * 32; idx += kCholThreads)
        p.t_out[mat * p.t_stride + static_cast<std::int64_t>(idx >> 5) * p.t_ld + (idx & 31)] = static_cast<float>(s.t[idx]);
    if (tid < 32) p.tau[mat * p.tau_stride + p.j0 + tid] = static_cast<float>(s.t[tid * kSmallLd + tid]);
  }

  // --- 3. write-out -----------------------------------------------------------------------
  float* vt = p.vt_out != nullptr ? p.vt_out + mat * p.vt_stride : nullptr;
  if (rank == 0) {
    // The first 32 rows: L below the diagonal, S R on and above; V^T's unit diagonal.
    for (int idx = tid; idx < 32 * 32; idx += kCholThreads) {
      const int i = L == Layout::row_major ? idx >> 5 : idx & 31;
      const int j = L == Layout::row_major ? idx & 31 : idx >> 5;
      const double x = i > j ? s.q[i * kSmallLd + j] : s.sign[i] * s.r[i * kSmallLd + j] / s.escale()[j];
      A(i, j) = static_cast<float>(x);
      if (vt != nullptr) vt[static_cast<std::int64_t>(i) * p.vt_ld + j] = i > j ? static_cast<float>(x) : (i == j ? 1.0f : 0.0f);
    }
    if (vt != nullptr)
      for (int idx = tid; idx < p.vt_pad * 32; idx += kCholThreads)
        vt[static_cast<std::int64_t>(idx / 32 - p.vt_pad) * p.vt_ld + idx % 32] = 0.0f;
  }
  {
    // M as mma B fragments: mb[ks][bj] = M(4 ks + lane % 4, 8 bj + lane / 4), where nonzero
    // (M(i, j) = W^-T(j, i)).
    double mb[8][4];
#pragma unroll
    for (int ks = 0; ks < 8; ++ks)
#pragma unroll
      for (int bj = 0; bj < 4; ++bj)
        mb[ks][bj] = ks <= 2 * bj + 1 ? s.uit[(8 * bj + (lane >> 2)) * kSmallLd + 4 * ks + (lane & 3)] : 0.0;
    const int first = rank == 0 ? 4 : 0;  // rank 0's first 32 rows are written above
    // Rows 8 blk + lane / 4 of V, columns 8 bj + 2 (lane % 4) + e: v[bj][e].
    auto form = [&](int blk, double (&v)[4][2]) {
      double a[8];
#pragma unroll
      for (int ks = 0; ks < 8; ++ks) a[ks] = pa(8 * blk + (lane >> 2), 4 * ks + (lane & 3));
#pragma unroll
      for (int bj = 0; bj < 4; ++bj) {
        v[bj][0] = v[bj][1] = 0.0;
#pragma unroll
        for (int ks = 0; ks <= 2 * bj + 1; ++ks) dmma(v[bj], a[ks], mb[ks][bj]);
      }
    };
    if constexpr (!kCluster) {
      for (int blk = first + warp; 8 * blk < nloc; blk += kWarps) {
        double v[4][2];
        form(blk, v);
        const int r = 8 * blk + (lane >> 2);  // this lane's row (in this CTA)
        // Into the panel's place (this warp's rows only, read above); stored below in rows.
        __syncwarp();
#pragma unroll
        for (int bj = 0; bj < 4; ++bj)
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            const int col = 8 * bj + 2 * (lane & 3) + e;
            s.af[r * 32 + (col ^ chol_swizzle(r))] = static_cast<float>(v[bj][e]);
          }
      }
    } else {
      // A lane's two adjacent columns in one 8-byte store where rows are 8-byte aligned
      // (row-major A; V^T is row-major by rows): every 32-byte sector in one write.
      const bool a8 = rows_by<8>(A, p.ld);
      const bool vt8 = vt != nullptr && rows_aligned<8>(vt, p.vt_ld);
      auto store = [&](int blk, const double (&v)[4][2]) {
        const int rg = rb + 8 * blk + (lane >> 2);
#pragma unroll
        for (int bj = 0; bj < 4; ++bj) {
          const int col = 8 * bj + 2 * (lane & 3);
          const float2 x = make_float2(static_cast<float>(v[bj][0]), static_cast<float>(v[bj][1]));
          if (a8) {
            *reinterpret_cast<float2*>(&A(rg, col)) = x;
          } else {
            A(rg, col) = x.x;
            A(rg, col + 1) = x.y;
          }
          if (vt8) {
            *reinterpret_cast<float2*>(vt + static_cast<std::int64_t>(rg) * p.vt_ld + col) = x;
          } else if (vt != nullptr) {
            vt[static_cast<std::int64_t>(rg) * p.vt_ld + col] = x.x;
            vt[static_cast<std::int64_t>(rg) * p.vt_ld + col + 1] = x.y;
          }
        }
      };
      // Two blocks per pass: both blocks' products are formed before either's stores (the
      // compiler may not move shared-memory loads past global stores).
      for (int blk = first + warp; 8 * blk < nloc; blk += 2 * kWarps) {
        const int blk2 = blk + kWarps;
        const bool two = 8 * blk2 < nloc;
        double v[4][2], v2[4][2];
        form(blk, v);
        if (two) form(blk2, v2);
        if (8 * blk + (lane >> 2) < nloc) store(blk, v);
        if (two && 8 * blk2 + (lane >> 2) < nloc) store(blk2, v2);
      }
    }
  }
  if constexpr (!kCluster) {
    // V below the first 32 rows, from shared memory: whole rows (or columns) per warp, in
    // 16-byte groups where the destination's groups are aligned.
    __syncthreads();
    const int nv = nloc - 32;
    auto group = [&](int r, int c) {
      return *reinterpret_cast<const float4*>(s.af + r * 32 + (c ^ chol_swizzle(r)));
    };
    const bool vt16 = vt != nullptr && rows_aligned<16>(vt, p.vt_ld);
    if (rows_by<16>(A, p.ld)) {
      for (int idx = tid; idx < nv * 8; idx += kCholThreads) {
        const int r = 32 + (idx >> 3), c = 4 * (idx & 7);
        const float4 x = group(r, c);
        *reinterpret_cast<float4*>(&A(r, c)) = x;
        if (vt16) *reinterpret_cast<float4*>(vt + static_cast<std::int64_t>(r) * p.vt_ld + c) = x;
      }
    } else {
      for (int idx = tid; idx < nv * 32; idx += kCholThreads) {
        int r, c;
        if constexpr (L == Layout::row_major) {
          r = 32 + (idx >> 5);
          c = idx & 31;
        } else {
          c = idx / nv;
          r = 32 + idx - c * nv;
        }
        A(r, c) = s.af[r * 32 + (c ^ chol_swizzle(r))];
      }
      if (vt16)
        for (int idx = tid; idx < nv * 8; idx += kCholThreads) {
          const int r = 32 + (idx >> 3), c = 4 * (idx & 7);
          *reinterpret_cast<float4*>(vt + static_cast<std::int64_t>(r) * p.vt_ld + c) = group(r, c);
        }
    }
    if (vt != nullptr && !vt16)
      for (int idx = tid; idx < nv * 32; idx += kCholThreads) {
        const int r = 32 + (idx >> 5), c = idx & 31;
        vt[static_cast<std::int64_t>(r) * p.vt_ld + c] = s.af[r * 32 + (c ^ chol_swizzle(r))];
      }
  }
  // No CTA may leave while another still reads its shared memory.
  if constexpr (kCluster) asm volatile("barrier.cluster.wait.acquire;" ::: "memory");
}

template <Layout L>
Status launch(const Geqr2RegArgs& p, const CholConfig& cfg, int* flag, std::int64_t batch, cudaStream_t stream) {
  CholKernelArgs args{p, cfg.rows_per_cta, flag};
  args.p.cluster = cfg.cluster;
  const ClusterLaunch l(dim3(static_cast<unsigned>(batch * cfg.cluster)), dim3(kCholThreads),
                       geqr2_chol_smem(cfg.rows_per_cta, cfg.cluster), stream, cfg.cluster);
  if (cfg.cluster > 1) BATCHQR_CUDA_TRY(cudaLaunchKernelEx(&l.cfg, geqr2_chol_kernel<L, true>, args));
  else BATCHQR_CUDA_TRY(cudaLaunchKernelEx(&l.cfg, geqr2_chol_kernel<L, false>, args));
  return Status::success;
}

template <Layout L>
Status raise_limits(bool cluster) {
  if (cluster) {
    BATCHQR_CUDA_TRY(cudaFuncSetAttribute(geqr2_chol_kernel<L, true>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                          static_cast<int>(geqr2_chol_smem(kCholMaxRowsPerCta, 2))));
    BATCHQR_CUDA_TRY(
        cudaFuncSetAttribute(geqr2_chol_kernel<L, true>, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
  }
  BATCHQR_CUDA_TRY(cudaFuncSetAttribute(geqr2_chol_kernel<L, false>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        static_cast<int>(geqr2_chol_smem(kCholMaxRowsPerCta, 1))));
  return Status::success;
}

}  // namespace

std::size_t geqr2_chol_smem(int rows_per_cta, int cluster) {
  if (cluster <= 1)
    return sizeof(float) * static_cast<std::size_t>(rows_per_cta) * 32 +
           sizeof(double) * (kOneCtaSmall * kSmallDoubles + kTailDoubles) + sizeof(int);
  return sizeof(double) * (static_cast<std::size_t>(rows_per_cta) * kLdA + kSmallMatrices * kSmallDoubles + kTailDoubles) +
         sizeof(int);
}

CholConfig geqr2_chol_one_cta_config(int rows) {
  CholConfig c;
  if (rows < 32 || rows > kCholMaxRowsPerCta) return c;
  c.cluster = 1;
  c.rows_per_cta = (rows + 31) / 32 * 32;
  return c;
}

CholConfig geqr2_chol_config(const DeviceInfo& dev, int rows, int rows_per_cta_max) {
  CholConfig c;
  const int cap = std::min(kCholMaxRowsPerCta, rows_per_cta_max) / 32 * 32;
  if (!dev.cluster_launch || cap < 32 || rows <= cap) return c;
  const int cs = (rows + cap - 1) / cap;
  if (cs > kCholMaxCluster) return c;
  c.cluster = cs;
  c.rows_per_cta = ((rows + cs - 1) / cs + 31) / 32 * 32;
  return c;
}

Status geqr2_chol_initialize(bool cluster) {
  const Status st = raise_limits<Layout::row_major>(cluster);
  return st == Status::success ? raise_limits<Layout::col_major>(cluster) : st;
}

Status launch_geqr2_chol(Layout layout, const Geqr2RegArgs& args, const CholConfig& cfg, int* flag, std::int64_t batch,
                         cudaStream_t stream) {
  if (cfg.cluster < 1 || args.ncols != kCholWidth || args.nrefl != kCholWidth) return Status::backend_error;
  if (cfg.rows_per_cta % 32 != 0 || cfg.rows_per_cta > kCholMaxRowsPerCta ||
      static_cast<std::int64_t>(cfg.rows_per_cta) * cfg.cluster < args.rows)
    return Status::backend_error;
  return layout == Layout::row_major ? launch<Layout::row_major>(args, cfg, flag, batch, stream)
                                     : launch<Layout::col_major>(args, cfg, flag, batch, stream);
}

}  // namespace batchqr::cuda
