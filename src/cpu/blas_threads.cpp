#include "cpu/blas_threads.hpp"

#include <dlfcn.h>

#include <mutex>

namespace batchqr::detail {
namespace {

using SetFn = void (*)(int);
using GetFn = int (*)();

struct OpenBlasControl {
  SetFn set = nullptr;
  GetFn get = nullptr;
  std::mutex mu;
  int users = 0;
  int saved = 0;
  OpenBlasControl() {
    set = reinterpret_cast<SetFn>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads"));
    get = reinterpret_cast<GetFn>(dlsym(RTLD_DEFAULT, "openblas_get_num_threads"));
    if (!set || !get) set = nullptr;
  }
};

OpenBlasControl& control() {
  static OpenBlasControl c;
  return c;
}

}  // namespace

SingleThreadedBlas::SingleThreadedBlas(bool active) : active_(active && control().set != nullptr) {
  if (!active_) return;
  OpenBlasControl& c = control();
  std::lock_guard<std::mutex> lock(c.mu);
  if (c.users++ == 0) {
    c.saved = c.get();
    c.set(1);
  }
}

SingleThreadedBlas::~SingleThreadedBlas() {
  if (!active_) return;
  OpenBlasControl& c = control();
  std::lock_guard<std::mutex> lock(c.mu);
  if (--c.users == 0) c.set(c.saved);
}

}  // namespace batchqr::detail
