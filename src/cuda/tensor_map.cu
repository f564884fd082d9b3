#include "cuda/tensor_map.hpp"

#include <cuda_runtime.h>
#include <cudaTypedefs.h>

namespace batchqr::cuda {
namespace {

PFN_cuTensorMapEncodeTiled_v12000 encode_entry() {
  // Looked up once (thread-safe static initialization); null where the driver lacks it.
  static const PFN_cuTensorMapEncodeTiled_v12000 fn = [] {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault, &q) != cudaSuccess ||
        q != cudaDriverEntryPointSuccess)
      return static_cast<PFN_cuTensorMapEncodeTiled_v12000>(nullptr);
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(p);
  }();
  return fn;
}

}  // namespace

bool encode_tensor_map_3d(CUtensorMap* map, const void* base, std::uint64_t d0, std::uint64_t d1, std::uint64_t d2,
                          std::uint64_t stride1_bytes, std::uint64_t stride2_bytes, unsigned box0, unsigned box1) {
  const PFN_cuTensorMapEncodeTiled_v12000 fn = encode_entry();
  if (fn == nullptr || d0 == 0 || d1 == 0 || d2 == 0) return false;
  const cuuint64_t dims[3] = {d0, d1, d2};
  const cuuint64_t strides[2] = {stride1_bytes, stride2_bytes};
  const cuuint32_t box[3] = {box0, box1, 1};
  const cuuint32_t elem[3] = {1, 1, 1};
  return fn(map, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 3, const_cast<void*>(base), dims, strides, box, elem,
            CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
            CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

}  // namespace batchqr::cuda
