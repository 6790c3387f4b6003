#include "feedplane/matcher/naive.h"

#include <algorithm>

#include "feedplane/matcher/source.h"

namespace feedplane::matcher {
namespace {

// Whether the article's source is host or under it: the rule of source.h, written as a
// suffix test on the host rather than through the tokens the index uses.
bool from_host(const source_scope& s, std::string_view host) {
  const std::string_view h = s.host();
  if (h.empty() || h.size() > max_source_host_bytes) return false;
  size_t labels = 1;
  bool numeric = true;
  for (size_t i = 0; i < h.size(); ++i) {
    if (h[i] == ':' || h[i] == '[') return false;  // an IPv6 literal
    if (h[i] == '.') {
      if (i == 0 || i + 1 == h.size() || h[i + 1] == '.') return false;  // an empty label
      ++labels;
    } else {
      numeric &= h[i] >= '0' && h[i] <= '9';
    }
  }
  if (labels < 2) return false;
  if (h == host) return true;
  return !numeric && h.size() > host.size() && h.ends_with(host) &&
         h[h.size() - host.size() - 1] == '.';
}

bool from_id(const source_scope& s, std::string_view hex) {
  uint64_t id = 0;
  for (char c : hex) id = id << 4 | static_cast<uint64_t>(c <= '9' ? c - '0' : c - 'a' + 10);
  return s.id() != 0 && s.id() == id;
}

bool has_term(const query_term& t, const article_view& a) {
  if (t.kind != term_kind::words) {
    const source_scope* s = a.scope();
    const std::string_view value = std::string_view(t.words[0]).substr(2);  // after mark, kind
    if (s == nullptr) return false;
    return t.kind == term_kind::source_host ? from_host(*s, value) : from_id(*s, value);
  }
  const size_t n = t.words.size();
  // A phrase never spans the title and the content.
  auto in_range = [&](size_t begin, size_t end) {
    for (size_t i = begin; i + n <= end; ++i) {
      size_t k = 0;
      while (k < n && a.word(i + k) == t.words[k]) ++k;
      if (k == n) return true;
    }
    return false;
  };
  return in_range(0, a.title_words()) || (!t.title && in_range(a.title_words(), a.size()));
}

}  // namespace

query_error naive_matcher::add(uint32_t id, std::string_view query) {
  parsed_query q;
  if (auto err = parser_.parse(query, q); !err.ok()) return err;
  add(id, q);
  return {};
}

bool naive_matcher::matches(const query_node& node, const article_view& a) {
  using kind = query_node::kind;
  switch (node.type) {
    case kind::term:
      return has_term(node.term, a);
    case kind::negate:
      return !matches(node.children[0], a);
    case kind::all:
      return std::all_of(node.children.begin(), node.children.end(),
                         [&](const query_node& c) { return matches(c, a); });
    case kind::any:
      return std::any_of(node.children.begin(), node.children.end(),
                         [&](const query_node& c) { return matches(c, a); });
  }
  return false;
}

void naive_matcher::match(const article_view& a, std::vector<uint32_t>& out) const {
  out.clear();
  for (const auto& [id, tree] : subs_) {
    if (matches(tree, a)) out.push_back(id);
  }
}

uint32_t counting_matcher::find(uint64_t h) const {
  h |= 1;  // 0 marks an empty slot
  const size_t mask = slots_.size() - 1;
  for (size_t i = h & mask;; i = (i + 1) & mask) {
    if (slots_[i] == h) return slot_word_[i];
    if (slots_[i] == 0) return UINT32_MAX;
  }
}

uint32_t counting_matcher::intern(uint64_t h) {
  if (uint32_t w = find(h); w != UINT32_MAX) return w;
  if ((words_ + 1) * 2 > slots_.size()) {
    std::vector<uint64_t> old = std::move(slots_);
    std::vector<uint32_t> old_word = std::move(slot_word_);
    slots_.assign(old.size() * 2, 0);
    slot_word_.assign(old.size() * 2, 0);
    const size_t mask = slots_.size() - 1;
    for (size_t k = 0; k < old.size(); ++k) {
      if (!old[k]) continue;
      size_t i = old[k] & mask;
      while (slots_[i]) i = (i + 1) & mask;
      slots_[i] = old[k];
      slot_word_[i] = old_word[k];
    }
  }
  h |= 1;
  const size_t mask = slots_.size() - 1;
  size_t i = h & mask;
  while (slots_[i]) i = (i + 1) & mask;
  slots_[i] = h;
  slot_word_[i] = static_cast<uint32_t>(words_);
  postings_.emplace_back();
  if (words_ >= seen_.size() * 64) seen_.resize(seen_.size() + 64, 0);
  return static_cast<uint32_t>(words_++);
}

bool counting_matcher::add(uint32_t id, const parsed_query& q) {
  // A source term is one more token (source.h), posted like a word.
  if (q.clauses.size() != 1 || !q.clauses[0].must_not.empty()) return false;
  for (const auto& t : q.clauses[0].must) {
    if (t.title || t.words.size() != 1) return false;
  }
  const auto clause = static_cast<uint32_t>(clause_id_.size());
  for (const auto& t : q.clauses[0].must)
    postings_[intern(word_hash(t.words[0]))].push_back(clause);
  clause_id_.push_back(id);
  clause_need_.push_back(static_cast<uint8_t>(q.clauses[0].must.size()));
  counter_.push_back(0);
  return true;
}

void counting_matcher::match(const article_view& a, std::vector<uint32_t>& out) {
  out.clear();
  distinct_.clear();
  size_t postings = 0;
  auto count = [&](uint64_t h) {
    const uint32_t w = find(h);
    if (w == UINT32_MAX || ((seen_[w >> 6] >> (w & 63)) & 1)) return;
    seen_[w >> 6] |= uint64_t{1} << (w & 63);
    distinct_.push_back(w);
    for (uint32_t c : postings_[w]) {
      ++postings;
      if (counter_[c]++ == 0) touched_.push_back(c);
      if (counter_[c] == clause_need_[c]) out.push_back(clause_id_[c]);
    }
  };
  for (size_t i = 0; i < a.size(); ++i) count(a.hash(i));
  if (const source_scope* s = a.scope()) {
    for (size_t t = 0; t < s->size(); ++t) count(s->hash(t));
  }
  for (uint32_t c : touched_) counter_[c] = 0;
  touched_.clear();
  for (uint32_t w : distinct_) seen_[w >> 6] = 0;
  last_postings_ = postings;
}

size_t counting_matcher::memory_bytes() const {
  size_t bytes = slots_.capacity() * 8 + slot_word_.capacity() * 4 + clause_id_.capacity() * 4 +
                 clause_need_.capacity() + counter_.capacity() + seen_.capacity() * 8 +
                 postings_.capacity() * sizeof(std::vector<uint32_t>);
  for (const auto& p : postings_) bytes += p.capacity() * 4;
  return bytes;
}

}  // namespace feedplane::matcher
