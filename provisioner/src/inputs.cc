#include "feedplane/provisioner/inputs.h"

#include <fmt/format.h>

#include <toml++/toml.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iterator>
#include <set>
#include <sstream>

namespace feedplane::provisioner {

std::string input_error::to_string() const {
  std::string s = file;
  if (line != 0) s += fmt::format(":{}", line);
  s += ": ";
  if (!key.empty()) s += fmt::format("'{}': ", key);
  s += message;
  return s;
}

std::string_view provenance_name(provenance_kind k) {
  switch (k) {
    case provenance_kind::stated:
      return "stated";
    case provenance_kind::derived:
      return "derived";
    case provenance_kind::fitted:
      return "fitted";
    case provenance_kind::measured:
      return "measured";
  }
  return "?";
}

namespace {

uint32_t line_of(const toml::node& n) { return static_cast<uint32_t>(n.source().begin.line); }

// Reads the keys of one table, remembering which it read, so that finish() can name every
// key the file has and the reader does not know (a typo must not silently keep a default).
class table_reader {
 public:
  table_reader(const toml::table& t, std::string prefix, std::string_view file,
               std::vector<input_error>& errors)
      : t_(t), prefix_(std::move(prefix)), file_(file), errors_(errors) {}

  // A number in [lo, hi]; integers and floats are both accepted.
  void number(std::string_view key, double& out, double lo, double hi, bool required = false) {
    const toml::node* n = get(key, required);
    if (n == nullptr) return;
    double v = 0;
    if (const auto i = n->value_exact<int64_t>()) {
      v = static_cast<double>(*i);
    } else if (const auto d = n->value_exact<double>()) {
      v = *d;
    } else {
      fail(*n, key, "expected a number");
      return;
    }
    if (!std::isfinite(v) || v < lo || v > hi) {
      fail(*n, key, fmt::format("must be between {:g} and {:g}, not {:g}", lo, hi, v));
      return;
    }
    out = v;
  }

  void count(std::string_view key, uint32_t& out, uint32_t lo, uint32_t hi, bool required = false) {
    const toml::node* n = get(key, required);
    if (n == nullptr) return;
    const auto i = n->value_exact<int64_t>();
    if (!i) {
      fail(*n, key, "expected an integer");
      return;
    }
    if (*i < lo || *i > hi) {
      fail(*n, key, fmt::format("must be between {} and {}, not {}", lo, hi, *i));
      return;
    }
    out = static_cast<uint32_t>(*i);
  }

  void string(std::string_view key, std::string& out, bool required = false) {
    const toml::node* n = get(key, required);
    if (n == nullptr) return;
    const auto s = n->value_exact<std::string>();
    if (!s) {
      fail(*n, key, "expected a string");
      return;
    }
    if (required && s->empty()) {
      fail(*n, key, "must not be empty");
      return;
    }
    out = *s;
  }

  // The node under key, marked as known; nullptr when absent (an error when required).
  const toml::node* get(std::string_view key, bool required) {
    known_.emplace(key);
    const toml::node* n = t_.get(key);
    if (n == nullptr && required)
      errors_.push_back({std::string(file_), line_of(t_), full(key), "missing (required)"});
    return n;
  }

  void fail(const toml::node& n, std::string_view key, std::string message) {
    errors_.push_back({std::string(file_), line_of(n), full(key), std::move(message)});
  }

  void fail_table(std::string message) {
    errors_.push_back({std::string(file_), line_of(t_), prefix_, std::move(message)});
  }

  // Every key of the table that nothing asked for is an error.
  void finish() {
    for (const auto& [k, v] : t_) {
      if (known_.count(std::string(k.str())) == 0)
        errors_.push_back({std::string(file_), static_cast<uint32_t>(k.source().begin.line),
                           full(k.str()), "unknown key"});
    }
  }

  [[nodiscard]] std::string full(std::string_view key) const {
    return prefix_.empty() ? std::string(key) : fmt::format("{}.{}", prefix_, key);
  }
  [[nodiscard]] uint32_t line() const { return line_of(t_); }

