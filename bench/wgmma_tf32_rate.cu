// Throughput of TF32 wgmma on this GPU: the library's m64n32k8 and m64n64k8 (larfb_stripe64's
// products) with A from registers and B from shared memory (K-major, 128-byte swizzle), by
// warpgroups per CTA and products per commit. One CTA per SM; every warpgroup runs
// `chain` products on one accumulator set, commits and waits, `rounds` times. Prints
// TFLOP/s (2 x FMA, FP32-equivalent counting each TF32 product once) and cycles per
// product per SM (clock64).
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "cuda/wgmma_tf32.cuh"

namespace {

#if BATCHQR_HAVE_WGMMA
// The library's two forms: m64n32k8 and m64n64k8.
template <int N>
__device__ __forceinline__ void mma(float (&d)[N / 2], const std::uint32_t (&a)[4], std::uint64_t desc) {
  if constexpr (N == 64)
    batchqr::cuda::wgmma_m64n64k8_tf32(d, a, desc);
  else
    batchqr::cuda::wgmma_m64n32k8_tf32(d, a, desc);
}
#endif

template <int N, int kChain>
__global__ void rate_kernel(int rounds, float* sink, long long* cycles) {
#if BATCHQR_HAVE_WGMMA
  extern __shared__ __align__(16) unsigned char raw[];
  unsigned char* smem = raw + ((1024u - (batchqr::cuda::smem_address(raw) & 1023u)) & 1023u);
  for (int i = threadIdx.x; i < N * 32; i += blockDim.x) reinterpret_cast<float*>(smem)[i] = 1.0f / (1 + i % 7);
  __syncthreads();
  float d[N / 2];
  for (int e = 0; e < N / 2; ++e) d[e] = 0.0f;
  std::uint32_t a[1][4];
  for (int e = 0; e < 4; ++e) a[0][e] = __float_as_uint(1.0f + 0.001f * (threadIdx.x + e));
  const long long t0 = clock64();
  for (int r = 0; r < rounds; ++r) {
    batchqr::cuda::wgmma_pin(d);
    batchqr::cuda::wgmma_pin(a);
    batchqr::cuda::wgmma_fence();
#pragma unroll
    for (int k = 0; k < kChain; ++k) mma<N>(d, a[0], batchqr::cuda::wgmma_desc_sw128(smem + 32 * (k & 3)));
    batchqr::cuda::wgmma_commit();
    batchqr::cuda::wgmma_wait_all(d);
  }
  const long long t1 = clock64();
  float s = 0.0f;
  for (int e = 0; e < N / 2; ++e) s += d[e];
  if (s == 12345.0f) sink[0] = s;
  if (threadIdx.x == 0 && blockIdx.x == 0) cycles[0] = t1 - t0;
#else
  (void)rounds;
  (void)sink;
  (void)cycles;
#endif
}

template <int N, int kChain>
void run(int sms, int wgs, float* sink, long long* cycles) {
  const int chain = kChain, rounds = 24000 / kChain;
  const int smem = N * 128 + 1024;
  cudaFuncSetAttribute(rate_kernel<N, kChain>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  rate_kernel<N, kChain><<<sms, 128 * wgs, smem>>>(2, sink, cycles);  // warm-up
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  cudaEventRecord(e0);
  rate_kernel<N, kChain><<<sms, 128 * wgs, smem>>>(rounds, sink, cycles);
  cudaEventRecord(e1);
  cudaEventSynchronize(e1);
  float ms = 0.0f;
  cudaEventElapsedTime(&ms, e0, e1);
  long long cyc = 0;
  cudaMemcpy(&cyc, cycles, sizeof cyc, cudaMemcpyDeviceToHost);
  const double products = static_cast<double>(wgs) * chain * rounds;  // per SM
  const double fma = products * 64.0 * N * 8.0;
  std::printf(
      "N=%3d warpgroups=%d chain=%3d: %7.1f TFLOP/s  %6.1f cycles per product per SM  %7.1f FMA/cycle/SM  (%s)\n", N,
      wgs, chain, 2.0 * fma * sms / (ms * 1e-3) / 1e12, cyc / products, fma / cyc,
      cudaGetErrorString(cudaGetLastError()));
}

}  // namespace

int main() {
  int sms = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  float* sink = nullptr;
  long long* cycles = nullptr;
  cudaMalloc(&sink, sizeof(float));
  cudaMalloc(&cycles, sizeof(long long));
  for (int wgs : {1, 2, 3}) {
    run<64, 12>(sms, wgs, sink, cycles);
    run<64, 24>(sms, wgs, sink, cycles);
    run<64, 96>(sms, wgs, sink, cycles);
    run<32, 24>(sms, wgs, sink, cycles);
    run<32, 96>(sms, wgs, sink, cycles);
  }
  return 0;
}
