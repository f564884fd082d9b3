// Internal: the CPU backend's worker threads, started on first use and kept for the
// context's lifetime (starting threads on every call cost more than small batches take).
// One job at a time; the calling thread runs part 0 itself.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

namespace batchqr::detail {

class WorkerPool {
 public:
  explicit WorkerPool(int max_workers) : max_workers_(max_workers) {}
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  // Runs part(0) .. part(parts - 1), part 0 on the calling thread, and returns when all
  // are done. Returns the number of parts that ran: fewer than asked only if threads
  // could not be started (then the caller must run the rest). Calls take turns.
  // `part` must not throw.
  template <class F>
  int run(int parts, F& part) noexcept {
    return run_impl(parts, [](void* f, int i) { (*static_cast<F*>(f))(i); }, &part);
  }

 private:
  using PartFn = void (*)(void*, int);
  int run_impl(int parts, PartFn fn, void* ctx) noexcept;
  void worker_main(int id);

  const int max_workers_;
  std::mutex call_mutex_;  // one job at a time
  std::mutex m_;
  std::condition_variable wake_, done_;
  std::vector<std::thread> threads_;  // thread i runs part i + 1
  PartFn job_fn_ = nullptr;
  void* job_ctx_ = nullptr;
  int job_parts_ = 0;
  int pending_ = 0;
  std::uint64_t generation_ = 0;
  bool stop_ = false;
};

}  // namespace batchqr::detail
