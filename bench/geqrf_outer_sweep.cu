// Tuning client: times the blocked CUDA geqrf (cuBLAS trailing updates) with each outer
// block width (PlanHints::outer_nb; 32 is one-level blocking) on the same inputs, checks
// every result against the accuracy gate, and marks the policy's choice, so that
// outer_width() in policy.cu rests on measurements. Not part of the library.
//
//   geqrf_outer_sweep [--outer W] [--reps R] [--fused-update 0|1] [--stripe 0|1|2]
//                     [--stripe-wide 0|1] [--stripe64 0|1] [--merge-ctas C] [--panel-rows R] [--reg-cluster 0|1|c] [--wcol 0|1] [--wcol-min-rows R]
//                     [--chol 0|1|2|3] [--chol-rows R] [--chol-short-rows R] [--cta 0|1|2|3] [--cluster-ctas S]
//                     [--look-ahead 0|1|2] [--tail 0|1] [--interleave 1|2] [--interleave-first N]
//                     [--interleave-order 0|1] [--chain-split-rows R] [--split S] [--split-plan part|whole]
//                     [--layout row|col] [--dist NAME] [--cond C] [m n batch]...
//                     (default: a built-in list)
// --outer: time only this width (e.g. under a profiler); --reps: timed calls per width;
// --fused-update: one-level plans apply panels with larfb_fused (1) or cuBLAS (0), not
// as the policy picks; --stripe: updates by larfb_stripe where it can, FP32 (1) or
// 3xTF32 (2), or not (0) (column "fu": 3 stripe 3xTF32, 2 stripe FP32, 1 larfb_fused,
// 0 cuBLAS, as planned); --stripe-wide: updates wider than an outer block, of more
// than 1024 rows, all on larfb_stripe (1) or all on cuBLAS (0), not as the policy picks;
// --stripe64: the outer blocks' updates on larfb_stripe64 wherever it can (1) or never (0)
// (default: the policy's); --merge-ctas: larft_merge_pair's CTAs per matrix (1..8; default:
// the policy's per outer block);
// --panel-rows: register
// panels take R rows per warp wherever a compiled shape of that R holds them;
// --reg-cluster: panels of more than 1024 rows in the registers of a cluster (1) or in
// geqr2_kernel (0); c > 1: every panel of >= 32 c rows on a cluster of c CTAs; --wcol:
// panels of at most 1024 rows on geqr2_wcol (1) or not (0); --wcol-min-rows: the policy's
// geqr2_wcol rule from more than R rows instead of its own bound; --chol: the Cholesky QR panel
// never (0), on panels of more than 1024 rows only (1), or also on geqr2_wcol's panels of
// 193-1024 rows at any batch (2), those of at most 512 rows on its one-CTA form (3)
// (default: the policy's); --chol-rows: at most R rows per
// CTA of that panel's cluster form (which then leaves panels of <= R rows to the Householder
// panels); --chol-short-rows: at most R rows per CTA of that cluster form on geqr2_wcol's
// panels, at least two CTAs (policy: 256); --cta: matrices that a geqr2_cta shape holds on it (1), a geqrf_cta
// shape (2) or a geqrf_cluster shape (3), timed once as outer width 0, or none of them (0)
// (default: the policy's); --cluster-ctas: geqrf_cluster on S CTAs per matrix (at least the
// fewest that hold it; default: the policy's); --layout:
// of the matrices (default column-major); --dist, --cond: the inputs' distribution and
// column-scaling knob (the contract's; default mixed, 2). `mixed` includes matrices that the
// Cholesky QR panel rejects, so its fallback runs too; compare panel choices on dense inputs
// as well. With panel or update hints, "(policy)" marks the hinted plan at the policy's
// outer width and look-ahead.
// Each width is timed with the look-ahead (side stream) and without it ("-"); --look-ahead
// times only off (0), on (1) or on with the next block's columns updated on the side stream
// too (2, marked "s"). --tail 0: the blocked path runs to the last column instead of
// handing the trailing matrices to a one-launch kernel where the policy would (GeqrfPlan::
// tail; rows with a tail end in "tail J", its first column). --interleave 1: each chunk as
// one part; 2: as two parts side by side wherever the plan has the look-ahead (GeqrfPlan::
// interleave; rows with it end in "interleave 2"); --interleave-first N: its first part
// takes N matrices (default: the policy's, half); --interleave-order: its two parts
// enqueued part by part (0) or one outer block of each in turn (1; default: the
// policy's); --chain-split-rows R: larfb_stripe's updates that the next panel waits for
// split over clusters of CTAs of at most R rows each (-1: larfb_stripe's own form; default:
// the policy's). --split S: the batch cut into S
// nearly equal parts, each planned for its own batch (with the same hints) and run on its
// own stream and context, all forked from and joined into the timed stream (rows end in
// "split S"; the plan columns show the first part's plan); --split-plan whole: every part
// runs the whole batch's plan (its kernels and tail) instead of its own.
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "batchqr/check/generate.hpp"
#include "batchqr/check/validate.hpp"
#include "batchqr/check/validate_device.hpp"
#include "cuda/geqrf_device.hpp"
#include "cuda/policy.hpp"

