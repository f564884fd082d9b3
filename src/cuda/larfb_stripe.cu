#include "cuda/larfb_stripe.hpp"

#include <algorithm>
#include <climits>
#include <type_traits>

#include <cooperative_groups.h>

#include "cuda/alignment.hpp"
#include "cuda/async_copy.cuh"
#include "cuda/cluster_launch.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/matrix_view.cuh"
#include "cuda/mma_tf32.cuh"
#include "cuda/tensor_map.hpp"
#include "cuda/tma.cuh"
#include "cuda/wgmma_tf32.cuh"

namespace batchqr::cuda {
namespace {

constexpr int TN = 32;      // columns of C per CTA
constexpr int NT = 256;     // threads per CTA: 8 warps
constexpr int kWarps = NT / 32;
constexpr int kRedSlots = kWarps / 2;  // W partials parked during the tree sum
constexpr int kMaxK = 64;
// The TMA form's shared memory beyond larfb_stripe_smem_bytes: alignment to 1024 bytes,
// the stripe rounded up to 8 rows, two mbarriers per warp and one per warpgroup.
constexpr std::size_t kStripeTmaExtra = 1024 + 7 * TN * sizeof(float) + (2 * kWarps + 2) * sizeof(std::uint64_t);

// Tensor maps for the TMA form (unused otherwise): V^T (rows of K floats) in boxes of 8
// rows (phase 1) and of 64 rows (phase 3 on wgmma, K = 64; left zero for K = 32), and the
// matrices in boxes of 8 rows.
struct StripeMaps {
  CUtensorMap v, v64, c;
};
// The instruction diet (float4 stripe and T copies, V in float4 runs in phase 3, T^T W
// balanced over the warps) for K = 64 only: measured faster there (512x640, 1024x60,
// 2048x8), but slower for K = 32 alone (one-level plans, 300x1000 +7%; docs/perf-notes.md v12).
template <int K>
constexpr bool kDiet = K == 64;

// Shared memory holds TN-float rows (the stripe, W2) with their eight float4 groups
// permuted per row: group q of row r sits at q ^ 2 (r & 3). The tensor-core fragments
// (lanes 4g + t on rows t and t + 4, or on rows g) then read without bank conflicts.
// kTma: the stripe as the tensor memory accelerator's 128-byte swizzle lays it out, group
// q of row r at q ^ (r & 7) (phase 1 then pairs lanes with rows 2t, 2t + 1).
template <bool kTma = false>
__device__ __forceinline__ int grp(int r, int q) {
  return kTma ? (q ^ (r & 7)) : (q ^ ((r & 3) << 1)) & 7;
}
template <bool kTma = false>
__device__ __forceinline__ int swz(int r, int c) { return r * TN + (grp<kTma>(r, c >> 2) << 2) + (c & 3); }

// Phase 1's products for one 8-row chunk: acc[mt][nt] += (V^T C) in 3xTF32, from this lane's
// V values of its two rows (va[h]) and C values (cb[h], four columns each). The A fragment of
// m-tile mt takes k = lo for row g, hi for row g + 8: kHalves (the TMA form's boxes) mt and
// KL / 2 + mt (the second box for K = 64, the group's second half for K = 32); else 2 mt and
// 2 mt + 1.
template <bool kHalves, int MT, int KL>
__device__ __forceinline__ void chunk_product(float (&acc)[MT][4][4], const float (&va)[2][KL], const float (&cb)[2][4]) {
  std::uint32_t bb[4][2], bs[4][2];
#pragma unroll
  for (int nt = 0; nt < 4; ++nt) {
    split_tf32(cb[0][nt], bb[nt][0], bs[nt][0]);
    split_tf32(cb[1][nt], bb[nt][1], bs[nt][1]);
  }
#pragma unroll
  for (int mt = 0; mt < MT; ++mt) {
    const int lo = kHalves ? mt : 2 * mt, hi = kHalves ? KL / 2 + mt : 2 * mt + 1;
    std::uint32_t ab[4], as[4];
    split_tf32(va[0][lo], ab[0], as[0]);
    split_tf32(va[0][hi], ab[1], as[1]);
    split_tf32(va[1][lo], ab[2], as[2]);
    split_tf32(va[1][hi], ab[3], as[3]);
#pragma unroll
    for (int nt = 0; nt < 4; ++nt) mma_3xtf32(acc[mt][nt], ab, as, bb[nt], bs[nt]);
  }
}

template <bool kTma = false>
__device__ __forceinline__ float4 ld4(const float* s, int r, int c4) {
  return *reinterpret_cast<const float4*>(s + r * TN + (grp<kTma>(r, c4) << 2));
}
__device__ __forceinline__ void st4(float* s, int r, int c4, float4 v) {
  *reinterpret_cast<float4*>(s + r * TN + (grp(r, c4) << 2)) = v;
}

// The stripe (rows x cn columns of C) into shared memory and back, read and written in the
// order of the layout: row-major, a warp per row (lane = column), or with `vec4` (rows and
// the stripe's first column 16-byte aligned) 8 lanes per row, a float4 group each, so a
// warp moves four rows per instruction; column-major, a warp per column (lane = row).
// Columns past cn are zeros. stripe_in's copies complete after async_wait().
//
// Element (r, c) of the stripe, or a zero past column cn.
template <Layout L>
__device__ __forceinline__ void element_in(const MatrixView<L>& C, float* sC, int r, int c, int cn) {
  if (c < cn) async_copy(sC + swz(r, c), &C(r, c));
  else sC[swz(r, c)] = 0.0f;
}
// Float4 group q of row r (row-major, vec4): one 16-byte copy where the group lies within
// cn columns, else its columns one by one, zeros past cn.
template <Layout L>
__device__ __forceinline__ void group_in(const MatrixView<L>& C, float* sC, int r, int q, int cn) {
  float* dst = sC + r * TN + (grp(r, q) << 2);
  if (4 * q + 4 <= cn) {
    async_copy16(dst, &C(r, 4 * q));
  } else {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      if (4 * q + e < cn) async_copy(dst + e, &C(r, 4 * q + e));
      else dst[e] = 0.0f;
    }
  }
}
template <Layout L>
__device__ __forceinline__ void stripe_in(const MatrixView<L>& C, float* sC, int rows, int cn, bool vec4) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if constexpr (L == Layout::row_major) {
    if (vec4) {
      const int q = lane & 7;
      for (int r = 4 * warp + (lane >> 3); r < rows; r += 4 * kWarps) group_in(C, sC, r, q, cn);
      return;
    }
    for (int r = warp; r < rows; r += kWarps) element_in(C, sC, r, lane, cn);
  } else {
    for (int c = warp; c < TN; c += kWarps)
      for (int r = lane; r < rows; r += 32) element_in(C, sC, r, c, cn);
  }
}
// Rows r0 .. r0 + 7 of the stripe (those below `rows`) into shared memory by one warp,
// as stripe_in lays them out: the rows a warp's phase-1 chunk reads, so that it can wait
// for its own copies (cp.async groups) instead of a CTA barrier after the whole stripe.
template <Layout L>
__device__ __forceinline__ void stripe_chunk_in(const MatrixView<L>& C, float* sC, int r0, int rows, int cn, bool vec4) {
  const int lane = threadIdx.x & 31;
  if constexpr (L == Layout::row_major) {
    if (vec4) {  // 8 rows x 8 float4 groups: two per lane
      const int q = lane & 7;
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int r = r0 + (lane >> 3) + 4 * h;
        if (r < rows) group_in(C, sC, r, q, cn);
      }
      return;
    }
    for (int r = r0; r < r0 + 8 && r < rows; ++r) element_in(C, sC, r, lane, cn);
  } else {  // lanes on (row r0 + lane % 8, columns lane / 8 + 4 j): 32-byte column runs
    const int r = r0 + (lane & 7);
    if (r >= rows) return;
#pragma unroll
    for (int c = lane >> 3; c < TN; c += 4) element_in(C, sC, r, c, cn);
  }
}

