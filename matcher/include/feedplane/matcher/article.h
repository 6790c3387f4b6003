// An article prepared for matching: built once by the shard that crawled it, then read
// (never written) by every shard's index.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "feedplane/matcher/text.h"

namespace feedplane::matcher {

class article {
 public:
  // Title and content are HTML fragments: markup is stripped first (text.h).
  void assign_html(std::string_view title, std::string_view content);
  // Title and content are plain text.
  void assign_text(std::string_view title, std::string_view content);

  size_t size() const { return tokens_.size(); }
  std::string_view word(size_t i) const { return tokens_.word(i); }
  uint64_t hash(size_t i) const { return hashes_[i]; }
  // Words [0, title_words()) come from the title, the rest from the content.
  size_t title_words() const { return title_words_; }

  // The distinct words, found once here so that every shard's index looks each up once:
  // distinct word d first occurs at word first(d) (so it is in the title iff
  // first(d) < title_words()) and occurs count(d) times; word i is distinct word of(i).
  size_t distinct() const { return first_.size(); }
  uint32_t first(size_t d) const { return first_[d]; }
  uint32_t count(size_t d) const { return count_[d]; }
  uint32_t of(size_t i) const { return of_[i]; }

 private:
  void finish();

  token_buffer tokens_;
  raw_buffer<uint64_t> hashes_;
  raw_buffer<uint32_t> of_;
  std::vector<uint32_t> first_, count_;
  std::vector<uint32_t> table_;  // open addressing over distinct words, scratch
  std::string text_;             // scratch for html_to_text
  size_t title_words_ = 0;
};

// The hash the index and the article agree on for a folded word.
uint64_t word_hash(std::string_view word);

}  // namespace feedplane::matcher
