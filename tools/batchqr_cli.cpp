// batchqr: command-line tool. Generates the contract's inputs, factors them, validates
// every result against the gate in FP64 and times batchqr (beside cuSOLVER and cuBLAS on
// the GPU) as the contract prescribes.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <new>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "batchqr/batchqr.hpp"
#include "batchqr/check/suite.hpp"
#include "bench.hpp"

namespace {

using namespace batchqr;
using tools::BenchOptions;
using tools::CaseResult;
using tools::ImplResult;

const char* kUsage =
    "usage: batchqr bench [options]\n"
    "       batchqr version\n"
    "\n"
    "bench options:\n"
    "  --suite NAME        qr_v2 (the 14 benchmarks) or smoke (the 22 smoke tests)\n"
    "  --case SPEC         one case, e.g. batch=640,n=512,cond=2,case=mixed (keys: batch, n,\n"
    "                      m [default n], cond [default 0], case [default dense]); repeatable\n"
    "  --backend B         auto (default: cuda when a GPU is present, else cpu), cpu, cuda\n"
    "  --math M            CUDA trailing updates: auto (default: the stripe kernels, 3xTF32,\n"
    "                      cuBLAS SGEMM for the rest), fp32 (the same), tf32x3 (the first\n"
    "                      tensor-core larfb, slower); all FP32-grade\n"
    "  --layout L          row (default, like a contiguous PyTorch tensor) or col (LAPACK)\n"
    "  --json FILE         also write the results as JSON\n"
    "  --seed N            base seed of the inputs (default 20261130)\n"
    "  --rounds N          timed rounds per implementation (default: adaptive, ~1 s each)\n"
    "  --no-baselines      GPU: do not time cuSOLVER / cuBLAS\n"
    "  --cublas-all        GPU: time cublasSgeqrfBatched also for n > 1024 (slow there)\n"
    "  --no-validate       factor and time only, no gate check (for sanitizer runs);\n"
    "                      every case then reports 'unchecked' and the exit status is 0\n"
    "  --threads N         CPU backend worker threads (default: all cores)\n"
    "\n"
    "Every case is validated in FP64 (factor residual <= 20, orthogonality <= 100, finite);\n"
    "the exit status is 1 when any batchqr result fails the gate, 2 on a usage error.\n";

int usage_error(const std::string& msg) {
  std::fprintf(stderr, "batchqr: %s\n\n%s", msg.c_str(), kUsage);
  return 2;
}

std::string json_escape(const std::string& s) {
  std::string o;
  for (char ch : s) {
    if (ch == '"' || ch == '\\') o += '\\';
    if (static_cast<unsigned char>(ch) < 0x20) continue;
    o += ch;
  }
  return o;
}

std::string num(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

void json_impl(std::ofstream& f, const ImplResult& r) {
  f << "{\"name\":\"" << r.name << "\",\"ran\":" << (r.ran ? "true" : "false") << ",\"validated\":"
    << (r.validated ? "true" : "false") << ",\"pass\":"
    << (r.pass() ? "true" : "false") << ",\"ms_mean\":" << num(r.time.mean_ms) << ",\"ms_median\":"
    << num(r.time.median_ms) << ",\"ms_min\":" << num(r.time.min_ms) << ",\"rounds\":" << r.time.rounds
    << ",\"scaled_factor\":" << num(r.gate.worst_factor) << ",\"scaled_orth\":" << num(r.gate.worst_orth)
    << ",\"scaled_leak\":" << num(r.gate.worst_leak) << ",\"scaled_recon\":" << num(r.gate.worst_recon)
    << ",\"nonfinite\":" << r.gate.nonfinite << ",\"failures\":" << r.gate.failures << ",\"note\":\""
    << json_escape(r.note) << "\"}";
}

bool write_json(const std::string& path, const std::string& backend, const std::string& device,
                const BenchOptions& o, const std::vector<CaseResult>& results, double geomean, bool all_pass) {
  std::ofstream f(path);
  if (!f) return false;
  f << "{\"tool\":\"batchqr " << BATCHQR_VERSION_STRING << "\",\"backend\":\"" << backend << "\",\"device\":\""
    << json_escape(device) << "\",\"math\":\"" << (o.math == Math::fp32 ? "fp32" : o.math == Math::tf32x3 ? "tf32x3" : "auto")
    << "\",\"layout\":\"" << (o.layout == Layout::row_major ? "row" : "col")
    << "\",\"seed\":" << o.seed << ",\"cases\":[";
  for (std::size_t i = 0; i < results.size(); ++i) {
    const CaseResult& c = results[i];
    const ImplResult& r = c.batchqr;
    f << (i ? ",\n" : "\n") << "{\"batch\":" << c.spec.batch << ",\"m\":" << c.spec.m << ",\"n\":" << c.spec.n
      << ",\"cond\":" << num(c.spec.cond) << ",\"case\":\"" << check::to_string(c.spec.dist) << "\",\"inputs\":"
      << c.inputs << ",\"pass\":" << (r.pass() ? "true" : "false") << ",\"ms_mean\":" << num(r.time.mean_ms)
      << ",\"ms_median\":" << num(r.time.median_ms) << ",\"ms_min\":" << num(r.time.min_ms)
      << ",\"rounds\":" << r.time.rounds << ",\"scaled_factor\":" << num(r.gate.worst_factor)
      << ",\"scaled_orth\":" << num(r.gate.worst_orth) << ",\"scaled_leak\":" << num(r.gate.worst_leak)
      << ",\"scaled_recon\":" << num(r.gate.worst_recon) << ",\"note\":\"" << json_escape(r.note)
      << "\",\"baselines\":[";
    for (std::size_t b = 0; b < c.baselines.size(); ++b) {
      if (b) f << ",";
      json_impl(f, c.baselines[b]);
    }
    f << "]}";
  }
  f << "\n],\"geomean_ms\":" << num(geomean) << ",\"all_pass\":" << (all_pass ? "true" : "false") << "}\n";
  return static_cast<bool>(f);
}

int cmd_bench(int argc, char** argv) {
  BenchOptions o;
  std::vector<check::CaseSpec> cases;
  std::string json, backend_name = "auto";
  for (int i = 0; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&](std::string* out) {
      if (i + 1 >= argc) return false;
      *out = argv[++i];
      return true;
    };
    std::string v;
    if (a == "--suite") {
      if (!value(&v)) return usage_error("--suite needs a name");
      std::vector<check::CaseSpec> s;
      if (!check::suite_by_name(v, &s)) return usage_error("unknown suite '" + v + "' (qr_v2 or smoke)");
      cases.insert(cases.end(), s.begin(), s.end());
    } else if (a == "--case") {
      if (!value(&v)) return usage_error("--case needs a spec");
      check::CaseSpec c;
      std::string err;
      if (!check::parse_case(v, &c, &err)) return usage_error("bad --case '" + v + "': " + err);
      cases.push_back(c);
    } else if (a == "--backend") {
      if (!value(&backend_name)) return usage_error("--backend needs auto, cpu or cuda");
    } else if (a == "--math") {
      if (!value(&v) || (v != "auto" && v != "fp32" && v != "tf32x3")) return usage_error("--math needs auto, fp32 or tf32x3");
      o.math = v == "fp32" ? Math::fp32 : v == "tf32x3" ? Math::tf32x3 : Math::automatic;
    } else if (a == "--layout") {
      if (!value(&v) || (v != "row" && v != "col")) return usage_error("--layout needs row or col");
      o.layout = v == "row" ? Layout::row_major : Layout::col_major;
    } else if (a == "--json") {
      if (!value(&json)) return usage_error("--json needs a file name");
    } else if (a == "--seed") {
      if (!value(&v)) return usage_error("--seed needs a number");
      o.seed = std::strtoull(v.c_str(), nullptr, 10);
    } else if (a == "--rounds") {
      if (!value(&v) || std::atoi(v.c_str()) <= 0) return usage_error("--rounds needs a positive number");
      o.rounds = std::atoi(v.c_str());
    } else if (a == "--threads") {
      if (!value(&v) || std::atoi(v.c_str()) < 0) return usage_error("--threads needs a number >= 0");
      o.threads = std::atoi(v.c_str());
    } else if (a == "--no-baselines") {
      o.baselines = false;
    } else if (a == "--cublas-all") {
      o.cublas_all = true;
    } else if (a == "--no-validate") {
      o.validate = false;
    } else if (a == "-h" || a == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    } else {
      return usage_error("unknown option '" + a + "'");
    }
  }
  if (cases.empty()) return usage_error("give --suite or --case");
  for (const auto& c : cases) {
    if (c.m == 0 || c.n == 0 || c.batch == 0) return usage_error("bench cases need batch, m, n >= 1");
    // One batch's bytes must be addressable (the inputs are allocated as one block each).
    const double bytes = static_cast<double>(c.batch) * static_cast<double>(c.m) * static_cast<double>(c.n) * 4.0;
    if (bytes > 0x1p60) {
      char gib[32];
      std::snprintf(gib, sizeof gib, "%.3g", bytes / 0x1p30);
      return usage_error("case " + c.label() + " needs " + gib + " GiB per batch, too large to allocate");
    }
  }

  if (backend_name == "auto") {
    o.backend = cuda_available() ? Backend::cuda : Backend::cpu;
  } else if (backend_name == "cpu") {
    o.backend = Backend::cpu;
  } else if (backend_name == "cuda") {
    if (!cuda_available())
      return usage_error(BATCHQR_HAS_CUDA ? "--backend cuda: no CUDA device is visible"
                                          : "--backend cuda: this build has no CUDA backend");
    o.backend = Backend::cuda;
  } else {
    return usage_error("--backend needs auto, cpu or cuda");
  }

  std::string device = "host CPU";
#if BATCHQR_HAS_CUDA
  std::unique_ptr<tools::CudaBench> gpu;
  if (o.backend == Backend::cuda) {
    gpu = std::make_unique<tools::CudaBench>(o);
    if (!gpu->ok()) {
      std::fprintf(stderr, "batchqr: could not set up the CUDA benchmark (device, cuSOLVER or cuBLAS)\n");
      return 1;
    }
    device = gpu->device_name();
  }
#endif
  const char* bname = o.backend == Backend::cuda ? "cuda" : "cpu";
  const bool tty = isatty(STDERR_FILENO);
  std::fprintf(stderr, "batchqr %s: %zu case(s) on the %s backend (%s)%s\n", BATCHQR_VERSION_STRING, cases.size(),
               bname, device.c_str(),
               o.backend == Backend::cpu ? "; the CPU takes a few minutes for the full suite" : "");

  std::vector<CaseResult> results;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    std::fprintf(stderr, tty ? "\r[%zu/%zu] %-28s" : "[%zu/%zu] %s\n", i + 1, cases.size(), cases[i].label().c_str());
    std::fflush(stderr);
    // A case too large for this machine's memory is reported, not fatal: the run goes on.
    try {
#if BATCHQR_HAS_CUDA
      if (gpu) {
        results.push_back(gpu->run(cases[i]));
        continue;
      }
#endif
      results.push_back(tools::run_case_cpu(cases[i], o));
    } catch (const std::bad_alloc&) {
      tools::CaseResult r;
      r.spec = cases[i];
      r.batchqr.note = "out of host memory";
      results.push_back(r);
    }
  }
  if (tty) std::fprintf(stderr, "\r%-40s\r", "");

