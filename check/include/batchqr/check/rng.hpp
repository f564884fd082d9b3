// batchqr::check: a small counter-seeded generator (splitmix64 seeding, xoshiro256**),
// so each matrix's stream depends only on (seed, matrix index).
#pragma once

#include <cmath>
#include <cstdint>

namespace batchqr::check {

inline std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

class Rng {
 public:
  Rng(std::uint64_t seed, std::uint64_t stream) {
    std::uint64_t x = splitmix64(seed) ^ splitmix64(stream + 0x632BE59BD9B4E019ull);
    for (auto& w : s_) w = x = splitmix64(x);
  }
  std::uint64_t next() {
    const std::uint64_t r = rotl(s_[1] * 5, 7) * 9;
    const std::uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0]; s_[3] ^= s_[1]; s_[1] ^= s_[2]; s_[0] ^= s_[3];
    s_[2] ^= t; s_[3] = rotl(s_[3], 45);
    return r;
  }
  // Uniform in (0, 1): never 0, so log() is safe.
  double uniform() { return (static_cast<double>(next() >> 11) + 0.5) * 0x1.0p-53; }
  // Standard normal (Box-Muller; the second value is kept for the next call).
  double normal() {
    if (has_spare_) { has_spare_ = false; return spare_; }
    const double r = std::sqrt(-2.0 * std::log(uniform()));
    const double t = 6.283185307179586476925 * uniform();
    spare_ = r * std::sin(t);
    has_spare_ = true;
    return r * std::cos(t);
  }

 private:
  static std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  std::uint64_t s_[4];
  double spare_ = 0.0;
  bool has_spare_ = false;
};

}  // namespace batchqr::check
