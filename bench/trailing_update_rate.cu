// Tuning client: one outer block's trailing update, C := (I - V T^T V^T) C, on a batch of
// row-major n x n matrices (the first outer block: j0 = 0, K = jb reflectors, C the other
// n - jb columns), by each form on the same operands, each result's error against an FP64
// reference of the same product. It asks whether a trailing update split into two GEMM-like
// launches can beat the library's fused stripe kernels (docs/perf-notes.md v40). Forms:
//   stripe  the library's kernel for it: larfb_stripe64 up to 512 rows, else larfb_stripe
//           (K = 64 only; 3xTF32, C read once)
//   sgemm   three cuBLAS SGEMMs (FP32; the library's larfb_gemm)
//   hybrid  W^T = C^T V and W2^T = W^T T by SGEMM, then C -= V W2 as ONE cuBLAS TF32 GEMM over
//           split operands stacked along K (3 jb): [W2b W2s W2b] [Vs; Vb; Vb] are 3xTF32's
//           three products (big parts rounded to TF32 exactly, small parts the rest), summed
//           in the GEMM's FP32 accumulators, C read and written once
//   bound   hybrid with W^T = C^T V as one plain TF32 GEMM: not FP32-grade (its error shows
//           it), the time a two-launch form with a tensor-core W could reach at best
// and the pieces alone: each SGEMM, the two splits, the stacked update, the plain TF32 W.
// V is unit lower trapezoidal with N(0, 1 / rows) entries below the diagonal and T its larft
// factor (tau_i = 2 / |v_i|^2, formed on the host in FP64), so Q = I - V T V^T is orthogonal
// and repeated updates stay bounded. C is the contract's dense distribution (the library's
// generator). Error: max over the matrices of |C - C_ref|_F / |C_0|_F, in units of FP32's
// epsilon (2^-24). Not part of the library.
//
//   trailing_update_rate [--reps R] [--rounds K] [n jb batch]...   (default: a built-in list)
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "batchqr/batchqr.hpp"
#include "batchqr/check/generate.hpp"
#include "cuda/device_info.hpp"
#include "cuda/larfb_gemm.hpp"
#include "cuda/larfb_stripe.hpp"
#include "cuda/larfb_stripe64.hpp"
#include "cuda/tf32_split.hpp"

namespace {

using namespace batchqr;
using namespace batchqr::cuda;

#define CK(x)                                                                                   \
  do {                                                                                          \
    const cudaError_t e_ = (x);                                                                 \
    if (e_ != cudaSuccess) {                                                                    \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      std::exit(1);                                                                             \
    }                                                                                           \
  } while (0)
#define CB(x)                                                                         \
  do {                                                                                \
    const cublasStatus_t s_ = (x);                                                    \
    if (s_ != CUBLAS_STATUS_SUCCESS) {                                                \
      std::fprintf(stderr, "%s:%d: %s: cuBLAS status %d\n", __FILE__, __LINE__, #x, \
                   static_cast<int>(s_));                                             \
      std::exit(1);                                                                   \
    }                                                                                 \
  } while (0)

template <class T>
T* dev_alloc(std::size_t count) {
  T* p = nullptr;
  CK(cudaMalloc(&p, std::max<std::size_t>(count, 1) * sizeof(T)));
  return p;
}

__device__ __forceinline__ float tf32_big(float x) { return __uint_as_float(tf32_round_bits(__float_as_uint(x))); }

// V^T (jb x rows, ld jb) -> Vt3 (3 jb x rows, ld 3 jb): [Vs; Vb; Vb] per matrix.
__global__ void split_vt3(const float* vt, int jb, int rows, float* vt3, std::int64_t batch) {
  const std::int64_t per = static_cast<std::int64_t>(jb) * rows, count = per * batch;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t b = i / per, rest = i - b * per, r = rest / jb;
    const int k = static_cast<int>(rest - r * jb);
    const float x = vt[i], big = tf32_big(x);
    float* out = vt3 + b * 3 * per + r * 3 * jb;
    out[k] = x - big;
    out[jb + k] = big;
    out[2 * jb + k] = big;
  }
}

