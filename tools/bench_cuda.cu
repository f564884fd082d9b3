// batchqr CLI: the GPU runner. batchqr, cuSOLVER (cusolverDnSgeqrf over the batch) and
// cuBLAS (cublasSgeqrfBatched) factor the same matrices in the same run; every result is
// validated on the GPU in FP64. The baselines get column-major copies of the inputs
// (their native layout), so no implementation pays for a transposition.
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cusolverDn.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>

#include "batchqr/check/validate_device.hpp"
#include "bench.hpp"

namespace batchqr::tools {
namespace {

constexpr std::size_t kFlushBytes = std::size_t{256} << 20;

template <typename T>
struct DevBuf {
  T* p = nullptr;
  std::size_t n = 0;
  DevBuf() = default;
  DevBuf(const DevBuf&) = delete;
  DevBuf& operator=(const DevBuf&) = delete;
  ~DevBuf() { reset(); }
  void reset() {
    if (p) cudaFree(p);
    p = nullptr;
    n = 0;
  }
  bool alloc(std::size_t count) {
    reset();
    n = count;
    return cudaMalloc(&p, std::max<std::size_t>(count, 1) * sizeof(T)) == cudaSuccess;
  }
};

}  // namespace

struct CudaBench::Impl {
  BenchOptions o;
  bool good = false;
  std::string device;
  cudaStream_t stream = nullptr;
  cudaEvent_t e0 = nullptr, e1 = nullptr;
  Context* ctx = nullptr;
  cusolverDnHandle_t solver = nullptr;
  cublasHandle_t blas = nullptr;
  DevBuf<unsigned char> flush;

  // Times `factor_all` (which factors every input once) in rounds, per the contract:
  // restore the inputs, flush L2, event, factor, event, synchronize.
  bool time_rounds(const std::function<bool()>& restore, const std::function<bool()>& factor_all,
                   std::int64_t inputs, int min_rounds, int max_rounds, Timing* out) {
    std::vector<double> samples;
    int rounds = 1;
    for (int k = 0; k < rounds; ++k) {
      if (!restore()) return false;
      if (cudaMemsetAsync(flush.p, k & 0xff, kFlushBytes, stream) != cudaSuccess) return false;
      cudaEventRecord(e0, stream);
      if (!factor_all()) return false;
      cudaEventRecord(e1, stream);
      if (cudaEventSynchronize(e1) != cudaSuccess) return false;
      float ms = 0;
      cudaEventElapsedTime(&ms, e0, e1);
      samples.push_back(static_cast<double>(ms) / static_cast<double>(inputs));
      if (k == 0) rounds = choose_rounds(o, ms, min_rounds, max_rounds);
    }
    *out = summarize_samples(samples);
    return true;
  }

  // A baseline: one untimed call per input, validated, then timed rounds. A baseline
  // slower than 2 s per untimed pass is timed once, to keep the run short.
  bool baseline(const std::function<bool()>& restore, const std::function<bool()>& factor_all, const GeqrfDesc& d,
                std::int64_t inputs, const std::function<bool(const GeqrfDesc&, ImplResult&)>& validate,
                ImplResult& r) {
    const auto t0 = std::chrono::steady_clock::now();
    if (!restore() || !factor_all() || cudaStreamSynchronize(stream) != cudaSuccess) return false;
    const double first_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (!validate(d, r)) return false;
    const bool slow = first_ms > 2000.0;
    if (slow) r.note = "slow: timed in one round";
    return time_rounds(restore, factor_all, inputs, slow ? 1 : 3, slow ? 1 : 20, &r.time);
  }
};

CudaBench::CudaBench(const BenchOptions& o) : impl_(new Impl) {
  Impl& s = *impl_;
  s.o = o;
  cudaDeviceProp prop{};
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || cudaGetDeviceProperties(&prop, dev) != cudaSuccess) return;
  s.device = prop.name;
  if (cudaStreamCreateWithFlags(&s.stream, cudaStreamNonBlocking) != cudaSuccess) return;
  cudaEventCreate(&s.e0);
  cudaEventCreate(&s.e1);
  ContextOptions copt;
  copt.math = o.math;
  if (create_context(Backend::cuda, &s.ctx, copt) != Status::success) return;
  if (cusolverDnCreate(&s.solver) != CUSOLVER_STATUS_SUCCESS) return;
  cusolverDnSetStream(s.solver, s.stream);
  if (cublasCreate(&s.blas) != CUBLAS_STATUS_SUCCESS) return;
  cublasSetStream(s.blas, s.stream);
  if (!s.flush.alloc(kFlushBytes)) return;
  s.good = true;
}

