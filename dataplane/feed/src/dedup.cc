#include "feedplane/feed/dedup.h"

#include <xxhash.h>

#include <algorithm>
#include <cstring>

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
  dedup_scratch scratch;
  compute_keys(f, scratch);
  keys = std::move(scratch.keys);
}

void compute_keys(const feed& f, dedup_scratch& scratch) {
  std::vector<entry_key>& keys = scratch.keys;
  keys.clear();
  // Per-kind hashes, sorted, to find which ids and links repeat within the document.
  std::vector<uint64_t>& ids = scratch.ids;
  std::vector<uint64_t>& links = scratch.links;
  std::vector<uint64_t>& tps = scratch.tps;
  ids.clear();
  links.clear();
  tps.clear();
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

seen_set& seen_set::operator=(const seen_set& o) {
  if (this == &o) return *this;
  assign(o.records());
  limit_ = o.limit_;
  converted_ = o.converted_;
  return *this;
}

ptrdiff_t seen_set::find(uint64_t fp, bool also_link) const {
  const uint64_t link_mask = also_link ? seen_record::k_mask : 0;
  const uint64_t link_fp = also_link ? fp : 1;  // 1 never equals w1 & 0
  // Why fast: at most 2x the feed's largest document of 16-byte records in one contiguous
  // array (a few cache lines for 10-20 entries), two masked compares each, newest first;
  // cheaper than hashing at this size and no table to keep beside it.
  for (size_t i = size_; i-- > 0;) {
    const seen_record& r = recs_[i];
    if (((r.w0 ^ fp) & seen_record::k_mask) == 0 || (r.w1 & link_mask) == link_fp)
      return static_cast<ptrdiff_t>(i);
  }
  return -1;
}

void seen_set::reserve(size_t n) {
  if (n > limit_) limit_ = static_cast<uint32_t>(std::min<size_t>(n, UINT32_MAX));
}

void seen_set::prepare(size_t n) {
  const size_t want = std::max<size_t>(k_min_limit, std::min<size_t>(n, UINT32_MAX / 2) * 2);
  if (converted_) {
    converted_ = false;
    limit_ = static_cast<uint32_t>(want);
  } else {
    reserve(want);
  }
}

void seen_set::assign(std::span<const seen_record> recs) {
  if (recs.size() > alloc_ || recs.empty()) {
    // Exact size: a feed's set reaches its bound after a few fetches and then stays put,
    // so rounding up would only waste memory on a million feeds.
    recs_.reset(recs.empty() ? nullptr : new seen_record[recs.size()]);
    alloc_ = static_cast<uint32_t>(recs.size());
  }
  if (!recs.empty()) std::memcpy(recs_.get(), recs.data(), recs.size() * sizeof(seen_record));
  size_ = static_cast<uint32_t>(recs.size());
}

void seen_set::update(std::span<const uint8_t> replaced, std::span<const seen_record> added,
                      std::vector<seen_record>& merged) {
  // Why fast: one merge pass over at most 3x the document's records per fetch, instead of
  // moving a record to the back at every refresh.
  merged.clear();
  for (size_t i = 0; i < size_; ++i) {
    if (i >= replaced.size() || replaced[i] == 0) merged.push_back(recs_[i]);
  }
  merged.insert(merged.end(), added.begin(), added.end());
  const size_t keep = std::min<size_t>(merged.size(), limit_);
  assign(std::span<const seen_record>(merged).last(keep));
}

void seen_set::restore(std::span<const seen_record> recs, size_t limit) {
  limit_ = static_cast<uint32_t>(
      std::clamp<size_t>(std::max(limit, recs.size()), k_min_limit, UINT32_MAX));
  converted_ = false;
  assign(recs.last(std::min<size_t>(recs.size(), limit_)));
}

void seen_set::restore_converted(std::span<const seen_record> recs) {
  restore(recs, recs.size());
  converted_ = true;
}

// ---------------------------------------------------------------------------------------

bool feed_state::same_document(std::string_view bytes) {
  const uint64_t h = nonzero(XXH3_64bits(bytes.data(), bytes.size()));
  const bool same = h == doc_hash_;
  doc_hash_ = h;
  return same;
}

void feed_state::restore(uint64_t document_hash, std::span<const seen_record> seen, size_t limit) {
  doc_hash_ = document_hash;
  seen_.restore(seen, limit);
}

void feed_state::restore_converted(uint64_t document_hash, std::span<const seen_record> seen) {
  doc_hash_ = document_hash;
  seen_.restore_converted(seen);
}

void feed_state::classify(const feed& f, std::vector<verdict>& verdicts) {
  dedup_scratch scratch;
  classify(f, scratch, verdicts);
}

void feed_state::classify(const feed& f, dedup_scratch& scratch, std::vector<verdict>& verdicts) {
  verdicts.clear();
  seen_.prepare(f.entries.size());
  compute_keys(f, scratch);
  const std::vector<entry_key>& keys = scratch.keys;
  // Identities of kind id, link and title_published are unique within the document by
  // construction; only content-only identities can repeat (entries identical in every field).
  auto& repeats = scratch.repeats;
  repeats.clear();
  for (const entry_key& k : keys)
    if (k.kind == identity_kind::content) repeats.emplace_back(k.identity, false);
  std::sort(repeats.begin(), repeats.end());
  scratch.replaced.assign(seen_.size(), 0);
  scratch.added.clear();
  for (const entry_key& k : keys) {
    if (k.kind == identity_kind::content) {
      auto it = std::lower_bound(repeats.begin(), repeats.end(), std::make_pair(k.identity, false));
      const bool dup = it->second;
      it->second = true;
      if (dup) {
        verdicts.push_back(verdict::duplicate);
        continue;
      }
    }
    // A link's fingerprint is also looked for among the records' link aliases: an entry
    // first known by its guid is found by its link once the guids start repeating. Other
    // kinds never equal a link hash (each kind hashes with its own seed), so they skip that
    // column and add nothing to the chance of a false match.
    ptrdiff_t hit = seen_.find(seen_record::fingerprint(k.identity), k.kind == identity_kind::link);
    // A miss under this document's identity may be a hit under the one an earlier document
    // gave the entry (its guid repeated then, or repeats now): not a new article.
    for (int a = 0; hit < 0 && a < 3 && k.aliases[a] != 0; ++a)
      hit = seen_.find(seen_record::fingerprint(k.aliases[a]), k.aliases[a] == k.link_alias);
    if (hit < 0) {
      verdicts.push_back(verdict::fresh);
    } else {
      const bool same = seen_[size_t(hit)].content() == seen_record::content_fingerprint(k.content);
      verdicts.push_back(same ? verdict::seen : verdict::updated);
      // The entry's record is rewritten below under this document's identity: the old
      // one goes (one record per entry, never two).
      scratch.replaced[size_t(hit)] = 1;
    }
    scratch.added.push_back(seen_record::from_hashes(k.identity, k.link_alias, k.content));
  }
  seen_.update(scratch.replaced, scratch.added, scratch.merged);
}

}  // namespace feedplane::feed
