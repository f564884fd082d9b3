// batchqr._batchqr: the thin C++ layer under the Python package.
//
// Design: every framework-specific decision (dtype, shape, layout, allocation of the
// outputs and of the workspace, the stream) is made in Python, where the caller's
// framework lives. The hot-path entry point `geqrf` takes only plain integers (a
// context handle, sizes, strides, raw pointers, the stream) so that nanobind converts
// each argument in a few nanoseconds; it returns the library's Status code as an int
// and Python turns a non-zero code into an exception carrying status_string(). The GIL
// is released around the library call (the CPU backend runs LAPACK for a while; the
// CUDA backend only enqueues, but other Python threads may proceed meanwhile).
//
// Contexts are handed to Python as integer handles; Python caches one per
// (backend, device) for the life of the process (contexts are immutable and
// thread-safe, and hold only a few bytes of host state).
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "batchqr/batchqr.hpp"
#include "batchqr/check/generate.hpp"
#include "batchqr/check/suite.hpp"
#include "batchqr/check/validate.hpp"

namespace nb = nanobind;

namespace {

using batchqr::Backend;
using batchqr::Context;
using batchqr::GeqrfDesc;
using batchqr::Layout;
using batchqr::Status;

Context* as_context(std::uintptr_t h) { return reinterpret_cast<Context*>(h); }

GeqrfDesc make_desc(int layout, std::int64_t m, std::int64_t n, std::int64_t batch, std::int64_t ld,
                    std::int64_t stride, std::int64_t tau_stride) {
  GeqrfDesc d;
  d.m = m;
  d.n = n;
  d.batch = batch;
  d.layout = static_cast<Layout>(layout);
  d.ld = ld;
  d.stride = stride;
  d.tau_stride = tau_stride;
  return d;
}

std::tuple<int, std::uintptr_t> create_context(int backend, int device, int num_threads) {
  batchqr::ContextOptions opt;
  opt.device = device;
  opt.num_threads = num_threads;
  Context* ctx = nullptr;
  const Status st = batchqr::create_context(static_cast<Backend>(backend), &ctx, opt);
  return {static_cast<int>(st), reinterpret_cast<std::uintptr_t>(ctx)};
}

int destroy_context(std::uintptr_t h) { return static_cast<int>(batchqr::destroy_context(as_context(h))); }

std::tuple<int, std::uint64_t> workspace_size(std::uintptr_t ctx, int layout, std::int64_t m, std::int64_t n,
                                              std::int64_t batch, std::int64_t ld, std::int64_t stride,
                                              std::int64_t tau_stride) {
  std::size_t bytes = 0;
  const Status st =
      batchqr::geqrf_workspace_size(as_context(ctx), make_desc(layout, m, n, batch, ld, stride, tau_stride), &bytes);
  return {static_cast<int>(st), static_cast<std::uint64_t>(bytes)};
}

// The hot path. Called with the GIL released (see the binding below).
int geqrf(std::uintptr_t ctx, int layout, std::int64_t m, std::int64_t n, std::int64_t batch, std::int64_t ld,
          std::int64_t stride, std::int64_t tau_stride, std::uintptr_t a, std::uintptr_t tau, std::uintptr_t workspace,
          std::uint64_t workspace_bytes, std::uintptr_t stream) {
  return static_cast<int>(batchqr::geqrf(as_context(ctx), make_desc(layout, m, n, batch, ld, stride, tau_stride),
                                         reinterpret_cast<float*>(a), reinterpret_cast<float*>(tau),
                                         reinterpret_cast<void*>(workspace), static_cast<std::size_t>(workspace_bytes),
                                         reinterpret_cast<batchqr::Stream>(stream)));
}

// --- testing helpers (batchqr.testing): generators and the FP64 host validator ---------

using HostMatrices = nb::ndarray<float, nb::ndim<3>, nb::c_contig, nb::device::cpu>;
using HostVectors = nb::ndarray<float, nb::ndim<2>, nb::c_contig, nb::device::cpu>;

batchqr::check::Distribution parse_dist(const std::string& name) {
  batchqr::check::Distribution d;
  if (!batchqr::check::parse_distribution(name, &d)) throw nb::value_error(("unknown distribution '" + name + "'").c_str());
  return d;
}

// Fills out (batch x m x n, row-major, C-contiguous) with the contract's distribution.
void generate(const std::string& dist, double cond, std::uint64_t seed, HostMatrices out, int threads) {
  batchqr::check::GenSpec spec;
  spec.batch = static_cast<std::int64_t>(out.shape(0));
  spec.m = static_cast<std::int64_t>(out.shape(1));
  spec.n = static_cast<std::int64_t>(out.shape(2));
  spec.cond = cond;
  spec.dist = parse_dist(dist);
  spec.seed = seed;
  const GeqrfDesc layout = batchqr::make_geqrf_desc(spec.m, spec.n, spec.batch, Layout::row_major);
  float* data = out.data();
  nb::gil_scoped_release release;
  batchqr::check::generate(spec, layout, data, threads);
}

std::vector<std::string> distribution_names() {
  std::vector<std::string> names;
  for (int i = 0; i < batchqr::check::kNumDistributions; ++i)
    names.emplace_back(batchqr::check::to_string(static_cast<batchqr::check::Distribution>(i)));
  return names;
}

// Per-matrix distribution drawn by `mixed` (and the distribution itself otherwise).
std::vector<std::string> distributions_of(const std::string& dist, std::int64_t batch, std::uint64_t seed) {
  batchqr::check::GenSpec spec;
  spec.batch = batch;
  spec.dist = parse_dist(dist);
  spec.seed = seed;
  std::vector<std::string> out;
  for (std::int64_t b = 0; b < batch; ++b)
    out.emplace_back(batchqr::check::to_string(batchqr::check::distribution_of(spec, b)));
  return out;
}

// validate_host on row-major, C-contiguous (batch, m, n) a and h and (batch, min(m, n)) tau.
// Returns (factor, orth, leak, recon, finite), one entry per matrix.
std::tuple<std::vector<double>, std::vector<double>, std::vector<double>, std::vector<double>, std::vector<bool>>
validate_host(HostMatrices a, HostMatrices h, HostVectors tau, int threads) {
  const std::int64_t batch = static_cast<std::int64_t>(a.shape(0)), m = static_cast<std::int64_t>(a.shape(1)),
                     n = static_cast<std::int64_t>(a.shape(2));
  const std::int64_t k = m < n ? m : n;
  if (static_cast<std::int64_t>(h.shape(0)) != batch || static_cast<std::int64_t>(h.shape(1)) != m ||
      static_cast<std::int64_t>(h.shape(2)) != n)
    throw nb::value_error("validate_host: h must have the shape of a");
  if (static_cast<std::int64_t>(tau.shape(0)) != batch || static_cast<std::int64_t>(tau.shape(1)) != k)
    throw nb::value_error("validate_host: tau must have shape (batch, min(m, n))");
  batchqr::check::GateReport report;
  if (batch > 0 && m > 0 && n > 0) {
    const GeqrfDesc desc = batchqr::make_geqrf_desc(m, n, batch, Layout::row_major);
    const float *pa = a.data(), *ph = h.data(), *pt = tau.data();
    nb::gil_scoped_release release;
    report = batchqr::check::validate_host(desc, pa, ph, pt, threads);
  }
  std::vector<double> factor, orth, leak, recon;
  std::vector<bool> finite;
  for (const auto& r : report.matrices) {
    factor.push_back(r.factor);
    orth.push_back(r.orth);
    leak.push_back(r.leak);
    recon.push_back(r.recon);
    finite.push_back(r.finite);
  }
  return {factor, orth, leak, recon, finite};
}

// The named suites: (batch, m, n, cond, case, label, inputs per case).
std::vector<std::tuple<std::int64_t, std::int64_t, std::int64_t, double, std::string, std::string, std::int64_t>>
suite(const std::string& name) {
  std::vector<batchqr::check::CaseSpec> cases;
  if (!batchqr::check::suite_by_name(name, &cases)) throw nb::value_error(("unknown suite '" + name + "'").c_str());
  std::vector<std::tuple<std::int64_t, std::int64_t, std::int64_t, double, std::string, std::string, std::int64_t>> out;
  for (const auto& c : cases)
    out.emplace_back(c.batch, c.m, c.n, c.cond, batchqr::check::to_string(c.dist), c.label(),
                     batchqr::check::inputs_per_case(c));
  return out;
}

}  // namespace