template <Layout L>
__device__ __forceinline__ void stripe_out(const MatrixView<L>& C, const float* sC, int rows, int cn, bool vec4) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if constexpr (L == Layout::row_major) {
    if (vec4) {
      const int q = lane & 7;
      for (int r = 4 * warp + (lane >> 3); r < rows; r += 4 * kWarps) {
        const float4 x = ld4(sC, r, q);
        if (4 * q + 4 <= cn) {
          *reinterpret_cast<float4*>(&C(r, 4 * q)) = x;
        } else {
          const float v[4] = {x.x, x.y, x.z, x.w};
#pragma unroll
          for (int e = 0; e < 4; ++e)
            if (4 * q + e < cn) C(r, 4 * q + e) = v[e];
        }
      }
      return;
    }
    if (lane < cn)
      for (int r = warp; r < rows; r += kWarps) C(r, lane) = sC[swz(r, lane)];
  } else {
    for (int c = warp; c < cn; c += kWarps)
      for (int r = lane; r < rows; r += 32) C(r, c) = sC[swz(r, c)];
  }
}

// The rows of the stripe this CTA holds. One CTA holds all of them; with kSplit the CTAs
// of a 1-D cluster hold consecutive blocks of `cap` rows each (stripe_split_rows), the
// last possibly fewer (or none), and every CTA reserves shared memory for `cap`.
struct StripeRows {
  int row0, rows, cap;
};
template <bool kSplit>
__device__ __forceinline__ StripeRows stripe_rows(int rows) {
  if constexpr (!kSplit) {
    return {0, rows, rows};
  } else {
    const cooperative_groups::cluster_group cluster = cooperative_groups::this_cluster();
    const int cap = stripe_split_rows(rows, static_cast<int>(cluster.num_blocks()));
    const int row0 = static_cast<int>(cluster.block_rank()) * cap;
    return {row0, max(0, min(cap, rows - row0)), cap};
  }
}

// kSplit: every CTA of the cluster has its rows' W (K x TN) in sW; each sums all of them
// into sWsum in rank order (so all hold the same W, whatever the scheduling) and returns
// it. Its arrival at the cluster barrier after the reads lets the owners leave:
// cluster_exit() waits for it before the CTA ends. Without kSplit: a CTA barrier.
template <bool kSplit, int K>
__device__ __forceinline__ const float* cluster_sum_w(const float* sW, float* sWsum) {
  if constexpr (!kSplit) {
    __syncthreads();
    return sW;
  } else {
    cooperative_groups::cluster_group cluster = cooperative_groups::this_cluster();
    cluster.sync();  // every rank's sW is complete
    const int S = static_cast<int>(cluster.num_blocks());
    for (int e = threadIdx.x; e < K * TN / 4; e += NT) {
      float4 s = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
      for (int q = 0; q < S; ++q) {
        const float4 x = reinterpret_cast<const float4*>(cluster.map_shared_rank(sW, q))[e];
        s.x += x.x;
        s.y += x.y;
        s.z += x.z;
        s.w += x.w;
      }
      reinterpret_cast<float4*>(sWsum)[e] = s;
    }
    asm volatile("barrier.cluster.arrive.release;" ::: "memory");
    __syncthreads();
    return sWsum;
  }
}
template <bool kSplit>
__device__ __forceinline__ void cluster_exit() {
  if constexpr (kSplit) asm volatile("barrier.cluster.wait.acquire;" ::: "memory");
}

// T (K x K, upper triangular, zeros below; rows t_ld apart) into sT[i][k] by the warps
// from `first` on; with vec, in float4 groups (T and its rows 16-byte aligned).
template <int K>
__device__ __forceinline__ void stage_t(const float* T, int t_ld, float* sT, int first, bool vec) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (warp < first) return;
  if (vec) {
    constexpr int G = K / 4, RP = 32 / G;  // float4 groups per row, rows per warp pass
    const int q = lane % G;
    for (int i = (warp - first) * RP + lane / G; i < K; i += (kWarps - first) * RP)
      async_copy16_l1(sT + i * K + 4 * q, T + static_cast<std::int64_t>(i) * t_ld + 4 * q);
  } else {
    for (int i = warp - first; i < K; i += kWarps - first)
      for (int k = lane; k < K; k += 32) async_copy(sT + i * K + k, T + static_cast<std::int64_t>(i) * t_ld + k);
  }
  async_wait();
}

// The warps' W partials summed into warp 0 in a fixed order, through slots 0-3 of sRed:
// warps 4-7 into 0-3, then 2-3 into 0-1, then 1 into 0 (park(slot) moves the calling
// warp's partial into a slot, gather(slot) adds one to it). Slots 2 and 3 are free from
// the second round on: warps 4-7 stage T there meanwhile. Returns where T is.
template <int K, class Park, class Gather>
__device__ __forceinline__ float* tree_sum_stage_t(Park& park, Gather& gather, float* sRed, const LarfbOperands& p,
                                                   std::int64_t mat, int warp, bool vec_t) {
  float* sT = sRed + 2 * kMaxK * TN;
  if (warp >= 4) park(warp - 4);
  __syncthreads();
  if (warp < 4) gather(warp);
  __syncthreads();
  if (warp == 2 || warp == 3) park(warp - 2);
  stage_t<K>(p.t + mat * p.t_stride, p.t_ld, sT, 4, vec_t);
  __syncthreads();
  if (warp < 2) gather(warp);
  __syncthreads();
  if (warp == 1) park(0);
  __syncthreads();
  if (warp == 0) gather(0);
  return sT;
}

// The rows of W2 = T^T W that warp w forms. With the diet (K = 64): two runs of K / 16,
// k = (K / 16) w + j and k = K - (K / 16) (w + 1) + j, so that with T upper triangular
// (W2 row k sums rows i <= k of W) every warp does the same work, (K / 16) (K / 2 + K / 16)
// products, where rows 8 w .. 8 w + 7 give warp 7 all K of them. Without it (K = 32):
// rows (K / 8) w + q, every i summed.
template <int K>
__device__ __forceinline__ int w2_row(int warp, int q) {
  constexpr int H = K / 16;
  if constexpr (!kDiet<K>) return K / 8 * warp + q;
  else return q < H ? H * warp + q : K - H * (warp + 1) + (q - H);
}

// W[i][c] for column c = `lane`; with Swz it sits at column c ^ ((i / (K / 8)) & 7) of
// its row (see the 3xTF32 kernel).
template <int K, bool Swz>
__device__ __forceinline__ float w_at(const float* sW, int i) {
  const int lane = threadIdx.x & 31;
  return sW[i * TN + (Swz ? lane ^ ((i / (K / 8)) & 7) : lane)];
}

// acc[0 .. n) += T[i][k0 ..] w for a run of n = 2 or 4 columns of T's row trow.
template <int N>
__device__ __forceinline__ void t_run(const float* trow, float w, float* acc) {
  if constexpr (N == 4) {
    const float4 tt = *reinterpret_cast<const float4*>(trow);
    acc[0] = fmaf(tt.x, w, acc[0]);
    acc[1] = fmaf(tt.y, w, acc[1]);
    acc[2] = fmaf(tt.z, w, acc[2]);
    acc[3] = fmaf(tt.w, w, acc[3]);
  } else {
    static_assert(N == 2, "a run is one float2 or float4");
    const float2 tt = *reinterpret_cast<const float2*>(trow);
    acc[0] = fmaf(tt.x, w, acc[0]);
    acc[1] = fmaf(tt.y, w, acc[1]);
  }
}

