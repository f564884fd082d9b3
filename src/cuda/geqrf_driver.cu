// The geqrf algorithm driver: LAPACK's blocked loop (geqr2 panel + larft, then larfb)
// over a batch, with look-ahead, up to a crossover past which one launch of a whole-matrix
// kernel finishes the trailing matrices (GeqrfPlan::tail); or that one launch alone when
// the policy takes the whole matrix (one warp, CTA or cluster per matrix). Large batches
// run each chunk as two parts side by side on two stream pairs (GeqrfPlan::interleave,
// BlockedPart).
#include <algorithm>
#include <climits>
#include <utility>

#include "cuda/cluster_launch.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/geqr2.cuh"
#include "cuda/geqr2_chol.hpp"
#include "cuda/geqr2_cta.hpp"
#include "cuda/geqrf_cluster.hpp"
#include "cuda/geqrf_cta.hpp"
#include "cuda/geqr2_reg_launch.hpp"
#include "cuda/geqr2_warp_launch.hpp"
#include "cuda/geqr2_wcol.hpp"
#include "cuda/geqrf_device.hpp"
#include "cuda/larfb.cuh"
#include "cuda/larfb_fused.hpp"
#include "cuda/larfb_gemm.hpp"
#include "cuda/larfb_stripe.hpp"
#include "cuda/larfb_stripe64.hpp"
#include "cuda/larft_merge.hpp"
#include "cuda/policy.hpp"

namespace batchqr::cuda {
namespace {

template <Layout L, int NW, bool kSmem>
Status launch_geqr2(const Geqr2Args& args, std::int64_t batch, std::size_t smem, cudaStream_t stream) {
  const ClusterLaunch l(dim3(static_cast<unsigned>(batch * args.cluster)), dim3(NW * 32), smem, stream, args.cluster);
  BATCHQR_CUDA_TRY(cudaLaunchKernelEx(&l.cfg, geqr2_kernel<L, NW, kSmem>, args));
  return Status::success;
}

template <Layout L, int NW>
Status launch_geqr2(const Geqr2Args& args, const PanelPlan& pp, std::int64_t batch, cudaStream_t stream) {
  return pp.in_smem ? launch_geqr2<L, NW, true>(args, batch, pp.smem_bytes, stream)
                    : launch_geqr2<L, NW, false>(args, batch, pp.smem_bytes, stream);
}

template <Layout L>
Status launch_geqr2(const Geqr2Args& args, const PanelPlan& pp, std::int64_t batch, cudaStream_t stream) {
  switch (pp.warps) {
    case 8: return launch_geqr2<L, 8>(args, pp, batch, stream);
    case 16: return launch_geqr2<L, 16>(args, pp, batch, stream);
    case 32: return launch_geqr2<L, 32>(args, pp, batch, stream);
    default: return Status::backend_error;  // panel_warps() returns only these
  }
}

Status launch_geqr2(Layout layout, const Geqr2Args& args, const PanelPlan& pp, std::int64_t batch,
                    cudaStream_t stream) {
  return layout == Layout::row_major ? launch_geqr2<Layout::row_major>(args, pp, batch, stream)
                                     : launch_geqr2<Layout::col_major>(args, pp, batch, stream);
}

template <Layout L>
void launch_larfb(const LarfbArgs& args, const dim3 grid, cudaStream_t stream) {
  larfb_vtc_kernel<L><<<grid, kLarfbThreads, 0, stream>>>(args);
  larfb_update_kernel<L><<<grid, kLarfbThreads, 0, stream>>>(args);
}

Status launch_larfb(Layout layout, const LarfbArgs& args, std::int64_t batch, cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>(batch * args.tiles * args.splits));
  if (layout == Layout::row_major) launch_larfb<Layout::row_major>(args, grid, stream);
  else launch_larfb<Layout::col_major>(args, grid, stream);
  BATCHQR_CUDA_TRY(cudaGetLastError());
  return Status::success;
}

template <Layout L, int NW, bool kSmem>
cudaError_t raise_smem_limit(const DeviceInfo& dev) {
  return cudaFuncSetAttribute(geqr2_kernel<L, NW, kSmem>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                              static_cast<int>(dev.smem_per_block_optin));
}

template <int NW>
Status raise_smem_limits(const DeviceInfo& dev) {
  BATCHQR_CUDA_TRY((raise_smem_limit<Layout::row_major, NW, true>(dev)));
  BATCHQR_CUDA_TRY((raise_smem_limit<Layout::col_major, NW, true>(dev)));
  BATCHQR_CUDA_TRY((raise_smem_limit<Layout::row_major, NW, false>(dev)));
  BATCHQR_CUDA_TRY((raise_smem_limit<Layout::col_major, NW, false>(dev)));
  return Status::success;
}

Geqr2Args panel_args(const GeqrfOperation::Arguments& a, float* a_chunk, float* tau_chunk, int j0, int rows,
                     int ncols, int nrefl, const PanelPlan& pp) {
  Geqr2Args g{};  // t_out, vt_out: none unless the caller sets them
  g.a = a_chunk;
  g.ld = a.desc.ld;
  g.stride = a.desc.stride;
  g.tau = tau_chunk;
  g.tau_stride = a.desc.tau_stride;
  g.j0 = j0;
  g.rows = rows;
  g.ncols = ncols;
  g.nrefl = nrefl;
  g.cluster = pp.cluster;
  g.rows_per_cta = pp.rows_per_cta;
  g.lds = pp.lds;
  return g;
}

}  // namespace

