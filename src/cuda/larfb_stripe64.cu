#include "cuda/larfb_stripe64.hpp"

#include <algorithm>
#include <climits>
#include <cstdint>

#include "cuda/alignment.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/mbarrier.cuh"
#include "cuda/mma_tf32.cuh"
#include "cuda/stripe64_tiles.cuh"
#include "cuda/tensor_map.hpp"
#include "cuda/tma.cuh"
#include "cuda/wgmma_tf32.cuh"

namespace batchqr::cuda {
namespace {

using namespace stripe64;  // the tiles and products (stripe64_tiles.cuh)
constexpr int TN = kTN;     // columns of C per CTA
constexpr int K = kK;       // reflectors
constexpr int NT = 256;     // two warpgroups
constexpr int kMaxChunks = kStripe64MaxRows / kChunk;
constexpr int kSlots = 2;   // phase 1's V chunks in flight per warpgroup

// Shared memory, from a 1024-byte aligned base (the swizzle's period), in bytes (the boxes'
// sizes: stripe64_tiles.cuh):
constexpr int kOffV = 0;                    // [2 warpgroups][kSlots] V chunks as stored
constexpr int kOffK = kOffV + 2 * kSlots * kVChunk;  // [2 warpgroups] a V chunk K-major: big, small
constexpr int kOffB = kOffK + 2 * 2 * kVChunk;  // phase 2's T, then phase 3's -W2 (a split pair)
constexpr int kOffC = kOffB + 2 * kBPart;   // the stripe: [chunk][half] C boxes
constexpr int kBars = kMaxChunks + 2 * kSlots + 2 * 2;

__host__ __device__ constexpr int stripe_chunks(int rows) { return (rows + 2 * kChunk - 1) / (2 * kChunk) * 2; }

struct Maps {
  CUtensorMap c;  // the matrices: {columns, rows, batch}, boxes of 32 x 32
  CUtensorMap v;  // V (row-major, V^T's storage): {64, rows, batch}, boxes of 32 x 32
};

// One CTA per SM, looping over the (matrix, stripe) items: while phase 3 of an item runs,
// the next item's stripe comes in by TMA, each 32-row chunk as soon as phase 3 has taken
// its rows into the accumulators, and its T into registers, so that the loads overlap the
// products instead of preceding them.
__global__ void __launch_bounds__(NT, 1) larfb_stripe64_kernel(const LarfbOperands p, const std::int64_t nitems,
                                                               const __grid_constant__ Maps maps) {
#if BATCHQR_HAVE_WGMMA
  extern __shared__ __align__(16) unsigned char smem_raw[];
  unsigned char* smem = smem_raw + ((1024u - (smem_address(smem_raw) & 1023u)) & 1023u);
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, wg = warp >> 2, wr = warp & 3, tw = tid & 127;
  const int g = lane >> 2, t = lane & 3;
  const int rows = p.rows, nchunks = (rows + kChunk - 1) / kChunk;
  const int tiles = (p.ncols + TN - 1) / TN;
  unsigned char* sV = smem + kOffV + wg * kSlots * kVChunk;  // this warpgroup's
  unsigned char* sK = smem + kOffK + wg * 2 * kVChunk;       // big, then small
  unsigned char* sB = smem + kOffB;
  unsigned char* sC = smem + kOffC;
  std::uint64_t* cbar = reinterpret_cast<std::uint64_t*>(sC + stripe_chunks(rows) * kCChunk);
  std::uint64_t* vbar = cbar + kMaxChunks + wg * kSlots;  // phase 1, this warpgroup's slots
  std::uint64_t* tbar = cbar + kMaxChunks + 2 * kSlots + 2 * wg;  // phase 3, its two tile buffers
  const bool lead = tw == 0;
  // This warpgroup's phase-1 chunks per item, and phase-3 tiles.
  const int n1 = (nchunks - wg + 1) / 2, n3 = ((rows + 63) / 64 - wg + 1) / 2;

  // Phase 3's V tiles (64 rows: two chunks) come in two buffers per warpgroup: pair 0 =
  // its slots, pair 1 = its sK; warpgroup wg's tile i (rows 64 (wg + 2 i)) in pair
  // (i + wg) % 2, so that warpgroup 1's first is not its slots, where it parks its W^T for
  // phase 2.
  auto pair_chunk = [&](int pair, int half) { return (pair == 0 ? sV : sK) + half * kVChunk; };
  auto issue_v = [&](unsigned char* dst, int r0, int m32, std::uint64_t* bar) {  // a chunk: two boxes
    tma_load_3d(dst, &maps.v, 0, r0, m32, bar);
    tma_load_3d(dst + kVBox, &maps.v, 32, r0, m32, bar);
  };
  auto issue_chunk = [&](int c, std::int64_t item) {  // chunk c of the item's stripe, by one thread
    const int m32 = static_cast<int>(item / tiles), ccol = p.col0 + static_cast<int>(item % tiles) * TN;
    mbarrier_arrive_expect_tx(cbar + c, kCChunk);
    tma_load_3d(sC + c * kCChunk, &maps.c, ccol, p.j0 + kChunk * c, m32, cbar + c);
    tma_load_3d(sC + c * kCChunk + kCBox, &maps.c, ccol + 32, p.j0 + kChunk * c, m32, cbar + c);
  };
  // Phase 1's V boxes: this warpgroup's u-th chunk overall sits in slot u % kSlots.
  auto issue_v1 = [&](int i, std::int64_t item, int u) {  // local chunk i of the item
    const int c = wg + 2 * i, slot = u % kSlots;
    mbarrier_arrive_expect_tx(vbar + slot, kVChunk);
    issue_v(sV + slot * kVChunk, kChunk * c, static_cast<int>(item / tiles), vbar + slot);
  };
  // T (row-major, upper triangular) as phase 2's B, split: B(k_slot(i), j) = T(i, j); this
  // thread's 16 entries i = idx / 64, j = idx % 64 for idx = tid + 256 q.
  float tv[16];
  auto load_t = [&](std::int64_t item) {
    const float* T = p.t + (item / tiles) * p.t_stride;
#pragma unroll
    for (int q = 0; q < 16; ++q) {
      const int idx = tid + NT * q;
      tv[q] = T[static_cast<std::int64_t>(idx >> 6) * p.t_ld + (idx & 63)];
    }
  };

  if (tid == 0) {
    for (int i = 0; i < kBars; ++i) mbarrier_init(cbar + i, 1);
    mbarrier_init_fence();
  }
  __syncthreads();
  std::int64_t item = blockIdx.x;
  if (tid == 0 && item < nitems) {
    for (int c = 0; c < nchunks; ++c) issue_chunk(c, item);
  }
  if (lead && item < nitems)
    for (int i = 0; i < kSlots && i < n1; ++i) issue_v1(i, item, i);
  if (item < nitems) load_t(item);

  int vuse = 0;              // this warpgroup's phase-1 chunks so far (slot and parity)
  unsigned tpar = 0;         // bit p: the parity of its next phase-3 tile in buffer pair p
  for (int it = 0; item < nitems; item += gridDim.x, ++it) {
    const std::int64_t next = item + gridDim.x;
    const bool has_next = next < nitems;
    const std::int64_t mat = item / tiles;
    const int tile = static_cast<int>(item - mat * tiles);
    const int cn = min(TN, p.ncols - tile * TN);
    const int ccol = p.col0 + tile * TN;
    const unsigned cpar = it & 1;

    __syncthreads();  // the previous item's phase 3 no longer reads sB
#pragma unroll
    for (int q = 0; q < 16; ++q) {
      const int idx = tid + NT * q;
      std::uint32_t big, small;
      split_tf32(tv[q], big, small);
      const int at = b_at(k_slot(idx >> 6), idx & 63);
      *reinterpret_cast<std::uint32_t*>(sB + at) = big;
      *reinterpret_cast<std::uint32_t*>(sB + kBPart + at) = small;
    }
    fence_proxy_async_shared();  // sB is read by wgmma after the barriers of phase 2

    // --- phase 1: W^T = C^T V, warpgroup wg on the chunks c = wg, wg + 2, ... -------------
    // This thread's A values: rows t, t + 4 of each 8-row k-step, columns w_col(16 wr + g)
    // and w_col(16 wr + g + 8) = that + 4.
    const int col_a = w_col(16 * wr + g);
    float d[32];
#pragma unroll
    for (int e = 0; e < 32; ++e) d[e] = 0.0f;
    for (int i = 0; i < n1; ++i, ++vuse) {
      const int c = wg + 2 * i, slot = vuse % kSlots;
      const unsigned char* vb = sV + slot * kVChunk;
      mbarrier_wait(cbar + c, cpar);
      mbarrier_wait(vbar + slot, (vuse / kSlots) & 1);
      v_chunk_k_major(vb, sK, tw);
      std::uint32_t ab[4][4], as[4][4];
      const unsigned char* cc = sC + c * kCChunk;
#pragma unroll
      for (int ks = 0; ks < 4; ++ks) {
        const int r = 8 * ks + t;
        const float x[4] = {*reinterpret_cast<const float*>(cc + c_at(r, col_a)),
                            *reinterpret_cast<const float*>(cc + c_at(r, col_a + 4)),
                            *reinterpret_cast<const float*>(cc + c_at(r + 4, col_a)),
                            *reinterpret_cast<const float*>(cc + c_at(r + 4, col_a + 4))};
        split4(x, ab[ks], as[ks]);
      }
      wgmma_pin(ab);
      wgmma_pin(as);
      fence_proxy_async_shared();  // the K-major V is read by wgmma
      warpgroup_barrier(wg);          // ... and the slot is read: it takes chunk i + kSlots
      if (lead && i + kSlots < n1) issue_v1(i + kSlots, item, vuse + kSlots);
      product_chunk(d, ab, as, sK);
      warpgroup_barrier(wg);  // every warp's products are done: sK is free
    }

    auto issue_tile = [&](int i) {  // this item's tile i of the warpgroup, by its lead
      const int r0 = 64 * (wg + 2 * i), pair = (i + wg) & 1;
      if (lead && i < n3) {
        mbarrier_arrive_expect_tx(tbar + pair, 2 * kVChunk);
        issue_v(pair_chunk(pair, 0), r0, static_cast<int>(mat), tbar + pair);
        issue_v(pair_chunk(pair, 1), r0 + kChunk, static_cast<int>(mat), tbar + pair);
      }
    };
    issue_tile(0);
    if (wg == 0) issue_tile(1);

    // --- phase 2: W2^T = W^T T on warpgroup 0, after W^T = warpgroup 0's part + 1's -------
    float* park = reinterpret_cast<float*>(sV);  // warpgroup 1's slots
    if (wg == 1) {
#pragma unroll
      for (int e = 0; e < 32; ++e) park[e * 128 + tw] = d[e];
      fence_proxy_async_shared();  // TMA refills these slots after warpgroup 0 reads them
    }
    __syncthreads();
    if (wg == 0) {
      const float* parked = reinterpret_cast<const float*>(smem + kOffV + kSlots * kVChunk);
#pragma unroll
      for (int e = 0; e < 32; ++e) d[e] += parked[e * 128 + tw];
      std::uint32_t ab[8][4], as[8][4];
#pragma unroll
      for (int kb = 0; kb < 8; ++kb) {
        const float x[4] = {d[4 * kb], d[4 * kb + 2], d[4 * kb + 1], d[4 * kb + 3]};
        split4(x, ab[kb], as[kb]);
      }
      float w2[32];
#pragma unroll
      for (int e = 0; e < 32; ++e) w2[e] = 0.0f;
      product_k64(w2, ab, as, sB);
      warpgroup_barrier(0);  // T is read: -W2 goes over it
      // -W2 as phase 3's B: B(k_slot(j), column) = -W2(j, column), from W2^T(m, j).
#pragma unroll
      for (int e = 0; e < 32; ++e) {
        const int jb = e >> 2, h = (e >> 1) & 1, o = e & 1;
        const int col = w_col(16 * wr + g + 8 * h), ks = 8 * jb + (o ? 4 + t : t);
        std::uint32_t big, small;
        split_tf32(-w2[e], big, small);
        const int at = b_at(ks, col);
        *reinterpret_cast<std::uint32_t*>(sB + at) = big;
        *reinterpret_cast<std::uint32_t*>(sB + kBPart + at) = small;
      }
      fence_proxy_async_shared();
    }
    __syncthreads();
    if (wg == 1) issue_tile(1);  // into the parked slots, read above
    if (has_next) load_t(next);  // lands during phase 3

    // --- phase 3: C -= V W2 on 64-row tiles, warp wr on rows 16 wr + 2 g (+1) ------------
    // A(m slot g + 8 h, k slot) = V(16 wr + 2 g + h, reflector), reflector 8 kb + 2 t for
    // slot t and + 1 for slot t + 4: a float2 of each of rows 2 g and 2 g + 1; the
    // accumulators are C(16 wr + 2 g + h, 8 j + 2 t + e).
    const int rl = 16 * (wr & 1) + 2 * g;  // this thread's first row in its box
    float* Cg = p.a + mat * p.stride;
    for (int i = 0; i < n3; ++i) {
      const int r0 = 64 * (wg + 2 * i), pair = (i + wg) & 1;
      const int row = r0 + 16 * wr + 2 * g;  // and row + 1
      const int c0 = row / kChunk;
      if (c0 < nchunks) mbarrier_wait(cbar + c0, cpar);  // (landed: for this thread's view of it)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const unsigned char* cc = sC + c0 * kCChunk;
#pragma unroll
        for (int j = 0; j < 8; ++j) {
          const float2 x = *reinterpret_cast<const float2*>(cc + c_at((row + h) & (kChunk - 1), 8 * j + 2 * t));
          d[4 * j + 2 * h] = x.x;
          d[4 * j + 2 * h + 1] = x.y;
        }
      }
      mbarrier_wait(tbar + pair, (tpar >> pair) & 1u);
      tpar ^= 1u << pair;
      const unsigned char* vb = pair_chunk(pair, wr >> 1);
      std::uint32_t ab[8][4], as[8][4];
#pragma unroll
      for (int kb = 0; kb < 8; ++kb) {
        const int n = 8 * kb + 2 * t;
        const float2 x0 = *reinterpret_cast<const float2*>(vb + v_at(rl, n));
        const float2 x1 = *reinterpret_cast<const float2*>(vb + v_at(rl + 1, n));
        const float x[4] = {x0.x, x1.x, x0.y, x1.y};
        split4(x, ab[kb], as[kb]);
      }
      warpgroup_barrier(wg);  // the tile's stripe rows and V are read
      if (lead && has_next) {  // the next item's chunks over this tile's
        for (int c = 2 * (wg + 2 * i); c < 2 * (wg + 2 * i) + 2 && c < nchunks; ++c) issue_chunk(c, next);
      }
      issue_tile(i + 2);
      product_k64(d, ab, as, sB);
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        if (row + h >= rows) continue;
        float* crow = Cg + static_cast<std::int64_t>(p.j0 + row + h) * p.ld + ccol;
#pragma unroll
        for (int j = 0; j < 8; ++j) {
          const int c = 8 * j + 2 * t;
          if (c + 1 < cn) {
            *reinterpret_cast<float2*>(crow + c) = make_float2(d[4 * j + 2 * h], d[4 * j + 2 * h + 1]);
          } else if (c < cn) {
            crow[c] = d[4 * j + 2 * h];
          }
        }
      }
    }
    // Every V buffer of this warpgroup is read (its last tile's barrier above): the next
    // item's first phase-1 boxes.
    if (lead && has_next)
      for (int i = 0; i < kSlots && i < n1; ++i) issue_v1(i, next, vuse + i);
  }
#else
  __trap();  // launched only where larfb_stripe64_available()
#endif
}

}  // namespace