CudaBench::~CudaBench() {
  Impl& s = *impl_;
  if (s.blas) cublasDestroy(s.blas);
  if (s.solver) cusolverDnDestroy(s.solver);
  destroy_context(s.ctx);
  if (s.e0) cudaEventDestroy(s.e0);
  if (s.e1) cudaEventDestroy(s.e1);
  if (s.stream) cudaStreamDestroy(s.stream);
  delete impl_;
}

bool CudaBench::ok() const { return impl_->good; }
std::string CudaBench::device_name() const { return impl_->device; }

CaseResult CudaBench::run(const check::CaseSpec& c) {
  Impl& s = *impl_;
  CaseResult res;
  res.spec = c;
  res.inputs = check::inputs_per_case(c);
  const std::int64_t count = res.inputs;
  const std::size_t elems = static_cast<std::size_t>(c.batch * c.m * c.n);
  const std::size_t k = static_cast<std::size_t>(std::min(c.m, c.n));
  const std::size_t taus = static_cast<std::size_t>(c.batch) * k;
  const int m = static_cast<int>(c.m), n = static_cast<int>(c.n), batch = static_cast<int>(c.batch);

  // The host generates one input batch at a time.
  res.batchqr.note = host_memory_shortfall(4.0 * static_cast<double>(elems));
  if (!res.batchqr.note.empty()) return res;
  DevBuf<float> orig, work, tau;
  if (!orig.alloc(elems * count) || !work.alloc(elems * count) || !tau.alloc(std::max<std::size_t>(taus, 1) * count)) {
    res.batchqr.note = "out of device memory for the inputs";
    return res;
  }
  auto upload = [&](Layout layout) {
    for (std::int64_t i = 0; i < count; ++i) {
      const std::vector<float> h = make_input(c, layout, s.o.seed, i);
      if (cudaMemcpy(orig.p + i * elems, h.data(), elems * sizeof(float), cudaMemcpyHostToDevice) != cudaSuccess)
        return false;
    }
    return true;
  };
  auto restore = [&]() {
    return cudaMemcpyAsync(work.p, orig.p, elems * count * sizeof(float), cudaMemcpyDeviceToDevice, s.stream) ==
           cudaSuccess;
  };
  auto validate = [&](const GeqrfDesc& d, ImplResult& r) {
    if (!s.o.validate) return true;
    r.validated = true;
    for (std::int64_t i = 0; i < count; ++i) {
      check::GateReport g;
      if (!check::validate_device(d, orig.p + i * elems, work.p + i * elems, tau.p + i * taus, &g, s.stream)) {
        r.note = "validator failed (CUDA error)";
        return false;
      }
      merge_gate(r.gate, g);
    }
    return true;
  };

  // ---- batchqr ------------------------------------------------------------------------
  {
    ImplResult& r = res.batchqr;
    r.name = "batchqr";
    const GeqrfDesc d = make_geqrf_desc(c.m, c.n, c.batch, s.o.layout);
    std::size_t ws_bytes = 0;
    DevBuf<unsigned char> ws;
    Status st = geqrf_workspace_size(s.ctx, d, &ws_bytes);
    if (st == Status::success && !ws.alloc(ws_bytes)) st = Status::out_of_memory;
    if (st == Status::success && !upload(s.o.layout)) st = Status::backend_error;
    auto factor_all = [&]() {
      for (std::int64_t i = 0; i < count; ++i) {
        const Status e = geqrf(s.ctx, d, work.p + i * elems, tau.p + i * taus, ws.p, ws_bytes, s.stream);
        if (e != Status::success) {
          st = e;
          return false;
        }
      }
      return true;
    };
    if (st == Status::success && restore() && factor_all() && cudaStreamSynchronize(s.stream) == cudaSuccess &&
        validate(d, r) && s.time_rounds(restore, factor_all, count, 5, 50, &r.time)) {
      r.ran = true;
    } else if (r.note.empty()) {
      r.note = st != Status::success ? status_string(st) : cudaGetErrorString(cudaGetLastError());
    }
  }
  if (!s.o.baselines) return res;

  // Baselines factor column-major copies of the same matrices.
  if (!upload(Layout::col_major)) return res;
  const GeqrfDesc dc = make_geqrf_desc(c.m, c.n, c.batch, Layout::col_major);

  // ---- cuSOLVER: cusolverDnSgeqrf, one call per matrix ---------------------------------
  {
    ImplResult r;
    r.name = "cusolver";
    int lwork = 0;
    DevBuf<float> wk;
    DevBuf<int> info;
    bool okb = cusolverDnSgeqrf_bufferSize(s.solver, m, n, work.p, m, &lwork) == CUSOLVER_STATUS_SUCCESS &&
               wk.alloc(static_cast<std::size_t>(std::max(lwork, 1))) && info.alloc(1);
    auto factor_all = [&]() {
      for (std::int64_t i = 0; i < count; ++i)
        for (int b = 0; b < batch; ++b)
          if (cusolverDnSgeqrf(s.solver, m, n, work.p + i * elems + static_cast<std::size_t>(b) * m * n, m,
                               tau.p + i * taus + static_cast<std::size_t>(b) * k, wk.p, lwork,
                               info.p) != CUSOLVER_STATUS_SUCCESS)
            return false;
      return true;
    };
    if (okb && s.baseline(restore, factor_all, dc, count, validate, r)) r.ran = true;
    else if (r.note.empty()) r.note = "cuSOLVER call failed";
    res.baselines.push_back(std::move(r));
  }

  // ---- cuBLAS: cublasSgeqrfBatched ----------------------------------------------------------
  {
    ImplResult r;
    r.name = "cublas";
    if (c.n > kCublasMaxN && !s.o.cublas_all) {
      r.note = "not timed for n > " + std::to_string(kCublasMaxN) + " (give --cublas-all)";
      res.baselines.push_back(std::move(r));
      return res;
    }
    std::vector<float*> hA(static_cast<std::size_t>(batch) * count), hT(static_cast<std::size_t>(batch) * count);
    for (std::int64_t i = 0; i < count; ++i)
      for (int b = 0; b < batch; ++b) {
        hA[i * batch + b] = work.p + i * elems + static_cast<std::size_t>(b) * m * n;
        hT[i * batch + b] = tau.p + i * taus + static_cast<std::size_t>(b) * k;
      }
    DevBuf<float*> dA, dT;
    bool okb = dA.alloc(hA.size()) && dT.alloc(hT.size()) &&
               cudaMemcpy(dA.p, hA.data(), hA.size() * sizeof(float*), cudaMemcpyHostToDevice) == cudaSuccess &&
               cudaMemcpy(dT.p, hT.data(), hT.size() * sizeof(float*), cudaMemcpyHostToDevice) == cudaSuccess;
    auto factor_all = [&]() {
      for (std::int64_t i = 0; i < count; ++i) {
        int info = 0;
        if (cublasSgeqrfBatched(s.blas, m, n, dA.p + i * batch, m, dT.p + i * batch, &info, batch) !=
                CUBLAS_STATUS_SUCCESS ||
            info != 0)
          return false;
      }
      return true;
    };
    if (okb && s.baseline(restore, factor_all, dc, count, validate, r)) r.ran = true;
    else if (r.note.empty()) r.note = "cublasSgeqrfBatched failed or does not apply";
    res.baselines.push_back(std::move(r));
  }
  return res;
}

}  // namespace batchqr::tools