Status GeqrfOperation::initialize(const DeviceInfo& dev) {
  Status st = raise_smem_limits<8>(dev);
  if (st == Status::success) st = raise_smem_limits<16>(dev);
  if (st == Status::success) st = raise_smem_limits<32>(dev);
  if (st == Status::success) st = larft_merge_initialize();
  if (st == Status::success) st = larfb_stripe_initialize();
  if (st == Status::success && larfb_stripe64_available(dev.cc_major, dev.cc_minor)) st = larfb_stripe64_initialize();
  if (st == Status::success) st = geqr2_wcol_initialize(dev);
  if (st == Status::success) st = geqr2_cta_initialize(dev);
  if (st == Status::success) st = geqrf_cta_initialize(dev);
  if (st == Status::success) st = geqrf_cluster_initialize(dev);
  if (st == Status::success) st = geqr2_chol_initialize(dev.cluster_launch);
  return st;
}

Status GeqrfOperation::can_implement(const DeviceInfo& dev, const Arguments& args) {
  if (dev.cc_major < 9) return Status::not_supported;  // built for sm_90 and newer
  if (args.a == nullptr || args.tau == nullptr) return Status::null_pointer;
  return Status::success;
}

std::size_t GeqrfOperation::get_workspace_size(const DeviceInfo& dev, const GeqrfDesc& desc) {
  return make_plan(dev, desc).workspace_bytes;
}