// W2^T (ncols x jb column-major, ld ncols) -> W2_3 (ncols x 3 jb, ld ncols): [W2b W2s W2b].
__global__ void split_w2_3(const float* w2t, int ncols, int jb, std::int64_t w_stride, float* w3,
                           std::int64_t batch) {
  const std::int64_t per = static_cast<std::int64_t>(ncols) * jb, count = per * batch;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t b = i / per, rest = i - b * per;
    const float x = w2t[b * w_stride + rest], big = tf32_big(x);
    float* out = w3 + b * 3 * per;
    out[rest] = big;
    out[per + rest] = x - big;
    out[2 * per + rest] = big;
  }
}

// The C region (rows x ncols from column col0 of row-major n x n matrices) to a compact FP64
// copy (row-major, ld ncols), and float arrays to double.
__global__ void c_to_double(const float* a, int n, int col0, int rows, int ncols, double* cd, std::int64_t batch) {
  const std::int64_t per = static_cast<std::int64_t>(rows) * ncols, count = per * batch;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t b = i / per, rest = i - b * per, r = rest / ncols, c = rest - r * ncols;
    cd[i] = a[b * n * static_cast<std::int64_t>(n) + r * n + col0 + c];
  }
}
__global__ void to_double(const float* x, double* y, std::int64_t count) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    y[i] = x[i];
}

