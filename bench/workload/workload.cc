#include "feedplane/workload/workload.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>

namespace feedplane::workload {

rng::rng(uint64_t seed) {
  for (auto& s : s_) {  // splitmix64 expands the seed
    seed += 0x9E3779B97F4A7C15ull;
    uint64_t z = seed;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    s = z ^ (z >> 31);
  }
}

uint64_t rng::next() {
  auto rotl = [](uint64_t x, int k) { return (x << k) | (x >> (64 - k)); };
  const uint64_t result = rotl(s_[1] * 5, 7) * 9;
  const uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = rotl(s_[3], 45);
  return result;
}

double rng::uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
uint64_t rng::below(uint64_t n) {
  return static_cast<uint64_t>(uniform() * static_cast<double>(n));
}

vocabulary vocabulary::load(const std::string& path) {
  vocabulary v;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) v.words.push_back(line);
  }
  return v;
}

std::string vocabulary::default_path() {
  if (const char* p = std::getenv("FEEDPLANE_VOCABULARY")) return p;
  return FEEDPLANE_WORKLOAD_DATA "/english_by_rank.txt";
}

const vocabulary& vocabulary::english() {
  static const vocabulary v = load(default_path());
  return v;
}

zipf::zipf(size_t first, size_t n, double s) : first_(first) {
  const size_t k = n - first;
  std::vector<double> p(k);
  double total = 0;
  for (size_t i = 0; i < k; ++i)
    total += p[i] = 1.0 / std::pow(static_cast<double>(first + i + 1), s);
  // Walker's alias method (Vose's variant).
  prob_.assign(k, 0);
  alias_.assign(k, 0);
  std::vector<uint32_t> small, large;
  for (size_t i = 0; i < k; ++i) {
    p[i] = p[i] * static_cast<double>(k) / total;
    (p[i] < 1.0 ? small : large).push_back(static_cast<uint32_t>(i));
  }
  while (!small.empty() && !large.empty()) {
    const uint32_t a = small.back(), b = large.back();
    small.pop_back();
    prob_[a] = p[a];
    alias_[a] = b;
    p[b] -= 1.0 - p[a];
    if (p[b] < 1.0) {
      large.pop_back();
      small.push_back(b);
    }
  }
  for (uint32_t i : large) prob_[i] = 1.0;
  for (uint32_t i : small) prob_[i] = 1.0;
}

size_t zipf::operator()(rng& r) const {
  const size_t i = r.below(prob_.size());
  return first_ + (r.uniform() < prob_[i] ? i : alias_[i]);
}

generator::generator(const vocabulary& v, options o)
    : vocab_(v),
      opt_(o),
      all_(0, v.words.size(), o.zipf_exponent),
      subscribable_(std::min(o.excluded_top_words, v.words.size() - 1), v.words.size(),
                    o.zipf_exponent) {}

size_t generator::subscription_length(rng& r) const {
  // Words per web query (after Beitzel et al. and the Yahoo study Cobra cites): median 3,
  // at most 8.
  static constexpr double k_cdf[8] = {0.22, 0.48, 0.70, 0.83, 0.91, 0.96, 0.985, 1.0};
  const double u = r.uniform();
  size_t k = 0;
  while (k < 7 && u >= k_cdf[k]) ++k;
  return k + 1;
}

std::string generator::subscription(rng& r) const {
  const size_t k = subscription_length(r);
  size_t ranks[8];
  size_t n = 0;
  while (n < k) {
    const size_t w = subscribable_(r);
    if (std::find(ranks, ranks + n, w) == ranks + n) ranks[n++] = w;
  }
  std::string s;
  for (size_t i = 0; i < n; ++i) {
    if (i) s += ' ';
    s += vocab_.words[ranks[i]];
  }
  return s;
}

size_t generator::article_length(rng& r) const {
  // Log-normal: median 61 (mu = ln 61), 90th percentile 637 (mu + 1.2816 sigma = ln 637).
  static const double mu = std::log(61.0);
  static const double sigma = (std::log(637.0) - mu) / 1.2815515655446004;
  const double u1 = std::max(r.uniform(), 1e-300), u2 = r.uniform();
  const double z = std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
  const double len = std::exp(mu + sigma * z);
  return static_cast<size_t>(std::clamp(len, 1.0, 100000.0));
}

std::string generator::text(rng& r, size_t words) const {
  std::string s;
  s.reserve(words * 8);
  bool sentence_start = true;
  for (size_t i = 0; i < words; ++i) {
    if (i) s += ' ';
    const std::string& w = vocab_.words[all_(r)];
    const size_t at = s.size();
    s += w;
    if (sentence_start && s[at] >= 'a' && s[at] <= 'z') s[at] = static_cast<char>(s[at] - 32);
    sentence_start = false;
    const uint64_t p = r.below(16);
    if (p == 0) {
      s += '.';
      sentence_start = true;
    } else if (p == 1) {
      s += ',';
    }
  }
  return s;
}

}  // namespace feedplane::workload