namespace {

// geqr2_reg on the rows x ncols block at (j0, j0) of every matrix, reducing nrefl columns.
Geqr2RegArgs reg_args(const GeqrfDesc& d, float* a, float* tau, int j0, int rows, int ncols, int nrefl) {
  Geqr2RegArgs g{};
  g.a = a;
  g.ld = d.ld;
  g.stride = d.stride;
  g.tau = tau;
  g.tau_stride = d.tau_stride;
  g.j0 = j0;
  g.rows = rows;
  g.ncols = ncols;
  g.nrefl = nrefl;
  return g;
}

// Where a panel puts V^T and T for the updates that follow it (null: nowhere).
struct PanelOut {
  float* t = nullptr;
  std::int64_t t_stride = 0;
  int t_ld = kMaxPanelWidth;
  float* vt = nullptr;
  std::int64_t vt_stride = 0;
  int vt_ld = 0;
  int vt_pad = 0;
};

// The T / V^T outputs of either panel kernel's arguments (Geqr2Args, Geqr2RegArgs).
template <class PanelArgs>
void set_outputs(PanelArgs& g, const PanelOut& out) {
  g.t_out = out.t;
  g.t_stride = out.t_stride;
  g.t_ld = out.t_ld;
  g.vt_out = out.vt;
  g.vt_stride = out.vt_stride;
  g.vt_ld = out.vt_ld;
  g.vt_pad = out.vt_pad;
}

// One panel: geqr2 (+ larft) on columns j0 .. j0 + jb of nbat matrices, the kernels chosen
// for policy_batch (the chunk's: the same for both parts of an interleave).
// flags (one int per matrix, or null): where the Cholesky QR panel may run, its flags for
// the Householder panel that follows it.
Status launch_panel(const DeviceInfo& dev, const GeqrfOperation::Arguments& args, const GeqrfPlan& plan, float* a,
                    float* tau, int j0, int jb, bool with_t, const PanelOut& out, int* flags, std::int64_t nbat,
                    std::int64_t policy_batch, cudaStream_t stream) {
  const GeqrfDesc& d = args.desc;
  const int rows = static_cast<int>(d.m) - j0;
  const PanelPlan pp = panel_plan(dev, rows, jb, jb, with_t, policy_batch, plan.panel);
  if (pp.wcol_rows_per_lane > 0 || pp.reg.rows_per_warp > 0) {  // the two register-resident panels
    Geqr2RegArgs g = reg_args(d, a, tau, j0, rows, jb, jb);
    if (with_t) set_outputs(g, out);
    const CholConfig cc = flags != nullptr ? chol_panel_config(dev, rows, jb, policy_batch, pp, plan.panel) : CholConfig{};
    if (cc.cluster > 0) {
      // The Cholesky QR panel, then the Householder panel on the matrices it flagged.
      const Status st = launch_geqr2_chol(d.layout, g, cc, flags, nbat, stream);
      if (st != Status::success) return st;
      g.only_flagged = flags;
    }
    return pp.wcol_rows_per_lane > 0 ? launch_geqr2_wcol(d.layout, g, pp.wcol_rows_per_lane, nbat, stream)
                                     : launch_geqr2_reg(d.layout, g, pp.reg, nbat, stream);
  }
  Geqr2Args ga = panel_args(args, a, tau, j0, rows, jb, jb, pp);
  if (with_t) set_outputs(ga, out);
  return launch_geqr2(d.layout, ga, pp, nbat, stream);
}

// Columns [c0, c0 + nc) of the trailing matrix of the reflectors of columns j0 .. j0 + jb,
// on `stream` (the stream of the handle `blas`): one larfb_stripe or larfb_fused launch
// where the plan asks for it and the update allows it, else three cuBLAS products; V^T
// and T as the panel stored them. on_chain: an update the next panel waits for (inside an
// outer block, or the next block's columns), which larfb_stripe splits into blocks of
// plan.chain_split_rows rows where the plan has them.
Status update_columns(const GeqrfPlan& plan, cublasHandle_t blas, cudaStream_t stream, const GeqrfDesc& d, float* a,
                      const PanelOut& p, float* w, std::int64_t w_stride, int j0, int jb, int c0, int nc,
                      std::int64_t nbat, bool on_chain = false) {
  const int split_rows = on_chain ? plan.chain_split_rows : 0;
  const LarfbOperands op{a,  d.ld, d.stride, p.vt, p.vt_stride, p.vt_ld, p.t, p.t_stride, p.t_ld,
                         j0, c0,   static_cast<int>(d.m) - j0,   jb,          nc};
  if (plan.stripe64 && d.layout == Layout::row_major && larfb_stripe64_can_implement(op, nbat)) {
    const Status st = launch_larfb_stripe64(op, nbat, plan.stripe64_ctas, stream);
    if (st != Status::not_supported) return st;  // else a tensor map did not encode: larfb_stripe
  }
  if (stripe_update_for(plan, op.rows, nc) && larfb_stripe_can_implement(op, nbat, split_rows))
    return launch_larfb_stripe(d.layout, plan.stripe_math, op, nbat, stream, split_rows);
  if (plan.fused_update && larfb_fused_can_implement(op, nbat)) return launch_larfb_fused(d.layout, op, nbat, stream);
  return larfb_gemm(blas, d.layout, LarfbGemmArgs{op, w, w_stride}, nbat);
}

// The panels of outer block [J0, J0 + JB) with the updates inside it (on `stream`, cuBLAS
// handle `blas`), then, when a trailing matrix follows, the outer T (Gram blocks + merge).
// V^T (JB x rows) and T (JB x JB) of the block land in `out`.
Status outer_panel(const DeviceInfo& dev, const GeqrfOperation::Arguments& args, const GeqrfPlan& plan,
                   cublasHandle_t blas, float* a, float* tau, int J0, int JB, bool trailing, const PanelOut& out,
                   float* w_inner, float* s_ws, int* flags, std::int64_t nbat, std::int64_t policy_batch,
                   cudaStream_t stream) {
  const GeqrfDesc& d = args.desc;
  for (int j0 = J0; j0 < J0 + JB; j0 += plan.nb) {
    const int jb = std::min(plan.nb, J0 + JB - j0), q = j0 - J0;
    const int right = J0 + JB - (j0 + jb);  // columns of the block right of this panel
    PanelOut in = out;
    in.t = out.t + static_cast<std::int64_t>(q) * out.t_ld + q;
    in.vt = out.vt + q + static_cast<std::int64_t>(q) * out.vt_ld;
    in.vt_pad = q;
    Status st =
        launch_panel(dev, args, plan, a, tau, j0, jb, right > 0 || trailing, in, flags, nbat, policy_batch, stream);
    if (st != Status::success) return st;
    if (right > 0) {
      st = update_columns(plan, blas, stream, d, a, in, w_inner, static_cast<std::int64_t>(plan.w_inner_floats), j0,
                          jb, j0 + jb, right, nbat, true);
      if (st != Status::success) return st;
    }
  }
  if (!trailing || JB <= kMaxPanelWidth) return Status::success;
  if (JB == 2 * kMergeBlock) {  // the policy's width: the Gram block inside the merge
    const int rows = static_cast<int>(d.m) - J0;
    const int ctas = plan.merge_ctas > 0 ? plan.merge_ctas : merge_pair_ctas(dev, rows, policy_batch);
    return launch_larft_merge_pair(LarftMergePairArgs{out.t, out.t_stride, out.vt, out.vt_stride, rows, ctas}, nbat,
                                   stream);
  }
  const std::int64_t s_stride = static_cast<std::int64_t>(plan.s_floats);
  Status st = gram_offdiag(blas, out.vt, out.vt_stride, JB, static_cast<int>(d.m) - J0, s_ws, s_stride, nbat);
  if (st != Status::success) return st;
  return launch_larft_merge(LarftMergeArgs{out.t, out.t_stride, s_ws, s_stride, JB}, nbat, stream);
}

// One launch of `one` on the m x n matrices at a (d's ld and stride), tau (d's tau_stride):
// a whole matrix, or the blocked path's tail (a and tau offset to its first column).
Status launch_one(const GeqrfDesc& d, const OneLaunchPlan& one, float* a, float* tau, int m, int n, std::int64_t nbat,
                  cudaStream_t stream) {
  const Geqr2CtaArgs g{a, d.ld, d.stride, tau, d.tau_stride, m, n};
  switch (one.algorithm) {
    case Algorithm::warp:
      return launch_geqr2_warp(d.layout, Geqr2WarpArgs{a, d.ld, d.stride, tau, d.tau_stride, nbat, m, n}, stream);
    case Algorithm::cta:
      return launch_geqr2_cta(d.layout, g, one.cta, nbat, stream);
    case Algorithm::cta_blocked:
      return launch_geqrf_cta(d.layout, g, one.cta_blk, nbat, stream);
    case Algorithm::cluster_blocked:
      return launch_geqrf_cluster(d.layout, g, one.cluster_blk, nbat, stream);
    case Algorithm::fused:
      return launch_geqr2_reg(d.layout, reg_args(d, a, tau, 0, m, n, std::min(m, n)), one.fused_reg, nbat, stream);
    case Algorithm::blocked:
      break;
  }
  return Status::not_supported;  // not a one-launch plan
}

// The chunk's per-matrix workspace arrays at the first matrix of a part, and the chunk's
// size (the stride between the look-ahead's two buffers of T and V^T).
struct ChunkWs {
  float* t;
  float* w;
  float* vt;
  float* w_inner;
  float* s;
  int* flags;
  std::int64_t chunk;

