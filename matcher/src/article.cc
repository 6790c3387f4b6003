#include "feedplane/matcher/article.h"

#include <xxhash.h>

namespace feedplane::matcher {

uint64_t word_hash(std::string_view word) { return XXH3_64bits(word.data(), word.size()); }

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
  for (size_t i = 0; i < n; ++i) hashes_[i] = word_hash(tokens_.word(i));
}

}  // namespace feedplane::matcher