 private:
  const toml::table& t_;
  std::string prefix_;
  std::string_view file_;
  std::vector<input_error>& errors_;
  std::set<std::string, std::less<>> known_;
};

// Parses text; on a syntax error returns false with the error (its line and column).
bool parse(std::string_view text, std::string_view file, toml::table& out,
           std::vector<input_error>& errors) {
  try {
    out = toml::parse(text, file);
  } catch (const toml::parse_error& e) {
    const auto& b = e.source().begin;
    errors.push_back({std::string(file),
                      static_cast<uint32_t>(b.line),
                      {},
                      fmt::format("column {}: {}", b.column, e.description())});
    return false;
  }
  return true;
}

// The sub-table under key, or nullptr (an error when it is present and not a table).
const toml::table* sub_table(table_reader& r, std::string_view key, bool required) {
  const toml::node* n = r.get(key, required);
  if (n == nullptr) return nullptr;
  const auto* t = n->as_table();
  if (t == nullptr) r.fail(*n, key, "expected a table");
  return t;
}

void sort_by_line(std::vector<input_error>& errors) {
  std::stable_sort(errors.begin(), errors.end(),
                   [](const input_error& a, const input_error& b) { return a.line < b.line; });
}

std::vector<input_error> load(const std::string& path, std::string& text) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {{path, 0, {}, "cannot open"}};
  std::ostringstream ss;
  ss << in.rdbuf();
  if (!in.good() && !in.eof()) return {{path, 0, {}, "cannot read"}};
  text = ss.str();
  return {};
}

constexpr double big = 1e15;

}  // namespace

std::vector<input_error> read_workload(std::string_view text, std::string_view file,
                                       workload& out) {
  std::vector<input_error> errors;
  toml::table root;
  if (!parse(text, file, root, errors)) return errors;
  table_reader top(root, "", file, errors);
  workload w;
  if (const auto* t = sub_table(top, "workload", true)) {
    table_reader r(*t, "workload", file, errors);
    r.string("name", w.name, true);
    r.number("feeds", w.feeds, 1, big, true);
    r.number("subscriptions", w.subscriptions, 1, big, true);
    r.count("partitions", w.partitions, 1, 1U << 24);
    r.count("k", w.k, 1, 100000);
    r.number("crawl_interval_s", w.crawl_interval_s, 1, 1e9);
    r.number("not_modified_share", w.not_modified_share, 0, 1);
    r.number("https_share", w.https_share, 0, 1);
    r.number("tls_handshake_share", w.tls_handshake_share, 0, 1);
    r.number("tls_resumed_share", w.tls_resumed_share, 0, 1);
    r.number("feed_bytes", w.feed_bytes, 1, 1e9);
    r.number("entries_per_feed", w.entries_per_feed, 0, 1e6);
    r.number("articles_per_s_per_million_feeds", w.articles_per_s_per_million_feeds, 0, 1e9);
    r.number("peak_to_mean", w.peak_to_mean, 1, 100);
    r.number("article_words", w.article_words, 1, 1e6);
    r.number("article_bytes", w.article_bytes, 1, 1e9);
    r.number("subscription_words", w.subscription_words, 1, 1000);
    r.number("poll_interval_s", w.poll_interval_s, 1, 1e9);
    r.number("poll_tls_share", w.poll_tls_share, 0, 1);
    r.number("match_share", w.match_share, 0, 1);
    r.number("retention_days", w.retention_days, 0, 36500);
    // Contradictions between keys, reported at the key that has to change.
    if (const toml::node* n = t->get("partitions");
        n != nullptr && errors.empty() && w.partitions > w.subscriptions)
      r.fail(*n, "partitions",
             fmt::format("{} partitions for {:g} subscriptions: a partition would be empty",
                         w.partitions, w.subscriptions));
    r.finish();
  }
  top.finish();
  sort_by_line(errors);
  if (errors.empty()) out = std::move(w);
  return errors;
}

