// batchqr: the vocabulary types of the public API.
#pragma once

#include <cstdint>

// Same type as cudaStream_t, declared without pulling in the CUDA headers so that
// CPU-only users can include batchqr.
struct CUstream_st;

namespace batchqr {

using Stream = CUstream_st*;  // == cudaStream_t; nullptr is the legacy default stream

// Storage order of each matrix.
//   row_major: element (i, j) at a[i * ld + j]  (a contiguous PyTorch/NumPy tensor)
//   col_major: element (i, j) at a[i + j * ld]  (LAPACK)
// The factors come back in the layout they came in.
enum class Layout : int { row_major = 0, col_major = 1 };

enum class Backend : int {
  cpu = 0,   // LAPACK sgeqrf/sgelqf per matrix on host threads; pointers are host memory
  cuda = 1,  // batchqr's own kernels; pointers are device memory
};

// Which kernels run the O(n^3) trailing updates of the CUDA backend's blocked algorithm.
// Every mode is FP32-grade (see Accuracy in README.md): tensor-core products split each FP32
// operand into two TF32 parts (3xTF32). Panels always run in FP32, with norms checked and
// recomputed in FP64 when an FP32 sum of squares could have over- or underflowed.
enum class Math : int {
  automatic = 0,  // the plan measured fastest (docs/policy.md): batchqr's larfb_stripe and
                  // larfb_stripe64 kernels (3xTF32 on tensor cores) wherever they implement
                  // the update, three cuBLAS SGEMMs (FP32) for the rest
  fp32 = 1,       // the same plan as automatic; the name is older than the stripe kernels
  tf32x3 = 2,     // every update on the first tensor-core larfb (larfb.cuh, 3xTF32), measured
                  // slower (docs/perf-notes.md v3); kept for comparison
};

// A strided batch of FP32 m x n matrices and their tau vectors:
//   matrix b starts at a + b * stride, tau of matrix b at tau + b * tau_stride.
// Use make_geqrf_desc() for packed batches.
struct GeqrfDesc {
  std::int64_t m = 0;
  std::int64_t n = 0;
  std::int64_t batch = 0;
  Layout layout = Layout::row_major;
  std::int64_t ld = 0;          // >= n (row_major) or >= m (col_major), and >= 1
  std::int64_t stride = 0;      // elements between matrices; >= the span of one matrix
  std::int64_t tau_stride = 0;  // elements between tau vectors; >= min(m, n)
};

// Packed batch: ld = n (row-major) or m (col-major), stride = m * n, tau_stride = min(m, n).
inline GeqrfDesc make_geqrf_desc(std::int64_t m, std::int64_t n, std::int64_t batch,
                                 Layout layout = Layout::row_major) {
  GeqrfDesc d;
  d.m = m;
  d.n = n;
  d.batch = batch;
  d.layout = layout;
  const std::int64_t ld = layout == Layout::row_major ? n : m;
  d.ld = ld > 0 ? ld : 1;
  d.stride = m * n;
  d.tau_stride = m < n ? m : n;
  return d;
}

}  // namespace batchqr