  // The same arrays at the chunk's matrix `first` (the interleave's second part).
  ChunkWs at(std::int64_t first, const GeqrfPlan& plan) const {
    return {t + first * plan.t_floats, w + first * plan.w_floats, vt + first * plan.vt_floats,
            w_inner + first * plan.w_inner_floats, s + first * plan.s_floats, flags + first, chunk};
  }
};

// The blocked path with the look-ahead on nbat matrices at a and tau: panels on `side`,
// trailing updates on `stream`, with lane's cuBLAS handles and events; kernels chosen for
// policy_batch matrices (the chunk's). Enqueued in pieces, so that the interleave's two
// parts can be enqueued block by block: start() forks `side` off `stream`, each step()
// enqueues one outer block, finish() joins `side` into `stream` and launches the tail.
//
// Look-ahead: outer panels (with the updates inside them) run on the side stream,
// trailing updates on the caller's stream. Once the next outer panel's columns are
// updated, that panel starts while the rest of the trailing matrix is still being
// updated. V^T and T are double-buffered between the streams.
//
// plan.next_on_side: the side stream also updates the next block's columns, right after
// the block's panels, so that the next panels follow without a round trip through the
// caller's stream. The caller's stream then updates the columns of the block after next
// first (ev_next: what the side stream's next such update waits for), and
// ev_done[parity] marks a block's updates done, before the panels two blocks on
// overwrite the V^T and T that they read.
class BlockedPart {
 public:
  BlockedPart(const DeviceInfo& dev, const GeqrfOperation::Arguments& args, const GeqrfPlan& plan, const Lane& lane,
              cudaStream_t stream, cudaStream_t side, float* a, float* tau, std::int64_t nbat,
              std::int64_t policy_batch, const ChunkWs& ws)
      : dev_(dev), args_(args), plan_(plan), lane_(lane), stream_(stream), side_(side), a_(a),
        tau_(tau), nbat_(nbat), policy_batch_(policy_batch), ws_(ws),
        kb_(plan.tail_at > 0 ? plan.tail_at : static_cast<int>(std::min(args.desc.m, args.desc.n))),
        next_side_(plan.next_on_side && side != stream) {}