std::vector<input_error> read_node_classes(std::string_view text, std::string_view file,
                                           std::vector<node_class>& out) {
  std::vector<input_error> errors;
  toml::table root;
  if (!parse(text, file, root, errors)) return errors;
  table_reader top(root, "", file, errors);
  std::vector<node_class> classes;
  const toml::node* n = top.get("class", true);
  const toml::array* arr = n != nullptr ? n->as_array() : nullptr;
  if (n != nullptr && (arr == nullptr || !arr->is_array_of_tables() || arr->empty()))
    top.fail(*n, "class", "expected [[class]] tables");
  if (arr != nullptr && arr->is_array_of_tables()) {
    std::set<std::string, std::less<>> names;
    for (size_t i = 0; i < arr->size(); ++i) {
      const auto& t = *arr->get(i)->as_table();
      table_reader r(t, fmt::format("class[{}]", i), file, errors);
      node_class c;
      c.line = r.line();
      double memory_mib = 0, disk_gib = 0, in_mbps = 0, out_mbps = 0;
      r.string("name", c.name, true);
      r.number("cores", c.cores, 0.01, 1e6, true);
      r.number("cpu_speed", c.cpu_speed, 0.001, 1000);
      r.number("memory_mib", memory_mib, 1, 1e12, true);
      r.number("disk_gib", disk_gib, 0, 1e12);
      r.number("in_mbps", in_mbps, 0.001, 1e9, true);
      r.number("out_mbps", out_mbps, 0.001, 1e9, true);
      r.number("price", c.price, 0, 1e12);
      r.number("usable_cpu", c.usable_cpu, 0.01, 1);
      r.number("usable_memory", c.usable_memory, 0.01, 1);
      r.number("usable_disk", c.usable_disk, 0.01, 1);
      r.number("usable_network", c.usable_network, 0.01, 1);
      r.number("headroom", c.headroom, 1, 100);
      r.finish();
      c.memory_bytes = memory_mib * 1048576.0;
      c.disk_bytes = disk_gib * 1073741824.0;
      c.in_bps = in_mbps * 1e6;
      c.out_bps = out_mbps * 1e6;
      if (!c.name.empty() && !names.insert(c.name).second)
        r.fail(*t.get("name"), "name", fmt::format("a second class named '{}'", c.name));
      classes.push_back(std::move(c));
    }
  }
  top.finish();
  sort_by_line(errors);
  if (errors.empty()) out = std::move(classes);
  return errors;
}

std::vector<input_error> read_cost_model(std::string_view text, std::string_view file,
                                         cost_model& out) {
  std::vector<input_error> errors;
  toml::table root;
  if (!parse(text, file, root, errors)) return errors;
  table_reader top(root, "", file, errors);
  cost_model m;
  m.file = std::string(file);
  if (const auto* t = sub_table(top, "model", true)) {
    table_reader r(*t, "model", file, errors);
    r.string("name", m.name, true);
    r.finish();
  }
  // Reads the provenance keys shared by coefficients and the match table.
  const auto read_provenance = [&](table_reader& r, coefficient& c) {
    std::string kind;
    const toml::node* kn = r.get("kind", false);
    r.string("kind", kind, true);
    if (kind == "stated") {
      c.kind = provenance_kind::stated;
    } else if (kind == "derived") {
      c.kind = provenance_kind::derived;
    } else if (kind == "fitted") {
      c.kind = provenance_kind::fitted;
    } else if (kind == "measured") {
      c.kind = provenance_kind::measured;
    } else if (kn != nullptr && !kind.empty()) {
      r.fail(*kn, "kind", "expected stated, derived, fitted or measured");
    }
    r.string("source", c.source, c.kind != provenance_kind::measured);
    if (c.kind == provenance_kind::measured) {
      r.string("command", c.command, true);
      r.string("commit", c.commit, true);
      r.string("date", c.date, true);
      r.string("cpu", c.cpu, true);
    }
  };
  if (const auto* t = sub_table(top, "coefficients", true)) {
    table_reader cr(*t, "coefficients", file, errors);
    for (const auto& [k, v] : *t) {
      const std::string name(k.str());
      const toml::node* n = cr.get(name, false);
      const auto* ct = n->as_table();
      if (ct == nullptr) {
        cr.fail(*n, name, "expected a table with value, unit, kind and source");
        continue;
      }
      table_reader r(*ct, cr.full(name), file, errors);
      coefficient c;
      c.line = r.line();
      r.number("value", c.value, 0, big, true);
      r.string("unit", c.unit, true);
      read_provenance(r, c);
      r.finish();
      m.coefficients.emplace(name, std::move(c));
    }
    cr.finish();
  }
  if (const auto* t = sub_table(top, "match", true)) {
    table_reader r(*t, "match", file, errors);
    m.match_line = r.line();
    read_provenance(r, m.match_provenance);
    const toml::node* pn = r.get("points", true);
    const toml::array* pts = pn != nullptr ? pn->as_array() : nullptr;
    if (pn != nullptr && (pts == nullptr || pts->empty())) {
      r.fail(*pn, "points", "expected a non-empty array of {subscriptions, words, seconds}");
    } else if (pts != nullptr) {
      for (size_t i = 0; i < pts->size(); ++i) {
        const auto* pt = pts->get(i)->as_table();
        const std::string key = fmt::format("points[{}]", i);
        if (pt == nullptr) {
          r.fail(*pts->get(i), key, "expected {subscriptions, words, seconds}");
          continue;
        }
        table_reader pr(*pt, r.full(key), file, errors);
        match_point p;
        pr.number("subscriptions", p.subscriptions, 1, big, true);
        pr.number("words", p.words, 1, 1e6, true);
        pr.number("seconds", p.seconds, 1e-12, 1e6, true);
        pr.finish();
        for (const auto& q : m.match) {
          if (q.subscriptions == p.subscriptions && q.words == p.words)
            pr.fail_table("a second point for the same subscriptions and words");
        }
        m.match.push_back(p);
      }
    }
    r.finish();
    std::sort(m.match.begin(), m.match.end(), [](const match_point& a, const match_point& b) {
      return a.words != b.words ? a.words < b.words : a.subscriptions < b.subscriptions;
    });
  }
  top.finish();
  sort_by_line(errors);
  if (errors.empty()) out = std::move(m);
  return errors;
}

