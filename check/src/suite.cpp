#include "batchqr/check/suite.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>

#include "batchqr/check/rng.hpp"

namespace batchqr::check {

std::string CaseSpec::label() const {
  char buf[128];
  if (m == n)
    std::snprintf(buf, sizeof buf, "%lldx%lld c%g %s", static_cast<long long>(batch),
                  static_cast<long long>(n), cond, to_string(dist));
  else
    std::snprintf(buf, sizeof buf, "%lldx%lldx%lld c%g %s", static_cast<long long>(batch),
                  static_cast<long long>(m), static_cast<long long>(n), cond, to_string(dist));
  return buf;
}

namespace {
CaseSpec sq(std::int64_t batch, std::int64_t n, double cond, Distribution d) {
  CaseSpec c;
  c.batch = batch;
  c.m = c.n = n;
  c.cond = cond;
  c.dist = d;
  return c;
}
using D = Distribution;
}  // namespace

std::vector<CaseSpec> suite_qr_v2() {
  return {sq(20, 32, 1, D::dense),      sq(40, 176, 1, D::dense),     sq(40, 352, 1, D::dense),
          sq(640, 512, 2, D::dense),    sq(60, 1024, 2, D::dense),    sq(8, 2048, 1, D::dense),
          sq(2, 4096, 1, D::dense),     sq(640, 512, 2, D::mixed),    sq(60, 1024, 2, D::mixed),
          sq(640, 512, 0, D::rankdef),  sq(640, 512, 0, D::clustered), sq(60, 1024, 0, D::nearrank),
          sq(640, 512, 0, D::rowscale), sq(640, 512, 0, D::nearcollinear)};
}

std::vector<CaseSpec> suite_smoke() {
  return {sq(20, 32, 1, D::dense),        sq(40, 176, 1, D::dense),     sq(40, 352, 1, D::dense),
          sq(16, 512, 2, D::dense),       sq(4, 1024, 2, D::dense),     sq(1, 4096, 1, D::dense),
          sq(16, 512, 4, D::dense),       sq(16, 512, 0, D::rankdef),   sq(16, 512, 0, D::clustered),
          sq(16, 512, 0, D::band),        sq(16, 512, 0, D::rowscale),  sq(16, 512, 0, D::nearcollinear),
          sq(4, 1024, 4, D::dense),       sq(4, 1024, 0, D::rankdef),   sq(4, 1024, 0, D::nearrank),
          sq(4, 1024, 0, D::clustered),   sq(2, 2048, 2, D::dense),     sq(2, 2048, 0, D::rankdef),
          sq(1, 4096, 0, D::upper),       sq(16, 512, 2, D::mixed),     sq(4, 1024, 2, D::mixed),
          sq(2, 2048, 2, D::mixed)};
}

bool suite_by_name(std::string_view name, std::vector<CaseSpec>* out) {
  if (name == "qr_v2") *out = suite_qr_v2();
  else if (name == "smoke") *out = suite_smoke();
  else return false;
  return true;
}

bool parse_case(std::string_view text, CaseSpec* out, std::string* error) {
  CaseSpec c;
  c.batch = -1;
  c.n = -1;
  c.m = -1;
  auto fail = [&](const std::string& why) {
    if (error) *error = why;
    return false;
  };
  while (!text.empty()) {
    const std::size_t comma = text.find(',');
    const std::string_view item = text.substr(0, comma);
    text = comma == std::string_view::npos ? std::string_view{} : text.substr(comma + 1);
    const std::size_t eq = item.find('=');
    if (eq == std::string_view::npos) return fail("expected key=value, got '" + std::string(item) + "'");
    const std::string key(item.substr(0, eq)), val(item.substr(eq + 1));
    char* end = nullptr;
    if (key == "case") {
      if (!parse_distribution(val, &c.dist)) return fail("unknown case '" + val + "'");
    } else if (key == "cond") {
      c.cond = std::strtod(val.c_str(), &end);
      if (end == val.c_str() || *end != '\0') return fail("cond must be a number, got '" + val + "'");
    } else if (key == "batch" || key == "n" || key == "m") {
      // The library's sizes are 64-bit, but its dimensions and the baselines' batch are int.
      constexpr long long kMax = 2147483647;
      errno = 0;
      const long long v = std::strtoll(val.c_str(), &end, 10);
      if (end == val.c_str() || *end != '\0' || v < 0) return fail(key + " must be an integer >= 0, got '" + val + "'");
      if (errno == ERANGE || v > kMax) return fail(key + " must be at most " + std::to_string(kMax) + ", got '" + val + "'");
      (key == "batch" ? c.batch : key == "n" ? c.n : c.m) = v;
    } else {
      return fail("unknown key '" + key + "' (expected batch, n, m, cond, case)");
    }
  }
  if (c.batch < 0) return fail("batch= is required");
  if (c.n < 0) return fail("n= is required");
  if (c.m < 0) c.m = c.n;
  *out = c;
  return true;
}

std::int64_t inputs_per_case(const CaseSpec& c) {
  const double bytes = static_cast<double>(c.batch) * static_cast<double>(c.m) * static_cast<double>(c.n) * 4.0;
  if (bytes <= 0) return 1;
  const double count = static_cast<double>(256ll << 20) / bytes;
  return std::max<std::int64_t>(1, std::min<std::int64_t>(50, static_cast<std::int64_t>(count)));
}

std::uint64_t case_seed(std::uint64_t base, const CaseSpec& c, std::int64_t index) {
  std::uint64_t h = splitmix64(base);
  for (std::uint64_t v : {static_cast<std::uint64_t>(c.batch), static_cast<std::uint64_t>(c.m),
                          static_cast<std::uint64_t>(c.n), static_cast<std::uint64_t>(c.cond * 1000.0),
                          static_cast<std::uint64_t>(c.dist), static_cast<std::uint64_t>(index)})
    h = splitmix64(h ^ v);
  return h;
}

}  // namespace batchqr::check
