// The geqrf algorithm driver: LAPACK's blocked loop (geqr2 panel + larft, then larfb)
// over a batch, with look-ahead, or a single fused launch when a whole matrix fits in the
// registers of one CTA.
#include <algorithm>
#include <climits>

#include "cuda/cuda_check.hpp"
#include "cuda/geqr2.cuh"
#include "cuda/geqr2_reg_launch.hpp"
#include "cuda/geqr2_warp_launch.hpp"
#include "cuda/geqrf_device.hpp"
#include "cuda/larfb.cuh"
#include "cuda/larfb_gemm.hpp"
#include "cuda/policy.hpp"

namespace batchqr::cuda {
namespace {

template <Layout L, int NW, bool kSmem>
Status launch_geqr2(const Geqr2Args& args, std::int64_t batch, std::size_t smem, cudaStream_t stream) {
  auto kernel = geqr2_kernel<L, NW, kSmem>;
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(static_cast<unsigned>(batch * args.cluster));
  cfg.blockDim = dim3(NW * 32);
  cfg.dynamicSmemBytes = smem;
  cfg.stream = stream;
  cudaLaunchAttribute attr[1];
  if (args.cluster > 1) {
    attr[0].id = cudaLaunchAttributeClusterDimension;
    attr[0].val.clusterDim.x = static_cast<unsigned>(args.cluster);
    attr[0].val.clusterDim.y = 1;
    attr[0].val.clusterDim.z = 1;
    cfg.attrs = attr;
    cfg.numAttrs = 1;
  }
  BATCHQR_CUDA_TRY(cudaLaunchKernelEx(&cfg, kernel, args));
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

Geqr2Args panel_args(const GeqrfOperation::Arguments& a, float* a_chunk, float* tau_chunk, float* t_out,
                     int j0, int rows, int ncols, int nrefl, const PanelPlan& pp) {
  Geqr2Args g{};  // vt_out: none unless the caller sets it
  g.a = a_chunk;
  g.ld = a.desc.ld;
  g.stride = a.desc.stride;
  g.tau = tau_chunk;
  g.tau_stride = a.desc.tau_stride;
  g.t_out = t_out;
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

// One panel: geqr2 (+ larft) on columns j0 .. j0 + jb of every matrix of the chunk.
Status launch_panel(const DeviceInfo& dev, const GeqrfOperation::Arguments& args, float* a, float* tau, int j0,
                    int jb, bool with_t, float* t_out, float* vt_out, std::int64_t nbat, cudaStream_t stream) {
  const GeqrfDesc& d = args.desc;
  const int rows = static_cast<int>(d.m) - j0;
  const PanelPlan pp = panel_plan(dev, rows, jb, jb, with_t, nbat);
  const std::int64_t vt_stride = static_cast<std::int64_t>(rows) * jb;
  if (pp.reg.rows_per_warp > 0) {
    Geqr2RegArgs g = reg_args(d, a, tau, j0, rows, jb, jb);
    g.t_out = with_t ? t_out : nullptr;
    g.vt_out = with_t ? vt_out : nullptr;
    g.vt_stride = vt_stride;
    return launch_geqr2_reg(d.layout, g, pp.reg, nbat, stream);
  }
  Geqr2Args ga = panel_args(args, a, tau, with_t ? t_out : nullptr, j0, rows, jb, jb, pp);
  if (with_t && vt_out != nullptr) {
    ga.vt_out = vt_out;
    ga.vt_stride = vt_stride;
  }
  return launch_geqr2(d.layout, ga, pp, nbat, stream);
}

// Columns [c0, c0 + nc) of the trailing matrix of panel (j0, jb) by cuBLAS.
Status update_columns(cublasHandle_t blas, const GeqrfDesc& d, float* a, const float* vt, const float* t, float* w,
                      int j0, int jb, int c0, int nc, std::int64_t nbat) {
  LarfbGemmArgs lg{};
  lg.a = a;
  lg.ld = d.ld;
  lg.stride = d.stride;
  lg.vt = vt;
  lg.vt_stride = (d.m - j0) * jb;
  lg.t = t;
  lg.t_stride = static_cast<std::int64_t>(kMaxPanelWidth) * kMaxPanelWidth;
  lg.w = w;
  lg.w_stride = 2 * static_cast<std::int64_t>(jb) * nc;
  lg.j0 = j0;
  lg.col0 = c0;
  lg.rows = static_cast<int>(d.m) - j0;
  lg.jb = jb;
  lg.ncols = nc;
  return larfb_gemm(blas, d.layout, lg, nbat);
}

}  // namespace

Status GeqrfOperation::run(const DeviceInfo& dev, const Resources& res, const Arguments& args, void* workspace,
                           std::size_t workspace_bytes, cudaStream_t stream) {
  const GeqrfDesc& d = args.desc;
  const GeqrfPlan plan = make_plan(dev, d);
  if (workspace_bytes < plan.workspace_bytes) return Status::insufficient_workspace;
  const int m = static_cast<int>(d.m), n = static_cast<int>(d.n), k = std::min(m, n);
  const std::int64_t chunk = plan.batch_chunk;

  // Workspace: [cuBLAS workspace, 256-byte aligned] then the per-matrix arrays.
  unsigned char* ws = static_cast<unsigned char*>(workspace);
  if (plan.blas_bytes > 0) {
    unsigned char* aligned = ws + ((256 - reinterpret_cast<std::uintptr_t>(ws) % 256) % 256);
    if (res.blas == nullptr) return Status::backend_error;
    if (cublasSetStream(res.blas, stream) != CUBLAS_STATUS_SUCCESS ||
        cublasSetWorkspace(res.blas, aligned, plan.blas_bytes) != CUBLAS_STATUS_SUCCESS)
      return Status::backend_error;
    ws += plan.blas_bytes + 256;
  }
  const std::size_t bufs = plan.trailing == Trailing::gemm ? 2 : 1;  // look-ahead double buffers
  float* t_ws = reinterpret_cast<float*>(ws);
  float* w_ws = t_ws + bufs * chunk * plan.t_floats;
  float* vt_ws = w_ws + static_cast<std::size_t>(chunk) * plan.w_floats;

  // Grid sizes are 32-bit.
  if (plan.algorithm == Algorithm::blocked && plan.trailing == Trailing::mma_tf32x3) {
    const std::int64_t per = std::max<std::int64_t>(kMaxCluster, static_cast<std::int64_t>(plan.w_floats / kLarfbPartial));
    if (chunk > INT_MAX / per) return Status::not_supported;
  } else if (chunk > INT_MAX / kMaxCluster) {
    return Status::not_supported;
  }
  if (plan.algorithm == Algorithm::blocked && plan.trailing == Trailing::gemm && d.ld > INT_MAX)
    return Status::not_supported;  // cuBLAS ld is an int

  // The look-ahead forks onto the context's side stream, except while the caller's stream
  // is being captured into a graph: a captured side stream would stay in that capture
  // until it ends, and another thread's call on the same context would land in it. Then
  // the panels run on the caller's stream (measured: the look-ahead gains < 2% so far).
  cudaStream_t side = res.side;
  if (plan.algorithm == Algorithm::blocked && plan.trailing == Trailing::gemm) {
    cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(stream, &capture) != cudaSuccess || capture != cudaStreamCaptureStatusNone) side = stream;
  }

  for (std::int64_t b0 = 0; b0 < d.batch; b0 += chunk) {
    const std::int64_t nbat = std::min(chunk, d.batch - b0);
    float* a = args.a + b0 * d.stride;
    float* tau = args.tau + b0 * d.tau_stride;

    if (plan.algorithm == Algorithm::warp) {
      Geqr2WarpArgs g{a, d.ld, d.stride, tau, d.tau_stride, nbat, m, n};
      const Status st = launch_geqr2_warp(d.layout, g, stream);
      if (st != Status::success) return st;
      continue;
    }
    if (plan.algorithm == Algorithm::fused) {
      const Status st = launch_geqr2_reg(d.layout, reg_args(d, a, tau, 0, m, n, k), plan.fused_reg, nbat, stream);
      if (st != Status::success) return st;
      continue;
    }

    if (plan.trailing == Trailing::gemm) {
      // Look-ahead: panels run on the side stream, updates on the caller's stream. Once the
      // next panel's columns are updated, that panel starts while the rest of the trailing
      // matrix is still being updated. V^T and T are double-buffered between the streams.
      BATCHQR_CUDA_TRY(cudaEventRecord(res.ev_fork, stream));
      BATCHQR_CUDA_TRY(cudaStreamWaitEvent(side, res.ev_fork, 0));
      for (int j0 = 0, step = 0; j0 < k; j0 += plan.nb, ++step) {
        const int jb = std::min(plan.nb, k - j0);
        const int trailing = n - j0 - jb;
        const bool with_t = trailing > 0;
        float* vt = vt_ws + static_cast<std::size_t>(step % 2) * chunk * plan.vt_floats;
        float* t = t_ws + static_cast<std::size_t>(step % 2) * chunk * plan.t_floats;
        Status st = launch_panel(dev, args, a, tau, j0, jb, with_t, t, vt, nbat, side);
        if (st != Status::success) return st;
        if (!with_t) continue;
        BATCHQR_CUDA_TRY(cudaEventRecord(res.ev_panel, side));
        BATCHQR_CUDA_TRY(cudaStreamWaitEvent(stream, res.ev_panel, 0));
        const int c0 = j0 + jb;
        const int next = j0 + jb < k ? std::min(plan.nb, k - (j0 + jb)) : 0;  // next panel's width
        if (next > 0 && next < trailing) {
          st = update_columns(res.blas, d, a, vt, t, w_ws, j0, jb, c0, next, nbat);
          if (st != Status::success) return st;
          BATCHQR_CUDA_TRY(cudaEventRecord(res.ev_next, stream));
          BATCHQR_CUDA_TRY(cudaStreamWaitEvent(side, res.ev_next, 0));
          st = update_columns(res.blas, d, a, vt, t, w_ws, j0, jb, c0 + next, trailing - next, nbat);
        } else {
          st = update_columns(res.blas, d, a, vt, t, w_ws, j0, jb, c0, trailing, nbat);
          BATCHQR_CUDA_TRY(cudaEventRecord(res.ev_next, stream));
          BATCHQR_CUDA_TRY(cudaStreamWaitEvent(side, res.ev_next, 0));
        }
        if (st != Status::success) return st;
      }
      // Join: the caller's stream waits for the last panel; the side stream for every update
      // (the next chunk reuses the workspace).
      BATCHQR_CUDA_TRY(cudaEventRecord(res.ev_join, side));
      BATCHQR_CUDA_TRY(cudaStreamWaitEvent(stream, res.ev_join, 0));
      continue;
    }

    for (int j0 = 0; j0 < k; j0 += plan.nb) {
      const int jb = std::min(plan.nb, k - j0);
      const int rows = m - j0;
      const int trailing = n - j0 - jb;
      const bool with_t = trailing > 0;
      Status st = launch_panel(dev, args, a, tau, j0, jb, with_t, t_ws, nullptr, nbat, stream);
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
