#include "feedplane/load/delivery.h"

#include <fmt/format.h>
#include <simdjson.h>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <mutex>
#include <thread>
#include <unordered_set>

namespace feedplane::load {

std::string delivery_result::line() const {
  return fmt::format(
      "delivery: {} expected, {} delivered, {} pushed out, {} unexplained, {} "
      "duplicates",
      expected, delivered, pushed_out, unexplained, duplicates);
}

bool read_truth(const std::string& path, std::vector<truth_entry>& out, std::string* error,
                bool keep_initial) {
  std::ifstream in(path);
  if (!in) {
    *error = fmt::format("cannot read {}", path);
    return false;
  }
  simdjson::ondemand::parser p;
  std::string line;
  size_t n = 0;
  std::unordered_map<uint64_t, uint64_t> keep;  // feed id -> entries its document holds
  struct pos {
    uint64_t feed, seq;
    size_t index;
  };
  std::vector<pos> positions;
  while (std::getline(in, line)) {
    ++n;
    if (line.empty()) continue;
    simdjson::padded_string ps(line);
    truth_entry e;
    bool is_entry = false, is_feed = false;
    uint64_t feed_id = 0, seq = 0, feed_keep = 0;
    auto doc = p.iterate(ps);
    simdjson::ondemand::object o;
    if (doc.get_object().get(o) != simdjson::SUCCESS) {
      *error = fmt::format("{}:{}: not a JSON object", path, n);
      return false;
    }
    for (auto field : o) {
      std::string_view key;
      if (field.unescaped_key().get(key) != simdjson::SUCCESS) break;
      auto v = field.value();
      std::string_view s;
      if (key == "kind") {
        const bool ok = v.get_string().get(s) == simdjson::SUCCESS;
        is_entry = ok && s == "entry";
        is_feed = ok && s == "feed";
      } else if (key == "feed") {
        if (v.get_uint64().get(feed_id) != simdjson::SUCCESS) feed_id = 0;
      } else if (key == "seq") {
        if (v.get_uint64().get(seq) != simdjson::SUCCESS) seq = 0;
      } else if (key == "keep") {
        if (v.get_uint64().get(feed_keep) != simdjson::SUCCESS) feed_keep = 0;
      } else if (key == "url") {
        if (v.get_string().get(s) == simdjson::SUCCESS) e.feed = s;
      } else if (key == "guid") {
        if (v.get_string().get(s) == simdjson::SUCCESS) e.guid = s;
      } else if (key == "link") {
        if (v.get_string().get(s) == simdjson::SUCCESS) e.link = s;
      } else if (key == "title") {
        if (v.get_string().get(s) == simdjson::SUCCESS) e.title = s;
      } else if (key == "text") {
        if (v.get_string().get(s) == simdjson::SUCCESS) e.text = s;
      } else if (key == "published") {
        double d = 0;
        if (v.get_double().get(d) == simdjson::SUCCESS) e.published = d;
      } else if (key == "initial") {
        bool b = false;
        if (v.get_bool().get(b) == simdjson::SUCCESS) e.initial = b;
      }
    }
    if (is_feed) keep[feed_id] = feed_keep;
    if (!is_entry) continue;  // the farm's header, feed and start lines
    if (e.initial && !keep_initial) continue;
    positions.push_back({feed_id, seq, out.size()});
    if (e.guid.empty() && e.link.empty()) {
      *error = fmt::format("{}:{}: an entry without guid and link", path, n);
      return false;
    }
    out.push_back(std::move(e));
  }
  // Eviction: entry seq of a feed that keeps K leaves the document when seq + K appears.
  std::unordered_map<uint64_t, std::unordered_map<uint64_t, size_t>> by_feed;
  for (const pos& q : positions) by_feed[q.feed][q.seq] = q.index;
  for (const pos& q : positions) {
    const auto k = keep.find(q.feed);
    if (k == keep.end() || k->second == 0) continue;
    const auto& f = by_feed[q.feed];
    const auto later = f.find(q.seq + k->second);
    if (later != f.end()) out[q.index].evicted = out[later->second].published;
  }
  return true;
}

truth_index::truth_index(std::vector<truth_entry> entries) : entries_(std::move(entries)) {
  by_id_.reserve(entries_.size());
  for (uint32_t i = 0; i < entries_.size(); ++i) {
    const truth_entry& e = entries_[i];
    by_id_.emplace(e.guid.empty() ? std::string_view(e.link) : std::string_view(e.guid), i);
  }
}

uint32_t truth_index::find(std::string_view id) const {
  const auto it = by_id_.find(id);
  return it == by_id_.end() ? unknown : it->second;
}

delivery_result check_delivery(const truth_index& truth,
                               const std::vector<checked_subscription>& subs,
                               const std::vector<uint64_t>& seq, double grace) {
  // Published entries (never the initial backlog) and their documents; doc_of maps a
  // truth entry to its document (none for the backlog and entries missed at source).
  constexpr uint32_t none = truth_index::unknown;
  const auto seq_of = [&](uint32_t e) { return e < seq.size() ? seq[e] : 0; };
  ref_vocab vocab;
  std::vector<uint32_t> entry_of;  // document -> truth entry
  std::vector<uint32_t> doc_of(truth.size(), none);
  std::vector<ref_doc> docs;
  uint64_t missed_at_source = 0;
  for (uint32_t i = 0; i < truth.size(); ++i) {
    const truth_entry& e = truth.entries()[i];
    if (e.initial) continue;
    if (seq_of(i) == 0 && e.evicted - e.published <= grace) {
      ++missed_at_source;
      continue;
    }
    doc_of[i] = uint32_t(docs.size());
    entry_of.push_back(i);
    docs.push_back(ref_doc::make(vocab, e.title, e.text));
  }
  // Postings: the documents that hold each word (title or body), in document order. Only
  // which documents a query is tried on comes from them (ref_query::cover).
  std::vector<std::vector<uint32_t>> postings(vocab.size());
  for (uint32_t d = 0; d < docs.size(); ++d) {
    for (const auto* words : {&docs[d].title, &docs[d].body}) {
      for (uint32_t w : *words) {
        auto& p = postings[w];
        if (p.empty() || p.back() != d) p.push_back(d);
      }
    }
  }
  const auto cost = [&](uint32_t w) { return w < postings.size() ? postings[w].size() : 0; };

  delivery_result total;
  total.missed_at_source = missed_at_source;
  std::mutex mu;
  std::atomic<size_t> next{0};  // relaxed: only hands out distinct indices
  auto work = [&] {
    delivery_result r;
    std::vector<uint32_t> expected, cover;
    // Per document: the subscription that last tried it, and the one that last served it
    // (stamps instead of clearing a set per subscription).
    std::vector<uint32_t> tried(docs.size(), none), served_by(docs.size(), none);
    std::unordered_set<std::string_view> unknown_ids;
    for (;;) {
      const size_t i = next.fetch_add(1, std::memory_order_relaxed);
      if (i >= subs.size()) break;
      const checked_subscription& s = subs[i];
      const auto stamp = uint32_t(i);
      ++r.subscriptions;
      std::string err;
      auto q = ref_query::parse(s.query, vocab, &err);
      if (!q) {
        ++r.bad_queries;
        if (r.examples.size() < 5)
          r.examples.push_back(fmt::format("subscription {}: query {:?}: {}", s.id, s.query, err));
        continue;
      }
      expected.clear();
      if (q->cover(&cover, cost)) {
        for (uint32_t w : cover) {
          if (w >= postings.size()) continue;
          for (uint32_t d : postings[w]) {
            if (tried[d] == stamp) continue;
            tried[d] = stamp;
            if (q->matches(docs[d])) expected.push_back(d);
          }
        }
      } else {
        for (uint32_t d = 0; d < docs.size(); ++d) {
          if (q->matches(docs[d])) expected.push_back(d);
        }
      }
      r.expected += expected.size();
      // Served items: duplicates, false items, and the oldest true one.
      uint64_t oldest_seq = UINT64_MAX;
      size_t distinct = 0;
      const auto false_item = [&](std::string_view id) {
        ++r.false_items;
        ++r.unexplained;
        if (r.examples.size() < 5)
          r.examples.push_back(fmt::format(
              "subscription {} ({:?}): served {} which is no true match", s.id, s.query, id));
      };
      const auto duplicate = [&](std::string_view id) {
        ++r.duplicates;
        if (r.examples.size() < 5)
          r.examples.push_back(fmt::format("subscription {}: {} served twice", s.id, id));
      };
      unknown_ids.clear();
      for (const auto& id : s.unknown) {
        if (!unknown_ids.insert(id).second) {
          duplicate(id);
          continue;
        }
        ++distinct;
        false_item(id);
      }
      for (const auto& it : s.served) {
        const truth_entry& e = truth.entries()[it.entry];
        const std::string_view id = e.guid.empty() ? e.link : e.guid;
        const uint32_t d = doc_of[it.entry];
        // Not a document (the backlog, or never sequenced): a false item, duplicated or not.
        if (d == none) {
          if (!unknown_ids.insert(id).second) {
            duplicate(id);
            continue;
          }
          ++distinct;
          false_item(id);
          continue;
        }
        if (served_by[d] == stamp) {
          duplicate(id);
          continue;
        }
        served_by[d] = stamp;
        ++distinct;
        if (!q->matches(docs[d])) {
          false_item(id);
          continue;
        }
        ++r.delivered;
        oldest_seq = std::min(oldest_seq, it.seq);
      }
      const bool full = distinct >= s.k;
      for (uint32_t d : expected) {
        if (served_by[d] == stamp) continue;
        const uint32_t ei = entry_of[d];
        const uint64_t es = seq_of(ei);
        const bool explained = expected.size() > s.k && full && es != 0 && es < oldest_seq;
        if (explained) {
          ++r.pushed_out;
        } else {
          ++r.unexplained;
          if (r.examples.size() < 5) {
            const truth_entry& e = truth.entries()[ei];
            r.examples.push_back(fmt::format("subscription {} ({:?}, k {}): missing {} from {}{}",
                                             s.id, s.query, s.k, e.guid.empty() ? e.link : e.guid,
                                             e.feed, es != 0 ? "" : " (never sequenced)"));
          }
        }
      }
    }
    std::lock_guard<std::mutex> g(mu);
    total.expected += r.expected;
    total.delivered += r.delivered;
    total.pushed_out += r.pushed_out;
    total.unexplained += r.unexplained;
    total.duplicates += r.duplicates;
    total.false_items += r.false_items;
    total.bad_queries += r.bad_queries;
    total.subscriptions += r.subscriptions;
    for (auto& x : r.examples) {
      if (total.examples.size() < 10) total.examples.push_back(std::move(x));
    }
  };
  const unsigned n = std::max(1u, std::thread::hardware_concurrency());
  std::vector<std::thread> threads;
  for (unsigned t = 1; t < n; ++t) threads.emplace_back(work);
  work();
  for (auto& t : threads) t.join();
  return total;
}

}  // namespace feedplane::load
