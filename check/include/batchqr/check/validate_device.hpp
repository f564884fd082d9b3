// batchqr::check: the accuracy gate evaluated on the GPU in FP64 (same figures as
// validate_host). Available when batchqr_check was built with CUDA
// (BATCHQR_CHECK_HAS_CUDA).
#pragma once

#include "batchqr/check/validate.hpp"
#include "batchqr/types.hpp"

namespace batchqr::check {

// `a` is the original input, `h`/`tau` the factors, all device memory described by
// `desc`. Enqueues on `stream`, then synchronizes it to return the report. Works in
// chunks of the batch so that its FP64 temporaries stay within `max_temp_bytes`.
// Returns false (and leaves *report untouched) if a CUDA or cuBLAS call fails.
bool validate_device(const GeqrfDesc& desc, const float* a, const float* h, const float* tau,
                     GateReport* report, Stream stream = nullptr,
                     std::size_t max_temp_bytes = std::size_t{4} << 30);

}  // namespace batchqr::check
