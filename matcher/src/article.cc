#include "feedplane/matcher/article.h"

#include <xxhash.h>

namespace feedplane::matcher {

uint64_t word_hash(std::string_view word) { return XXH3_64bits(word.data(), word.size()); }

article_view::article_view(const article& a) {
  p_.folded = a.tokens_.folded_.data();
  p_.bounds = a.tokens_.bounds_.data();
  p_.hashes = a.hashes_.data();
  p_.of = a.of_.data();
  p_.first = a.first_.data();
  p_.count = a.count_.data();
  p_.words = static_cast<uint32_t>(a.size());
  p_.distinct = static_cast<uint32_t>(a.distinct());
  p_.title_words = static_cast<uint32_t>(a.title_words_);
}

void article::assign_html(std::string_view title, std::string_view content) {
  tokens_.clear();
  text_.clear();
  html_to_text(title, text_);
  tokenize(text_, tokens_);
  title_words_ = tokens_.size();
  text_.clear();
  html_to_text(content, text_);
  tokenize(text_, tokens_);
  finish();
}

void article::assign_text(std::string_view title, std::string_view content) {
  tokens_.clear();
  tokenize(title, tokens_);
  title_words_ = tokens_.size();
  tokenize(content, tokens_);
  finish();
}

void article::finish() {
  const size_t n = tokens_.size();
  hashes_.resize(n);
  of_.resize(n);
  first_.clear();
  count_.clear();
  size_t slots = 64;
  while (slots < 2 * n) slots *= 2;
  table_.assign(slots, UINT32_MAX);
  const size_t mask = slots - 1;
  for (size_t i = 0; i < n; ++i) {
    const std::string_view w = tokens_.word(i);
    const uint64_t h = word_hash(w);
    hashes_[i] = h;
    size_t s = h & mask;
    while (table_[s] != UINT32_MAX) {
      const uint32_t d = table_[s];
      if (hashes_[first_[d]] == h && tokens_.word(first_[d]) == w) break;
      s = (s + 1) & mask;
    }
    if (table_[s] == UINT32_MAX) {
      table_[s] = static_cast<uint32_t>(first_.size());
      first_.push_back(static_cast<uint32_t>(i));
      count_.push_back(0);
    }
    of_[i] = table_[s];
    ++count_[table_[s]];
  }
}

}  // namespace feedplane::matcher