// Per matrix: sum of (C - C_ref)^2 and of C_0^2 over the C region; one CTA per matrix.
__global__ void error_sums(const float* a, const float* a0, const double* ref, int n, int col0, int rows, int ncols,
                           double* out) {
  const std::int64_t b = blockIdx.x, per = static_cast<std::int64_t>(rows) * ncols;
  double d2 = 0, c2 = 0;
  for (std::int64_t i = threadIdx.x; i < per; i += blockDim.x) {
    const std::int64_t r = i / ncols, c = i - r * ncols, at = b * n * static_cast<std::int64_t>(n) + r * n + col0 + c;
    const double d = static_cast<double>(a[at]) - ref[b * per + i], c0 = a0[at];
    d2 += d * d;
    c2 += c0 * c0;
  }
  __shared__ double s[2][256];
  s[0][threadIdx.x] = d2;
  s[1][threadIdx.x] = c2;
  __syncthreads();
  for (int h = blockDim.x / 2; h > 0; h /= 2) {
    if (static_cast<int>(threadIdx.x) < h) {
      s[0][threadIdx.x] += s[0][threadIdx.x + h];
      s[1][threadIdx.x] += s[1][threadIdx.x + h];
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    out[2 * b] = s[0][0];
    out[2 * b + 1] = s[1][0];
  }
}

int grid_for(std::int64_t count) { return static_cast<int>(std::min<std::int64_t>((count + 255) / 256, 132 * 16)); }

struct Case {
  int n, jb;
  std::int64_t batch;
};

struct Row {
  std::string name;
  double ms = -1;      // per update, median of the rounds
  double err = -1;     // < 0: not checked (a piece, not a whole update)
};

void run_case(const Case& cs, const DeviceInfo& dev, cublasHandle_t h, cudaStream_t stream, int reps, int rounds) {
  const int n = cs.n, jb = cs.jb, rows = n, col0 = jb, ncols = n - jb;
  const std::int64_t batch = cs.batch, mat = static_cast<std::int64_t>(n) * n;
  const std::int64_t v_per = static_cast<std::int64_t>(jb) * rows, w_per = static_cast<std::int64_t>(ncols) * jb;
  if (ncols <= 0) return;

  // V (row-major rows x jb: V^T column-major with ld jb) and T on the host.
  std::vector<float> vt(static_cast<std::size_t>(v_per * batch));
  std::vector<float> t(static_cast<std::size_t>(jb) * jb * batch, 0.0f);
  {
    std::mt19937_64 rng(0x5eed0000ull + static_cast<std::uint64_t>(n) * 131 + jb);
    std::normal_distribution<float> nd(0.0f, 1.0f / std::sqrt(static_cast<float>(rows)));
    for (std::int64_t b = 0; b < batch; ++b) {
      float* v = vt.data() + b * v_per;  // v[r * jb + k] = V(r, k)
      for (int r = 0; r < rows; ++r)
        for (int k = 0; k < jb; ++k) v[r * jb + k] = r < k ? 0.0f : r == k ? 1.0f : nd(rng);
    }
  }
  // T per matrix, the matrices dealt out over the host's threads.
  auto form_t = [&](std::int64_t first, std::int64_t step) {
    std::vector<double> g(static_cast<std::size_t>(jb) * jb), td(static_cast<std::size_t>(jb) * jb);
    for (std::int64_t b = first; b < batch; b += step) {
      const float* v = vt.data() + b * v_per;
      // G = V^T V in FP64 (only the rows from max(i, j) contribute).
      for (int i = 0; i < jb; ++i)
        for (int j = i; j < jb; ++j) {
          double s = 0;
          for (int r = j; r < rows; ++r) s += static_cast<double>(v[r * jb + i]) * v[r * jb + j];
          g[i * jb + j] = g[j * jb + i] = s;
        }
      // larft 'F','C': T(i, i) = tau_i, T(0:i, i) = -tau_i T(0:i, 0:i) G(0:i, i).
      std::fill(td.begin(), td.end(), 0.0);
      for (int i = 0; i < jb; ++i) {
        const double tau = 2.0 / g[i * jb + i];
        for (int r = 0; r < i; ++r) {
          double s = 0;
          for (int c = r; c < i; ++c) s += td[r * jb + c] * g[c * jb + i];
          td[r * jb + i] = -tau * s;
        }
        td[i * jb + i] = tau;
      }
      float* tb = t.data() + b * jb * jb;  // row-major, t_ld = jb
      for (int i = 0; i < jb * jb; ++i) tb[i] = static_cast<float>(td[i]);
    }
  };
  {
    const int nt = static_cast<int>(std::max(1u, std::min(16u, std::thread::hardware_concurrency())));
    std::vector<std::thread> pool;
    for (int i = 0; i < nt; ++i) pool.emplace_back(form_t, i, nt);
    for (std::thread& th : pool) th.join();
  }

  float* a = dev_alloc<float>(static_cast<std::size_t>(mat * batch));
  float* a0 = dev_alloc<float>(static_cast<std::size_t>(mat * batch));
  float* d_vt = dev_alloc<float>(vt.size());
  float* d_t = dev_alloc<float>(t.size());
  float* vt3 = dev_alloc<float>(static_cast<std::size_t>(3 * v_per * batch));
  float* w = dev_alloc<float>(static_cast<std::size_t>(2 * w_per * batch));  // W^T, then W2^T (larfb_gemm's layout)
  float* w3 = dev_alloc<float>(static_cast<std::size_t>(3 * w_per * batch));
  CK(cudaMemcpy(d_vt, vt.data(), vt.size() * sizeof(float), cudaMemcpyHostToDevice));
  CK(cudaMemcpy(d_t, t.data(), t.size() * sizeof(float), cudaMemcpyHostToDevice));
  {  // C_0: the contract's dense matrices, by the library's generator
    check::GenSpec g;
    g.m = n;
    g.n = n;
    g.batch = batch;
    g.dist = check::Distribution::dense;
    g.seed = 0x1234ull + static_cast<std::uint64_t>(n);
    std::vector<float> h(static_cast<std::size_t>(mat * batch));
    check::generate(g, make_geqrf_desc(n, n, batch, Layout::row_major), h.data());
    CK(cudaMemcpy(a0, h.data(), h.size() * sizeof(float), cudaMemcpyHostToDevice));
  }

  // FP64 reference of one update of C_0.
  const std::int64_t c_per = static_cast<std::int64_t>(rows) * ncols;
  double* cd = dev_alloc<double>(static_cast<std::size_t>(c_per * batch));
  double* vtd = dev_alloc<double>(vt.size());
  double* td = dev_alloc<double>(t.size());
  double* wd = dev_alloc<double>(static_cast<std::size_t>(2 * w_per * batch));
  double* sums = dev_alloc<double>(static_cast<std::size_t>(2 * batch));
  c_to_double<<<grid_for(c_per * batch), 256, 0, stream>>>(a0, n, col0, rows, ncols, cd, batch);
  to_double<<<grid_for(v_per * batch), 256, 0, stream>>>(d_vt, vtd, v_per * batch);
  to_double<<<grid_for(static_cast<std::int64_t>(t.size())), 256, 0, stream>>>(d_t, td, static_cast<std::int64_t>(t.size()));
  CK(cudaGetLastError());
  {
    const double one = 1, zero = 0, minus_one = -1;
    const int nb = static_cast<int>(batch);
    double *wdt = wd, *w2dt = wd + w_per * batch;
    // W^T = C^T V; W2^T = W^T T; C^T -= W2^T V^T (C^T column-major ncols x rows, ld ncols).
    CB(cublasDgemmStridedBatched(h, CUBLAS_OP_N, CUBLAS_OP_T, ncols, jb, rows, &one, cd, ncols, c_per, vtd, jb, v_per,
                                 &zero, wdt, ncols, w_per, nb));
    CB(cublasDgemmStridedBatched(h, CUBLAS_OP_N, CUBLAS_OP_T, ncols, jb, jb, &one, wdt, ncols, w_per, td, jb,
                                 static_cast<std::int64_t>(jb) * jb, &zero, w2dt, ncols, w_per, nb));
    CB(cublasDgemmStridedBatched(h, CUBLAS_OP_N, CUBLAS_OP_N, ncols, rows, jb, &minus_one, w2dt, ncols, w_per, vtd,
                                 jb, v_per, &one, cd, ncols, c_per, nb));
  }
  CK(cudaStreamSynchronize(stream));
  auto check_error = [&]() {
    error_sums<<<static_cast<unsigned>(batch), 256, 0, stream>>>(a, a0, cd, n, col0, rows, ncols, sums);
    CK(cudaGetLastError());
    std::vector<double> hs(static_cast<std::size_t>(2 * batch));
    CK(cudaMemcpyAsync(hs.data(), sums, hs.size() * sizeof(double), cudaMemcpyDeviceToHost, stream));
    CK(cudaStreamSynchronize(stream));
    double worst = 0;
    for (std::int64_t b = 0; b < batch; ++b)
      worst = std::max(worst, std::sqrt(hs[2 * b] / std::max(hs[2 * b + 1], 1e-300)));
    return worst / 0x1p-24;
  };

  // The operands as the library's kernels take them.
  LarfbOperands op{};
  op.a = a;
  op.ld = n;
  op.stride = mat;
  op.vt = d_vt;
  op.vt_stride = v_per;
  op.vt_ld = jb;
  op.t = d_t;
  op.t_stride = static_cast<std::int64_t>(jb) * jb;
  op.t_ld = jb;
  op.j0 = 0;
  op.col0 = col0;
  op.rows = rows;
  op.jb = jb;
  op.ncols = ncols;
  LarfbGemmArgs ga;
  static_cast<LarfbOperands&>(ga) = op;
  ga.w = w;
  ga.w_stride = 2 * w_per;  // W at w + b w_stride, W2 at + w_per
  const bool s64 = larfb_stripe64_available(dev.cc_major, dev.cc_minor) && larfb_stripe64_can_implement(op, batch);
  const bool s32 = !s64 && larfb_stripe_can_implement(op, batch);
  float* ct = a + col0;  // C^T, column-major ncols x rows with ld n
  const int nb = static_cast<int>(batch), ld = n;
  const float one = 1.0f, zero = 0.0f, minus_one = -1.0f;

  // Pieces: each enqueues one update's worth of that work.
  auto sgemm_w = [&] {
    CB(cublasSgemmStridedBatched(h, CUBLAS_OP_N, CUBLAS_OP_T, ncols, jb, rows, &one, ct, ld, mat, d_vt, jb, v_per, &zero,
                                 w, ncols, 2 * w_per, nb));
  };
  auto sgemm_w2 = [&] {
    CB(cublasSgemmStridedBatched(h, CUBLAS_OP_N, CUBLAS_OP_T, ncols, jb, jb, &one, w, ncols, 2 * w_per, d_t, jb,
                                 static_cast<std::int64_t>(jb) * jb, &zero, w + w_per, ncols, 2 * w_per, nb));
  };
  auto sgemm_upd = [&] {
    CB(cublasSgemmStridedBatched(h, CUBLAS_OP_N, CUBLAS_OP_N, ncols, rows, jb, &minus_one, w + w_per, ncols, 2 * w_per,
                                 d_vt, jb, v_per, &one, ct, ld, mat, nb));
  };
  auto split_v = [&] {
    split_vt3<<<grid_for(v_per * batch), 256, 0, stream>>>(d_vt, jb, rows, vt3, batch);
    CK(cudaGetLastError());
  };
  auto split_w = [&] {
    split_w2_3<<<grid_for(w_per * batch), 256, 0, stream>>>(w + w_per, ncols, jb, 2 * w_per, w3, batch);
    CK(cudaGetLastError());
  };
  auto tf32_upd = [&] {
    CB(cublasGemmStridedBatchedEx(h, CUBLAS_OP_N, CUBLAS_OP_N, ncols, rows, 3 * jb, &minus_one, w3, CUDA_R_32F, ncols,
                                  3 * w_per, vt3, CUDA_R_32F, 3 * jb, 3 * v_per, &one, ct, CUDA_R_32F, ld, mat, nb,
                                  CUBLAS_COMPUTE_32F_FAST_TF32, CUBLAS_GEMM_DEFAULT));
  };
  auto tf32_w_plain = [&] {
    CB(cublasGemmStridedBatchedEx(h, CUBLAS_OP_N, CUBLAS_OP_T, ncols, jb, rows, &one, ct, CUDA_R_32F, ld, mat, d_vt,
                                  CUDA_R_32F, jb, v_per, &zero, w, CUDA_R_32F, ncols, 2 * w_per, nb,
                                  CUBLAS_COMPUTE_32F_FAST_TF32, CUBLAS_GEMM_DEFAULT));
  };
  auto stripe = [&] {
    const Status st = s64 ? launch_larfb_stripe64(op, batch, dev.sm_count, stream)
                          : launch_larfb_stripe(Layout::row_major, StripeMath::tf32x3, op, batch, stream);
    if (st != Status::success) {
      std::fprintf(stderr, "stripe launch: status %d\n", static_cast<int>(st));
      std::exit(1);
    }
  };
  auto sgemm_all = [&] {  // the library's form; the same three products as the pieces
    if (larfb_gemm(h, Layout::row_major, ga, batch) != Status::success) {
      std::fprintf(stderr, "larfb_gemm failed\n");
      std::exit(1);
    }
  };
  auto hybrid_all = [&] {
    sgemm_w();
    sgemm_w2();
    split_w();
    tf32_upd();
  };
  auto bound_all = [&] {  // as hybrid with W in plain TF32: not FP32-grade, a bound on the time
    tf32_w_plain();
    sgemm_w2();
    split_w();
    tf32_upd();
  };

  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  auto restore = [&] { CK(cudaMemcpyAsync(a, a0, mat * batch * sizeof(float), cudaMemcpyDeviceToDevice, stream)); };
  auto time_it = [&](const std::function<void()>& f) {
    restore();
    f();  // warm-up
    std::vector<float> ms;
    for (int k = 0; k < rounds; ++k) {
      CK(cudaEventRecord(e0, stream));
      for (int i = 0; i < reps; ++i) f();
      CK(cudaEventRecord(e1, stream));
      CK(cudaEventSynchronize(e1));
      float x = 0;
      CK(cudaEventElapsedTime(&x, e0, e1));
      ms.push_back(x / reps);
    }
    std::sort(ms.begin(), ms.end());
    return static_cast<double>(ms[ms.size() / 2]);
  };
  auto checked = [&](const std::function<void()>& f) {
    restore();
    f();
    return check_error();
  };

  split_v();  // once per outer block; Vt3 for the stacked update
  CK(cudaStreamSynchronize(stream));
  std::vector<Row> out;
  if (s64 || s32) out.push_back({s64 ? "stripe (larfb_stripe64)" : "stripe (larfb_stripe)", time_it(stripe), checked(stripe)});
  out.push_back({"sgemm: 3 SGEMMs", time_it(sgemm_all), checked(sgemm_all)});
  out.push_back({"hybrid: 2 SGEMMs + split + TF32 K=3jb", time_it(hybrid_all), checked(hybrid_all)});
  out.push_back({"bound: hybrid, W in plain TF32 (inexact)", time_it(bound_all), checked(bound_all)});
  out.push_back({"  piece: SGEMM W^T = C^T V", time_it(sgemm_w), -1});
  out.push_back({"  piece: SGEMM W2^T = W^T T", time_it(sgemm_w2), -1});
  out.push_back({"  piece: SGEMM C -= V W2", time_it(sgemm_upd), -1});
  out.push_back({"  piece: split W2 -> [W2b W2s W2b]", time_it(split_w), -1});
  out.push_back({"  piece: TF32 C -= V W2, K = 3jb", time_it(tf32_upd), -1});
  out.push_back({"  piece: split V -> [Vs; Vb; Vb] (per block)", time_it(split_v), -1});
  out.push_back({"  piece: plain TF32 W^T = C^T V (inexact)", time_it(tf32_w_plain), -1});

  // Effective rate: the update's 4 rows ncols jb flops per matrix (W and C -= V W2).
  const double flops = 4.0 * rows * static_cast<double>(ncols) * jb * static_cast<double>(batch);
  const double c_bytes = 8.0 * rows * static_cast<double>(ncols) * static_cast<double>(batch);  // C read + written once
  std::printf("\n%lld x %d^2, jb %d (C %d x %d): %.1f GFLOP, C once each way %.0f MB (%.3f ms at 4.29 TB/s)\n",
              static_cast<long long>(batch), n, jb, rows, ncols, flops * 1e-9, c_bytes * 1e-6, c_bytes / 4.29e9);
  std::printf("  %-46s %9s %9s %12s\n", "form", "ms", "TFLOP/s", "err / eps32");
  for (const Row& r : out) {
    if (r.err >= 0)
      std::printf("  %-46s %9.4f %9.1f %12.2f\n", r.name.c_str(), r.ms, flops / (r.ms * 1e-3) * 1e-12, r.err);
    else
      std::printf("  %-46s %9.4f %9s %12s\n", r.name.c_str(), r.ms, "", "");
  }
  std::fflush(stdout);

  CK(cudaEventDestroy(e0));
  CK(cudaEventDestroy(e1));
  for (void* p : {static_cast<void*>(a), static_cast<void*>(a0), static_cast<void*>(d_vt), static_cast<void*>(d_t),
                  static_cast<void*>(vt3), static_cast<void*>(w), static_cast<void*>(w3), static_cast<void*>(cd),
                  static_cast<void*>(vtd), static_cast<void*>(td), static_cast<void*>(wd), static_cast<void*>(sums)})
    CK(cudaFree(p));
}

}  // namespace

