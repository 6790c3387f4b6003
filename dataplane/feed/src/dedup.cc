#include "feedplane/feed/dedup.h"

#include <xxhash.h>

#include <algorithm>

namespace feedplane::feed {
namespace {

uint64_t hash_str(std::string_view s, uint64_t seed) {
  return XXH3_64bits_withSeed(s.data(), s.size(), seed);
}

uint64_t mix(uint64_t a, uint64_t b) {
  // splitmix64 finaliser over the combination: order-sensitive and well spread.
  uint64_t x = a ^ (b + 0x9E3779B97F4A7C15ull + (a << 6) + (a >> 2));
  x ^= x >> 30;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 27;
  x *= 0x94D049BB133111EBull;
  x ^= x >> 31;
  return x;
}

uint64_t nonzero(uint64_t h) { return h == 0 ? 1 : h; }

size_t next_pow2(size_t n) {
  size_t p = 1;
  while (p < n) p <<= 1;
  return p;
}

// How many times h occurs in the sorted vector v.
size_t count_in(const std::vector<uint64_t>& v, uint64_t h) {
  const auto r = std::equal_range(v.begin(), v.end(), h);
  return static_cast<size_t>(r.second - r.first);
}

}  // namespace

std::string_view verdict_name(verdict v) {
  switch (v) {
    case verdict::fresh:
      return "new";
    case verdict::updated:
      return "updated";
    case verdict::seen:
      return "seen";
    case verdict::duplicate:
      return "duplicate";
  }
  return "unknown";
}

namespace {
// The link as the document sent it: a permalink guid standing in for a missing <link> is
// already the entry's id, and hashing it again would change the keys of entries seen before
// the parser filled it in (every such entry would come back once as "updated").
std::string_view sent_link(const entry& e) {
  return e.link_from_guid ? std::string_view() : std::string_view(e.link);
}
}  // namespace

void compute_keys(const feed& f, std::vector<entry_key>& keys) {
  keys.clear();
  const size_t n = f.entries.size();
  // Per-kind hashes, sorted, to find which ids and links repeat within the document.
  std::vector<uint64_t> ids, links, tps;
  ids.reserve(n);
  links.reserve(n);
  tps.reserve(n);
  auto tp_hash = [](const entry& e) {
    return mix(hash_str(e.title, 3), e.has_published ? static_cast<uint64_t>(e.published) : ~0ull);
  };
  for (const entry& e : f.entries) {
    if (!e.id.empty()) ids.push_back(hash_str(e.id, 1));
    if (!sent_link(e).empty()) links.push_back(hash_str(sent_link(e), 2));
    if (!e.title.empty() || e.has_published) tps.push_back(tp_hash(e));
  }
  std::sort(ids.begin(), ids.end());
  std::sort(links.begin(), links.end());
  std::sort(tps.begin(), tps.end());
  for (const entry& e : f.entries) {
    entry_key k;
    const std::string_view link = sent_link(e);
    k.content = mix(mix(hash_str(e.title, 10), hash_str(link, 11)),
                    mix(hash_str(e.summary, 12), hash_str(e.content, 13)));
    const uint64_t hid = e.id.empty() ? 0 : hash_str(e.id, 1);
    const uint64_t hlink = link.empty() ? 0 : hash_str(link, 2);
    const uint64_t htp = (e.title.empty() && !e.has_published) ? 0 : tp_hash(e);
    if (hid != 0 && count_in(ids, hid) == 1) {
      k.identity = hid;
      k.kind = identity_kind::id;
    } else if (hlink != 0 && count_in(links, hlink) == 1) {
      k.identity = hlink;
      k.kind = identity_kind::link;
    } else if (htp != 0 && count_in(tps, htp) == 1) {
      k.identity = htp;
      k.kind = identity_kind::title_published;
    } else {
      k.identity = mix(k.content, 4);
      k.kind = identity_kind::content;
    }
    k.identity = nonzero(k.identity);
    if (hlink != 0 && nonzero(hlink) != k.identity && count_in(links, hlink) == 1)
      k.link_alias = nonzero(hlink);
    // Only identities unique in this document are aliases: a guid shared by two entries now
    // must not make the new one look like the old one.
    int na = 0;
    if (hid != 0 && nonzero(hid) != k.identity && count_in(ids, hid) == 1)
      k.aliases[na++] = nonzero(hid);
    if (hlink != 0 && nonzero(hlink) != k.identity && count_in(links, hlink) == 1)
      k.aliases[na++] = nonzero(hlink);
    if (htp != 0 && nonzero(htp) != k.identity && count_in(tps, htp) == 1)
      k.aliases[na++] = nonzero(htp);
    keys.push_back(k);
  }
}

// ---------------------------------------------------------------------------------------

seen_set::seen_set(size_t capacity) { rebuild(next_pow2(std::max<size_t>(capacity, 8))); }

size_t seen_set::probe(uint64_t identity) const {
  const size_t mask = table_.size() - 1;
  size_t i = static_cast<size_t>(identity) & mask;
  // Fast because the table is at most half full: probe sequences are short.
  while (table_[i].identity != 0 && table_[i].identity != identity) i = (i + 1) & mask;
  return i;
}

bool seen_set::find(uint64_t identity, uint64_t* content) const {
  const slot& s = table_[probe(identity)];
  if (s.identity == 0) return false;
  *content = s.content;
  return true;
}

void seen_set::erase_slot(size_t i) {
  // Backward-shift deletion keeps linear probing correct without tombstones.
  const size_t mask = table_.size() - 1;
  size_t hole = i;
  size_t j = i;
  for (;;) {
    j = (j + 1) & mask;
    if (table_[j].identity == 0) break;
    const size_t home = static_cast<size_t>(table_[j].identity) & mask;
    // Move j into the hole if its home is not cyclically in (hole, j].
    const bool in_range = hole <= j ? (home > hole && home <= j) : (home > hole || home <= j);
    if (!in_range) {
      table_[hole] = table_[j];
      hole = j;
    }
  }
  table_[hole] = slot{};
  --live_;
}

void seen_set::put(uint64_t identity, uint64_t content) {
  const size_t rmask = ring_.size() - 1;
  if (tail_ - head_ == ring_.size()) {
    // Ring full: drop its oldest record; if that record is the identity's latest, the
    // identity has not been seen since and is evicted.
    const uint64_t old = ring_[head_ & rmask];
    const size_t i = probe(old);
    if (table_[i].identity == old && table_[i].seq == head_) erase_slot(i);
    ++head_;
  }
  const size_t i = probe(identity);
  if (table_[i].identity == 0) ++live_;
  table_[i] = slot{identity, content, tail_};
  ring_[tail_ & rmask] = identity;
  ++tail_;
}

std::vector<std::pair<uint64_t, uint64_t>> seen_set::snapshot() const {
  std::vector<std::pair<uint64_t, uint64_t>> v;
  v.reserve(live_);
  const size_t rmask = ring_.size() - 1;
  for (uint64_t s = head_; s != tail_; ++s) {
    const uint64_t id = ring_[s & rmask];
    const slot& sl = table_[probe(id)];
    if (sl.identity == id && sl.seq == s) v.emplace_back(id, sl.content);
  }
  return v;
}

void seen_set::restore(const std::vector<std::pair<uint64_t, uint64_t>>& snap) {
  reserve(snap.size());
  for (const auto& [id, content] : snap) put(id == 0 ? 1 : id, content);
}

void seen_set::rebuild(size_t ring_capacity) {
  const auto old = snapshot();
  ring_.assign(ring_capacity, 0);
  table_.assign(ring_capacity * 2, slot{});
  head_ = tail_ = 0;
  live_ = 0;
  for (const auto& [id, content] : old) put(id, content);
}

void seen_set::reserve(size_t n) {
  if (n > ring_.size()) rebuild(next_pow2(n));
}

// ---------------------------------------------------------------------------------------

bool feed_state::same_document(std::string_view bytes) {
  const uint64_t h = XXH3_64bits(bytes.data(), bytes.size());
  const bool same = has_doc_ && h == doc_hash_;
  doc_hash_ = h;
  has_doc_ = true;
  return same;
}

void feed_state::restore(uint64_t document_hash,
                         const std::vector<std::pair<uint64_t, uint64_t>>& seen) {
  doc_hash_ = document_hash;
  has_doc_ = document_hash != 0;
  seen_.restore(seen);
}

void feed_state::classify(const feed& f, std::vector<verdict>& verdicts) {
  verdicts.clear();
  seen_.reserve(std::max<size_t>(64, f.entries.size() * 8));
  compute_keys(f, keys_);
  // Identities of kind id, link and title_published are unique within the document by
  // construction; only content-only identities can repeat (entries identical in every field).
  repeats_.clear();
  for (const entry_key& k : keys_)
    if (k.kind == identity_kind::content) repeats_.emplace_back(k.identity, false);
  std::sort(repeats_.begin(), repeats_.end());
  for (size_t i = 0; i < keys_.size(); ++i) {
    const entry_key& k = keys_[i];
    bool dup = false;
    if (k.kind == identity_kind::content) {
      auto it =
          std::lower_bound(repeats_.begin(), repeats_.end(), std::make_pair(k.identity, false));
      dup = it->second;
      it->second = true;
    }
    if (dup) {
      verdicts.push_back(verdict::duplicate);
      continue;
    }
    uint64_t content;
    bool known = seen_.find(k.identity, &content);
    // A miss under this document's identity may be a hit under the one an earlier document
    // gave the entry (its guid repeated then, or repeats now): not a new article.
    for (int a = 0; !known && a < 3 && k.aliases[a] != 0; ++a)
      known = seen_.find(k.aliases[a], &content);
    if (!known) {
      verdicts.push_back(verdict::fresh);
    } else {
      verdicts.push_back(content == k.content ? verdict::seen : verdict::updated);
    }
    seen_.put(k.identity, k.content);
    if (k.link_alias != 0) seen_.put(k.link_alias, k.content);
  }
}

}  // namespace feedplane::feed