// w2[q] = sum_i T[i][k] W[i][lane] for k = w2_row(warp, q), in order of i. With the diet,
// T's zeros below the diagonal are skipped, not added.
template <int K, bool Swz = false>
__device__ __forceinline__ void t_times_w(const float* sT, const float* sW, float (&w2)[K / 8]) {
  const int warp = threadIdx.x >> 5;
  constexpr int Q = K / 8, H = K / 16;
#pragma unroll
  for (int q = 0; q < Q; ++q) w2[q] = 0.0f;
  if constexpr (!kDiet<K>) {
#pragma unroll 8
    for (int i = 0; i < K; ++i) {
      const float w = w_at<K, Swz>(sW, i);
      const float* trow = sT + i * K + Q * warp;
#pragma unroll
      for (int q = 0; q < Q; q += 4) t_run<4>(trow + q, w, w2 + q);
    }
  } else {
    const int lo = H * warp, hi = K - H * (warp + 1);
#pragma unroll 4
    for (int i = 0; i < lo + H; ++i) {
      const float w = w_at<K, Swz>(sW, i);
      t_run<H>(sT + i * K + lo, w, w2);
      t_run<H>(sT + i * K + hi, w, w2 + H);
    }
#pragma unroll 4
    for (int i = lo + H; i < hi + H; ++i) t_run<H>(sT + i * K + hi, w_at<K, Swz>(sW, i), w2 + H);
  }
}

// StripeMath::fp32. Phase 1 (W = V^T C) gives lane (kq, cq) = (lane / 4, lane % 4) the K/8 x 8 block
// W[kq K/8 ..][8 cq ..] of its warp's rows; the warps' blocks are then summed in a fixed
// tree. Phase 3 (C -= V W2) gives each thread a 4-row x 8-column block of C per pass of
// 256 rows: rows 32 w + 4 (lane / 4) .., columns 8 (lane % 4) ...
template <Layout L, int K, bool kSplit>
__global__ void __launch_bounds__(NT, 2) larfb_stripe_kernel(const LarfbOperands p, const bool vec4, const bool vec_t,
                                                             const __grid_constant__ StripeMaps) {
  static_assert(K == 32 || K == 64, "K / 8 rows of W per lane, read as float4");
  constexpr int KT = K / 8;
  extern __shared__ __align__(16) float smem[];
  const StripeRows sr = stripe_rows<kSplit>(p.rows);
  float* sC = smem;                            // [rows][TN], swizzled
  float* sRed = sC + sr.cap * TN;              // [kRedSlots][K][TN], swizzled by k / KT; later W2 (slot 0), T (2-3)
  float* sW = sRed + kRedSlots * kMaxK * TN;   // [K][TN], plain
  float* sWsum = sRed + kMaxK * TN;            // kSplit: the cluster's W, in slot 1 (free after the tree sum)
  float* sW2 = sRed;

  const int tiles = (p.ncols + TN - 1) / TN;
  const unsigned job = kSplit ? blockIdx.x / cooperative_groups::this_cluster().num_blocks() : blockIdx.x;
  const std::int64_t mat = job / tiles;
  const int tile = static_cast<int>(job - mat * tiles);
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int cn = min(TN, p.ncols - tile * TN);
  const int rows = sr.rows;
  const MatrixView<L> C = MatrixView<L>{p.a + mat * p.stride, p.ld}.offset(p.j0 + sr.row0, p.col0 + tile * TN);
  const float* vt = p.vt + mat * p.vt_stride + static_cast<std::int64_t>(sr.row0) * p.vt_ld;

  stripe_in(C, sC, rows, cn, kDiet<K> && vec4);
  async_wait();
  __syncthreads();

  // --- phase 1: W = V^T C, warp w over rows w, w + 8, ... -------------------------------
  const int kq = lane >> 2, cq = lane & 3;
  float acc[KT][8];
#pragma unroll
  for (int a = 0; a < KT; ++a)
#pragma unroll
    for (int b = 0; b < 8; ++b) acc[a][b] = 0.0f;
#pragma unroll 2
  for (int r = warp; r < rows; r += kWarps) {
    const float4* vr = reinterpret_cast<const float4*>(vt + static_cast<std::int64_t>(r) * p.vt_ld + kq * KT);
    float v[KT];
#pragma unroll
    for (int q = 0; q < KT / 4; ++q) {
      const float4 f = __ldg(vr + q);
      v[4 * q] = f.x;
      v[4 * q + 1] = f.y;
      v[4 * q + 2] = f.z;
      v[4 * q + 3] = f.w;
    }
    const float4 c0 = ld4(sC, r, 2 * cq), c1 = ld4(sC, r, 2 * cq + 1);
    const float c[8] = {c0.x, c0.y, c0.z, c0.w, c1.x, c1.y, c1.z, c1.w};
#pragma unroll
    for (int a = 0; a < KT; ++a)
#pragma unroll
      for (int b = 0; b < 8; ++b) acc[a][b] = fmaf(v[a], c[b], acc[a][b]);
  }

  // Tree sum over the warps, fixed order: (w, w + 4), then (w, w + 2), then (0, 1).
  // A partial's row k = kq KT + a is swizzled by kq, so a store of one float4 group by
  // the 32 lanes spreads over all banks.
  auto park = [&](int slot) {
    float* s = sRed + slot * kMaxK * TN;
#pragma unroll
    for (int a = 0; a < KT; ++a) {
      const int k = kq * KT + a;
      float* row = s + k * TN;
      *reinterpret_cast<float4*>(row + ((((2 * cq) ^ kq) & 7) << 2)) =
          make_float4(acc[a][0], acc[a][1], acc[a][2], acc[a][3]);
      *reinterpret_cast<float4*>(row + ((((2 * cq + 1) ^ kq) & 7) << 2)) =
          make_float4(acc[a][4], acc[a][5], acc[a][6], acc[a][7]);
    }
  };
  auto gather = [&](int slot) {
    const float* s = sRed + slot * kMaxK * TN;
#pragma unroll
    for (int a = 0; a < KT; ++a) {
      const int k = kq * KT + a;
      const float* row = s + k * TN;
      const float4 x = *reinterpret_cast<const float4*>(row + ((((2 * cq) ^ kq) & 7) << 2));
      const float4 y = *reinterpret_cast<const float4*>(row + ((((2 * cq + 1) ^ kq) & 7) << 2));
      acc[a][0] += x.x; acc[a][1] += x.y; acc[a][2] += x.z; acc[a][3] += x.w;
      acc[a][4] += y.x; acc[a][5] += y.y; acc[a][6] += y.z; acc[a][7] += y.w;
    }
  };
  float* sT = tree_sum_stage_t<K>(park, gather, sRed, p, mat, warp, kDiet<K> && vec_t);
  if (warp == 0)
#pragma unroll
    for (int a = 0; a < KT; ++a)
#pragma unroll
      for (int b = 0; b < 8; ++b) sW[(kq * KT + a) * TN + cq * 8 + b] = acc[a][b];
  const float* sWall = cluster_sum_w<kSplit, K>(sW, sWsum);

  // --- phase 2: W2 = T^T W: lane = column, rows w2_row(warp, 0 .. K / 8) --------------------
  {
    float w2[K / 8];
    t_times_w<K>(sT, sWall, w2);
#pragma unroll
    for (int q = 0; q < K / 8; ++q) sW2[swz(w2_row<K>(warp, q), lane)] = w2[q];
  }
  __syncthreads();

  // --- phase 3: C -= V W2 ----------------------------------------------------------------
  const int rq = lane >> 2;
  for (int r0 = warp * 32 + rq * 4; r0 < rows; r0 += NT) {
    float d[4][8];
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
      for (int b = 0; b < 8; ++b) d[i][b] = 0.0f;
#pragma unroll 4
    for (int k0 = 0; k0 < K; k0 += 4) {
      float v[4][4];
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        float4 f = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        if (r0 + i < rows)
          f = __ldg(reinterpret_cast<const float4*>(vt + static_cast<std::int64_t>(r0 + i) * p.vt_ld + k0));
        v[i][0] = f.x;
        v[i][1] = f.y;
        v[i][2] = f.z;
        v[i][3] = f.w;
      }
#pragma unroll
      for (int kk = 0; kk < 4; ++kk) {
        const float4 x = ld4(sW2, k0 + kk, 2 * cq), y = ld4(sW2, k0 + kk, 2 * cq + 1);
        const float w[8] = {x.x, x.y, x.z, x.w, y.x, y.y, y.z, y.w};
#pragma unroll
        for (int i = 0; i < 4; ++i)
#pragma unroll
          for (int b = 0; b < 8; ++b) d[i][b] = fmaf(v[i][kk], w[b], d[i][b]);
      }
    }
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int r = r0 + i;
      if (r >= rows) break;
      float4 x = ld4(sC, r, 2 * cq), y = ld4(sC, r, 2 * cq + 1);
      x.x -= d[i][0]; x.y -= d[i][1]; x.z -= d[i][2]; x.w -= d[i][3];
      y.x -= d[i][4]; y.y -= d[i][5]; y.z -= d[i][6]; y.w -= d[i][7];
      st4(sC, r, 2 * cq, x);
      st4(sC, r, 2 * cq + 1, y);
    }
  }
  __syncthreads();

  stripe_out(C, sC, rows, cn, kDiet<K> && vec4);
  cluster_exit<kSplit>();
}

