// batchqr::check: the public benchmark suite and smoke tests of the QR contract.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "batchqr/check/generate.hpp"

namespace batchqr::check {

struct CaseSpec {
  std::int64_t batch = 1, m = 0, n = 0;  // m x n matrices (square unless m= is given)
  double cond = 0.0;
  Distribution dist = Distribution::dense;
  std::string label() const;  // e.g. "640x512 c2 mixed", "4x300x640 c1 dense"
};

std::vector<CaseSpec> suite_qr_v2();  // the 14 benchmarks
std::vector<CaseSpec> suite_smoke();  // the 22 smoke tests
// "qr_v2" or "smoke"; false for an unknown name.
bool suite_by_name(std::string_view name, std::vector<CaseSpec>* out);

// Parses "batch=640,n=512,cond=2,case=mixed" (keys: batch, n, m, cond, case; m defaults
// to n, cond to 0, case to dense). On failure returns false and says why in *error.
bool parse_case(std::string_view text, CaseSpec* out, std::string* error);

// Independent inputs per benchmark: max(1, min(50, 256 MiB / bytes of one batch)).
std::int64_t inputs_per_case(const CaseSpec& c);

// The seed of input `index` of case `c` under the run's base seed.
std::uint64_t case_seed(std::uint64_t base, const CaseSpec& c, std::int64_t index);

}  // namespace batchqr::check
