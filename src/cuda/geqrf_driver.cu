// The geqrf algorithm driver: LAPACK's blocked loop (geqr2 panel + larft, then larfb)
// over a batch, or a single fused launch when a whole matrix fits on one SM.
#include <algorithm>
#include <climits>

#include "cuda/cuda_check.hpp"
#include "cuda/geqr2.cuh"
#include "cuda/geqrf_device.hpp"
#include "cuda/larfb.cuh"
#include "cuda/policy.hpp"

namespace batchqr::cuda {
namespace {

template <Layout L, bool kSmem>
Status launch_geqr2(const Geqr2Args& args, std::int64_t batch, std::size_t smem, cudaStream_t stream) {
  auto kernel = geqr2_kernel<L, kPanelWarps, kSmem>;
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(static_cast<unsigned>(batch * args.cluster));
  cfg.blockDim = dim3(kPanelWarps * 32);
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

Status launch_geqr2(Layout layout, const Geqr2Args& args, const PanelPlan& pp, std::int64_t batch,
                    cudaStream_t stream) {
  if (layout == Layout::row_major)
    return pp.in_smem ? launch_geqr2<Layout::row_major, true>(args, batch, pp.smem_bytes, stream)
                      : launch_geqr2<Layout::row_major, false>(args, batch, pp.smem_bytes, stream);
  return pp.in_smem ? launch_geqr2<Layout::col_major, true>(args, batch, pp.smem_bytes, stream)
                    : launch_geqr2<Layout::col_major, false>(args, batch, pp.smem_bytes, stream);
}

template <Layout L, TrailingMath M>
void launch_larfb(const LarfbArgs& args, const dim3 grid, cudaStream_t stream) {
  larfb_vtc_kernel<L, M><<<grid, kLarfbThreads, 0, stream>>>(args);
  larfb_update_kernel<L, M><<<grid, kLarfbThreads, 0, stream>>>(args);
}

Status launch_larfb(Layout layout, bool tf32x3, const LarfbArgs& args, std::int64_t batch, cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>(batch * args.tiles * args.splits));
  if (layout == Layout::row_major) {
    if (tf32x3) launch_larfb<Layout::row_major, TrailingMath::tf32x3>(args, grid, stream);
    else launch_larfb<Layout::row_major, TrailingMath::fp32>(args, grid, stream);
  } else {
    if (tf32x3) launch_larfb<Layout::col_major, TrailingMath::tf32x3>(args, grid, stream);
    else launch_larfb<Layout::col_major, TrailingMath::fp32>(args, grid, stream);
  }
  BATCHQR_CUDA_TRY(cudaGetLastError());
  return Status::success;
}

template <Layout L, bool kSmem>
cudaError_t raise_smem_limit(const DeviceInfo& dev) {
  return cudaFuncSetAttribute(geqr2_kernel<L, kPanelWarps, kSmem>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                              static_cast<int>(dev.smem_per_block_optin));
}

Geqr2Args panel_args(const GeqrfOperation::Arguments& a, float* a_chunk, float* tau_chunk, float* t_out,
                     int j0, int rows, int ncols, int nrefl, const PanelPlan& pp) {
  Geqr2Args g{};
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

// One CTA per matrix, the whole matrix in shared memory (make_plan checked it fits).
PanelPlan fused_plan(int m, int n, int k) {
  PanelPlan pp;
  pp.cluster = 1;
  pp.rows_per_cta = m;
  pp.lds = m | 1;
  pp.in_smem = true;
  Geqr2Args g{};
  g.lds = pp.lds;
  g.ncols = n;
  g.nrefl = k;
  g.cluster = 1;
  pp.smem_bytes = geqr2_smem_bytes(g, true);
  return pp;
}

}  // namespace

Status GeqrfOperation::initialize(const DeviceInfo& dev) {
  BATCHQR_CUDA_TRY((raise_smem_limit<Layout::row_major, true>(dev)));
  BATCHQR_CUDA_TRY((raise_smem_limit<Layout::col_major, true>(dev)));
  BATCHQR_CUDA_TRY((raise_smem_limit<Layout::row_major, false>(dev)));
  BATCHQR_CUDA_TRY((raise_smem_limit<Layout::col_major, false>(dev)));
  return Status::success;
}

Status GeqrfOperation::can_implement(const DeviceInfo& dev, const Arguments& args) {
  if (dev.cc_major < 9) return Status::not_supported;  // built for sm_90 and newer
  if (args.a == nullptr || args.tau == nullptr) return Status::null_pointer;
  return Status::success;
}

std::size_t GeqrfOperation::get_workspace_size(const DeviceInfo& dev, const GeqrfDesc& desc) {
  return make_plan(dev, desc).workspace_bytes;
}

Status GeqrfOperation::run(const DeviceInfo& dev, const Arguments& args, void* workspace,
                           std::size_t workspace_bytes, cudaStream_t stream) {
  const GeqrfDesc& d = args.desc;
  const GeqrfPlan plan = make_plan(dev, d);
  if (workspace_bytes < plan.workspace_bytes) return Status::insufficient_workspace;
  const int m = static_cast<int>(d.m), n = static_cast<int>(d.n), k = std::min(m, n);
  const std::int64_t chunk = plan.batch_chunk;
  float* t_ws = static_cast<float*>(workspace);
  float* w_ws = t_ws + static_cast<std::size_t>(chunk) * plan.t_floats;

  // Grid sizes are 32-bit.
  if (plan.algorithm == Algorithm::blocked) {
    const std::int64_t per = std::max<std::int64_t>(kMaxCluster, static_cast<std::int64_t>(plan.w_floats / kLarfbPartial));
    if (chunk > INT_MAX / per) return Status::not_supported;
  } else if (chunk > INT_MAX) {
    return Status::not_supported;
  }

  for (std::int64_t b0 = 0; b0 < d.batch; b0 += chunk) {
    const std::int64_t nbat = std::min(chunk, d.batch - b0);
    float* a = args.a + b0 * d.stride;
    float* tau = args.tau + b0 * d.tau_stride;

    if (plan.algorithm == Algorithm::fused) {
      const PanelPlan pp = fused_plan(m, n, k);
      const Status st = launch_geqr2(d.layout, panel_args(args, a, tau, nullptr, 0, m, n, k, pp), pp, nbat, stream);
      if (st != Status::success) return st;
      continue;
    }

    for (int j0 = 0; j0 < k; j0 += plan.nb) {
      const int jb = std::min(plan.nb, k - j0);
      const int rows = m - j0;
      const int trailing = n - j0 - jb;
      const bool with_t = trailing > 0;
      const PanelPlan pp = panel_plan(dev, rows, jb, jb, with_t, nbat);
      Status st = launch_geqr2(d.layout, panel_args(args, a, tau, with_t ? t_ws : nullptr, j0, rows, jb, jb, pp),
                               pp, nbat, stream);
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
      st = launch_larfb(d.layout, dev.tf32x3, la, nbat, stream);
      if (st != Status::success) return st;
    }
  }
  return Status::success;
}

}  // namespace batchqr::cuda