// 16 bytes of shared memory at a shared-window address.
[[maybe_unused]] __device__ __forceinline__ float4 lds128(unsigned a) {
  float4 v;
  asm volatile("ld.shared.v4.f32 {%0, %1, %2, %3}, [%4];\n" : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "r"(a) : "memory");
  return v;
}

// warpgroup_barrier (wgmma_tf32.cuh) reserves all 16 barriers, which allows 4 CTAs per SM,
// above the 2 that registers and shared memory allow.

// Phase 1's V stage: float4 group q of row r (r < 8) sits at q ^ v1_swizzle(r), so that a
// quarter warp's fragment reads (rows t and t + 4, groups KL/4 g ..) fall in distinct banks.
template <int K>
__device__ __forceinline__ int v1_swizzle(int r) {
  return K == 64 ? 4 * (r & 1) + ((r >> 1) & 1) : 2 * (r & 3);
}

// The same three phases with the two products on tensor cores in 3xTF32 (mma_tf32.cuh:
// FP32-grade). Fragment rows and columns are permuted so that each lane reads its V and C
// values as contiguous float4 / float2 runs (g = lane / 4, t = lane % 4, KL = K / 8,
// KQ = K / 4):
//   phase 1, W = V^T C over 8-row chunks of warp w's rows: m-tile mt row g (+8) is
//     k = KL g + 2 mt (+1), n-tile nt column g is c = 4 g + nt;
//   phase 3, C -= V W2 on 32-row x 32-column warp tiles: k-step ks column t (+4) is
//     k = KQ t + 2 ks (+1); n-tile nt column g is c = 8 nt + g.
// -W2 is stored split (big, small) in the order phase 3 reads its B fragments. Built for
// sm_90a, phase 3 of K = 64 runs on wgmma instead (64-row warpgroup tiles, the same k
// order, B as core matrices: wgmma_tf32.cuh); measured equal in row-major and 4% faster
// overall in column-major (docs/perf-notes.md v16). K = 64 stripes are loaded a chunk of
// rows per warp ahead of phase 1; phase 3 writes C straight to global memory.
// kTma (row-major, where the host's tensor maps encode; one CTA or a cluster): each
// chunk's V and stripe rows arrive by two (K = 32) or three (K = 64) TMA loads instead of
// per-thread cp.async, in the TMA's 128-byte swizzle (grp<true>), with the lane-to-row and
// lane-to-k pairings of phase 1 changed to read it without bank conflicts (measured 2-4.6%
// faster overall, v17); built for sm_90a, phase 3 of K = 64 then takes the V of each
// warpgroup's tiles after its first by TMA too, one tile ahead (512x640 another -2.8%).
template <Layout L, int K, bool kSplit, bool kTma>
__global__ void __launch_bounds__(NT, 2) larfb_stripe_tc_kernel(const LarfbOperands p, const bool vec4, const bool vec_t,
                                                                const __grid_constant__ StripeMaps maps) {
  static_assert(K == 32 || K == 64, "whole m16 tiles of W");
  static_assert(!kTma || L == Layout::row_major, "TMA loads: row-major");
  constexpr int MT = K / 16, KL = K / 8, KQ = K / 4, KS = K / 8;
  extern __shared__ __align__(16) float smem[];
  const StripeRows sr = stripe_rows<kSplit>(p.rows);
  // kTma: the stripe and the V stages start 1024-byte aligned (the 128-byte swizzle's
  // period), the stripe rounded up to whole 8-row boxes (kStripeTmaExtra bytes in all).
  float* sC = smem + (kTma ? ((1024u - (smem_address(smem) & 1023u)) & 1023u) / sizeof(float) : 0);  // [rows][TN], swizzled
  const int cap = kTma ? (sr.cap + 7) / 8 * 8 : sr.cap;
  float* sRed = sC + cap * TN;                       // [kRedSlots][MT * 64][32] W partials; later W2, T (2-3)
  float* sW = sRed + kRedSlots * kMaxK * TN;         // [K][TN], plain
  float* sWsum = sRed + kMaxK * TN;                  // kSplit: the cluster's W, in slot 1 (free after the tree sum)
  // Phase 3 on wgmma (sm_90a, K = 64): B as 8 core matrices per k-step (wgmma_tf32.cuh)
  constexpr bool kWgmma = kDiet<K> && BATCHQR_HAVE_WGMMA;
  constexpr bool kTma3 = kTma && kWgmma;  // phase 3's V tiles by TMA too
  constexpr int kWgB = 8 * 32;                                   // floats of B per k-step
  std::uint32_t* sBb = reinterpret_cast<std::uint32_t*>(sRed);  // [KS][4][32][2] W2 big (over sRed)
  std::uint32_t* sBs = sBb + KS * 4 * 32 * 2;                   // W2 small

  const int tiles = (p.ncols + TN - 1) / TN;
  const unsigned job = kSplit ? blockIdx.x / cooperative_groups::this_cluster().num_blocks() : blockIdx.x;
  const std::int64_t mat = job / tiles;
  const int tile = static_cast<int>(job - mat * tiles);
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int g = lane >> 2, t = lane & 3;
  const int cn = min(TN, p.ncols - tile * TN);
  const int rows = sr.rows;
  const MatrixView<L> C = MatrixView<L>{p.a + mat * p.stride, p.ld}.offset(p.j0 + sr.row0, p.col0 + tile * TN);
  const float* vt = p.vt + mat * p.vt_stride + static_cast<std::int64_t>(sr.row0) * p.vt_ld;
  // Phase 3's row pairs as float2 (row-major, 8-byte aligned)
  const bool vec2 = L == Layout::row_major && rows_aligned<8>(&C(0, 0), p.ld);

  // --- phase 1: W = V^T C ----------------------------------------------------------------
  // K = 64: each warp loads the stripe rows of its own chunks (rows 8 w .., + 64 per
  // chunk), one chunk ahead with its V, so that the stripe's load overlaps phase 1 instead
  // of preceding it; the barrier after phase 1 makes every row visible to phase 3. K = 32
  // loads the stripe first (measured 1-3% faster there, docs/perf-notes.md v16). The TMA
  // form (below) loads every stripe a chunk per warp.
  float acc[MT][4][4];
#pragma unroll
  for (int a = 0; a < MT; ++a)
#pragma unroll
    for (int b = 0; b < 4; ++b)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[a][b][e] = 0.0f;
  if constexpr (kTma) {
    // kTma: per warp and chunk, one elected lane loads V's 8 rows (K / 32 boxes of 32
    // columns) and the stripe's 8 rows (one box) with TMA, completing on the stage's
    // mbarrier, one chunk ahead. Lane (g, t) takes rows 2t + h of the chunk (k index t +
    // 4h of the MMA) and, of V, columns 4g .. 4g + 3 of each box (m-tile mt row g is k =
    // 4g + mt; row g + 8 is k = 32 + 4g + mt for K = 64, 4g + 2 + mt for K = 32), so that
    // its reads of the swizzled boxes fall in distinct banks.
    std::uint64_t* bar = reinterpret_cast<std::uint64_t*>(sW + kMaxK * TN) + 2 * warp;
    float* vstage = sRed + warp * 2 * 8 * K;  // two stages of 2 KB, 1024-byte aligned
    if (lane == 0) {
      mbarrier_init(bar, 1);
      mbarrier_init(bar + 1, 1);
      if (warp < 2) mbarrier_init(bar - 2 * warp + 2 * kWarps + warp, 1);  // phase 3's, one per warpgroup
      mbarrier_init_fence();
    }
    __syncwarp();
    const int ccol = p.col0 + tile * TN, m32 = static_cast<int>(mat);
    auto issue = [&](int r0, int st) {
      if (lane == 0) {
        fence_proxy_async_shared();  // this warp's reads of the stage (two chunks ago) come first
        mbarrier_arrive_expect_tx(bar + st, (8 * K + 8 * TN) * sizeof(float));
        float* vdst = vstage + st * 8 * K;
        // rows past this CTA's are past the matrix (only a cluster's last CTA stops short
        // of its cap, a multiple of 32): zeros
        tma_load_3d(vdst, &maps.v, 0, sr.row0 + r0, m32, bar + st);
        if constexpr (K == 64) tma_load_3d(vdst + 8 * 32, &maps.v, 32, sr.row0 + r0, m32, bar + st);
        tma_load_3d(sC + r0 * TN, &maps.c, ccol, p.j0 + sr.row0 + r0, m32, bar + st);
      }
    };
    if (8 * warp < rows) issue(8 * warp, 0);
    int chunk = 0;
    for (int r0 = 8 * warp; r0 < rows; r0 += 8 * kWarps, ++chunk) {
      if (r0 + 8 * kWarps < rows) issue(r0 + 8 * kWarps, (chunk + 1) & 1);
      mbarrier_wait(bar + (chunk & 1), (chunk >> 1) & 1);
      const float* vs = vstage + (chunk & 1) * 8 * K;
      float va[2][KL], cb[2][4];
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int rho = 2 * t + h, off = rho * 32 + ((g ^ rho) << 2);  // rows past the stripe: zeros (TMA)
#pragma unroll
        for (int bx = 0; bx < K / 32; ++bx) {
          const float4 f = *reinterpret_cast<const float4*>(vs + bx * 8 * 32 + off);
          va[h][4 * bx] = f.x;
          va[h][4 * bx + 1] = f.y;
          va[h][4 * bx + 2] = f.z;
          va[h][4 * bx + 3] = f.w;
        }
        const float4 c = *reinterpret_cast<const float4*>(sC + r0 * TN + off);
        cb[h][0] = c.x; cb[h][1] = c.y; cb[h][2] = c.z; cb[h][3] = c.w;
      }
      chunk_product<true>(acc, va, cb);
      __syncwarp();  // the stage is refilled by the chunk after next
    }
  } else {
  constexpr bool kChunkIn = kDiet<K>;
  if constexpr (!kChunkIn) {
    stripe_in(C, sC, rows, cn, false);
    async_wait();
    __syncthreads();
  }
  auto chunk_in = [&](int r0) {
    if constexpr (kChunkIn) stripe_chunk_in(C, sC, r0, rows, cn, vec4);
  };
  // V reaches the fragments through a warp-private two-stage buffer in sRed (free until
  // the tree sum), one chunk of the warp's 8 rows ahead (cp.async), instead of straight
  // from L2 into the registers that the next MMAs wait on.
  float* vbuf = sRed + warp * 2 * 8 * K;
  static_assert(kWarps * 2 * 8 * K <= kRedSlots * kMaxK * TN, "the V stages fit sRed");
  // The copies' per-lane address parts are the same in every chunk (chunks advance by 64
  // rows; the swizzles repeat every 8): computed once, so that a chunk's copies cost a
  // pointer step each instead of their address arithmetic.
  constexpr int G = K / 4, VJ = 8 * G / 32, VR = 32 / G;  // float4 groups per V row, copies per lane, rows per round
  int vdst[VJ];
#pragma unroll
  for (int j = 0; j < VJ; ++j) {
    const int r = lane / G + VR * j;
    vdst[j] = r * K + 4 * ((lane % G) ^ v1_swizzle<K>(r));
  }
  const std::int64_t vstep = static_cast<std::int64_t>(VR) * p.vt_ld;
  const float* vsrc0 = vt + static_cast<std::int64_t>(8 * warp + lane / G) * p.vt_ld + 4 * (lane % G);
  auto stage_v1 = [&](int r0, float* buf) {
    const float* src = vsrc0 + static_cast<std::int64_t>(r0 - 8 * warp) * p.vt_ld;
#pragma unroll
    for (int j = 0; j < VJ; ++j) {
      float* dst = buf + vdst[j];
      if (r0 + lane / G + VR * j < rows) async_copy16(dst, src + j * vstep);
      else *reinterpret_cast<float4*>(dst) = make_float4(0.0f, 0.0f, 0.0f, 0.0f);  // K-dim padding: zeros
    }
  };
  // Row-major stripes of whole float4 groups: this lane's rows r0 + lane / 8 (+4), group
  // lane % 8, the same way (stripe_chunk_in otherwise).
  const int crow = lane >> 3, cq = lane & 7;
  const int cdst = crow * TN + (grp(crow, cq) << 2);  // grp(r, .) depends on r % 4 only
  const bool c_fast = L == Layout::row_major && vec4 && 4 * cq + 4 <= cn;
  auto chunk_fast = [&](int r0) {
    if constexpr (L == Layout::row_major) {
      const float* src = &C(r0 + crow, 4 * cq);
#pragma unroll
      for (int h = 0; h < 2; ++h)
        if (r0 + crow + 4 * h < rows) async_copy16(sC + r0 * TN + cdst + 4 * h * TN, src + 4 * h * p.ld);
    }
  };
  auto chunk_copy = [&](int r0) {
    if constexpr (kChunkIn) {
      if (c_fast) chunk_fast(r0);
      else chunk_in(r0);
    }
  };
  if (8 * warp < rows) {
    stage_v1(8 * warp, vbuf);
    chunk_copy(8 * warp);
  }
  async_commit();
  int chunk = 0;
  for (int r0 = 8 * warp; r0 < rows; r0 += 8 * kWarps, ++chunk) {
    if (r0 + 8 * kWarps < rows) {
      stage_v1(r0 + 8 * kWarps, vbuf + ((chunk + 1) & 1) * 8 * K);
      chunk_copy(r0 + 8 * kWarps);
    }
    async_commit();
    async_wait_group<1>();
    __syncwarp();
    const float* vs = vbuf + (chunk & 1) * 8 * K;
    float va[2][KL], cb[2][4];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int r = r0 + t + 4 * h;
      const bool in = r < rows;
#pragma unroll
      for (int q = 0; q < KL / 4; ++q) {
        const float4 f = *reinterpret_cast<const float4*>(
            vs + (t + 4 * h) * K + 4 * ((KL / 4 * g + q) ^ v1_swizzle<K>(t + 4 * h)));
        va[h][4 * q] = f.x;
        va[h][4 * q + 1] = f.y;
        va[h][4 * q + 2] = f.z;
        va[h][4 * q + 3] = f.w;
      }
      const float4 f = in ? ld4(sC, r, g) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
      cb[h][0] = f.x;
      cb[h][1] = f.y;
      cb[h][2] = f.z;
      cb[h][3] = f.w;
    }
    chunk_product<false>(acc, va, cb);
    __syncwarp();  // the stage is refilled by the next chunk's copies
  }
  }  // kTma
  async_wait();
  __syncthreads();  // sRed: from stage buffers to the tree sum's slots

  // Tree sum over the warps in a fixed order, fragments stored lane-contiguous.
  constexpr int kVals = MT * 16;
  auto park = [&](int slot) {
    float* s = sRed + slot * kMaxK * TN;
#pragma unroll
    for (int a = 0; a < MT; ++a)
#pragma unroll
      for (int b = 0; b < 4; ++b)
        *reinterpret_cast<float4*>(s + ((a * 4 + b) * 32 + lane) * 4) =
            make_float4(acc[a][b][0], acc[a][b][1], acc[a][b][2], acc[a][b][3]);
  };
  auto gather = [&](int slot) {
    const float* s = sRed + slot * kMaxK * TN;
#pragma unroll
    for (int a = 0; a < MT; ++a)
#pragma unroll
      for (int b = 0; b < 4; ++b) {
        const float4 x = *reinterpret_cast<const float4*>(s + ((a * 4 + b) * 32 + lane) * 4);
        acc[a][b][0] += x.x;
        acc[a][b][1] += x.y;
        acc[a][b][2] += x.z;
        acc[a][b][3] += x.w;
      }
  };
  static_assert(kVals * 32 <= kMaxK * TN, "a warp's partial fits a slot");
  float* sT = tree_sum_stage_t<K>(park, gather, sRed, p, mat, warp, kDiet<K> && vec_t);
  if (warp == 0)
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int nt = 0; nt < 4; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int c = 4 * (2 * t + (e & 1)) + nt;
          if constexpr (kTma) {
            const int k = (e >> 1) ? (K == 64 ? 32 + 4 * g + mt : 4 * g + 2 + mt) : 4 * g + mt;
            sW[k * TN + (c ^ ((k / KL) & 7))] = acc[mt][nt][e];  // 2-way conflicts, once per CTA
          } else {
            const int k = KL * g + 2 * mt + (e >> 1);
            sW[k * TN + (c ^ g)] = acc[mt][nt][e];  // g = (k / KL) & 7: conflict-free stores
          }
        }
  const float* sWall = cluster_sum_w<kSplit, K>(sW, sWsum);

  // --- phase 2: W2 = T^T W, stored negated and split as phase 3's B fragments ------------------
  {
    float w2[K / 8];
    t_times_w<K, true>(sT, sWall, w2);
    // K = 64: W2's small parts (sBs) go to slot 1, where a cluster's W (sWall) is read.
    if constexpr (kSplit && K == 64) __syncthreads();
#pragma unroll
    for (int q = 0; q < K / 8; ++q) {
      const int k = w2_row<K>(warp, q);
      // k-step ks, column tt (+4 for h = 1); kTma3: k = 32 (ks / 4) + 8 tt + 4 ((ks / 2) & 1)
      // + 2 (ks & 1) + h (phase 3's V reads of the swizzled TMA tiles), else KQ tt + 2 ks + h
      int tt, ks, h;
      if constexpr (kTma3) {
        const int r = k & 31, e = k & 7;
        tt = r >> 3;
        ks = 4 * (k >> 5) + 2 * (e >> 2) + ((e & 3) >> 1);
        h = e & 1;
      } else {
        tt = k / KQ;
        ks = (k % KQ) >> 1;
        h = k & 1;
      }
      int at;
      if constexpr (kWgmma) {  // k-step ks, k index kl = tt + 4 h: core (n / 8, kl / 4) of wgmma_tf32.cuh
        const int kl = tt + 4 * h;
        at = ks * kWgB + (lane >> 3) * 64 + (kl >> 2) * 32 + (lane & 7) * 4 + (kl & 3);
      } else {
        at = ((ks * 4 + (lane >> 3)) * 32 + 4 * (lane & 7) + tt) * 2 + h;
      }
      split_tf32(-w2[q], sBb[at], sBs[at]);  // -W2, so that the accumulators (C) become C - V W2
    }
  }
  if constexpr (kWgmma) fence_proxy_async_shared();  // B is read by wgmma (the async proxy)
  __syncthreads();

  // --- phase 3: C -= V W2 ----------------------------------------------------------------
  if constexpr (kWgmma) {
#if BATCHQR_HAVE_WGMMA
    // Warpgroup wg on 64-row tiles R = 64 wg .. (+128 per pass), warp wr on rows
    // R + 16 wr + g (+8): 3 wgmma per k-step, all 24 issued before one wait; V's rows in
    // float4 runs as in the mma.sync form below.
    const int wr = warp & 3, wg = warp >> 2;
    // kTma3: the V of a warpgroup's tiles after its first arrives by TMA, one tile ahead,
    // as two 32-column boxes of 64 rows: k 0-31 into T's slot (2 + wg) of sRed, free in
    // phase 3, k 32-63 into the stripe rows of the warpgroup's first tile, free once every
    // thread of the warpgroup has read them (a warpgroup barrier). A thread reads its k
    // runs 32 (j / 2) + 4 (2t + (j & 1)) .. + 3 (j = 0..3): float4 groups 2t + (j & 1) of
    // rows g (+8) of the swizzled boxes, distinct banks in every quarter warp.
    float* vbox[2] = {sRed + (2 + wg) * kMaxK * TN, sC + 64 * wg * TN};
    // this thread's reads of them: shared-window addresses (32-bit), box 1 at a fixed distance
    const unsigned vread = smem_address(vbox[0]) + (16 * wr + g) * 32 * sizeof(float);
    const unsigned vdist = smem_address(vbox[1]) - smem_address(vbox[0]);
    std::uint64_t* vbar = reinterpret_cast<std::uint64_t*>(sW + kMaxK * TN) + 2 * kWarps + wg;
    const bool lead = (tid & 127) == 0;
    auto issue_v = [&](int Rn, int box) {  // one box of the tile at rows Rn, by the warpgroup's first thread
      if constexpr (kTma3) {
        if (lead) {
          fence_proxy_async_shared();
          if (box == 0) mbarrier_arrive_expect_tx(vbar, 2 * 64 * 32 * sizeof(float));
          tma_load_3d(vbox[box], &maps.v64, 32 * box, sr.row0 + Rn, static_cast<int>(mat), vbar);
        }
      }
    };
    if (64 * wg + 128 < rows) issue_v(64 * wg + 128, 0);  // T's slot is free since the barrier above
    // One 64-row tile; kFirst (the warpgroup's first) peeled off, so that no branch on the
    // tile count precedes the wgmma (ptxas serializes wgmma after divergent code).
    auto tile_step = [&](auto first_c, const int R, const int tile) {
      [[maybe_unused]] constexpr bool kFirst = decltype(first_c)::value;
      float d[16];
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        // rows past the stripe read its last row and take zeros, without a branch: wgmma
        // wants the warpgroup converged (ptxas serializes it after divergent code)
        const int r = R + 16 * wr + g + 8 * h, rc = min(r, rows - 1);
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          const float2 x = *reinterpret_cast<const float2*>(sC + swz<kTma>(rc, 8 * j + 2 * t));
          d[4 * j + 2 * h] = r < rows ? x.x : 0.0f;
          d[4 * j + 2 * h + 1] = r < rows ? x.y : 0.0f;
        }
      }
      [[maybe_unused]] const bool next = R + 128 < rows;  // the same in the whole warpgroup
      if constexpr (kTma3) {
        if constexpr (kFirst) {
          warpgroup_barrier(wg);  // its first tile's stripe rows are read
          if (next) issue_v(R + 128, 1);
        }
        if constexpr (!kFirst) mbarrier_wait(vbar, (tile - 1) & 1);
      }
      std::uint32_t ab[KS][4], as[KS][4];
