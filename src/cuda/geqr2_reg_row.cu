#include "cuda/geqr2_reg_launch.cuh"

namespace batchqr::cuda {
template Status launch_geqr2_reg<Layout::row_major>(const Geqr2RegArgs&, const RegConfig&, std::int64_t, cudaStream_t);
}  // namespace batchqr::cuda
