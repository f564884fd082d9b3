#include "cuda/larfb_stripe64.hpp"

#include <algorithm>
#include <climits>
#include <cstdint>

#include "cuda/cuda_check.hpp"
#include "cuda/mbarrier.cuh"
#include "cuda/mma_tf32.cuh"
#include "cuda/tensor_map.hpp"
#include "cuda/tma.cuh"
#include "cuda/wgmma_tf32.cuh"

namespace batchqr::cuda {
namespace {

constexpr int TN = 64;      // columns of C per item
constexpr int K = 64;       // reflectors
constexpr int NT = 128;     // one warpgroup
constexpr int kChunk = 32;  // rows per TMA box of C and of V
constexpr int kSlots = 3;   // phase 1's (C, V) chunks in flight

// Shared memory, from a 1024-byte aligned base (the swizzle's period), in bytes:
constexpr int kCBox = kChunk * 32 * 4;      // C: 32 rows x 32 columns, two per 32-row chunk
constexpr int kCChunk = 2 * kCBox;
constexpr int kVBox = kChunk * 32 * 4;      // V as stored: 32 rows x 32 reflectors, two per chunk
constexpr int kVChunk = 2 * kVBox;
constexpr int kSlot = kCChunk + kVChunk;    // a ring slot: C's chunk, then V's
constexpr int kBPart = K * TN * 4;          // phase 2's T, then phase 3's -W2: big, then small
constexpr int kOffK = kSlots * kSlot;       // phase 1's V chunk K-major (big, small), buffer 0
constexpr int kOffB = kOffK + 2 * kVChunk;  // phase 2's and 3's B; phase 1's K-major buffer 1
constexpr int kOffBars = kOffB + 2 * kBPart;
static_assert(2 * kVChunk <= 2 * kBPart, "the second K-major buffer lives in the B parts");

struct Maps {
  CUtensorMap c;  // the matrices: {columns, rows, batch}, boxes of 32 x 32
  CUtensorMap v;  // V (row-major, V^T's storage): {64, rows, batch}, boxes of 32 x 32
};

#if BATCHQR_HAVE_WGMMA

// Byte offset of C(r, c) (r < 32, c < 64) in a chunk: TMA's 128-byte swizzle, 16-byte
// group (c % 32) / 4 of row r at that group ^ (r % 8).
__device__ __forceinline__ int c_at(int r, int c) {
  return (c >> 5) * kCBox + r * 128 + ((((c & 31) >> 2) ^ (r & 7)) << 4) + (c & 3) * 4;
}
// Byte offset of V(r, n) (r < 32, n < 64) in a V chunk as stored (two boxes of 32
// reflectors, swizzled as C's), and in its K-major form for phase 1's B (each reflector's
// 32 rows in 128 bytes, the same swizzle with the roles swapped).
__device__ __forceinline__ int v_at(int r, int n) { return (n >> 5) * kVBox + r * 128 + ((((n & 31) >> 2) ^ (r & 7)) << 4) + (n & 3) * 4; }
__device__ __forceinline__ int vk_at(int r, int n) { return n * 128 + (((r >> 2) ^ (n & 7)) << 4) + (r & 3) * 4; }

// The k order of phases 2 and 3 inside each 8-block: slot s < 4 is reflector 2 s, slot
// 4 + s reflector 2 s + 1, so that a thread's A fragment is a pair of its accumulators
// (phase 2) or float2 reads of V (phase 3).
__device__ __forceinline__ int k_slot(int j) { return (j & ~7) + ((j & 1) ? 4 + ((j & 7) >> 1) : (j & 7) >> 1); }
// Byte offset of B(k slot, n) in a B part: core matrices of 8 (n) x 4 (k), K-direction
// cores 128 bytes apart, N-direction 2048 (wgmma_desc(.., 128, 2048), 256 bytes per k-step).
__device__ __forceinline__ int b_at(int k, int n) { return (n >> 3) * 2048 + (k >> 2) * 128 + (n & 7) * 16 + (k & 3) * 4; }

// Phase 1's rows of W^T (its m index) are the stripe's columns in this order: m = 16 w +
// 8 a + 4 b + s is column 32 (w / 2) + 4 (4 b + 2 (w % 2) + a) + s, which puts a warp's
// four rows of C (t) and eight columns (g) of one A register in 32 distinct banks.
__device__ __forceinline__ int w_col(int m) {
  const int w = m >> 4, a = (m >> 3) & 1, b = (m >> 2) & 1, s = m & 3;
  return 32 * (w >> 1) + 4 * (4 * b + 2 * (w & 1) + a) + s;
}

__device__ __forceinline__ void split4(const float (&x)[4], std::uint32_t (&big)[4], std::uint32_t (&small)[4]) {
#pragma unroll
  for (int i = 0; i < 4; ++i) split_tf32(x[i], big[i], small[i]);
}

// d += A B over K = 64 (eight k-steps, 3xTF32) with B in a B part pair at sB (big, then
// small; b_at's layout), issued and waited for.
__device__ __forceinline__ void product_k64(float (&d)[32], std::uint32_t (&ab)[8][4], std::uint32_t (&as)[8][4],
                                            const unsigned char* sB) {
  wgmma_pin(ab);
  wgmma_pin(as);
  wgmma_pin(d);
  wgmma_fence();
#pragma unroll
  for (int kb = 0; kb < 8; ++kb) {
    const std::uint64_t bb = wgmma_desc(sB + 256 * kb, 128, 2048), bs = wgmma_desc(sB + kBPart + 256 * kb, 128, 2048);
    wgmma_m64n64k8_tf32(d, as[kb], bb);  // small products first, as mma_3xtf32
    wgmma_m64n64k8_tf32(d, ab[kb], bs);
    wgmma_m64n64k8_tf32(d, ab[kb], bb);
  }
  wgmma_commit();
  wgmma_wait_all(d);
}

// Phase 3's operands of one 64-row tile from global memory: this thread's rows `row` and
// row + 1 (h), the accumulators C(row + h, 8 j + 2 t + e) at c[4 j + 2 h + e] and V's
// float2 (8 kb + 2 t, + 1) of both rows at v[4 kb ..]; zeros outside the matrix.
struct TileRegs {
  float c[32];
  float v[32];
};
__device__ __forceinline__ void load_tile(TileRegs& r, const float* crow0, const float* vrow0, std::int64_t ld, int vt_ld,
                                          int row, int rows, int cn, int t) {
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const bool in = row + h < rows;
    const float* cr = crow0 + static_cast<std::int64_t>(row + h) * ld;
    const float* vr = vrow0 + static_cast<std::int64_t>(row + h) * vt_ld;
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const int c = 8 * j + 2 * t;
      float2 x = make_float2(0.0f, 0.0f);
      if (in && c + 1 < cn) {
        x = *reinterpret_cast<const float2*>(cr + c);
      } else if (in && c < cn) {
        x.x = cr[c];
      }
      r.c[4 * j + 2 * h] = x.x;
      r.c[4 * j + 2 * h + 1] = x.y;
      const float2 y = in ? *reinterpret_cast<const float2*>(vr + c) : make_float2(0.0f, 0.0f);
      r.v[4 * j + h] = y.x;  // a0 / a1: reflector 8 kb + 2 t of rows row, row + 1
      r.v[4 * j + 2 + h] = y.y;  // a2 / a3: reflector 8 kb + 2 t + 1
    }
  }
}