NB_MODULE(_batchqr, m) {
  m.doc() = "batchqr native layer (private; use the batchqr package)";
  m.attr("__version__") = BATCHQR_VERSION_STRING;
  m.attr("has_cuda_backend") = static_cast<bool>(BATCHQR_HAS_CUDA);
  m.attr("factor_gate") = batchqr::check::kFactorGate;
  m.attr("orth_gate") = batchqr::check::kOrthGate;

  m.def("cuda_available", &batchqr::cuda_available);
  m.def("status_string", [](int code) { return std::string(batchqr::status_string(static_cast<Status>(code))); });
  m.def("create_context", &create_context, nb::arg("backend"), nb::arg("device"), nb::arg("num_threads"),
        nb::call_guard<nb::gil_scoped_release>());
  m.def("destroy_context", &destroy_context);
  m.def("workspace_size", &workspace_size);
  m.def("geqrf", &geqrf, nb::call_guard<nb::gil_scoped_release>());

  m.def("generate", &generate, nb::arg("dist"), nb::arg("cond"), nb::arg("seed"), nb::arg("out"),
        nb::arg("threads") = 0);
  m.def("distribution_names", &distribution_names);
  m.def("distributions_of", &distributions_of);
  m.def("validate_host", &validate_host, nb::arg("a"), nb::arg("h"), nb::arg("tau"), nb::arg("threads") = 0);
  m.def("suite", &suite);
}