  bool done() const { return J0_ >= kb_; }

  Status start() {
    BATCHQR_CUDA_TRY(cudaEventRecord(lane_.ev_fork, stream_));
    BATCHQR_CUDA_TRY(cudaStreamWaitEvent(side_, lane_.ev_fork, 0));
    return Status::success;
  }

  // Outer block J0_ (its panels, then the trailing update of its reflectors).
  Status step() {
    const GeqrfDesc& d = args_.desc;
    const GeqrfPlan& plan = plan_;
    const Lane& lane = lane_;
    const int n = static_cast<int>(d.n), NB = plan.outer_nb, J0 = J0_, step = step_;
    J0_ += NB;
    ++step_;
    const std::int64_t chunk = ws_.chunk, nbat = nbat_;
    const std::int64_t w_stride = static_cast<std::int64_t>(plan.w_floats);
    const std::int64_t w_inner_stride = static_cast<std::int64_t>(plan.w_inner_floats);
    float* a = a_;
    const int JB = std::min(NB, kb_ - J0);
    const int trailing = n - J0 - JB;
    PanelOut out;
    out.t = ws_.t + static_cast<std::size_t>(step % 2) * chunk * plan.t_floats;
    out.t_stride = static_cast<std::int64_t>(plan.t_floats);
    // A block of one panel keeps T as a 32 x 32 tile; a wider one as JB x JB (the merge's ld).
    out.t_ld = JB > kMaxPanelWidth ? JB : kMaxPanelWidth;
    out.vt = ws_.vt + static_cast<std::size_t>(step % 2) * chunk * plan.vt_floats;
    out.vt_stride = static_cast<std::int64_t>(plan.vt_floats);
    out.vt_ld = JB;
    if (next_side_ && step >= 2) BATCHQR_CUDA_TRY(cudaStreamWaitEvent(side_, lane.ev_done[step % 2], 0));
    Status st = outer_panel(dev_, args_, plan, lane.blas_side, a, tau_, J0, JB, trailing > 0, out, ws_.w_inner, ws_.s,
                            ws_.flags, nbat, policy_batch_, side_);
    if (st != Status::success) return st;
    if (trailing <= 0) return Status::success;
    BATCHQR_CUDA_TRY(cudaEventRecord(lane.ev_panel, side_));
    BATCHQR_CUDA_TRY(cudaStreamWaitEvent(stream_, lane.ev_panel, 0));
    const int c0 = J0 + JB;
    const int next = c0 < kb_ ? std::min(NB, kb_ - c0) : 0;  // next outer panel's width (none before the tail)
    if (next_side_) {
      // The next block's columns here; the previous block's update of them (the caller's
      // stream, first) is what ev_next marks.
      const int ns = std::min(next, trailing);
      if (ns > 0) {
        if (next_marked_) BATCHQR_CUDA_TRY(cudaStreamWaitEvent(side_, lane.ev_next, 0));
        st = update_columns(plan, lane.blas_side, side_, d, a, out, ws_.w_inner, w_inner_stride, J0, JB, c0, ns, nbat,
                            true);
        if (st != Status::success) return st;
      }
      next_marked_ = false;
      const int c1 = c0 + ns, rest = trailing - ns;
      if (rest > 0) {
        const int next2 = c1 < kb_ ? std::min(NB, kb_ - c1) : 0;  // the block after next
        const int first = next2 > 0 && next2 < rest ? next2 : rest;
        st = update_columns(plan, lane.blas, stream_, d, a, out, ws_.w, w_stride, J0, JB, c1, first, nbat);
        if (st != Status::success) return st;
        BATCHQR_CUDA_TRY(cudaEventRecord(lane.ev_next, stream_));
        next_marked_ = true;
        if (first < rest) {
          st = update_columns(plan, lane.blas, stream_, d, a, out, ws_.w, w_stride, J0, JB, c1 + first, rest - first,
                              nbat);
          if (st != Status::success) return st;
        }
      }
      BATCHQR_CUDA_TRY(cudaEventRecord(lane.ev_done[step % 2], stream_));
      return Status::success;
    }
    if (next > 0 && next < trailing) {
      st = update_columns(plan, lane.blas, stream_, d, a, out, ws_.w, w_stride, J0, JB, c0, next, nbat, true);
      if (st != Status::success) return st;
      BATCHQR_CUDA_TRY(cudaEventRecord(lane.ev_next, stream_));
      BATCHQR_CUDA_TRY(cudaStreamWaitEvent(side_, lane.ev_next, 0));
      st = update_columns(plan, lane.blas, stream_, d, a, out, ws_.w, w_stride, J0, JB, c0 + next, trailing - next,
                          nbat);
    } else {
      st = update_columns(plan, lane.blas, stream_, d, a, out, ws_.w, w_stride, J0, JB, c0, trailing, nbat);
      BATCHQR_CUDA_TRY(cudaEventRecord(lane.ev_next, stream_));
      BATCHQR_CUDA_TRY(cudaStreamWaitEvent(side_, lane.ev_next, 0));
    }
    return st;
  }

