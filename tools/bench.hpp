// batchqr CLI: the benchmark runner (timing method of spec/qr-contract.md).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "batchqr/batchqr.hpp"
#include "batchqr/check/suite.hpp"
#include "batchqr/check/validate.hpp"

namespace batchqr::tools {

struct Timing {
  double mean_ms = 0, median_ms = 0, min_ms = 0;
  int rounds = 0;
};

// One implementation on one case: batchqr itself or a baseline.
struct ImplResult {
  std::string name;
  bool ran = false;
  std::string note;  // why it did not run, or what failed
  Timing time;
  check::GateReport gate;  // worst over all inputs of the case
  bool validated = false;
  bool pass() const { return ran && validated && gate.pass(); }
};

struct CaseResult {
  check::CaseSpec spec;
  std::int64_t inputs = 0;
  ImplResult batchqr;
  std::vector<ImplResult> baselines;
};

// cublasSgeqrfBatched is timed up to this n unless --cublas-all is given.
inline constexpr std::int64_t kCublasMaxN = 1024;

struct BenchOptions {
  Backend backend = Backend::cpu;
  Layout layout = Layout::row_major;
  std::uint64_t seed = 20261130;
  int rounds = 0;                // 0: adaptive (see choose_rounds)
  double budget_s = 1.0;         // adaptive rounds aim at this much timed work per implementation
  bool baselines = true;         // GPU: also time cuSOLVER and cuBLAS
  bool cublas_all = false;       // time cuBLAS batched for n > kCublasMaxN too
  bool validate = true;          // false: factor and time only (sanitizer runs)
  Math math = Math::automatic;   // CUDA backend: trailing-update arithmetic
  int threads = 0;               // CPU backend threads (0: all cores)
};

// Rounds for an implementation whose first timed round took `first_ms`.
int choose_rounds(const BenchOptions& o, double first_ms, int min_rounds, int max_rounds);

// Median/mean/min of per-round samples.
Timing summarize_samples(std::vector<double> samples_ms);

// Merges the gate reports of several inputs into one worst-case report.
void merge_gate(check::GateReport& into, const check::GateReport& from);

// Generates the `index`-th input of a case in the given layout (host memory, packed).
std::vector<float> make_input(const check::CaseSpec& c, Layout layout, std::uint64_t seed, std::int64_t index);

CaseResult run_case_cpu(const check::CaseSpec& c, const BenchOptions& o);

// Empty when `need_bytes` of host memory fit in what the system reports available (Linux:
// MemAvailable; elsewhere no check), else the reason a case is skipped. Allocating past it
// would end in the kernel's OOM killer, not in an exception the tool could report.
std::string host_memory_shortfall(double need_bytes);

#if BATCHQR_HAS_CUDA
// The GPU runner keeps its handles and buffers between cases.
class CudaBench {
 public:
  explicit CudaBench(const BenchOptions& o);
  ~CudaBench();
  CudaBench(const CudaBench&) = delete;
  CudaBench& operator=(const CudaBench&) = delete;
  bool ok() const;
  std::string device_name() const;
  CaseResult run(const check::CaseSpec& c);

 private:
  struct Impl;
  Impl* impl_;
};
#endif

}  // namespace batchqr::tools