#endif  // BATCHQR_HAVE_WGMMA

// Persistent CTAs of one warpgroup, two per SM, looping over (matrix, 64-column stripe)
// items. Phase 1 streams the stripe and V through a ring of kSlots 32-row chunks (TMA; the
// ring runs on into the next item's chunks during phases 2 and 3); phase 3 reads the stripe
// and V again from global memory (L2: the wave's stripes were read moments before), one
// 64-row tile ahead in registers, so that no CTA holds a stripe and two fit an SM.
__global__ void __launch_bounds__(NT, kStripe64CtasPerSm)
    larfb_stripe64_kernel(const LarfbOperands p, const std::int64_t nitems, const __grid_constant__ Maps maps) {
#if BATCHQR_HAVE_WGMMA
  extern __shared__ __align__(16) unsigned char smem_raw[];
  unsigned char* smem = smem_raw + ((1024u - (smem_address(smem_raw) & 1023u)) & 1023u);
  const int tid = threadIdx.x, lane = tid & 31, wr = tid >> 5;
  const int g = lane >> 2, t = lane & 3;
  const int rows = p.rows, nchunks = (rows + kChunk - 1) / kChunk, ntiles = (rows + 63) / 64;
  const int tiles = (p.ncols + TN - 1) / TN;
  unsigned char* sB = smem + kOffB;
  std::uint64_t* full = reinterpret_cast<std::uint64_t*>(smem + kOffBars);

  // The producer (thread 0): the next (item, chunk) of this CTA's sequence and its slot.
  std::int64_t p_item = blockIdx.x;
  int p_chunk = 0, p_slot = 0;
  auto issue_next = [&]() {
    if (tid != 0 || p_item >= nitems) return;
    const int m32 = static_cast<int>(p_item / tiles), ccol = p.col0 + static_cast<int>(p_item % tiles) * TN;
    unsigned char* s = smem + p_slot * kSlot;
    std::uint64_t* bar = full + p_slot;
    mbarrier_arrive_expect_tx(bar, kSlot);
    tma_load_3d(s, &maps.c, ccol, p.j0 + kChunk * p_chunk, m32, bar);
    tma_load_3d(s + kCBox, &maps.c, ccol + 32, p.j0 + kChunk * p_chunk, m32, bar);
    tma_load_3d(s + kCChunk, &maps.v, 0, kChunk * p_chunk, m32, bar);
    tma_load_3d(s + kCChunk + kVBox, &maps.v, 32, kChunk * p_chunk, m32, bar);
    if (++p_slot == kSlots) p_slot = 0;
    if (++p_chunk == nchunks) {
      p_chunk = 0;
      p_item += gridDim.x;
    }
  };

  if (tid == 0) {
    for (int i = 0; i < kSlots; ++i) mbarrier_init(full + i, 1);
    mbarrier_init_fence();
  }
  __syncthreads();
  for (int i = 0; i < kSlots; ++i) issue_next();

  int slot = 0;
  unsigned phase = 0;  // of the ring's slots, as this CTA consumes them
  for (std::int64_t item = blockIdx.x; item < nitems; item += gridDim.x) {
    const std::int64_t mat = item / tiles;
    const int tile = static_cast<int>(item - mat * tiles);
    const int cn = min(TN, p.ncols - tile * TN);
    const int ccol = p.col0 + tile * TN;

    // T (row-major, upper triangular) for phase 2's B, in flight during phase 1: this
    // thread's entries (i, j) = (idx / 64, idx % 64) for idx = tid + 128 q.
    float tv[32];
    {
      const float* T = p.t + mat * p.t_stride;
#pragma unroll
      for (int q = 0; q < 32; ++q) {
        const int idx = tid + NT * q;
        tv[q] = T[static_cast<std::int64_t>(idx >> 6) * p.t_ld + (idx & 63)];
      }
    }

    // --- phase 1: W^T = C^T V over the chunks ---------------------------------------------
    // This thread's A values: rows t, t + 4 of each 8-row k-step, columns w_col(16 wr + g)
    // and w_col(16 wr + g + 8) = that + 4. The K-major V alternates between two buffers, so
    // that one barrier per chunk orders both its writes and the previous reads.
    const int col_a = w_col(16 * wr + g);
    float d[32];
#pragma unroll
    for (int e = 0; e < 32; ++e) d[e] = 0.0f;
    for (int c = 0; c < nchunks; ++c) {
      const unsigned char* cc = smem + slot * kSlot;
      const unsigned char* vb = cc + kCChunk;
      unsigned char* sK = smem + ((c & 1) ? kOffB : kOffK);
      mbarrier_wait(full + slot, phase);
      // V's chunk K-major (each reflector's 32 rows in one 128-byte row) and split: big
      // (its top 19 bits, what the tensor cores read of it) and small. Thread tid moves row
      // tid % 32's reflectors 4 q .. 4 q + 3, q = tid / 32 + 4 j: its float4 reads and each
      // warp's stores of one reflector fall in distinct banks.
      {
        const int r = tid & 31;
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          const int n0 = 4 * ((tid >> 5) + 4 * j);
          const float4 x = *reinterpret_cast<const float4*>(vb + v_at(r, n0));
          const float xs[4] = {x.x, x.y, x.z, x.w};
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const float big = __uint_as_float(__float_as_uint(xs[e]) & 0xffffe000u);
            const int at = vk_at(r, n0 + e);
            *reinterpret_cast<float*>(sK + at) = big;
            *reinterpret_cast<float*>(sK + kVChunk + at) = xs[e] - big;
          }
        }
      }
      std::uint32_t ab[4][4], as[4][4];
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
      fence_proxy_async_shared();  // the K-major V is read by wgmma, the slot rewritten by TMA
      __syncthreads();             // ... every thread's part written and read
      issue_next();                // into the slot just read: the chunk kSlots on
      if (++slot == kSlots) {
        slot = 0;
        phase ^= 1u;
      }
      wgmma_fence();
#pragma unroll
      for (int ks = 0; ks < 4; ++ks) {
        const std::uint64_t bb = wgmma_desc_sw128(sK + 32 * ks), bs = wgmma_desc_sw128(sK + kVChunk + 32 * ks);
        wgmma_m64n64k8_tf32(d, as[ks], bb);  // small products first, as mma_3xtf32
        wgmma_m64n64k8_tf32(d, ab[ks], bs);
        wgmma_m64n64k8_tf32(d, ab[ks], bb);
      }
      wgmma_commit();
      wgmma_wait_all(d);
    }

    // --- phase 2: W2^T = W^T T ----------------------------------------------------------
    __syncthreads();  // every warp's phase-1 products are done: the B parts are free
