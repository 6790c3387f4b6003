// Cobra's synthetic workload (seed 000, section 4), shared by the matcher's tests and
// benchmarks and the load harness.
//
// Words follow a Zipf distribution (exponent 1) over an English vocabulary by frequency
// rank (data/english_by_rank.txt, 48,525 words; make_vocab.py says where it comes from).
// Subscriptions draw from the same distribution without the 29 most frequent words, with
// lengths from the web-query distribution (median 3, at most 8 words), words distinct.
// Articles have a log-normal length with median 61 and 90th percentile 637 words, or a
// fixed length (Figure 10's axes: 61, 250, 637, 2000).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace feedplane::workload {

// xoshiro256**: fast, seedable, the same sequence on every machine.
class rng {
 public:
  explicit rng(uint64_t seed);
  uint64_t next();
  double uniform();            // [0, 1)
  uint64_t below(uint64_t n);  // [0, n)
 private:
  uint64_t s_[4];
};

// Words by frequency rank, most frequent first.
struct vocabulary {
  std::vector<std::string> words;
  // Loads one word per line. Empty on failure.
  static vocabulary load(const std::string& path);
  // data/english_by_rank.txt in the source tree (or $FEEDPLANE_VOCABULARY).
  static std::string default_path();
  static const vocabulary& english();  // loaded once from default_path()
};

// Zipf over ranks [first, n) with exponent s, sampled in O(1) (Walker's alias method).
class zipf {
 public:
  zipf(size_t first, size_t n, double s = 1.0);
  size_t operator()(rng& r) const;

 private:
  size_t first_;
  std::vector<double> prob_;
  std::vector<uint32_t> alias_;
};

struct options {
  double zipf_exponent = 1.0;
  size_t excluded_top_words = 29;  // never in subscriptions
  size_t title_words = 8;
};

class generator {
 public:
  explicit generator(const vocabulary& v, options o = {});
  // A subscription: 1-8 distinct words joined by spaces.
  std::string subscription(rng& r) const;
  size_t subscription_length(rng& r) const;
  // An article length from Cobra's distribution (median 61, p90 637 words).
  size_t article_length(rng& r) const;
  // `words` words of article text, with some capitals and sentence punctuation.
  std::string text(rng& r, size_t words) const;
  std::string title(rng& r) const { return text(r, opt_.title_words); }
  const vocabulary& vocab() const { return vocab_; }

 private:
  const vocabulary& vocab_;
  options opt_;
  zipf all_, subscribable_;
};

}  // namespace feedplane::workload
