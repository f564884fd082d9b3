// The ten input distributions of the contract (spec/qr-contract.md, "Input distributions").
// Each matrix is built in FP64 (column-major scratch) and rounded to FP32 once.
#include "batchqr/check/generate.hpp"

#include <algorithm>
#include <cmath>
#include <thread>
#include <vector>

#include "batchqr/check/rng.hpp"

namespace batchqr::check {
namespace {

constexpr double kEps32 = 1.1920928955078125e-07;  // 2^-23

// 10^(-c * j / (n - 1)) for j = 0..n-1; 1 when n == 1.
double logspace_at(double c, std::int64_t j, std::int64_t n) {
  return n > 1 ? std::pow(10.0, -c * static_cast<double>(j) / static_cast<double>(n - 1)) : 1.0;
}
double linspace_at(double a, double b, std::int64_t j, std::int64_t n) {
  return n > 1 ? a + (b - a) * static_cast<double>(j) / static_cast<double>(n - 1) : a;
}

struct Scratch {
  std::int64_t m, n;
  std::vector<double> x;  // column-major m x n
  double& at(std::int64_t i, std::int64_t j) { return x[static_cast<std::size_t>(i + j * m)]; }
};

void fill_normal(Scratch& s, Rng& rng) {
  for (auto& v : s.x) v = rng.normal();
}
void scale_columns(Scratch& s, double cond) {
  for (std::int64_t j = 0; j < s.n; ++j) {
    const double f = logspace_at(cond, j, s.n);
    for (std::int64_t i = 0; i < s.m; ++i) s.at(i, j) *= f;
  }
}

void build(Distribution d, double cond, Scratch& s, Rng& rng) {
  const std::int64_t m = s.m, n = s.n, k = std::min(m, n);
  switch (d) {
    case Distribution::dense:
      fill_normal(s, rng);
      scale_columns(s, cond);
      break;
    case Distribution::upper:
      fill_normal(s, rng);
      for (std::int64_t j = 0; j < n; ++j)
        for (std::int64_t i = j + 1; i < m; ++i) s.at(i, j) = 0.0;
      for (std::int64_t j = 0; j < k; ++j) s.at(j, j) += linspace_at(1.0, 0.25, j, n);
      scale_columns(s, cond);
      break;
    case Distribution::diagonal: {
      std::fill(s.x.begin(), s.x.end(), 0.0);
      const double c = std::max(cond, 2.0);
      for (std::int64_t j = 0; j < k; ++j) {
        const double sign = (rng.next() >> 63) ? -1.0 : 1.0;
        s.at(j, j) = sign * logspace_at(c, j, n);
      }
      break;
    }
    case Distribution::rankdef:
      fill_normal(s, rng);
      for (std::int64_t j = (3 * n) / 4; j < n; ++j)
        for (std::int64_t i = 0; i < m; ++i) s.at(i, j) = 0.0;
      scale_columns(s, cond);
      break;
    case Distribution::nearrank: {
      fill_normal(s, rng);
      const std::int64_t r = (3 * n) / 4, t = n - r;
      for (std::int64_t c = 0; c < t; ++c)
        for (std::int64_t i = 0; i < m; ++i) s.at(i, r + c) = s.at(i, c) + 1e-5 * rng.normal();
      scale_columns(s, cond);
      break;
    }
    case Distribution::clustered:
      fill_normal(s, rng);
      for (std::int64_t j = 0; j < n; ++j) {
        double f = j < n / 2 ? 1.0 : 4.0 * kEps32;
        if (n >= 8 && j >= n / 2 - 2 && j < n / 2 + 2) f = std::sqrt(kEps32);
        for (std::int64_t i = 0; i < m; ++i) s.at(i, j) *= f;
      }
      break;
    case Distribution::band: {
      fill_normal(s, rng);
      const std::int64_t w = std::max<std::int64_t>(2, std::min<std::int64_t>(32, n / 32));
      for (std::int64_t j = 0; j < n; ++j)
        for (std::int64_t i = 0; i < m; ++i)
          if (std::abs(i - j) > w) s.at(i, j) = 0.0;
      for (std::int64_t j = 0; j < k; ++j) s.at(j, j) += linspace_at(1.0, 0.5, j, n);
      scale_columns(s, cond);
      break;
    }
    case Distribution::nearcollinear: {
      std::vector<double> shared(static_cast<std::size_t>(m));
      for (auto& v : shared) v = rng.normal();
      for (std::int64_t j = 0; j < n; ++j)
        for (std::int64_t i = 0; i < m; ++i) s.at(i, j) = shared[static_cast<std::size_t>(i)] + 1e-4 * rng.normal();
      scale_columns(s, cond);
      break;
    }
    case Distribution::rowscale: {
      fill_normal(s, rng);
      const double c = std::max(cond, 4.0);
      for (std::int64_t i = 0; i < m; ++i) {
        const double f = logspace_at(c, i, m);
        for (std::int64_t j = 0; j < n; ++j) s.at(i, j) *= f;
      }
      break;
    }
    case Distribution::mixed:
      break;  // resolved by distribution_of() before build()
  }
}

// mixed: dense with weight 6, each of these with weight 1.
constexpr Distribution kMixedOthers[] = {Distribution::rankdef,  Distribution::nearrank,
                                         Distribution::clustered, Distribution::band,
                                         Distribution::rowscale,  Distribution::nearcollinear};

Distribution mixed_draw(std::uint64_t seed, std::int64_t b) {
  const std::uint64_t h = splitmix64(seed ^ 0x4D49584544ull) ^ splitmix64(static_cast<std::uint64_t>(b));
  const int r = static_cast<int>(splitmix64(h) % 12);
  return r < 6 ? Distribution::dense : kMixedOthers[r - 6];
}

}  // namespace

const char* to_string(Distribution d) noexcept {
  switch (d) {
    case Distribution::dense: return "dense";
    case Distribution::upper: return "upper";
    case Distribution::diagonal: return "diagonal";
    case Distribution::rankdef: return "rankdef";
    case Distribution::nearrank: return "nearrank";
    case Distribution::clustered: return "clustered";
    case Distribution::band: return "band";
    case Distribution::nearcollinear: return "nearcollinear";
    case Distribution::rowscale: return "rowscale";
    case Distribution::mixed: return "mixed";
  }
  return "?";
}

bool parse_distribution(std::string_view name, Distribution* out) noexcept {
  for (int i = 0; i < kNumDistributions; ++i) {
    const auto d = static_cast<Distribution>(i);
    if (name == to_string(d)) {
      *out = d;
      return true;
    }
  }
  return false;
}

Distribution distribution_of(const GenSpec& spec, std::int64_t b) noexcept {
  if (spec.dist != Distribution::mixed) return spec.dist;
  // A batch of >= 2 holds at least one dense and one non-dense matrix: scan the draws and,
  // if one kind is missing, override matrix 0 (dense) or matrix 1 (non-dense).
  Distribution d = mixed_draw(spec.seed, b);
  if (spec.batch >= 2 && (b == 0 || b == 1)) {
    bool any_dense = false, any_other = false;
    for (std::int64_t i = 0; i < spec.batch && !(any_dense && any_other); ++i) {
      const bool dense = mixed_draw(spec.seed, i) == Distribution::dense;
      any_dense |= dense;
      any_other |= !dense;
    }
    if (!any_dense && b == 0) return Distribution::dense;
    if (!any_other && b == 1)
      return kMixedOthers[splitmix64(spec.seed ^ 0x4F54484552ull) % 6];
  }
  return d;
}

void generate(const GenSpec& spec, const GeqrfDesc& L, float* out, int threads) {
  if (spec.m <= 0 || spec.n <= 0 || spec.batch <= 0) return;
  if (threads <= 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  threads = static_cast<int>(std::min<std::int64_t>(threads, spec.batch));
  auto worker = [&](int t) {
    Scratch s{spec.m, spec.n, std::vector<double>(static_cast<std::size_t>(spec.m * spec.n))};
    for (std::int64_t b = t; b < spec.batch; b += threads) {
      Rng rng(spec.seed, static_cast<std::uint64_t>(b));
      build(distribution_of(spec, b), spec.cond, s, rng);
      float* o = out + b * L.stride;
      for (std::int64_t j = 0; j < spec.n; ++j)
        for (std::int64_t i = 0; i < spec.m; ++i) {
          const std::int64_t off = L.layout == Layout::row_major ? i * L.ld + j : i + j * L.ld;
          o[off] = static_cast<float>(s.at(i, j));
        }
    }
  };
  if (threads == 1) {
    worker(0);
    return;
  }
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) pool.emplace_back(worker, t);
  for (auto& th : pool) th.join();
}

}  // namespace batchqr::check