using namespace batchqr;
using namespace batchqr::cuda;

namespace {

// Holds the stream for about `ns` nanoseconds, so that a call enqueued behind it is timed
// without the host's enqueue time (the "queued" column).
__global__ void spin_kernel(long long ns) {
  long long t0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  for (;;) {
    long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    if (t - t0 > ns) break;
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::array<int, 3>> cases;
  std::vector<int> widths = {32, 64, 96, 128};
  int reps = 5;
  int fused = -1;
  int stripe = -1;
  int stripe_wide = -1;
  int stripe64 = -1;
  int merge_ctas = 0;
  int cta = -1;
  int cluster_ctas = 0;
  int look_ahead = -1;
  int tail = -1;
  int interleave = -1;
  long long interleave_first = 0;
  int interleave_order = -1;
  int chain_split_rows = 0;
  int split = 1;
  bool split_whole_plan = false;
  Layout layout = Layout::col_major;
  check::Distribution dist = check::Distribution::mixed;
  double cond = 2;
  PanelHints panel;
  for (int i = 1; i < argc;) {
    const std::string arg = argv[i];
    if (arg == "--outer" && i + 1 < argc) {
      widths = {std::atoi(argv[i + 1])};
      i += 2;
    } else if (arg == "--fused-update" && i + 1 < argc) {
      fused = std::atoi(argv[i + 1]) != 0 ? 1 : 0;
      i += 2;
    } else if (arg == "--stripe" && i + 1 < argc) {
      stripe = std::clamp(std::atoi(argv[i + 1]), 0, 2);
      i += 2;
    } else if (arg == "--stripe-wide" && i + 1 < argc) {
      stripe_wide = std::atoi(argv[i + 1]) != 0 ? 1 : 0;
      i += 2;
    } else if (arg == "--merge-ctas" && i + 1 < argc) {
      merge_ctas = std::atoi(argv[i + 1]);
      i += 2;
    } else if (arg == "--stripe64" && i + 1 < argc) {
      stripe64 = std::atoi(argv[i + 1]) != 0 ? 1 : 0;
      i += 2;
    } else if (arg == "--layout" && i + 1 < argc) {
      layout = std::string(argv[i + 1]) == "row" ? Layout::row_major : Layout::col_major;
      i += 2;
    } else if (arg == "--panel-rows" && i + 1 < argc) {
      panel.rows_per_warp = std::atoi(argv[i + 1]);
      i += 2;
    } else if (arg == "--reg-cluster" && i + 1 < argc) {
      panel.reg_cluster = std::max(0, std::atoi(argv[i + 1]));
      i += 2;
    } else if (arg == "--chol" && i + 1 < argc) {
      panel.chol = std::clamp(std::atoi(argv[i + 1]), 0, 3);
      i += 2;
    } else if (arg == "--chol-rows" && i + 1 < argc) {
      panel.chol_rows = std::max(0, std::atoi(argv[i + 1]));
      i += 2;
    } else if (arg == "--chol-short-rows" && i + 1 < argc) {
      panel.chol_short_rows = std::max(0, std::atoi(argv[i + 1]));
      i += 2;
    } else if (arg == "--look-ahead" && i + 1 < argc) {
      look_ahead = std::clamp(std::atoi(argv[i + 1]), 0, 2);
      i += 2;
    } else if (arg == "--tail" && i + 1 < argc) {
      tail = std::atoi(argv[i + 1]) != 0 ? -1 : 0;
      i += 2;
    } else if (arg == "--cta" && i + 1 < argc) {
      cta = std::atoi(argv[i + 1]);
      i += 2;
    } else if (arg == "--cluster-ctas" && i + 1 < argc) {
      cluster_ctas = std::max(0, std::atoi(argv[i + 1]));
      i += 2;
    } else if (arg == "--wcol-min-rows" && i + 1 < argc) {
      panel.wcol_min_rows = std::atoi(argv[i + 1]);
      i += 2;
    } else if (arg == "--wcol" && i + 1 < argc) {
      panel.wcol = std::atoi(argv[i + 1]) != 0 ? 1 : 0;
      i += 2;
    } else if (arg == "--dist" && i + 1 < argc) {
      if (!check::parse_distribution(argv[i + 1], &dist)) {
        std::fprintf(stderr, "unknown distribution %s\n", argv[i + 1]);
        return 2;
      }
      i += 2;
    } else if (arg == "--cond" && i + 1 < argc) {
      char* end = nullptr;
      cond = std::strtod(argv[i + 1], &end);
      if (end == argv[i + 1] || *end != '\0' || !std::isfinite(cond)) {
        std::fprintf(stderr, "--cond takes a number, not %s\n", argv[i + 1]);
        return 2;
      }
      i += 2;
    } else if (arg == "--interleave" && i + 1 < argc) {
      interleave = std::atoi(argv[i + 1]);
      i += 2;
    } else if (arg == "--interleave-first" && i + 1 < argc) {
      interleave_first = std::atoll(argv[i + 1]);
      i += 2;
    } else if (arg == "--chain-split-rows" && i + 1 < argc) {
      chain_split_rows = std::atoi(argv[i + 1]);
      i += 2;
    } else if (arg == "--interleave-order" && i + 1 < argc) {
      interleave_order = std::atoi(argv[i + 1]);
      i += 2;
    } else if (arg == "--split-plan" && i + 1 < argc) {
      split_whole_plan = std::string(argv[i + 1]) == "whole";
      i += 2;
    } else if (arg == "--split" && i + 1 < argc) {
      split = std::max(1, std::atoi(argv[i + 1]));
      i += 2;
    } else if (arg == "--reps" && i + 1 < argc) {
      reps = std::max(1, std::atoi(argv[i + 1]));
      i += 2;
    } else if (i + 2 < argc) {
      cases.push_back({std::atoi(argv[i]), std::atoi(argv[i + 1]), std::atoi(argv[i + 2])});
      i += 3;
    } else {
      std::fprintf(stderr,
                   "usage: geqrf_outer_sweep [--outer W] [--reps R] [--fused-update 0|1] [--stripe 0|1|2] "
                   "[--stripe-wide 0|1] [--stripe64 0|1] [--merge-ctas C] [--panel-rows R] [--reg-cluster 0|1|c] [--wcol 0|1] [--wcol-min-rows R] [--chol 0|1|2|3] [--chol-rows R] [--chol-short-rows R] "
                   "[--look-ahead 0|1|2] [--tail 0|1] [--interleave 1|2] [--interleave-first N] [--interleave-order 0|1] [--chain-split-rows R] "
                   "[--split S] [--split-plan part|whole] "
                   "[--cta 0|1|2|3] [--cluster-ctas S] "
                   "[--layout row|col] [--dist NAME] [--cond C] "
                   "[m n batch]...\n");
      return 2;
    }
  }
  if (cases.empty())
    cases = {{176, 176, 40}, {352, 352, 40}, {256, 256, 200}, {512, 512, 640}, {640, 640, 300}, {768, 768, 100},
             {1024, 1024, 60}, {1536, 1536, 30}, {2048, 2048, 8}, {3000, 3000, 4}, {4096, 4096, 2}};
  DeviceInfo dev;
  Resources res;
  if (query_device(-1, &dev) != Status::success || GeqrfOperation::initialize(dev) != Status::success ||
      create_resources(&res) != Status::success) {
    std::fprintf(stderr, "no usable CUDA device\n");
    return 1;
  }
  std::printf("clusters resident at once, one CTA per SM (2..8 CTAs):");
  for (int c = 2; c <= 8; ++c) std::printf(" %d", dev.whole_sm_clusters[c]);
  std::printf("\n");
  cudaStream_t stream;
  cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  // --split: a context, a stream and a join event per part (part 0 uses res and stream).
  std::vector<Resources> part_res(split);
  std::vector<cudaStream_t> part_stream(split, stream);
  std::vector<cudaEvent_t> part_join(split);
  cudaEvent_t fork;
  cudaEventCreateWithFlags(&fork, cudaEventDisableTiming);
  part_res[0] = res;
  for (int s = 0; s < split; ++s) {
    cudaEventCreateWithFlags(&part_join[s], cudaEventDisableTiming);
    if (s == 0) continue;
    if (create_resources(&part_res[s]) != Status::success) {
      std::fprintf(stderr, "could not create the contexts of --split\n");
      return 1;
    }
    cudaStreamCreateWithFlags(&part_stream[s], cudaStreamNonBlocking);
  }
  std::printf("%6s %6s %6s | %5s   %2s | %10s %10s %10s %8s %8s | %s\n", "m", "n", "batch", "outer", "fu", "ms (med)",
              "queued ms", "host ms", "factor", "orth", "");
  int failures = 0;
  for (const auto& c : cases) {
    const int m = c[0], n = c[1], batch = c[2];
    const GeqrfDesc d = make_geqrf_desc(m, n, batch, layout);
    const std::size_t elems = static_cast<std::size_t>(m) * n * batch;
    std::vector<float> h(elems);
    check::GenSpec spec;
    spec.m = m;
    spec.n = n;
    spec.batch = batch;
    spec.cond = cond;
    spec.dist = dist;
    spec.seed = 0x5eed0000u + static_cast<unsigned>(m * 131 + n * 7 + batch);
    check::generate(spec, d, h.data());
    float *a = nullptr, *a0 = nullptr, *tau = nullptr;
    cudaMalloc(&a, elems * 4);
    cudaMalloc(&a0, elems * 4);
    cudaMalloc(&tau, static_cast<std::size_t>(batch) * std::min(m, n) * 4);
    cudaMemcpy(a0, h.data(), elems * 4, cudaMemcpyHostToDevice);
    const GeqrfPlan policy = make_plan(dev, d);
    for (int variant = 0; variant < 2 * static_cast<int>(widths.size()); ++variant) {
      const int outer = widths[variant / 2];
      PlanHints hints;
      hints.outer_nb = outer;
      hints.look_ahead = variant % 2 == 0 ? 1 : 0;
      if (look_ahead >= 0) {
        if (variant % 2 != 0) continue;  // one variant per width
        hints.look_ahead = look_ahead;
      }
      hints.fused_update = fused;
      hints.stripe_update = stripe;
      hints.stripe_wide = stripe_wide;
      hints.stripe64 = stripe64;
      hints.merge_ctas = merge_ctas;
      hints.panel = panel;
      hints.cta = cta;
      hints.cluster_ctas = cluster_ctas;
      hints.tail = tail;
      hints.interleave = interleave;
      hints.interleave_first = interleave_first;
      hints.interleave_order = interleave_order;
      hints.chain_split_rows = chain_split_rows;
      // The parts of --split: matrices [first, first + count) each, planned for their count.
      struct Part {
        GeqrfOperation::Arguments args;
        GeqrfPlan plan;
        void* ws = nullptr;
      };
      std::vector<Part> parts;
      const int nparts = std::min(split, batch);
      for (int s = 0, first = 0; s < nparts; ++s) {
        const int count = batch / nparts + (s < batch % nparts ? 1 : 0);
        GeqrfDesc ds = d;
        ds.batch = count;
        parts.push_back({{ds, a + static_cast<std::size_t>(first) * d.stride, tau + static_cast<std::size_t>(first) * d.tau_stride},
                         make_plan(dev, split_whole_plan ? d : ds, hints)});
        first += count;
      }
      const GeqrfPlan& plan = parts[0].plan;
      // A one-launch plan (warp, fused, cta) is timed once, as outer width 0.
      const bool blocked = plan.algorithm == Algorithm::blocked;
      if (blocked ? plan.outer_nb != outer : variant != 0) continue;
      bool have_ws = true;
      for (auto& part : parts) have_ws = have_ws && cudaMalloc(&part.ws, part.plan.workspace_bytes) == cudaSuccess;
      if (!have_ws) {
        std::printf("%6d %6d %6d | %5d   | workspace of %zu bytes not available\n", m, n, batch, outer,
                    plan.workspace_bytes);
        for (auto& part : parts) cudaFree(part.ws);
        continue;
      }
      const auto run_all = [&]() {
        if (parts.size() == 1)
          return GeqrfOperation::run(dev, res, parts[0].args, plan, parts[0].ws, plan.workspace_bytes, stream) ==
                 Status::success;
        bool good = cudaEventRecord(fork, stream) == cudaSuccess;
        for (std::size_t s = 0; s < parts.size(); ++s) {
          good = good && cudaStreamWaitEvent(part_stream[s], fork, 0) == cudaSuccess;
          good = good && GeqrfOperation::run(dev, part_res[s], parts[s].args, parts[s].plan, parts[s].ws,
                                             parts[s].plan.workspace_bytes, part_stream[s]) == Status::success;
          good = good && cudaEventRecord(part_join[s], part_stream[s]) == cudaSuccess;
        }
        for (std::size_t s = 0; s < parts.size(); ++s) good = good && cudaStreamWaitEvent(stream, part_join[s], 0) == cudaSuccess;
        return good;
      };
      std::vector<float> times, queued, host;
      check::GateReport rep;
      bool ok = true;
      for (int r = 0; r <= reps && ok; ++r) {
        for (int mode = 0; mode < 2 && ok; ++mode) {  // 0: plain call; 1: behind a 50 ms spin
          cudaMemcpyAsync(a, a0, elems * 4, cudaMemcpyDeviceToDevice, stream);
          if (mode == 1) spin_kernel<<<1, 1, 0, stream>>>(50'000'000);
          cudaEventRecord(e0, stream);
          const auto h0 = std::chrono::steady_clock::now();
          ok = run_all();
          const auto h1 = std::chrono::steady_clock::now();
          cudaEventRecord(e1, stream);
          ok = ok && cudaEventSynchronize(e1) == cudaSuccess;
          float ms = 0;
          cudaEventElapsedTime(&ms, e0, e1);
          if (r == 0) continue;  // the first call warms up
          (mode == 0 ? times : queued).push_back(ms);
          if (mode == 0) host.push_back(std::chrono::duration<float, std::milli>(h1 - h0).count());
        }
      }
      ok = ok && check::validate_device(d, a0, a, tau, &rep, stream);
      auto median = [](std::vector<float>& v) {
        std::sort(v.begin(), v.end());
        return v.empty() ? -1.0 : static_cast<double>(v[v.size() / 2]);
      };
      const bool pass = ok && rep.pass();
      failures += pass ? 0 : 1;
      std::string tail_note = plan.tail_at > 0 ? "  tail " + std::to_string(plan.tail_at) : "";
      if (parts.size() > 1) tail_note += "  split " + std::to_string(parts.size());
      if (plan.interleave > 1) {
        tail_note += "  interleave " + std::to_string(plan.interleave);
        if (plan.interleave_first > 0) tail_note += " first " + std::to_string(plan.interleave_first);
        if (!plan.interleave_by_block) tail_note += " part-by-part";
      }
      if (plan.chain_split_rows > 0) tail_note += "  chain-split " + std::to_string(plan.chain_split_rows);
      std::printf("%6d %6d %6d | %5d%s %2d | %10.4f %10.4f %10.4f %8.3f %8.3f | %s%s%s\n", m, n, batch, blocked ? outer : 0,
                  !plan.look_ahead ? " -" : plan.next_on_side ? " s" : "  ", plan.stripe_update ? (plan.stripe_math == StripeMath::tf32x3 ? 3 : 2) : plan.fused_update ? 1 : 0, median(times),
                  median(queued), median(host), rep.worst_factor, rep.worst_orth, pass ? "pass" : "FAIL",
                  outer == policy.outer_nb && plan.look_ahead == policy.look_ahead &&
                          plan.next_on_side == policy.next_on_side &&
                          plan.fused_update == policy.fused_update && plan.stripe_update == policy.stripe_update &&
                          plan.tail_at == policy.tail_at && plan.interleave == policy.interleave
                      ? "  (policy)"
                      : "",
                  tail_note.c_str());
      for (auto& part : parts) cudaFree(part.ws);
    }
    cudaFree(a);
    cudaFree(a0);
    cudaFree(tau);
  }
  for (int s = 1; s < split; ++s) destroy_resources(part_res[s]);
  destroy_resources(res);
  return failures == 0 ? 0 : 1;
}
