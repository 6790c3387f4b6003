// The provisioner's three inputs (issue 14), read from TOML: the workload, the node classes
// and the cost model. Every problem is reported with its file, line and dotted key; nothing
// here throws or touches the running data plane.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace feedplane::provisioner {

// One problem in an input file.
struct input_error {
  std::string file;
  uint32_t line = 0;  // 0: the file as a whole
  std::string key;    // dotted key; empty for the file as a whole
  std::string message;
  // "FILE:LINE: 'KEY': MESSAGE" (line and key left out when absent).
  [[nodiscard]] std::string to_string() const;
};

// What the system must carry. Sizes are the values the plan is sized with (the median, as
// Cobra's Figure 5 reports them); rates are daily means, scaled by peak_to_mean.
struct workload {
  std::string name;
  double feeds = 0;
  double subscriptions = 0;
  uint32_t partitions = 1024;  // P: fixed for a deployment (DESIGN.md 9, feed tokens)
  uint32_t k = 10;             // items kept per subscription
  double crawl_interval_s = 900;
  double not_modified_share = 0;  // share of fetches that bring no body (304, unchanged)
  double https_share = 0;         // share of fetches over TLS
  // Of those, the share that opens a new connection with a handshake: fetches of a host
  // minutes apart find no pooled connection.
  double tls_handshake_share = 1;
  // Of those handshakes, the share that resumes a session from the crawler's per-host TLS
  // 1.3 tickets (cpu_per_tls_resumed_handshake) rather than a full one: only while the
  // server still honours the ticket (nginx and Apache forget them after 5 minutes by
  // default, large CDNs keep them for hours), so it depends on the hosts and the interval.
  double tls_resumed_share = 0;
  double feed_bytes = 7606;
  double entries_per_feed = 10;
  double articles_per_s_per_million_feeds = 48.5;
  double peak_to_mean = 1;  // posting and polling in the peak hour over the daily mean
  double article_words = 61;
  double article_bytes = 768;
  double subscription_words = 3;
  double poll_interval_s = 1800;  // each subscription is polled this often
  double poll_tls_share = 0;
  double match_share = 0.0054;  // share of subscriptions an article matches
  double retention_days = 1;

  [[nodiscard]] double articles_per_s() const {
    return feeds / 1e6 * articles_per_s_per_million_feeds * peak_to_mean;
  }
};

// A kind of host. Capacities are whole-host figures; usable_* are the shares a plan may
// fill, and demands that are rates are multiplied by headroom before they are compared.
struct node_class {
  std::string name;
  uint32_t line = 0;  // where the class starts in its file, for messages
  double cores = 1;
  double cpu_speed = 1;  // relative to the cost model's reference CPU
  double memory_bytes = 0;
  double disk_bytes = 0;
  double in_bps = 0;
  double out_bps = 0;
  double price = 1;
  double usable_cpu = 0.7;
  double usable_memory = 0.8;
  double usable_disk = 0.8;
  double usable_network = 0.8;
  double headroom = 1;  // peak hour and catching up after a restart, as one multiplier
};

// Where a coefficient comes from. A plan is only as good as this column.
enum class provenance_kind : uint8_t { stated, derived, fitted, measured };

struct coefficient {
  double value = 0;
  std::string unit;
  provenance_kind kind = provenance_kind::stated;
  std::string source;   // stated/derived: where and how; fitted: what it was fitted to
  std::string command;  // measured: the command, commit, date and CPU model
  std::string commit;
  std::string date;
  std::string cpu;
  uint32_t line = 0;
};

// One measured or stated point of the matching cost: seconds of reference CPU to match one
// article of `words` words against `subscriptions` subscriptions on one shard.
struct match_point {
  double subscriptions = 0;
  double words = 0;
  double seconds = 0;
};

struct cost_model {
  std::string name;
  std::string file;
  std::map<std::string, coefficient, std::less<>> coefficients;
  std::vector<match_point> match;  // sorted by (words, subscriptions)
  coefficient match_provenance;    // value unused: one provenance for the whole table
  uint32_t match_line = 0;

  // The coefficient's value, or nullptr when the model has none by that name.
  [[nodiscard]] const coefficient* find(std::string_view key) const;
  // Reference-CPU seconds to match one article of `words` words against `subs`
  // subscriptions: log-log interpolation in subscriptions between the table's points for
  // the nearest word counts, linear in words between them; proportional beyond the table.
  [[nodiscard]] double match_seconds(double subs, double words) const;
};

// Each reader fills `out` and returns every problem found (empty: `out` is complete).
std::vector<input_error> read_workload(std::string_view text, std::string_view file, workload& out);
std::vector<input_error> read_node_classes(std::string_view text, std::string_view file,
                                           std::vector<node_class>& out);
std::vector<input_error> read_cost_model(std::string_view text, std::string_view file,
                                         cost_model& out);

// The same from a path; a file that cannot be read is one error naming it.
std::vector<input_error> load_workload(const std::string& path, workload& out);
std::vector<input_error> load_node_classes(const std::string& path, std::vector<node_class>& out);
std::vector<input_error> load_cost_model(const std::string& path, cost_model& out);

std::string_view provenance_name(provenance_kind k);

}  // namespace feedplane::provisioner
