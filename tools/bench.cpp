// batchqr CLI: timing helpers and the CPU-backend runner.
#include "bench.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <thread>

#include "batchqr/check/generate.hpp"

namespace batchqr::tools {

int choose_rounds(const BenchOptions& o, double first_ms, int min_rounds, int max_rounds) {
  if (o.rounds > 0) return o.rounds;
  if (first_ms <= 0) return max_rounds;
  const int r = static_cast<int>(std::ceil(o.budget_s * 1e3 / first_ms));
  return std::clamp(r, min_rounds, max_rounds);
}

Timing summarize_samples(std::vector<double> s) {
  Timing t;
  if (s.empty()) return t;
  std::sort(s.begin(), s.end());
  double sum = 0;
  for (double x : s) sum += x;
  t.rounds = static_cast<int>(s.size());
  t.mean_ms = sum / static_cast<double>(s.size());
  t.min_ms = s.front();
  const std::size_t h = s.size() / 2;
  t.median_ms = s.size() % 2 ? s[h] : 0.5 * (s[h - 1] + s[h]);
  return t;
}

void merge_gate(check::GateReport& into, const check::GateReport& from) {
  into.matrices.insert(into.matrices.end(), from.matrices.begin(), from.matrices.end());
  check::summarize(into);
}

std::vector<float> make_input(const check::CaseSpec& c, Layout layout, std::uint64_t seed, std::int64_t index) {
  check::GenSpec g;
  g.m = c.m;
  g.n = c.n;
  g.batch = c.batch;
  g.cond = c.cond;
  g.dist = c.dist;
  g.seed = check::case_seed(seed, c, index);
  const GeqrfDesc d = make_geqrf_desc(c.m, c.n, c.batch, layout);
  std::vector<float> out(static_cast<std::size_t>(c.batch * c.m * c.n));
  check::generate(g, d, out.data());
  return out;
}

std::string host_memory_shortfall(double need_bytes) {
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  double kib = 0;
  std::string unit;
  while (meminfo >> key >> kib >> unit) {
    if (key != "MemAvailable:") continue;
    const double avail = kib * 1024.0;
    if (need_bytes <= avail) return {};
    char msg[160];
    std::snprintf(msg, sizeof msg, "needs %.1f GiB of host memory, %.1f GiB available", need_bytes / 0x1p30,
                  avail / 0x1p30);
    return msg;
  }
  return {};
}

CaseResult run_case_cpu(const check::CaseSpec& c, const BenchOptions& o) {
  using clock = std::chrono::steady_clock;
  CaseResult res;
  res.spec = c;
  res.inputs = check::inputs_per_case(c);
  ImplResult& r = res.batchqr;
  r.name = "batchqr-cpu";
  // The inputs and their working copies, the cache flush below, and the validator's six FP64
  // m x n buffers per thread.
  const double batch_bytes = 4.0 * static_cast<double>(c.batch) * static_cast<double>(c.m) * static_cast<double>(c.n);
  const double threads = o.threads > 0 ? o.threads : std::max(1u, std::thread::hardware_concurrency());
  r.note = host_memory_shortfall(2.0 * batch_bytes * static_cast<double>(res.inputs) + 0x1p28 +
                                 (o.validate ? 48.0 * static_cast<double>(c.m) * static_cast<double>(c.n) * threads : 0.0));
  if (!r.note.empty()) return res;

  Context* ctx = nullptr;
  ContextOptions copt;
  copt.num_threads = o.threads;
  Status st = create_context(Backend::cpu, &ctx, copt);
  if (st != Status::success) {
    r.note = status_string(st);
    return res;
  }
  // Released on every return, and when an allocation below throws.
  const std::unique_ptr<Context, Status (*)(Context*)> owner(ctx, destroy_context);
  const GeqrfDesc d = make_geqrf_desc(c.m, c.n, c.batch, o.layout);
  std::size_t ws_bytes = 0;
  st = geqrf_workspace_size(ctx, d, &ws_bytes);
  std::vector<unsigned char> ws(std::max<std::size_t>(ws_bytes, 1));
  const std::size_t elems = static_cast<std::size_t>(c.batch * c.m * c.n);
  const std::size_t taus = static_cast<std::size_t>(c.batch * std::min(c.m, c.n));
  std::vector<std::vector<float>> orig, work, tau;
  for (std::int64_t i = 0; i < res.inputs; ++i) {
    orig.push_back(make_input(c, o.layout, o.seed, i));
    work.emplace_back(elems);
    tau.emplace_back(std::max<std::size_t>(taus, 1));
  }
  auto factor_all = [&]() {
    Status s = Status::success;
    for (std::int64_t i = 0; i < res.inputs && s == Status::success; ++i)
      s = geqrf(ctx, d, work[i].data(), tau[i].data(), ws.data(), ws_bytes);
    return s;
  };
  auto restore = [&]() {
    for (std::int64_t i = 0; i < res.inputs; ++i) std::memcpy(work[i].data(), orig[i].data(), elems * sizeof(float));
  };

  restore();
  if (st == Status::success) st = factor_all();
  if (st != Status::success) {
    r.note = status_string(st);
    return res;
  }
  if (o.validate) {
    for (std::int64_t i = 0; i < res.inputs; ++i)
      merge_gate(r.gate, check::validate_host(d, orig[i].data(), work[i].data(), tau[i].data()));
    r.validated = true;
  }

  std::vector<unsigned char> flush(std::size_t{256} << 20);
  std::vector<double> samples;
  int rounds = 1;
  for (int k = 0; k < rounds; ++k) {
    restore();
    std::memset(flush.data(), k & 0xff, flush.size());
    const auto t0 = clock::now();
    factor_all();
    const auto t1 = clock::now();
    samples.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count() / static_cast<double>(res.inputs));
    if (k == 0) rounds = choose_rounds(o, samples[0] * static_cast<double>(res.inputs), 2, 20);
  }
  r.time = summarize_samples(samples);
  r.ran = true;
  return res;
}

}  // namespace batchqr::tools