  // Join: the caller's stream waits for the last panel; the side stream for every update
  // (the next chunk reuses the workspace). Then the tail, after the last update, on the
  // caller's stream.
  Status finish() {
    BATCHQR_CUDA_TRY(cudaEventRecord(lane_.ev_join, side_));
    BATCHQR_CUDA_TRY(cudaStreamWaitEvent(stream_, lane_.ev_join, 0));
    if (plan_.tail_at <= 0) return Status::success;
    const GeqrfDesc& d = args_.desc;
    const int j = plan_.tail_at, m = static_cast<int>(d.m), n = static_cast<int>(d.n);
    return launch_one(d, plan_.tail, a_ + static_cast<std::int64_t>(j) * (d.ld + 1), tau_ + j, m - j, n - j, nbat_,
                      stream_);
  }

  // The whole part: start, every block, finish.
  Status run_all() {
    Status st = start();
    while (st == Status::success && !done()) st = step();
    return st == Status::success ? finish() : st;
  }

 private:
  const DeviceInfo& dev_;
  const GeqrfOperation::Arguments& args_;
  const GeqrfPlan& plan_;
  const Lane& lane_;
  cudaStream_t stream_, side_;
  float* a_;
  float* tau_;
  std::int64_t nbat_, policy_batch_;
  ChunkWs ws_;
  int kb_;  // columns of the blocked loop
  bool next_side_;
  int J0_ = 0, step_ = 0;
  bool next_marked_ = false;  // next_side_: the caller's stream recorded ev_next in the previous block
};

}  // namespace