bool larfb_stripe64_available(int cc_major, int cc_minor) {
#ifdef BATCHQR_BUILT_SM90A
  return cc_major == 9 && cc_minor == 0;
#else
  (void)cc_major;
  (void)cc_minor;
  return false;
#endif
}

std::size_t larfb_stripe64_smem_bytes(int rows) {
  return 1024 + static_cast<std::size_t>(kOffC) + static_cast<std::size_t>(stripe_chunks(rows)) * kCChunk +
         kBars * sizeof(std::uint64_t);
}

bool larfb_stripe64_can_implement(const LarfbOperands& p, std::int64_t batch) {
  if (p.jb != K || p.rows <= 0 || p.rows > kStripe64MaxRows || p.ncols <= 0 || batch <= 0) return false;
  if (!batch_rows_aligned<16>(p.vt, p.vt_ld, p.vt_stride)) return false;
  if (!batch_rows_aligned<16>(p.a, p.ld, p.stride) || p.col0 % 4 != 0) return false;
  return batch <= INT_MAX / ((p.ncols + TN - 1) / TN);
}

Status larfb_stripe64_initialize() {
  BATCHQR_CUDA_TRY(cudaFuncSetAttribute(larfb_stripe64_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        static_cast<int>(larfb_stripe64_smem_bytes(kStripe64MaxRows))));
  return Status::success;
}