#pragma unroll
      for (int k2 = 0; k2 < KS; k2 += 2) {
        float4 f[2];
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int r = R + 16 * wr + g + 8 * h, rc = min(r, rows - 1);
          if constexpr (kTma3) {
            const int j = k2 / 2;
            if constexpr (!kFirst)
              f[h] = lds128(vread + (j / 2) * vdist + 8 * h * 32 * sizeof(float) + (((2 * t + (j & 1)) ^ g) << 4));
            else
              f[h] = __ldg(reinterpret_cast<const float4*>(vt + static_cast<std::int64_t>(rc) * p.vt_ld + 32 * (j / 2) +
                                                           4 * (2 * t + (j & 1))));
          } else {
            f[h] = __ldg(reinterpret_cast<const float4*>(vt + static_cast<std::int64_t>(rc) * p.vt_ld + KQ * t + 2 * k2));
          }
          if (r >= rows) f[h] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        }
        split_tf32(f[0].x, ab[k2][0], as[k2][0]);
        split_tf32(f[1].x, ab[k2][1], as[k2][1]);
        split_tf32(f[0].y, ab[k2][2], as[k2][2]);
        split_tf32(f[1].y, ab[k2][3], as[k2][3]);
        split_tf32(f[0].z, ab[k2 + 1][0], as[k2 + 1][0]);
        split_tf32(f[1].z, ab[k2 + 1][1], as[k2 + 1][1]);
        split_tf32(f[0].w, ab[k2 + 1][2], as[k2 + 1][2]);
        split_tf32(f[1].w, ab[k2 + 1][3], as[k2 + 1][3]);
      }
      if constexpr (kTma3) {
        if constexpr (!kFirst) {
          warpgroup_barrier(wg);  // every thread's reads of this tile's V are done
          if (next) {
            issue_v(R + 128, 0);
            issue_v(R + 128, 1);
          }
        }
      }
      wgmma_pin(ab);
      wgmma_pin(as);
      wgmma_pin(d);
      wgmma_fence();
