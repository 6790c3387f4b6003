// feedplane's configuration: one TOML file, every option with a documented default.
// Loaded once at start-up into a plain struct that is then passed by const reference
// (no global mutable configuration).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "feedplane/net/http_client.h"
#include "feedplane/net/http_server.h"

namespace feedplane::dataplane {

struct server_config {
  std::string listen = "127.0.0.1:8080";
  uint32_t shards = 0;  // 0 = one per online core
  std::string data_dir = "./feedplane-data";
  std::string backup_dir;  // POST /api/backups puts backups here; empty: data_dir + "/backups"
  // The store syncs at most once per this many microseconds while writes keep coming:
  // one that arrives while the last sync is young waits for the rest (0: never waits).
  uint32_t group_commit_us = 2000;
  // The same for a sync that carries crawl writes only (feeds' state and new articles): no
  // one waits on them, so they wait longer and a sync carries more of them.
  uint32_t crawl_commit_us = 10'000;
  // The store's memtables, all column families together, in MiB (0: RocksDB's defaults).
  // store_options::memtable_bytes's default (config_test checks they agree).
  uint32_t memtable_mb = 64;
  uint32_t max_request_line = 8 * 1024;
  uint32_t max_header_bytes = 32 * 1024;
  uint32_t max_headers = 100;
  uint32_t max_body = 1024 * 1024;
  uint32_t header_timeout_ms = 10'000;
  uint32_t idle_timeout_ms = 60'000;
  bool gzip = true;
  std::string tls_cert;  // PEM chain (leaf first); with tls_key: every shard serves HTTPS
  std::string tls_key;   // its PEM private key
};

struct client_config {
  uint32_t connect_timeout_ms = 5'000;
  uint32_t total_timeout_ms = 5'000;
  uint64_t max_body = uint64_t{8} << 20;
  uint32_t max_redirects = 5;
  uint32_t per_host_connections = 2;
  std::string user_agent = "feedplane/0.1 (+https://github.com/feedplane)";
  std::string ca_file;  // empty = the system CA store
};

struct crawler_config {
  uint32_t min_interval_s = 300;      // floor of the adaptive interval
  uint32_t max_interval_s = 86'400;   // its ceiling
  uint32_t recent_window_s = 86'400;  // first fetch: older entries are seen, not new
  uint32_t max_in_flight = 4096;      // fetches in flight per shard
  // Sia and Cho's allocation (DESIGN.md 3): fetches per hour for the feeds with enough
  // posting history, split in proportion to sqrt(weight x rate) and placed on each feed's
  // weekly profile; 0 = no budget (every feed stays on the adaptive interval).
  uint32_t fetch_budget_per_hour = 0;
  uint32_t budget_max_interval_s = 604'800;  // the longest interval the allocation gives
  // A feed's weight (1 + subscriptions an article of it reaches) counts an article half as
  // much per half-life, so it follows a change of audience within about this long.
  uint32_t weight_half_life_s = 604'800;
  // A weight that moved is persisted by a fetch that brought nothing new at most once per
  // source per this long (a fetch with new articles always persists it); a crash loses at
  // most about twice this much of the weight's updates. 0 = by every such fetch.
  uint32_t weight_persist_interval_s = 300;
  // Politeness per politeness key (registrable domain or shared platform).
  uint32_t per_domain_connections = 2;  // fetches in flight at once
  uint32_t per_domain_rate = 4;         // fetch starts per second; 0 = no rate cap
  std::vector<std::string> shared_domains = {"tumblr.com", "wordpress.com", "blogspot.com",
                                             "github.io", "bearblog.dev"};
};

struct net_config {
  // "HOST:PORT:ADDR" pins (curl's --resolve; HOST may be "*"). --resolve and
  // --resolve-file add to them.
  std::vector<std::string> resolve;
  // Let the crawler connect to loopback, private, link-local and metadata addresses that
  // were not pinned with --resolve (off: a source URL must not reach into the host's network).
  bool allow_private = false;
  // A shard's loop waits for this many completions, or min_wait_us and at least one
  // (net::loop_options; the kernel's min-wait, 6.12+). wait_batch 0 or 1 = wake per completion.
  uint32_t wait_batch = 32;
  uint32_t min_wait_us = 100;
};

struct reflector_config {
  uint32_t k = 10;
  uint32_t backfill_window_s = 86'400;  // a new subscription is matched against this past
  uint32_t article_cache_mb = 64;       // per shard: what feeds render, by sequence
  // The process's resident memory: above 90% the shards drop cached bodies and rendered
  // feeds and keep no body of new matches; above it they pause the article stream until
  // it falls below 90% again (DESIGN.md 9). 0: no limit.
  uint32_t memory_limit_mb = 0;
  uint32_t render_cache_mb = 128;     // per shard: feeds rendered since their last change
  uint32_t max_subscriptions = 100;   // per account (the admin bulk route has no limit)
  uint32_t snapshot_interval_s = 30;  // lists snapshotted at most this far apart (0: never)
  // The article log is collected this often: articles past the recent window that no list
  // holds are deleted from the store (0: never).
  uint32_t article_gc_interval_s = 3600;
  // Each shard's counts of the subscriptions each source's articles matched go to the
  // source's crawler (its fetch weight) this often.
  uint32_t weight_report_interval_s = 10;
};

struct api_config {
  // Bearer token of the admin API (sources, bulk loads). Empty: the admin API is off.
  // `--admin-token` and FEEDPLANE_ADMIN_TOKEN override it.
  std::string admin_token;
  bool open_signup = true;               // POST /api/accounts without the admin token
  uint32_t account_requests_per_s = 20;  // per account secret, then 429 with Retry-After
  uint32_t signups_per_hour = 20;        // per client address, then 429
};

struct config {
  server_config server;
  client_config client;
  reflector_config reflector;
  api_config api;
  crawler_config crawler;
  net_config net;
};

// One documented option, for `feedplane config` and for error messages.
struct option_doc {
  std::string_view key;      // "server.listen"
  std::string default_text;  // TOML literal of the default
  std::string_view doc;
};

// All options with their defaults and one-line docs, in file order.
std::vector<option_doc> option_docs();

// Every way a configuration can be refused: stable names for messages and tests, one
// sentence each (the pattern of net's fetch_error).
enum class config_errc : uint8_t {
  ok = 0,
  cannot_read,   // the file is missing, unreadable, a directory or over max_config_bytes
  syntax_error,  // not TOML (parsing stops at the first one)
  unknown_key,   // a key that is no option: a typo is an error, not a silent default
  bad_value,     // a known option with a value of the wrong type or out of range
};
std::string_view config_errc_name(config_errc e);
std::string_view config_errc_message(config_errc e);

// One problem in a configuration document.
struct config_error {
  config_errc code = config_errc::ok;
  std::string source;  // the file (or the name given to read_config_text)
  uint32_t line = 0;   // 1-based; 0 when the whole file is the problem
  std::string key;     // "server.listen", where a key is concerned
  std::string detail;  // what is wrong: "expected ADDR:PORT"
  // "FILE:LINE: bad value for 'server.listen': expected ADDR:PORT"
  std::string to_string() const;
};

inline constexpr size_t max_config_bytes = 1u << 20;

// Reads a TOML document into `out` (which holds defaults or earlier values). Returns every
// problem found, in line order; `out` changes only when there is none.
std::vector<config_error> read_config_text(std::string_view toml_text, std::string_view source_name,
                                           config& out);
std::vector<config_error> read_config_file(const std::string& path, config& out);
// The same, with the problems rendered one a line ("" when the file loaded): what the
// commands print.
std::string load_config_text(std::string_view toml_text, std::string_view source_name, config& out);
std::string load_config_file(const std::string& path, config& out);

// One function per section turns it into the options its component takes, so that every
// command that fetches (fetch, parse, the crawler) sends the same User-Agent with the same
// limits, and every server gets the same limits.
net::client_options client_options_from(const client_config& c);
// The crawler's client: [client] plus the [net] pins (each was checked when read).
net::client_options client_options_from(const config& c);
// Adds --resolve pins and the lines of a --resolve-file (one pin a line; blank lines and
// lines starting with # skipped) to c.net.resolve. Returns "" or what is wrong.
std::string add_resolve_pins(config& c, const std::vector<std::string>& pins,
                             const std::string& pin_file);
net::server_options server_options_from(const server_config& c);

// Renders `c` as a commented TOML document that load_config_text accepts.
std::string render_config(const config& c);

}  // namespace feedplane::dataplane
