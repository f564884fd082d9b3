// The CPU studies' cases (bench/chol_panel_acceptance, bench/split_precision_study): "m n
// batch dist cond" quintuples from the command line, and their column-major inputs from
// the library's generator. Not part of the library.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "batchqr/batchqr.hpp"
#include "batchqr/check/generate.hpp"

namespace batchqr::study {

struct Case {
  int m, n, batch;
  std::string dist;
  double cond;
};

// Appends the cases of args (quintuples); false when they are not whole quintuples.
inline bool parse_cases(const std::vector<std::string>& args, std::vector<Case>* cases) {
  if (args.size() % 5 != 0) return false;
  for (std::size_t i = 0; i < args.size(); i += 5)
    cases->push_back({std::atoi(args[i].c_str()), std::atoi(args[i + 1].c_str()), std::atoi(args[i + 2].c_str()),
                      args[i + 3], std::atof(args[i + 4].c_str())});
  return true;
}

// The case's batch, column-major with ld m; false (a empty) for an unknown distribution or a
// size below 1.
inline bool generate_case(const Case& c, std::uint64_t seed, std::vector<float>* a) {
  check::GenSpec g;
  g.m = c.m;
  g.n = c.n;
  g.batch = c.batch;
  g.cond = c.cond;
  g.seed = seed;
  a->clear();
  if (!check::parse_distribution(c.dist, &g.dist) || c.m < 1 || c.n < 1 || c.batch < 1) return false;
  a->resize(static_cast<std::size_t>(c.m) * c.n * c.batch);
  check::generate(g, make_geqrf_desc(c.m, c.n, c.batch, Layout::col_major), a->data());
  return true;
}

}  // namespace batchqr::study
