// The metrics registry: one per shard, plain integers written by the owner thread only.
// A scrape never reads another shard's registry: /metrics sends a task to every shard,
// each snapshots its own registry on its own thread, and the scraping shard sums the
// snapshots by name and labels and renders Prometheus text format.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace feedplane::runtime {

enum class metric_type : uint8_t { counter, gauge, histogram };

// Power-of-two buckets: bucket i counts values <= 2^i (i < 31), the last one the rest.
struct histogram {
  static constexpr int buckets = 32;
  uint64_t count[buckets] = {};
  uint64_t n = 0;
  uint64_t sum = 0;
  void observe(uint64_t v) {
    int b = v <= 1 ? 0 : 64 - __builtin_clzll(v - 1);  // ceil(log2(v))
    if (b >= buckets) b = buckets - 1;
    ++count[b];
    ++n;
    sum += v;
  }
};

struct counter {
  uint64_t value = 0;
  void add(uint64_t v = 1) { value += v; }
  // For a counter another object keeps (the loop's, the server's): copied at scrape time.
  void mirror(uint64_t v) { value = v; }
};
struct gauge {
  int64_t value = 0;
  void set(int64_t v) { value = v; }
};

// A metric's values at one moment, as the scraper sums them.
struct metric_sample {
  std::string name;    // "feedplane_loop_turns_total"
  std::string labels;  // "" or `kind="control"` (no braces)
  std::string help;
  metric_type type = metric_type::counter;
  double value = 0;  // counter, gauge
  histogram hist;    // histogram
  double unit = 1;   // histogram: bucket bounds and sum are multiplied by this (1e-6: us -> s)
};

class metrics_registry {
 public:
  // Registration (start-up, owner thread): returns a reference that stays valid for the
  // registry's lifetime. The same (name, labels) twice returns the same object.
  counter& add_counter(std::string_view name, std::string_view help, std::string_view labels = {});
  gauge& add_gauge(std::string_view name, std::string_view help, std::string_view labels = {});
  // unit: what one observed count is in the metric's base unit (1e-6: microseconds
  // observed, seconds exposed).
  histogram& add_histogram(std::string_view name, std::string_view help,
                           std::string_view labels = {}, double unit = 1);

  // Owner thread: appends the current values.
  void snapshot(std::vector<metric_sample>& out) const;

 private:
  struct entry {
    std::string name, labels, help;
    metric_type type;
    void* value;
    double unit = 1;  // histograms: see add_histogram
  };
  void* find(std::string_view name, std::string_view labels) const;
  std::deque<counter> counters_;
  std::deque<gauge> gauges_;
  std::deque<histogram> histograms_;
  std::vector<entry> entries_;
};

// Sums samples with the same (name, labels) and renders Prometheus text exposition
// format (version 0.0.4), each family with its HELP and TYPE once.
std::string render_prometheus(const std::vector<metric_sample>& samples);

}  // namespace feedplane::runtime
