// An article prepared for matching: built once by the shard that crawled it, then read
// (never written) by every shard's index.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "feedplane/matcher/text.h"

namespace feedplane::matcher {

class article;
class source_scope;

// What matching reads of an article: its folded words, their hashes and its distinct
// words, as views into memory someone else owns (an article builder below, or a frozen
// article shared by every shard, dataplane/runtime), and optionally its source's tokens
// (source.h), which the matcher adds at match time. Cheap to copy; valid while the owners
// are alive and unchanged.
class article_view {
 public:
  struct parts {
    const uint8_t* folded = nullptr;   // word bytes
    const uint32_t* bounds = nullptr;  // begin, end pairs into folded, 2 per word
    const uint64_t* hashes = nullptr;  // word_hash of each word
    const uint32_t* of = nullptr;      // distinct word of each word
    const uint32_t* first = nullptr;   // first occurrence of each distinct word
    const uint32_t* count = nullptr;   // occurrences of each distinct word
    uint32_t words = 0;
    uint32_t distinct = 0;
    uint32_t title_words = 0;
  };
  article_view() = default;
  explicit article_view(const parts& p) : p_(p) {}
  article_view(const article& a);  // NOLINT(google-explicit-constructor): a builder is a view

  size_t size() const { return p_.words; }
  std::string_view word(size_t i) const {
    return {reinterpret_cast<const char*>(p_.folded) + p_.bounds[2 * i],
            p_.bounds[2 * i + 1] - p_.bounds[2 * i]};
  }
  uint64_t hash(size_t i) const { return p_.hashes[i]; }
  size_t title_words() const { return p_.title_words; }
  size_t distinct() const { return p_.distinct; }
  uint32_t first(size_t d) const { return p_.first[d]; }
  uint32_t count(size_t d) const { return p_.count[d]; }
  uint32_t of(size_t i) const { return p_.of[i]; }
  const parts& raw() const { return p_; }

  // The article's source (source.h), or null: `source:` terms match only through it. Words
  // never meet source tokens: those are not in word(), and no word spells one.
  const source_scope* scope() const { return scope_; }
  article_view with_scope(const source_scope* s) const {
    article_view v = *this;
    v.scope_ = s;
    return v;
  }

 private:
  parts p_;
  const source_scope* scope_ = nullptr;
};

// The reusable builder: tokenizes an article's text into its own scratch, reused from one
// article to the next (no allocation in steady state). Matching reads it through
// article_view; dataplane/runtime freezes what it holds into one shared allocation.
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
  // The folded word bytes and begin, end pairs into them (2 per word).
  std::span<const uint8_t> folded_bytes() const {
    return {tokens_.folded_.data(), tokens_.folded_.size()};
  }
  std::span<const uint32_t> bounds() const {
    return {tokens_.bounds_.data(), tokens_.bounds_.size()};
  }
  article_view view() const { return article_view(*this); }
  // The view with the source's tokens (source.h); scope must outlive the view.
  article_view view(const source_scope& scope) const { return view().with_scope(&scope); }

 private:
  friend class article_view;
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
