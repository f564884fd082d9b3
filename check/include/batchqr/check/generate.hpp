// batchqr::check: the input distributions of the QR contract, deterministic per seed.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "batchqr/types.hpp"

namespace batchqr::check {

enum class Distribution : int {
  dense, upper, diagonal, rankdef, nearrank, clustered, band, nearcollinear, rowscale, mixed
};
inline constexpr int kNumDistributions = 10;

const char* to_string(Distribution d) noexcept;
bool parse_distribution(std::string_view name, Distribution* out) noexcept;

struct GenSpec {
  std::int64_t m = 0, n = 0, batch = 0;
  double cond = 0.0;  // column-scaling knob (10^-cond across the columns), see the contract
  Distribution dist = Distribution::dense;
  std::uint64_t seed = 0;
};

// The distribution matrix b of the batch is drawn from (for mixed: its sub-distribution;
// for the others: the distribution itself).
Distribution distribution_of(const GenSpec& spec, std::int64_t b) noexcept;

// Fills the batch described by `layout` (its m, n, batch must equal spec's) in host
// memory. Matrix b depends only on (spec, b): not on the batch size, thread count or
// layout. Elements outside the matrices (ld padding, stride gaps) are left untouched.
void generate(const GenSpec& spec, const GeqrfDesc& layout, float* out, int threads = 0);

}  // namespace batchqr::check