#pragma unroll
      for (int ks = 0; ks < KS; ++ks) {
        const std::uint64_t bb = wgmma_desc(sBb + ks * kWgB, 128, 256), bs = wgmma_desc(sBs + ks * kWgB, 128, 256);
        wgmma_m64n32k8_tf32(d, as[ks], bb);  // small products first, as mma_3xtf32
        wgmma_m64n32k8_tf32(d, ab[ks], bs);
        wgmma_m64n32k8_tf32(d, ab[ks], bb);
      }
      wgmma_commit();
      wgmma_wait_all(d);
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int r = R + 16 * wr + g + 8 * h;
        if (r >= rows) continue;
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          const int c = 8 * j + 2 * t;
          if (vec2 && c + 1 < cn) {
            *reinterpret_cast<float2*>(&C(r, c)) = make_float2(d[4 * j + 2 * h], d[4 * j + 2 * h + 1]);
          } else {
            if (c < cn) C(r, c) = d[4 * j + 2 * h];
            if (c + 1 < cn) C(r, c + 1) = d[4 * j + 2 * h + 1];
          }
        }
      }
    };
    if (64 * wg < rows) tile_step(std::true_type{}, 64 * wg, 0);
    for (int R = 64 * wg + 128, tile = 1; R < rows; R += 128, ++tile) tile_step(std::false_type{}, R, tile);
