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

bool read_truth(const std::string& path, std::vector<truth_entry>& out, std::string* error) {
  std::ifstream in(path);
  if (!in) {
    *error = fmt::format("cannot read {}", path);
    return false;
  }
  simdjson::ondemand::parser p;
  std::string line;
  size_t n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (line.empty()) continue;
    simdjson::padded_string ps(line);
    truth_entry e;
    bool is_entry = false;
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
        is_entry = v.get_string().get(s) == simdjson::SUCCESS && s == "entry";
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
    if (!is_entry) continue;  // the farm's header, feed and start lines
    if (e.guid.empty() && e.link.empty()) {
      *error = fmt::format("{}:{}: an entry without guid and link", path, n);
      return false;
    }
    out.push_back(std::move(e));
  }
  return true;
}

delivery_result check_delivery(const std::vector<truth_entry>& truth,
                               const std::vector<checked_subscription>& subs,
                               const std::unordered_map<std::string, uint64_t>& known_seq) {
  // Published entries (never the initial backlog), their documents, and their index by the
  // identity the reflector serves (guid, else link).
  ref_vocab vocab;
  std::vector<const truth_entry*> entries;
  std::vector<ref_doc> docs;
  std::unordered_map<std::string, uint32_t> by_id;
  for (const auto& e : truth) {
    if (e.initial) continue;
    by_id.emplace(e.guid.empty() ? e.link : e.guid, uint32_t(entries.size()));
    entries.push_back(&e);
    docs.push_back(ref_doc::make(vocab, e.title, e.text));
  }

  delivery_result total;
  std::mutex mu;
  std::atomic<size_t> next{0};  // relaxed: only hands out distinct indices
  auto work = [&] {
    delivery_result r;
    std::vector<uint32_t> expected;
    std::unordered_set<std::string_view> served_ids;
    for (;;) {
      const size_t i = next.fetch_add(1, std::memory_order_relaxed);
      if (i >= subs.size()) break;
      const checked_subscription& s = subs[i];
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
      for (uint32_t d = 0; d < docs.size(); ++d) {
        if (q->matches(docs[d])) expected.push_back(d);
      }
      r.expected += expected.size();
      // Served items: duplicates, false items, and the oldest true one.
      served_ids.clear();
      uint64_t oldest_seq = UINT64_MAX;
      for (const auto& it : s.served) {
        if (!served_ids.insert(it.id).second) {
          ++r.duplicates;
          if (r.examples.size() < 5)
            r.examples.push_back(fmt::format("subscription {}: {} served twice", s.id, it.id));
          continue;
        }
        auto f = by_id.find(it.id);
        if (f == by_id.end() || !q->matches(docs[f->second])) {
          ++r.false_items;
          ++r.unexplained;
          if (r.examples.size() < 5)
            r.examples.push_back(fmt::format(
                "subscription {} ({:?}): served {} which is no true match", s.id, s.query, it.id));
          continue;
        }
        ++r.delivered;
        oldest_seq = std::min(oldest_seq, it.seq);
      }
      const bool full = served_ids.size() >= s.k;
      for (uint32_t d : expected) {
        const truth_entry& e = *entries[d];
        const std::string& id = e.guid.empty() ? e.link : e.guid;
        if (served_ids.count(id) != 0) continue;
        bool explained = false;
        if (expected.size() > s.k && full) {
          auto ks = known_seq.find(id);
          explained = ks != known_seq.end() && ks->second < oldest_seq;
        }
        if (explained) {
          ++r.pushed_out;
        } else {
          ++r.unexplained;
          if (r.examples.size() < 5)
            r.examples.push_back(fmt::format("subscription {} ({:?}, k {}): missing {} from {}{}",
                                             s.id, s.query, s.k, id, e.feed,
                                             known_seq.count(id) != 0 ? "" : " (never sequenced)"));
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