Status GeqrfOperation::run(const DeviceInfo& dev, const Resources& res, const Arguments& args, void* workspace,
                           std::size_t workspace_bytes, cudaStream_t stream) {
  return run(dev, res, args, make_plan(dev, args.desc), workspace, workspace_bytes, stream);
}

Status GeqrfOperation::run(const DeviceInfo& dev, const Resources& res, const Arguments& args, const GeqrfPlan& plan,
                           void* workspace, std::size_t workspace_bytes, cudaStream_t stream) {
  const GeqrfDesc& d = args.desc;
  if (workspace_bytes < plan.workspace_bytes) return Status::insufficient_workspace;
  const int m = static_cast<int>(d.m), n = static_cast<int>(d.n), k = std::min(m, n);
  const std::int64_t chunk = plan.batch_chunk;
  const bool gemm = plan.algorithm == Algorithm::blocked && plan.trailing == Trailing::gemm;


  // Grid sizes are 32-bit.
  if (plan.algorithm == Algorithm::blocked && plan.trailing == Trailing::mma_tf32x3) {
    const std::int64_t per = std::max<std::int64_t>(kMaxCluster, static_cast<std::int64_t>(plan.w_floats / kLarfbPartial));
    if (chunk > INT_MAX / per) return Status::not_supported;
  } else if (chunk > INT_MAX / kMaxCluster) {
    return Status::not_supported;
  }
  if (gemm && d.ld > INT_MAX) return Status::not_supported;  // cuBLAS ld is an int

  // The look-ahead forks onto the context's side stream, except while the caller's stream
  // is being captured into a graph: a captured side stream would stay in that capture
  // until it ends, and another thread's call on the same context would land in it. Then
  // the panels run on the caller's stream (measured: the look-ahead gains < 2% so far).
  cudaStream_t side = plan.look_ahead ? res.side : stream;
  if (gemm && side != stream) {
    cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(stream, &capture) != cudaSuccess || capture != cudaStreamCaptureStatusNone) side = stream;
  }
  // The interleave's second part forks off the same way, so it is off where the look-ahead is.
  const bool interleave = gemm && plan.interleave > 1 && side != stream;

  // Workspace: [one cuBLAS workspace per handle, each 256-byte aligned] then the
  // per-matrix arrays. The stream first: cublasSetStream resets a handle's workspace to
  // cuBLAS's own pool, which may allocate (and then a call could neither be captured nor
  // stay asynchronous).
  // The side handle serves only two-level blocking (outer_panel); one-level plans leave it
  // untouched, as they did before it existed. An interleaved plan has a second pair of
  // handles (the second lane's), set only when the interleave runs.
  unsigned char* ws = static_cast<unsigned char*>(workspace);
  if (plan.blas_bytes > 0) {
    const bool two_level = plan.outer_nb > plan.nb;
    const std::pair<cublasHandle_t, cudaStream_t> handles[] = {{res.blas, stream},
                                                               {res.blas_side, side},
                                                               {res.lane2.blas, res.stream2},
                                                               {res.lane2.blas_side, res.lane2.side}};
    for (int i = 0; i < 2 * plan.interleave && i < 4; ++i) {
      const auto [h, st] = handles[i];
      unsigned char* aligned = ws + ((256 - reinterpret_cast<std::uintptr_t>(ws) % 256) % 256);
      ws += plan.blas_bytes + 256;
      if (i % 2 == 1 && !two_level) continue;
      if (i >= 2 && !interleave) continue;
      if (h == nullptr) return Status::backend_error;
      if (cublasSetStream(h, st) != CUBLAS_STATUS_SUCCESS ||
          cublasSetWorkspace(h, aligned, plan.blas_bytes) != CUBLAS_STATUS_SUCCESS)
        return Status::backend_error;
    }
  }
  const std::size_t bufs = gemm ? 2 : 1;  // look-ahead double buffers
  float* t_ws = reinterpret_cast<float*>(ws);
  float* w_ws = t_ws + bufs * chunk * plan.t_floats;
  float* vt_ws = w_ws + static_cast<std::size_t>(chunk) * plan.w_floats;
  float* w_inner_ws = vt_ws + bufs * chunk * plan.vt_floats;
  float* s_ws = w_inner_ws + static_cast<std::size_t>(chunk) * plan.w_inner_floats;
  int* flags = gemm ? reinterpret_cast<int*>(s_ws + static_cast<std::size_t>(chunk) * plan.s_floats) : nullptr;

  const ChunkWs ws0{t_ws, w_ws, vt_ws, w_inner_ws, s_ws, flags, chunk};

  for (std::int64_t b0 = 0; b0 < d.batch; b0 += chunk) {
    const std::int64_t nbat = std::min(chunk, d.batch - b0);
    float* a = args.a + b0 * d.stride;
    float* tau = args.tau + b0 * d.tau_stride;

    if (plan.algorithm != Algorithm::blocked) {
      const Status st = launch_one(d, plan, a, tau, m, n, nbat, stream);
      if (st != Status::success) return st;
      continue;
    }

    if (gemm) {
      if (!interleave || nbat < 2) {
        const Status st = BlockedPart(dev, args, plan, res, stream, side, a, tau, nbat, nbat, ws0).run_all();
        if (st != Status::success) return st;
        continue;
      }
      // Two parts side by side: the first on the caller's stream, the second forked onto
      // stream2 and joined back; each part's matrices keep their own workspace slots. Their
      // blocks are enqueued in turn, so that the second part's first panels do not wait for
      // the host to enqueue the whole first part.
      const std::int64_t h =
          plan.interleave_first > 0 ? std::min<std::int64_t>(plan.interleave_first, nbat - 1) : (nbat + 1) / 2;
      BATCHQR_CUDA_TRY(cudaEventRecord(res.ev_split, stream));
      BATCHQR_CUDA_TRY(cudaStreamWaitEvent(res.stream2, res.ev_split, 0));
      BlockedPart p0(dev, args, plan, res, stream, side, a, tau, h, nbat, ws0);
      BlockedPart p1(dev, args, plan, res.lane2, res.stream2, res.lane2.side, a + h * d.stride,
                     tau + h * d.tau_stride, nbat - h, nbat, ws0.at(h, plan));
      Status st = Status::success;
      if (plan.interleave_by_block) {
        st = p0.start();
        if (st == Status::success) st = p1.start();
        while (st == Status::success && !(p0.done() && p1.done())) {
          if (!p0.done()) st = p0.step();
          if (st == Status::success && !p1.done()) st = p1.step();
        }
        if (st == Status::success) st = p0.finish();
        if (st == Status::success) st = p1.finish();
      } else {
        st = p0.run_all();
        if (st == Status::success) st = p1.run_all();
      }
      if (st != Status::success) return st;
      BATCHQR_CUDA_TRY(cudaEventRecord(res.ev_merge, res.stream2));
      BATCHQR_CUDA_TRY(cudaStreamWaitEvent(stream, res.ev_merge, 0));
      continue;
    }

    for (int j0 = 0; j0 < k; j0 += plan.nb) {
      const int jb = std::min(plan.nb, k - j0);
      const int rows = m - j0;
      const int trailing = n - j0 - jb;
      const bool with_t = trailing > 0;
      PanelOut out;
      out.t = t_ws;
      out.t_stride = static_cast<std::int64_t>(kMaxPanelWidth) * kMaxPanelWidth;
      Status st = launch_panel(dev, args, plan, a, tau, j0, jb, with_t, out, nullptr, nbat, nbat, stream);
      if (st != Status::success) return st;
      if (!with_t) continue;
      LarfbArgs la{};
      la.a = a;
      la.ld = d.ld;
      la.stride = d.stride;
      la.t = t_ws;
      la.w = w_ws;
      la.j0 = j0;
      la.rows = rows;
      la.jb = jb;
      la.ncols = trailing;
      la.tiles = (trailing + kLarfbTileN - 1) / kLarfbTileN;
      const LarfbSplit sp = larfb_split(dev, chunk, rows, la.tiles);  // as planned: same for every chunk
      la.splits = sp.splits;
      la.rows_per_split = sp.rows_per_split;
      st = launch_larfb(d.layout, la, nbat, stream);
      if (st != Status::success) return st;
    }
  }
  return Status::success;
}

}  // namespace batchqr::cuda
