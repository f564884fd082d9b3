#include "cpu/worker_pool.hpp"

#include <algorithm>

namespace batchqr::detail {

WorkerPool::~WorkerPool() {
  {
    std::lock_guard<std::mutex> lock(m_);
    stop_ = true;
  }
  wake_.notify_all();
  for (auto& t : threads_) t.join();
}

void WorkerPool::worker_main(int id) {
  std::uint64_t seen = 0;
  for (;;) {
    PartFn fn = nullptr;
    void* ctx = nullptr;
    {
      std::unique_lock<std::mutex> lock(m_);
      wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      if (id + 1 >= job_parts_) continue;  // not part of this job
      fn = job_fn_;
      ctx = job_ctx_;
    }
    fn(ctx, id + 1);
    {
      std::lock_guard<std::mutex> lock(m_);
      if (--pending_ == 0) done_.notify_one();
    }
  }
}

int WorkerPool::run_impl(int parts, PartFn fn, void* ctx) noexcept {
  std::lock_guard<std::mutex> call(call_mutex_);
  parts = std::max(1, std::min(parts, max_workers_));
  // Start the threads this job needs and the pool does not have yet.
  while (static_cast<int>(threads_.size()) < parts - 1) {
    try {
      threads_.emplace_back(&WorkerPool::worker_main, this, static_cast<int>(threads_.size()));
    } catch (...) {  // std::system_error (no more threads) or std::bad_alloc
      break;
    }
  }
  parts = std::min(parts, static_cast<int>(threads_.size()) + 1);
  if (parts > 1) {
    std::lock_guard<std::mutex> lock(m_);
    job_fn_ = fn;
    job_ctx_ = ctx;
    job_parts_ = parts;
    pending_ = parts - 1;
    ++generation_;
  }
  wake_.notify_all();
  fn(ctx, 0);
  if (parts > 1) {
    std::unique_lock<std::mutex> lock(m_);
    done_.wait(lock, [&] { return pending_ == 0; });
    job_fn_ = nullptr;
    job_ctx_ = nullptr;
  }
  return parts;
}

}  // namespace batchqr::detail