Status launch_larfb_stripe64(const LarfbOperands& p, std::int64_t batch, int sm_count, cudaStream_t stream) {
  if (!larfb_stripe64_can_implement(p, batch)) return Status::not_supported;
  Maps maps{};
  const auto b = static_cast<std::uint64_t>(batch);
  if (!encode_tensor_map_3d(&maps.c, p.a, static_cast<std::uint64_t>(p.col0 + p.ncols),
                            static_cast<std::uint64_t>(p.j0 + p.rows), b, static_cast<std::uint64_t>(p.ld) * sizeof(float),
                            static_cast<std::uint64_t>(p.stride) * sizeof(float), 32, kChunk) ||
      !encode_tensor_map_3d(&maps.v, p.vt, K, static_cast<std::uint64_t>(p.rows), b,
                            static_cast<std::uint64_t>(p.vt_ld) * sizeof(float),
                            static_cast<std::uint64_t>(p.vt_stride) * sizeof(float), 32, kChunk))
    return Status::not_supported;
  const std::int64_t items = batch * ((p.ncols + TN - 1) / TN);
  const unsigned grid = static_cast<unsigned>(std::min<std::int64_t>(items, std::max(sm_count, 1)));
  larfb_stripe64_kernel<<<grid, NT, larfb_stripe64_smem_bytes(p.rows), stream>>>(p, items, maps);
  BATCHQR_CUDA_TRY(cudaGetLastError());
  return Status::success;
}

}  // namespace batchqr::cuda