const coefficient* cost_model::find(std::string_view key) const {
  const auto it = coefficients.find(key);
  return it == coefficients.end() ? nullptr : &it->second;
}

namespace {

// Seconds at `subs` along the points [first, last) of one word count (sorted by
// subscriptions): log-log between neighbours, proportional outside.
double along_subs(const match_point* first, const match_point* last, double subs) {
  const match_point& front = *first;
  if (subs <= front.subscriptions) return front.seconds * subs / front.subscriptions;
  const match_point& back = *(last - 1);
  if (subs >= back.subscriptions) return back.seconds * subs / back.subscriptions;
  const match_point* hi = first + 1;
  while (hi->subscriptions < subs) ++hi;
  const match_point* lo = hi - 1;
  const double f =
      std::log(subs / lo->subscriptions) / std::log(hi->subscriptions / lo->subscriptions);
  return std::exp(std::log(lo->seconds) + f * (std::log(hi->seconds) - std::log(lo->seconds)));
}

}  // namespace

double cost_model::match_seconds(double subs, double words) const {
  if (match.empty() || subs <= 0) return 0;
  // The table is sorted by (words, subscriptions): find the runs of equal word count on
  // either side of `words` (no allocation: the bound's search calls this often).
  const auto run_end = [&](size_t i) {
    size_t j = i;
    while (j < match.size() && match[j].words == match[i].words) ++j;
    return j;
  };
  size_t lo = 0, lo_end = run_end(0);
  if (words <= match[0].words || lo_end == match.size()) {
    return along_subs(&match[lo], &match[lo_end - 1] + 1, subs) * words / match[lo].words;
  }
  while (lo_end < match.size() && match[lo_end].words < words) {
    lo = lo_end;
    lo_end = run_end(lo);
  }
  if (lo_end == match.size())  // beyond the largest word count: proportional
    return along_subs(&match[lo], &match[lo_end - 1] + 1, subs) * words / match[lo].words;
  const size_t hi = lo_end, hi_end = run_end(hi);
  const double at_lo = along_subs(&match[lo], &match[lo_end - 1] + 1, subs);
  const double at_hi = along_subs(&match[hi], &match[hi_end - 1] + 1, subs);
  const double f = (words - match[lo].words) / (match[hi].words - match[lo].words);
  return at_lo + f * (at_hi - at_lo);
}

std::vector<input_error> load_workload(const std::string& path, workload& out) {
  std::string text;
  if (auto e = load(path, text); !e.empty()) return e;
  return read_workload(text, path, out);
}

std::vector<input_error> load_node_classes(const std::string& path, std::vector<node_class>& out) {
  std::string text;
  if (auto e = load(path, text); !e.empty()) return e;
  return read_node_classes(text, path, out);
}

std::vector<input_error> load_cost_model(const std::string& path, cost_model& out) {
  std::string text;
  if (auto e = load(path, text); !e.empty()) return e;
  return read_cost_model(text, path, out);
}

}  // namespace feedplane::provisioner