  // ---- table ----------------------------------------------------------------------------
  const bool base = !results.empty() && !results[0].baselines.empty();
  std::printf("\n%-26s %9s %9s %8s %8s %5s", "case", "mean ms", "median", "factor", "orth", "gate");
  if (base) std::printf(" %10s %7s %10s %7s", "cusolver", "ratio", "cublas", "ratio");
  std::printf("\n");
  double logsum = 0, worst_f = 0, worst_o = 0;
  int timed = 0, failed = 0;
  for (const CaseResult& c : results) {
    const ImplResult& r = c.batchqr;
    if (!r.ran) {
      std::printf("%-26s  did not run: %s\n", c.spec.label().c_str(), r.note.c_str());
      ++failed;
      continue;
    }
    std::printf("%-26s %9.4f %9.4f %8.3f %8.3f %5s", c.spec.label().c_str(), r.time.mean_ms, r.time.median_ms,
                r.gate.worst_factor, r.gate.worst_orth, !r.validated ? "-" : r.pass() ? "pass" : "FAIL");
    for (const ImplResult& b : c.baselines) {
      if (b.ran)
        std::printf(" %10.3f %6.1fx%s", b.time.median_ms, b.time.median_ms / r.time.median_ms,
                    b.pass() || !b.validated ? "" : "!");
      else
        std::printf(" %10s %7s", "n/a", "");
    }
    std::printf("\n");
    if (r.validated && !r.pass()) ++failed;
    logsum += std::log(r.time.median_ms);
    ++timed;
    worst_f = std::max(worst_f, r.gate.worst_factor);
    worst_o = std::max(worst_o, r.gate.worst_orth);
  }
  const double geomean = timed ? std::exp(logsum / timed) : 0.0;
  std::printf("\ngeometric mean of medians: %.4f ms over %d case(s); worst scaled factor %.3f, orth %.3f; %s\n",
              geomean, timed, worst_f, worst_o, failed ? "SOME CASES FAIL" : o.validate ? "all pass the gate" : "NOT VALIDATED (--no-validate)");
  if (base) std::printf("(ratio = baseline median / batchqr median; '!' marks a baseline that failed the gate)\n");
  for (const CaseResult& c : results)
    for (const ImplResult& b : c.baselines)
      if (!b.note.empty()) std::printf("note: %s %s: %s\n", c.spec.label().c_str(), b.name.c_str(), b.note.c_str());

  if (!json.empty() && !write_json(json, bname, device, o, results, geomean, failed == 0)) {
    std::fprintf(stderr, "batchqr: could not write %s\n", json.c_str());
    return 1;
  }
  return failed ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  const std::string cmd = argv[1];
  if (cmd == "bench") return cmd_bench(argc - 2, argv + 2);
  if (cmd == "version" || cmd == "--version") {
    std::printf("batchqr %s (CUDA backend: %s)\n", BATCHQR_VERSION_STRING,
                BATCHQR_HAS_CUDA ? (cuda_available() ? "built, device present" : "built, no device") : "not built");
    return 0;
  }
  if (cmd == "-h" || cmd == "--help" || cmd == "help") {
    std::fputs(kUsage, stdout);
    return 0;
  }
  return usage_error("unknown command '" + cmd + "'");
}
