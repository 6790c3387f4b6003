#include "feedplane/runtime/metrics.h"

#include <fmt/format.h>

#include <cmath>

namespace feedplane::runtime {

void* metrics_registry::find(std::string_view name, std::string_view labels) const {
  for (const entry& e : entries_) {
    if (e.name == name && e.labels == labels) return e.value;
  }
  return nullptr;
}

counter& metrics_registry::add_counter(std::string_view name, std::string_view help,
                                       std::string_view labels) {
  if (void* p = find(name, labels)) return *static_cast<counter*>(p);
  counter& c = counters_.emplace_back();
  entries_.push_back(
      {std::string(name), std::string(labels), std::string(help), metric_type::counter, &c});
  return c;
}

gauge& metrics_registry::add_gauge(std::string_view name, std::string_view help,
                                   std::string_view labels) {
  if (void* p = find(name, labels)) return *static_cast<gauge*>(p);
  gauge& g = gauges_.emplace_back();
  entries_.push_back(
      {std::string(name), std::string(labels), std::string(help), metric_type::gauge, &g});
  return g;
}

histogram& metrics_registry::add_histogram(std::string_view name, std::string_view help,
                                           std::string_view labels, double unit) {
  if (void* p = find(name, labels)) return *static_cast<histogram*>(p);
  histogram& h = histograms_.emplace_back();
  entries_.push_back({std::string(name), std::string(labels), std::string(help),
                      metric_type::histogram, &h, unit});
  return h;
}

void metrics_registry::snapshot(std::vector<metric_sample>& out) const {
  for (const entry& e : entries_) {
    metric_sample s;
    s.name = e.name;
    s.labels = e.labels;
    s.help = e.help;
    s.type = e.type;
    switch (e.type) {
      case metric_type::counter:
        s.value = double(static_cast<const counter*>(e.value)->value);
        break;
      case metric_type::gauge:
        s.value = double(static_cast<const gauge*>(e.value)->value);
        break;
      case metric_type::histogram:
        s.hist = *static_cast<const histogram*>(e.value);
        s.unit = e.unit;
        break;
    }
    out.push_back(std::move(s));
  }
}

namespace {

// HELP text escaping per the exposition format: backslash and newline.
void append_help(std::string& o, std::string_view help) {
  for (char c : help) {
    if (c == '\\') {
      o += "\\\\";
    } else if (c == '\n') {
      o += "\\n";
    } else {
      o += c;
    }
  }
}

void append_value(std::string& o, double v) {
  if (v == std::floor(v) && std::fabs(v) < 1e15) {
    fmt::format_to(std::back_inserter(o), "{}", int64_t(v));
  } else {
    fmt::format_to(std::back_inserter(o), "{}", v);
  }
}

std::string with_labels(std::string_view labels, std::string_view extra) {
  if (labels.empty() && extra.empty()) return {};
  std::string s = "{";
  s += labels;
  if (!labels.empty() && !extra.empty()) s += ',';
  s += extra;
  s += '}';
  return s;
}

}  // namespace

std::string render_prometheus(const std::vector<metric_sample>& samples) {
  // Family name -> labels -> summed sample; std::map keeps the output stable.
  std::map<std::string, std::map<std::string, metric_sample>> fam;
  for (const metric_sample& s : samples) {
    auto& by_labels = fam[s.name];
    auto it = by_labels.find(s.labels);
    if (it == by_labels.end()) {
      by_labels.emplace(s.labels, s);
      continue;
    }
    metric_sample& t = it->second;
    t.value += s.value;
    for (int b = 0; b < histogram::buckets; ++b) t.hist.count[b] += s.hist.count[b];
    t.hist.n += s.hist.n;
    t.hist.sum += s.hist.sum;
  }
  std::string o;
  for (const auto& [name, by_labels] : fam) {
    const metric_sample& first = by_labels.begin()->second;
    o += "# HELP ";
    o += name;
    o += ' ';
    append_help(o, first.help);
    o += "\n# TYPE ";
    o += name;
    o += first.type == metric_type::counter ? " counter\n"
         : first.type == metric_type::gauge ? " gauge\n"
                                            : " histogram\n";
    for (const auto& [labels, s] : by_labels) {
      if (s.type != metric_type::histogram) {
        o += name;
        o += with_labels(labels, {});
        o += ' ';
        append_value(o, s.value);
        o += '\n';
        continue;
      }
      uint64_t cum = 0;
      for (int b = 0; b < histogram::buckets; ++b) {
        cum += s.hist.count[b];
        const std::string le = b == histogram::buckets - 1
                                   ? "le=\"+Inf\""
                                   : fmt::format("le=\"{}\"", double(uint64_t{1} << b) * s.unit);
        o += name;
        o += "_bucket";
        o += with_labels(labels, le);
        o += ' ';
        append_value(o, double(cum));
        o += '\n';
      }
      o += name;
      o += "_sum";
      o += with_labels(labels, {});
      o += ' ';
      append_value(o, double(s.hist.sum) * s.unit);
      o += '\n';
      o += name;
      o += "_count";
      o += with_labels(labels, {});
      o += ' ';
      append_value(o, double(s.hist.n));
      o += '\n';
    }
  }
  return o;
}

}  // namespace feedplane::runtime