#pragma unroll
    for (int q = 0; q < 32; ++q) {
      const int idx = tid + NT * q;
      std::uint32_t big, small;
      split_tf32(tv[q], big, small);
      const int at = b_at(k_slot(idx >> 6), idx & 63);
      *reinterpret_cast<std::uint32_t*>(sB + at) = big;
      *reinterpret_cast<std::uint32_t*>(sB + kBPart + at) = small;
    }
    fence_proxy_async_shared();
    __syncthreads();
    {
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
      __syncthreads();  // T is read: -W2 goes over it
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
    }
    fence_proxy_async_shared();
    __syncthreads();

    // --- phase 3: C -= V W2 on 64-row tiles, warp wr on rows 16 wr + 2 g (+1) ------------
    // A(m slot g + 8 h, k slot) = V(16 wr + 2 g + h, reflector), reflector 8 kb + 2 t for
    // slot t and + 1 for slot t + 4; the accumulators are C(16 wr + 2 g + h, 8 j + 2 t + e).
    // The stripe's rows were written by no one since phase 1 read them (items are disjoint).
    float* crow0 = p.a + mat * p.stride + static_cast<std::int64_t>(p.j0) * p.ld + ccol;
    const float* vrow0 = p.vt + mat * p.vt_stride;
    const int rt = 16 * wr + 2 * g;  // this thread's first row in a tile
    TileRegs next;
    load_tile(next, crow0, vrow0, p.ld, p.vt_ld, rt, rows, cn, t);
    for (int i = 0; i < ntiles; ++i) {
      const int row = 64 * i + rt;
      float acc[32];
      std::uint32_t ab[8][4], as[8][4];
#pragma unroll
      for (int e = 0; e < 32; ++e) acc[e] = next.c[e];
#pragma unroll
      for (int kb = 0; kb < 8; ++kb) {
        const float x[4] = {next.v[4 * kb], next.v[4 * kb + 1], next.v[4 * kb + 2], next.v[4 * kb + 3]};
        split4(x, ab[kb], as[kb]);
      }
      if (i + 1 < ntiles) load_tile(next, crow0, vrow0, p.ld, p.vt_ld, row + 64, rows, cn, t);
      product_k64(acc, ab, as, sB);
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        if (row + h >= rows) continue;
        float* crow = crow0 + static_cast<std::int64_t>(row + h) * p.ld;
#pragma unroll
        for (int j = 0; j < 8; ++j) {
          const int c = 8 * j + 2 * t;
          if (c + 1 < cn) {
            *reinterpret_cast<float2*>(crow + c) = make_float2(acc[4 * j + 2 * h], acc[4 * j + 2 * h + 1]);
          } else if (c < cn) {
            crow[c] = acc[4 * j + 2 * h];
          }
        }
      }
    }
    __syncthreads();  // phase 3's reads of the B parts are done before the next phase 1 writes a K-major buffer there
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

