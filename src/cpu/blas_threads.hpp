// Internal: keeps a multithreaded BLAS (OpenBLAS) to one thread while batchqr's own
// workers run one LAPACK call each; otherwise the two thread pools fight (measured 5x
// slower on 2 cores, docs/perf-notes.md). Scoped and reference-counted: the previous
// thread count is restored when the last concurrent user leaves. No-op for BLAS
// libraries without openblas_set_num_threads.
#pragma once

namespace batchqr::detail {

class SingleThreadedBlas {
 public:
  explicit SingleThreadedBlas(bool active);
  ~SingleThreadedBlas();
  SingleThreadedBlas(const SingleThreadedBlas&) = delete;
  SingleThreadedBlas& operator=(const SingleThreadedBlas&) = delete;

 private:
  bool active_;
};

}  // namespace batchqr::detail