int main(int argc, char** argv) {
  int reps = 5, rounds = 5;
  std::vector<Case> cases;
  std::vector<std::int64_t> nums;
  for (int i = 1; i < argc; ++i) {
    const std::string s = argv[i];
    if (s == "--reps" && i + 1 < argc) reps = std::max(1, std::atoi(argv[++i]));
    else if (s == "--rounds" && i + 1 < argc) rounds = std::max(1, std::atoi(argv[++i]));
    else nums.push_back(std::atoll(argv[i]));
  }
  if (nums.size() % 3 != 0) {
    std::fprintf(stderr, "usage: trailing_update_rate [--reps R] [--rounds K] [n jb batch]...\n");
    return 2;
  }
  for (std::size_t i = 0; i < nums.size(); i += 3) {
    const Case c{static_cast<int>(nums[i]), static_cast<int>(nums[i + 1]), nums[i + 2]};
    if (c.n <= c.jb || c.jb < 1 || c.batch < 1) {
      std::fprintf(stderr, "need n > jb >= 1 and batch >= 1\n");
      return 2;
    }
    cases.push_back(c);
  }
  if (cases.empty())
    cases = {{512, 64, 640}, {512, 128, 640}, {320, 64, 640}, {1024, 64, 60}, {1024, 128, 60},
             {2048, 64, 8},  {2048, 128, 8},  {4096, 64, 2},  {4096, 128, 2}};
  DeviceInfo dev;
  CK(cudaGetDevice(&dev.device));
  cudaDeviceProp prop{};
  CK(cudaGetDeviceProperties(&prop, dev.device));
  dev.cc_major = prop.major;
  dev.cc_minor = prop.minor;
  dev.sm_count = prop.multiProcessorCount;
  if (larfb_stripe_initialize() != Status::success) return 1;
  if (larfb_stripe64_available(dev.cc_major, dev.cc_minor) && larfb_stripe64_initialize() != Status::success) return 1;
  cudaStream_t stream;
  CK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cublasHandle_t h;
  CB(cublasCreate(&h));
  CB(cublasSetStream(h, stream));
  std::printf("%s, %d SMs; %d rounds of %d updates each, median per update\n", prop.name, dev.sm_count, rounds, reps);
  for (const Case& c : cases) run_case(c, dev, h, stream, reps, rounds);
  CB(cublasDestroy(h));
  CK(cudaStreamDestroy(stream));
  return 0;
}