std::size_t larfb_stripe64_smem_bytes() {
  return 1024 + static_cast<std::size_t>(kOffBars) + kSlots * sizeof(std::uint64_t);
}

bool larfb_stripe64_can_implement(const LarfbOperands& p, std::int64_t batch) {
  if (p.jb != K || p.rows <= 0 || p.ncols <= 0 || batch <= 0) return false;
  if (reinterpret_cast<std::uintptr_t>(p.vt) % 16 != 0 || p.vt_ld % 4 != 0 || p.vt_stride % 4 != 0) return false;
  if (reinterpret_cast<std::uintptr_t>(p.a) % 16 != 0 || p.ld % 4 != 0 || p.stride % 4 != 0 || p.col0 % 4 != 0)
    return false;
  return batch <= INT_MAX / ((p.ncols + TN - 1) / TN);
}

Status larfb_stripe64_initialize() {
  BATCHQR_CUDA_TRY(cudaFuncSetAttribute(larfb_stripe64_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        static_cast<int>(larfb_stripe64_smem_bytes())));
  return Status::success;
}

Status launch_larfb_stripe64(const LarfbOperands& p, std::int64_t batch, int max_ctas, cudaStream_t stream) {
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
  const unsigned grid = static_cast<unsigned>(std::min<std::int64_t>(items, std::max(max_ctas, 1)));
  larfb_stripe64_kernel<<<grid, NT, larfb_stripe64_smem_bytes(), stream>>>(p, items, maps);
  BATCHQR_CUDA_TRY(cudaGetLastError());
  return Status::success;
}

}  // namespace batchqr::cuda
