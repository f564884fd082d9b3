// CPU backend: LAPACK per matrix, matrices spread over host threads.
//
// Column-major matrices go to sgeqrf. A row-major m x n matrix is, in memory, the
// column-major n x m matrix A^T; sgelqf of A^T = L Q' stores each reflector in a row of
// A^T to the right of the diagonal, which is the column of A below the diagonal, with
// the same sign convention. So sgelqf on the untouched buffer yields exactly the geqrf
// factors of A in row-major storage, with no transposition.
#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdint>
#include <thread>

#include "api/backend.hpp"
#include "api/check_args.hpp"
#include "cpu/blas_threads.hpp"
#include "cpu/lapack.hpp"
#include "cpu/worker_pool.hpp"

namespace batchqr::detail {
namespace {

class CpuBackend final : public BackendImpl {
 public:
  explicit CpuBackend(int threads) : threads_(threads), pool_(threads) {}
  Backend kind() const noexcept override { return Backend::cpu; }

  Status workspace_size(const GeqrfDesc& d, std::size_t* bytes) const noexcept override {
    if (d.m > INT_MAX || d.n > INT_MAX || d.ld > INT_MAX) return Status::not_supported;
    int lwork = 0;
    const Status st = query_lwork(d, &lwork);
    if (st != Status::success) return st;
    *bytes = static_cast<std::size_t>(workers(d)) * static_cast<std::size_t>(lwork) * sizeof(float);
    return Status::success;
  }

  Status geqrf(const GeqrfDesc& d, float* a, float* tau, void* workspace, std::size_t,
               Stream) const noexcept override {
    int lwork = 0;
    Status st = query_lwork(d, &lwork);
    if (st != Status::success) return st;
    const int nw = workers(d);
    std::atomic<bool> failed{false};
    auto work = [&](int w) {
      float* ws = static_cast<float*>(workspace) + static_cast<std::int64_t>(w) * lwork;
      for (std::int64_t b = w; b < d.batch; b += nw)
        if (factor_one(d, a + b * d.stride, tau + b * d.tau_stride, ws, lwork) != 0) failed = true;
    };
    const SingleThreadedBlas blas_guard(nw > 1);
    // Part w factors matrices w, w + nw, ...; parts the pool could not start run here.
    const int ran = pool_.run(nw, work);
    for (int w = ran; w < nw; ++w) work(w);
    return failed ? Status::backend_error : st;
  }

 private:
  int workers(const GeqrfDesc& d) const {
    return static_cast<int>(std::max<std::int64_t>(1, std::min<std::int64_t>(threads_, d.batch)));
  }

  // The LAPACK problem: sgeqrf(m, n) for column-major, sgelqf(n, m) for row-major.
  static Status query_lwork(const GeqrfDesc& d, int* lwork) {
    const int rows = static_cast<int>(d.layout == Layout::col_major ? d.m : d.n);
    const int cols = static_cast<int>(d.layout == Layout::col_major ? d.n : d.m);
    const int lda = static_cast<int>(d.ld);
    const int query = -1;
    int info = 0;
    float opt = 0.0f, dummy_a = 0.0f, dummy_tau = 0.0f;
    if (d.layout == Layout::col_major)
      sgeqrf_(&rows, &cols, &dummy_a, &lda, &dummy_tau, &opt, &query, &info);
    else
      sgelqf_(&rows, &cols, &dummy_a, &lda, &dummy_tau, &opt, &query, &info);
    if (info != 0) return Status::backend_error;
    *lwork = std::max(1, static_cast<int>(opt));
    return Status::success;
  }

  static int factor_one(const GeqrfDesc& d, float* a, float* tau, float* ws, int lwork) {
    const int rows = static_cast<int>(d.layout == Layout::col_major ? d.m : d.n);
    const int cols = static_cast<int>(d.layout == Layout::col_major ? d.n : d.m);
    const int lda = static_cast<int>(d.ld);
    int info = 0;
    if (d.layout == Layout::col_major)
      sgeqrf_(&rows, &cols, a, &lda, tau, ws, &lwork, &info);
    else
      sgelqf_(&rows, &cols, a, &lda, tau, ws, &lwork, &info);
    return info;
  }

  int threads_;
  mutable WorkerPool pool_;  // calls on one context take turns on it
};

}  // namespace

Status make_cpu_backend(const ContextOptions& options, std::unique_ptr<BackendImpl>* out) noexcept {
  int threads = options.num_threads;
  if (threads < 0) return Status::not_supported;
  if (threads == 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  out->reset(new (std::nothrow) CpuBackend(threads));
  return *out ? Status::success : Status::out_of_memory;
}

}  // namespace batchqr::detail