#endif
  } else {
    // mma.sync: warp w on rows R = 32 w .. (+256 per pass)
    for (int R = 32 * warp; R < rows; R += NT) {
      float d[2][4][4];
#pragma unroll
      for (int mt = 0; mt < 2; ++mt)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int r = R + 16 * mt + g + 8 * h;
#pragma unroll
          for (int nt = 0; nt < 4; ++nt) {
            float2 x = make_float2(0.0f, 0.0f);
            if (r < rows) x = *reinterpret_cast<const float2*>(sC + swz<kTma>(r, 8 * nt + 2 * t));
            d[mt][nt][2 * h] = x.x;
            d[mt][nt][2 * h + 1] = x.y;
          }
        }
      if constexpr (!kDiet<K>) {
#pragma unroll 2
        for (int ks = 0; ks < KS; ++ks) {
          std::uint32_t ab[2][4], as[2][4];
#pragma unroll
          for (int mt = 0; mt < 2; ++mt) {
            float2 v[2];
#pragma unroll
            for (int h = 0; h < 2; ++h) {
              const int r = R + 16 * mt + g + 8 * h;
              v[h] = r < rows ? __ldg(reinterpret_cast<const float2*>(vt + static_cast<std::int64_t>(r) * p.vt_ld +
                                                                      KQ * t + 2 * ks))
                              : make_float2(0.0f, 0.0f);
            }
            split_tf32(v[0].x, ab[mt][0], as[mt][0]);
            split_tf32(v[1].x, ab[mt][1], as[mt][1]);
            split_tf32(v[0].y, ab[mt][2], as[mt][2]);
            split_tf32(v[1].y, ab[mt][3], as[mt][3]);
          }
#pragma unroll
          for (int nt = 0; nt < 4; ++nt) {
            const int at = ((ks * 4 + nt) * 32 + lane) * 2;
            const uint2 xb = *reinterpret_cast<const uint2*>(sBb + at);
            const uint2 xs = *reinterpret_cast<const uint2*>(sBs + at);
            const std::uint32_t bb[2] = {xb.x, xb.y}, bs[2] = {xs.x, xs.y};
#pragma unroll
            for (int mt = 0; mt < 2; ++mt) mma_3xtf32(d[mt][nt], ab[mt], as[mt], bb, bs);
          }
        }
      } else {
        // V's rows in float4 runs, each feeding two k-steps: a lane's 16 bytes of a row are
        // then one half sector, not two quarters fetched by different k-steps.
#pragma unroll 1
        for (int k2 = 0; k2 < KS; k2 += 2) {
          float4 v[2][2];
#pragma unroll
          for (int mt = 0; mt < 2; ++mt)
#pragma unroll
            for (int h = 0; h < 2; ++h) {
              const int r = R + 16 * mt + g + 8 * h;
              v[mt][h] = r < rows ? __ldg(reinterpret_cast<const float4*>(vt + static_cast<std::int64_t>(r) * p.vt_ld +
                                                                          KQ * t + 2 * k2))
                                  : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            }
#pragma unroll
          for (int kk = 0; kk < 2; ++kk) {
            const int ks = k2 + kk;
            std::uint32_t ab[2][4], as[2][4];
#pragma unroll
            for (int mt = 0; mt < 2; ++mt) {
              const float v0 = kk ? v[mt][0].z : v[mt][0].x, v0b = kk ? v[mt][0].w : v[mt][0].y;
              const float v1 = kk ? v[mt][1].z : v[mt][1].x, v1b = kk ? v[mt][1].w : v[mt][1].y;
              split_tf32(v0, ab[mt][0], as[mt][0]);
              split_tf32(v1, ab[mt][1], as[mt][1]);
              split_tf32(v0b, ab[mt][2], as[mt][2]);
              split_tf32(v1b, ab[mt][3], as[mt][3]);
            }
#pragma unroll
            for (int nt = 0; nt < 4; ++nt) {
              const int at = ((ks * 4 + nt) * 32 + lane) * 2;
              const uint2 xb = *reinterpret_cast<const uint2*>(sBb + at);
              const uint2 xs = *reinterpret_cast<const uint2*>(sBs + at);
              const std::uint32_t bb[2] = {xb.x, xb.y}, bs[2] = {xs.x, xs.y};
#pragma unroll
              for (int mt = 0; mt < 2; ++mt) mma_3xtf32(d[mt][nt], ab[mt], as[mt], bb, bs);
            }
          }
        }
      }
      // Straight to global memory (no barrier, no pass back through shared memory): a
      // quarter warp writes 32 contiguous bytes of a row (row-major) per instruction.
#pragma unroll
      for (int mt = 0; mt < 2; ++mt)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int r = R + 16 * mt + g + 8 * h;
          if (r >= rows) continue;
#pragma unroll
          for (int nt = 0; nt < 4; ++nt) {
            const int c = 8 * nt + 2 * t;
            if (vec2 && c + 1 < cn) {
              *reinterpret_cast<float2*>(&C(r, c)) = make_float2(d[mt][nt][2 * h], d[mt][nt][2 * h + 1]);
            } else {
              if (c < cn) C(r, c) = d[mt][nt][2 * h];
              if (c + 1 < cn) C(r, c + 1) = d[mt][nt][2 * h + 1];
            }
          }
        }
    }
  }
  cluster_exit<kSplit>();
}

// The TMA form exists for row-major stripes in 3xTF32.
template <Layout L, int K, StripeMath M>
constexpr bool kHasTma = M == StripeMath::tf32x3 && L == Layout::row_major;

template <Layout L, int K, StripeMath M, bool kSplit, bool kTma = false>
constexpr auto kernel() {
  if constexpr (M == StripeMath::tf32x3) return larfb_stripe_tc_kernel<L, K, kSplit, kTma && kHasTma<L, K, M>>;
  else return larfb_stripe_kernel<L, K, kSplit>;
}

