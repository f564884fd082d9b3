// GPU validator: Q^T A and the thin Q formed in FP64 by applying the FP32 reflectors one at a
// time (exact FP64 images of H and tau), Q^T Q and Q R by cuBLAS DGEMM, then the
// 1-norms per matrix. Sums run in a fixed order, so the figures are reproducible.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "batchqr/check/validate_device.hpp"

namespace batchqr::check {
namespace {

constexpr int kStripCols = 8;
constexpr int kThreads = 256;

struct Src {
  const float* p;
  std::int64_t ld, stride;
  Layout layout;
  __device__ double at(std::int64_t b, std::int64_t i, std::int64_t j) const {
    const float* q = p + b * stride;
    return layout == Layout::row_major ? q[i * ld + j] : q[i + j * ld];
  }
};

// A -> Ad, triu(H) -> R (both m x n col-major FP64); non-finite H flags the matrix.
__global__ void unpack_kernel(Src A, Src H, int m, int n, double* Ad, double* R, int* bad) {
  const std::int64_t b = blockIdx.y;
  const std::int64_t mn = static_cast<std::int64_t>(m) * n;
  for (std::int64_t idx = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; idx < mn;
       idx += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const int i = static_cast<int>(idx % m), j = static_cast<int>(idx / m);
    const double h = H.at(b, i, j);
    if (!isfinite(h)) atomicOr(&bad[b], 1);
    Ad[b * mn + idx] = A.at(b, i, j);
    R[b * mn + idx] = i <= j ? h : 0.0;
  }
}

__global__ void check_tau_kernel(const float* tau, std::int64_t tau_stride, int k, int* bad) {
  const std::int64_t b = blockIdx.x;
  for (int j = threadIdx.x; j < k; j += blockDim.x)
    if (!isfinite(tau[b * tau_stride + j])) atomicOr(&bad[b], 1);
}

// The first k columns of the m x m identity.
__global__ void identity_kernel(double* Q, int m, int k) {
  const std::int64_t b = blockIdx.y;
  const std::int64_t mk = static_cast<std::int64_t>(m) * k;
  for (std::int64_t idx = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; idx < mk;
       idx += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    Q[b * mk + idx] = (idx % m == idx / m) ? 1.0 : 0.0;
}

// X (m x ncols col-major FP64) := H_j X for j in the given order (each H_j symmetric).
// One CTA per (strip of kStripCols columns, matrix).
__global__ void __launch_bounds__(kThreads) apply_reflectors_kernel(Src H, const float* tau, std::int64_t tau_stride,
                                                                   int m, int k, double* X, int ncols,
                                                                   bool forward) {
  __shared__ double red[kThreads / 32][kStripCols];
  __shared__ double wsum[kStripCols];
  const std::int64_t b = blockIdx.y;
  const int c0 = blockIdx.x * kStripCols;
  const int cn = min(kStripCols, ncols - c0);
  double* Xb = X + b * static_cast<std::int64_t>(m) * ncols + static_cast<std::int64_t>(c0) * m;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  for (int t = 0; t < k; ++t) {
    const int j = forward ? t : k - 1 - t;
    const double tj = tau[b * tau_stride + j];
    if (tj == 0.0) continue;
    double part[kStripCols];
#pragma unroll
    for (int c = 0; c < kStripCols; ++c) part[c] = 0.0;
    for (int i = j + threadIdx.x; i < m; i += kThreads) {
      const double v = i == j ? 1.0 : H.at(b, i, j);
#pragma unroll
      for (int c = 0; c < kStripCols; ++c)
        if (c < cn) part[c] += v * Xb[i + static_cast<std::int64_t>(c) * m];
    }
#pragma unroll
    for (int c = 0; c < kStripCols; ++c) {
      double s = part[c];
      for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
      if (lane == 0) red[warp][c] = s;
    }
    __syncthreads();
    if (threadIdx.x < kStripCols) {
      double s = 0.0;
      for (int w = 0; w < kThreads / 32; ++w) s += red[w][threadIdx.x];
      wsum[threadIdx.x] = s * tj;
    }
    __syncthreads();
    for (int i = j + threadIdx.x; i < m; i += kThreads) {
      const double v = i == j ? 1.0 : H.at(b, i, j);
#pragma unroll
      for (int c = 0; c < kStripCols; ++c)
        if (c < cn) Xb[i + static_cast<std::int64_t>(c) * m] -= v * wsum[c];
    }
    __syncthreads();
  }
}

// Per matrix: ||A||_1, ||R - QtA||_1, ||tril(QtA,-1)||_1, ||QR - A||_1, ||QtQ - I||_1
// (QtQ is k x k), and whether Q is finite. One CTA per matrix, one warp per column.
__global__ void norms_kernel(const double* Ad, const double* R, const double* QtA, const double* QR,
                             const double* QtQ, int m, int n, int k, double* out) {
  __shared__ double best[kThreads / 32][6];
  const std::int64_t b = blockIdx.x;
  const std::int64_t mn = static_cast<std::int64_t>(m) * n, kk = static_cast<std::int64_t>(k) * k;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  double mx[6] = {0, 0, 0, 0, 0, 0};
  for (int j = warp; j < n; j += kThreads / 32) {
    double s[4] = {0, 0, 0, 0};
    for (int i = lane; i < m; i += 32) {
      const std::int64_t x = b * mn + static_cast<std::int64_t>(j) * m + i;
      s[0] += fabs(Ad[x]);
      s[1] += fabs(R[x] - QtA[x]);
      if (i > j) s[2] += fabs(QtA[x]);
      s[3] += fabs(QR[x] - Ad[x]);
    }
    for (int q = 0; q < 4; ++q) {
      for (int o = 16; o > 0; o >>= 1) s[q] += __shfl_xor_sync(0xffffffffu, s[q], o);
      mx[q] = fmax(mx[q], s[q]);
    }
  }
  for (int j = warp; j < k; j += kThreads / 32) {
    double s = 0.0;
    bool finite = true;
    for (int i = lane; i < k; i += 32) {
      const double g = QtQ[b * kk + static_cast<std::int64_t>(j) * k + i];
      finite &= isfinite(g);
      s += fabs(g - (i == j ? 1.0 : 0.0));
    }
    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
    finite = __all_sync(0xffffffffu, finite);
    mx[4] = fmax(mx[4], s);
    if (!finite) mx[5] = 1.0;
  }
  if (lane == 0)
    for (int q = 0; q < 6; ++q) best[warp][q] = mx[q];
  __syncthreads();
  if (threadIdx.x < 6) {
    double v = 0.0;
    for (int w = 0; w < kThreads / 32; ++w) {
      const double x = best[w][threadIdx.x];
      v = (isnan(x) || isnan(v)) ? NAN : fmax(v, x);
    }
    out[b * 6 + threadIdx.x] = v;
  }
}

double scaled(double resid, double denom) {
  if (denom > 0) return resid / denom;
  return resid == 0 ? 0.0 : std::numeric_limits<double>::infinity();
}

template <typename T>
struct DeviceBuffer {
  T* p = nullptr;
  ~DeviceBuffer() {
    if (p) cudaFree(p);
  }
  bool alloc(std::size_t count) { return cudaMalloc(&p, std::max<std::size_t>(1, count) * sizeof(T)) == cudaSuccess; }
};

}  // namespace

bool validate_device(const GeqrfDesc& d, const float* a, const float* h, const float* tau, GateReport* report,
                     Stream stream_, std::size_t max_temp_bytes) {
  cudaStream_t stream = stream_;
  GateReport rep;
  if (d.batch <= 0 || d.m <= 0 || d.n <= 0) {
    *report = rep;
    return true;
  }
  const int m = static_cast<int>(d.m), n = static_cast<int>(d.n), k = std::min(m, n);
  const std::size_t mn = static_cast<std::size_t>(m) * n, mk = static_cast<std::size_t>(m) * k,
                    kk = static_cast<std::size_t>(k) * k;
  const std::size_t per = (4 * mn + mk + kk) * sizeof(double);
  const std::int64_t chunk = std::max<std::int64_t>(1, std::min<std::int64_t>({d.batch, static_cast<std::int64_t>(max_temp_bytes / per), 65535}));  // gridDim.y

  DeviceBuffer<double> Ad, R, QtA, QR, Q, QtQ, out;
  DeviceBuffer<int> bad;
  if (!Ad.alloc(chunk * mn) || !R.alloc(chunk * mn) || !QtA.alloc(chunk * mn) || !QR.alloc(chunk * mn) ||
      !Q.alloc(chunk * mk) || !QtQ.alloc(chunk * kk) || !out.alloc(chunk * 6) || !bad.alloc(chunk))
    return false;
  cublasHandle_t blas = nullptr;
  if (cublasCreate(&blas) != CUBLAS_STATUS_SUCCESS) return false;
  cublasSetStream(blas, stream);
  cublasSetMathMode(blas, CUBLAS_DEFAULT_MATH);  // true FP64, no emulation
  bool ok = true;
  rep.matrices.resize(static_cast<std::size_t>(d.batch));
  std::vector<double> host(static_cast<std::size_t>(chunk) * 6);
  std::vector<int> host_bad(static_cast<std::size_t>(chunk));

  for (std::int64_t b0 = 0; b0 < d.batch && ok; b0 += chunk) {
    const int nb = static_cast<int>(std::min(chunk, d.batch - b0));
    const Src A{a + b0 * d.stride, d.ld, d.stride, d.layout};
    const Src H{h + b0 * d.stride, d.ld, d.stride, d.layout};
    const float* tb = tau + b0 * d.tau_stride;
    ok &= cudaMemsetAsync(bad.p, 0, sizeof(int) * nb, stream) == cudaSuccess;
    const unsigned gx_mn = static_cast<unsigned>(std::min<std::size_t>(4096, (mn + kThreads - 1) / kThreads));
    const unsigned gx_mk = static_cast<unsigned>(std::min<std::size_t>(4096, (mk + kThreads - 1) / kThreads));
    unpack_kernel<<<dim3(gx_mn, nb), kThreads, 0, stream>>>(A, H, m, n, Ad.p, R.p, bad.p);
    check_tau_kernel<<<nb, 128, 0, stream>>>(tb, d.tau_stride, k, bad.p);
    ok &= cudaMemcpyAsync(QtA.p, Ad.p, sizeof(double) * mn * nb, cudaMemcpyDeviceToDevice, stream) == cudaSuccess;
    identity_kernel<<<dim3(gx_mk, nb), kThreads, 0, stream>>>(Q.p, m, k);
    // Q^T A = H_{k-1} ... H_0 A;  Q_k = H_0 ... H_{k-1} I[:, 0:k].
    apply_reflectors_kernel<<<dim3((n + kStripCols - 1) / kStripCols, nb), kThreads, 0, stream>>>(
        H, tb, d.tau_stride, m, k, QtA.p, n, true);
    apply_reflectors_kernel<<<dim3((k + kStripCols - 1) / kStripCols, nb), kThreads, 0, stream>>>(
        H, tb, d.tau_stride, m, k, Q.p, k, false);
    ok &= cudaGetLastError() == cudaSuccess;
    const double one = 1.0, zero = 0.0;
    ok &= cublasDgemmStridedBatched(blas, CUBLAS_OP_T, CUBLAS_OP_N, k, k, m, &one, Q.p, m, mk, Q.p, m, mk, &zero,
                                    QtQ.p, k, kk, nb) == CUBLAS_STATUS_SUCCESS;
    // Q R = Q_k R[0:k, :] (R is zero below row k).
    ok &= cublasDgemmStridedBatched(blas, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &one, Q.p, m, mk, R.p, m, mn, &zero,
                                    QR.p, m, mn, nb) == CUBLAS_STATUS_SUCCESS;
    norms_kernel<<<nb, kThreads, 0, stream>>>(Ad.p, R.p, QtA.p, QR.p, QtQ.p, m, n, k, out.p);
    ok &= cudaGetLastError() == cudaSuccess;
    ok &= cudaMemcpyAsync(host.data(), out.p, sizeof(double) * 6 * nb, cudaMemcpyDeviceToHost, stream) == cudaSuccess;
    ok &= cudaMemcpyAsync(host_bad.data(), bad.p, sizeof(int) * nb, cudaMemcpyDeviceToHost, stream) == cudaSuccess;
    ok &= cudaStreamSynchronize(stream) == cudaSuccess;
    if (!ok) break;
    const double N = std::max(m, n), inf = std::numeric_limits<double>::infinity();
    for (int i = 0; i < nb; ++i) {
      const double* o = &host[static_cast<std::size_t>(i) * 6];
      MatrixReport& r = rep.matrices[static_cast<std::size_t>(b0 + i)];
      r.finite = host_bad[i] == 0 && o[5] == 0.0 && std::isfinite(o[1]) && std::isfinite(o[4]);
      if (!r.finite) {
        r.factor = r.orth = r.leak = r.recon = inf;
        continue;
      }
      r.factor = scaled(o[1], N * kEps32 * o[0]);
      r.leak = scaled(o[2], N * kEps32 * o[0]);
      r.recon = scaled(o[3], N * kEps32 * o[0]);
      r.orth = o[4] / (N * kEps32);
    }
  }
  cublasDestroy(blas);
  if (!ok) return false;
  summarize(rep);
  *report = std::move(rep);
  return true;
}

}  // namespace batchqr::check
