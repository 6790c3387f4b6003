// Source scopes: the tokens behind the query terms `source:HOST` and `source:ID` (query.h).
//
// An article carries its source's tokens beside its words (article_view::scope), and a
// `source:` term is one such token, so the index files and matches it exactly like a word:
// a subscription scoped to a source sits in the postings of that source's token, which
// articles from other sources never read.
//
// Tokens of a source, from the host of its feed URL (case and one trailing dot ignored):
// - a DNS name of n >= 2 labels: one token per suffix of at least two labels, at label
//   boundaries: developer.apple.com gives "developer.apple.com" and "apple.com". Never the
//   bare top-level label ("com"): a scope of a whole top-level domain is a large share of
//   every source, never what a reader means, and a query `source:com` is refused instead
//   of silently matching nothing;
// - two or more labels, all digits (an IPv4 address): the whole host only;
// - a single label (localhost), an IPv6 literal, an empty label or a name over 253 bytes:
//   none (such a source is scoped by its id);
// - the source id (dataplane/crawler, 16 hex digits in the API), unless it is 0 (none).
// So `source:apple.com` is apple.com and every host under it (developer.apple.com), and
// never notapple.com.
//
// Namespace. A token's text is the byte 0x01, a kind byte ('h' host, 'i' id) and the host
// or the id in 16 lower-case hex digits. The tokenizer never puts a control byte in a word
// (text.h: words are letters, digits, marks and '+'), so no word can spell a token; every
// structure keyed by (hash, text), the index's vocabulary included, keeps them apart, and
// one keyed by hash alone must verify its hits (the reflector's recent-article postings
// do, through the index). The hash is word_hash of the text, like a word's.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace feedplane::matcher {

// The longest host a `source:` term or a scope takes (the DNS limit).
inline constexpr size_t max_source_host_bytes = 253;

// The first byte of every source token: a control byte, which no folded word holds.
inline constexpr char source_token_mark = '\x01';

// True when a vocabulary entry is a source token rather than a word.
inline bool is_source_token(std::string_view text) {
  return !text.empty() && text[0] == source_token_mark;
}

// The token of a `source:HOST` term (host lower-case, checked by the query parser) and of a
// `source:ID` term.
std::string source_host_token(std::string_view host);
std::string source_id_token(uint64_t id);

// The host of an absolute URL ("https://Feeds.Example.com:8443/x" -> "Feeds.Example.com",
// "http://[::1]/" -> "[::1]"), as written; empty when text has no "scheme://".
std::string_view url_host(std::string_view url);

// One article's source and its tokens. Reused from one article to the next: its buffers
// keep their capacity, so no allocation in steady state.
class source_scope {
 public:
  // Sets the source: its host (as in a URL; empty when unknown) and its id (0 when none),
  // and computes the tokens.
  void assign(std::string_view host, uint64_t id);
  void clear() { assign({}, 0); }

  // The host, lower case, without a trailing dot, and the id, as assigned: what the naive
  // matcher tests a `source:` term against (without the tokens).
  std::string_view host() const { return host_; }
  uint64_t id() const { return id_; }

  // The tokens (distinct) and their word_hash.
  size_t size() const { return hashes_.size(); }
  std::string_view token(size_t i) const {
    return std::string_view(text_).substr(bounds_[2 * i], bounds_[2 * i + 1] - bounds_[2 * i]);
  }
  uint64_t hash(size_t i) const { return hashes_[i]; }

 private:
  void push(char kind, std::string_view value);

  std::string host_;
  uint64_t id_ = 0;
  std::string text_;              // tokens back to back
  std::vector<uint32_t> bounds_;  // begin, end pairs into text_, 2 per token
  std::vector<uint64_t> hashes_;
};

}  // namespace feedplane::matcher