template <Layout L, int K, StripeMath M>
Status launch(const LarfbOperands& p, std::int64_t batch, cudaStream_t stream, int split_rows) {
  const int S = larfb_stripe_cluster(p.rows, split_rows);
  const std::size_t smem = larfb_stripe_smem_bytes(p.rows, split_rows);
  const unsigned grid = static_cast<unsigned>(batch * ((p.ncols + TN - 1) / TN) * S);
  // Row-major stripes move as float4 groups where every row's group starts 16-byte aligned.
  const bool vec4 = kDiet<K> && L == Layout::row_major && batch_rows_aligned<16>(p.a, p.ld, p.stride) && p.col0 % 4 == 0;
  const bool vec_t = kDiet<K> && batch_rows_aligned<16>(p.t, p.t_ld, p.t_stride);
  // The TMA form where its tensor maps encode (16-byte aligned matrices and rows) and the
  // stripes start on a 16-byte boundary: admitting other first columns (257 x 300, an
  // update from column 257) gave an illegal instruction at the stripe's box load.
  StripeMaps maps{};
  bool tma = false;
  if constexpr (kHasTma<L, K, M>) {
    const bool aligned = batch_rows_aligned<16>(p.a, p.ld, p.stride) && p.col0 % 4 == 0;
    const auto b = static_cast<std::uint64_t>(batch);
    const auto v_ld = static_cast<std::uint64_t>(p.vt_ld) * sizeof(float);
    const auto v_stride = static_cast<std::uint64_t>(p.vt_stride) * sizeof(float);
    // The 64-row V boxes serve phase 3 on wgmma only (K = 64): not encoded for K = 32.
    tma = aligned && encode_tensor_map_3d(&maps.v, p.vt, K, static_cast<std::uint64_t>(p.rows), b, v_ld, v_stride, 32, 8) &&
          (!kDiet<K> ||
           encode_tensor_map_3d(&maps.v64, p.vt, K, static_cast<std::uint64_t>(p.rows), b, v_ld, v_stride, 32, 64)) &&
          encode_tensor_map_3d(&maps.c, p.a, static_cast<std::uint64_t>(p.col0 + p.ncols),
                               static_cast<std::uint64_t>(p.j0 + p.rows), b, static_cast<std::uint64_t>(p.ld) * sizeof(float),
                               static_cast<std::uint64_t>(p.stride) * sizeof(float), TN, 8);
  }
  const std::size_t bytes = tma ? larfb_stripe_max_smem_bytes(p.rows, split_rows) : smem;
  if (S == 1) {
    if (tma) kernel<L, K, M, false, true>()<<<grid, NT, bytes, stream>>>(p, vec4, vec_t, maps);
    else kernel<L, K, M, false>()<<<grid, NT, bytes, stream>>>(p, vec4, vec_t, maps);
    BATCHQR_CUDA_TRY(cudaGetLastError());
    return Status::success;
  }
  const ClusterLaunch l(dim3(grid), dim3(NT), bytes, stream, S);
  if (tma) BATCHQR_CUDA_TRY(cudaLaunchKernelEx(&l.cfg, kernel<L, K, M, true, true>(), p, vec4, vec_t, maps));
  else BATCHQR_CUDA_TRY(cudaLaunchKernelEx(&l.cfg, kernel<L, K, M, true>(), p, vec4, vec_t, maps));
  return Status::success;
}

template <Layout L, StripeMath M>
Status launch_k(const LarfbOperands& p, std::int64_t batch, cudaStream_t stream, int split_rows) {
  return p.jb == 64 ? launch<L, 64, M>(p, batch, stream, split_rows) : launch<L, 32, M>(p, batch, stream, split_rows);
}

template <Layout L, int K, StripeMath M>
Status raise_limit() {
  BATCHQR_CUDA_TRY(cudaFuncSetAttribute(kernel<L, K, M, false>(), cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        static_cast<int>(larfb_stripe_smem_bytes(kLarfbStripeMaxRows))));
  BATCHQR_CUDA_TRY(cudaFuncSetAttribute(kernel<L, K, M, true>(), cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        static_cast<int>(larfb_stripe_smem_bytes(kLarfbStripeClusterMaxRows))));
  BATCHQR_CUDA_TRY(cudaFuncSetAttribute(kernel<L, K, M, true>(), cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
  if constexpr (kHasTma<L, K, M>) {
    BATCHQR_CUDA_TRY(cudaFuncSetAttribute(kernel<L, K, M, false, true>(), cudaFuncAttributeMaxDynamicSharedMemorySize,
                                          static_cast<int>(larfb_stripe_max_smem_bytes(kLarfbStripeMaxRows))));
    BATCHQR_CUDA_TRY(cudaFuncSetAttribute(kernel<L, K, M, true, true>(), cudaFuncAttributeMaxDynamicSharedMemorySize,
                                          static_cast<int>(larfb_stripe_max_smem_bytes(kLarfbStripeClusterMaxRows))));
    BATCHQR_CUDA_TRY(cudaFuncSetAttribute(kernel<L, K, M, true, true>(), cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
  }
  return Status::success;
}

template <StripeMath M>
Status raise_limits() {
  Status st = raise_limit<Layout::row_major, 32, M>();
  if (st == Status::success) st = raise_limit<Layout::row_major, 64, M>();
  if (st == Status::success) st = raise_limit<Layout::col_major, 32, M>();
  if (st == Status::success) st = raise_limit<Layout::col_major, 64, M>();
  return st;
}

}  // namespace

Status larfb_stripe_initialize() {
  const Status st = raise_limits<StripeMath::fp32>();
  return st == Status::success ? raise_limits<StripeMath::tf32x3>() : st;
}

int larfb_stripe_cluster(int rows, int split_rows) {
  if (split_rows > 0 && split_rows <= kLarfbStripeSplitRows && rows <= kLarfbStripeClusterMaxRows) {
    const int S = (rows + split_rows - 1) / split_rows;
    if (S <= kLarfbStripeMaxCluster) return std::max(S, 1);
  }
  if (rows <= kLarfbStripeMaxRows) return 1;
  if (rows > kLarfbStripeClusterMaxRows) return 0;
  return (rows + kLarfbStripeSplitRows - 1) / kLarfbStripeSplitRows;
}

std::size_t larfb_stripe_smem_bytes(int rows, int split_rows) {
  const int S = std::max(larfb_stripe_cluster(rows, split_rows), 1);
  const int cap = S > 1 ? stripe_split_rows(rows, S) : rows;
  return sizeof(float) * (static_cast<std::size_t>(cap) * TN + static_cast<std::size_t>(kRedSlots) * kMaxK * TN +
                          static_cast<std::size_t>(kMaxK) * TN);
}

std::size_t larfb_stripe_max_smem_bytes(int rows, int split_rows) {
  return larfb_stripe_smem_bytes(rows, split_rows) + kStripeTmaExtra;
}

bool larfb_stripe_can_implement(const LarfbOperands& p, std::int64_t batch, int split_rows) {
  if ((p.jb != 32 && p.jb != 64) || p.ncols <= 0 || p.rows <= 0 || batch <= 0) return false;
  const int S = larfb_stripe_cluster(p.rows, split_rows);
  if (S == 0) return false;
  if (!batch_rows_aligned<16>(p.vt, p.vt_ld, p.vt_stride)) return false;
  const std::int64_t ctas = static_cast<std::int64_t>((p.ncols + TN - 1) / TN) * S;
  return batch <= INT_MAX / ctas;
}

Status launch_larfb_stripe(Layout layout, StripeMath math, const LarfbOperands& p, std::int64_t batch,
                           cudaStream_t stream, int split_rows) {
  if (!larfb_stripe_can_implement(p, batch, split_rows)) return Status::not_supported;
  if (math == StripeMath::tf32x3)
    return layout == Layout::col_major ? launch_k<Layout::col_major, StripeMath::tf32x3>(p, batch, stream, split_rows)
                                       : launch_k<Layout::row_major, StripeMath::tf32x3>(p, batch, stream, split_rows);
  return layout == Layout::col_major ? launch_k<Layout::col_major, StripeMath::fp32>(p, batch, stream, split_rows)
                                     : launch_k<Layout::row_major, StripeMath::fp32>(p, batch, stream, split_rows);
}

}  // namespace batchqr::cuda
