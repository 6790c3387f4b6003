#include "feedplane/dataplane/config.h"

#include "feedplane/base/ascii.h"
#include "feedplane/base/errc.h"

#include <fmt/format.h>

#include <toml++/toml.h>

#include <algorithm>
#include <functional>
#include <iterator>
#include <limits>
#include <sstream>

#include "feedplane/dataplane/file.h"

namespace feedplane::dataplane {
namespace {

// Table of options: key, doc, how to read it from a TOML node, how to print it.
struct option {
  std::string_view key;
  std::string_view doc;
  // Returns "" or an error describing why the value is bad.
  std::function<std::string(const toml::node&, config&)> read;
  std::function<std::string(const config&)> print;
};

template <class Section, class T>
option uint_option(std::string_view key, Section config::*sec, T Section::*field, uint64_t lo,
                   uint64_t hi, std::string_view doc) {
  return option{key, doc,
                [=](const toml::node& n, config& c) -> std::string {
                  auto v = n.value<int64_t>();
                  if (!n.is_integer() || !v) return "expected an integer";
                  if (*v < 0 || static_cast<uint64_t>(*v) < lo || static_cast<uint64_t>(*v) > hi)
                    return fmt::format("must be between {} and {}", lo, hi);
                  (c.*sec).*field = static_cast<T>(*v);
                  return {};
                },
                [=](const config& c) { return fmt::format("{}", (c.*sec).*field); }};
}

template <class Section>
option string_option(std::string_view key, Section config::*sec, std::string Section::*field,
                     const std::function<std::string(const std::string&)>& check,
                     std::string_view doc) {
  return option{key, doc,
                [=](const toml::node& n, config& c) -> std::string {
                  if (!n.is_string()) return "expected a string";
                  std::string v = *n.value<std::string>();
                  if (check) {
                    if (auto e = check(v); !e.empty()) return e;
                  }
                  (c.*sec).*field = std::move(v);
                  return {};
                },
                [=](const config& c) {
                  std::ostringstream os;
                  os << toml::value<std::string>((c.*sec).*field);
                  return os.str();
                }};
}

template <class Section>
option bool_option(std::string_view key, Section config::*sec, bool Section::*field,
                   std::string_view doc) {
  return option{key, doc,
                [=](const toml::node& n, config& c) -> std::string {
                  if (!n.is_boolean()) return "expected true or false";
                  (c.*sec).*field = *n.value<bool>();
                  return {};
                },
                [=](const config& c) { return std::string((c.*sec).*field ? "true" : "false"); }};
}

// An array of strings, each checked; printed as a TOML array.
template <class Section>
option string_list_option(std::string_view key, Section config::*sec,
                          std::vector<std::string> Section::*field,
                          std::string (*check)(const std::string&), std::string_view doc) {
  return option{key, doc,
                [=](const toml::node& n, config& c) -> std::string {
                  const auto* arr = n.as_array();
                  if (arr == nullptr) return "expected an array of strings";
                  std::vector<std::string> out;
                  for (const toml::node& e : *arr) {
                    if (!e.is_string()) return "expected an array of strings";
                    out.push_back(*e.value<std::string>());
                    if (auto err = check(out.back()); !err.empty())
                      return fmt::format("{:?}: {}", out.back(), err);
                  }
                  (c.*sec).*field = std::move(out);
                  return {};
                },
                [=](const config& c) {
                  std::ostringstream os;
                  toml::array a;
                  for (const auto& v : (c.*sec).*field) a.push_back(v);
                  os << a;
                  return os.str();
                }};
}

std::string check_resolve_pin(const std::string& v) {
  net::resolve_pin p;
  std::string err;
  return net::parse_resolve_pin(v, p, &err) ? std::string() : err;
}

std::string check_listen(const std::string& v) {
  // ADDR:PORT, with [v6]:PORT for IPv6.
  auto colon = v.rfind(':');
  if (colon == std::string::npos || colon == 0) return "expected ADDR:PORT";
  std::string_view port(v.data() + colon + 1, v.size() - colon - 1);
  if (port.empty() || port.size() > 5) return "port must be 0..65535";
  unsigned p = 0;
  for (char ch : port) {
    if (ch < '0' || ch > '9') return "port must be a number";
    p = p * 10 + static_cast<unsigned>(ch - '0');
  }
  if (p > 65535) return "port must be 0..65535";
  return {};
}

std::string check_nonempty(const std::string& v) { return v.empty() ? "must not be empty" : ""; }

const std::vector<option>& options() {
  using S = server_config;
  using C = client_config;
  using R = reflector_config;
  using A = api_config;
  using K = crawler_config;
  constexpr uint64_t u32 = std::numeric_limits<uint32_t>::max();
  static const std::vector<option> all = {
      string_option("server.listen", &config::server, &S::listen, check_listen,
                    "address and port the HTTP server listens on ([v6]:port for IPv6)"),
      uint_option("server.shards", &config::server, &S::shards, 0, 1024,
                  "shard threads, one per core; 0 = one per online core"),
      string_option("server.data_dir", &config::server, &S::data_dir, check_nonempty,
                    "directory for the store (created if missing)"),
      string_option("server.backup_dir", &config::server, &S::backup_dir, nullptr,
                    "where POST /api/backups (admin) makes backups, each a directory that "
                    "`serve --data` starts from; empty: DATA_DIR/backups (on the data's file "
                    "system the database's files are hard links: copy a backup elsewhere to "
                    "survive the loss of the disk)"),
      uint_option("server.group_commit_us", &config::server, &S::group_commit_us, 0, 100'000,
                  "under a stream of writes the store syncs at most once per this many "
                  "microseconds, so one sync carries more of them; a write after a quiet "
                  "spell never waits (0: sync as soon as a write arrives)"),
      uint_option("server.crawl_commit_us", &config::server, &S::crawl_commit_us, 0, 100'000,
                  "the same for a sync that carries only the crawler's writes (feeds' state "
                  "and new articles, which reach subscriptions this much later at most): "
                  "under a crawl one sync carries more of them; an account or subscription "
                  "change arriving meanwhile waits only for group_commit_us"),
      uint_option("server.memtable_mb", &config::server, &S::memtable_mb, 0, 65'536,
                  "memory for the store's write buffers (RocksDB memtables), all kinds "
                  "together, in MiB: beyond it one is flushed to disk (0: RocksDB's "
                  "defaults, 64 MiB per kind and two per kind while one flushes)"),
      uint_option("server.max_request_line", &config::server, &S::max_request_line, 64, u32,
                  "longest request line in bytes; longer gets 414"),
      uint_option("server.max_header_bytes", &config::server, &S::max_header_bytes, 256, u32,
                  "largest request header block in bytes; larger gets 431"),
      uint_option("server.max_headers", &config::server, &S::max_headers, 1, 10000,
                  "most request header fields; more gets 431"),
      uint_option("server.max_body", &config::server, &S::max_body, 0, u32,
                  "largest request body in bytes; larger gets 413"),
      uint_option("server.header_timeout_ms", &config::server, &S::header_timeout_ms, 1, u32,
                  "time a client has to send a whole request head; then 408 and close"),
      uint_option("server.idle_timeout_ms", &config::server, &S::idle_timeout_ms, 1, u32,
                  "idle keep-alive connections are closed after this long"),
      bool_option("server.gzip", &config::server, &S::gzip,
                  "gzip responses for clients that send Accept-Encoding: gzip"),
      string_option("server.tls_cert", &config::server, &S::tls_cert, nullptr,
                    "PEM certificate chain (leaf first): with tls_key, serve HTTPS instead of "
                    "HTTP; --tls-cert overrides it"),
      string_option("server.tls_key", &config::server, &S::tls_key, nullptr,
                    "PEM private key of tls_cert; --tls-key overrides it"),
      uint_option("client.connect_timeout_ms", &config::client, &C::connect_timeout_ms, 1, u32,
                  "crawler connect timeout (DNS + TCP + TLS handshake)"),
      uint_option("client.total_timeout_ms", &config::client, &C::total_timeout_ms, 1, u32,
                  "crawler whole-response timeout, as in Cobra"),
      uint_option("client.max_body", &config::client, &C::max_body, 1024, uint64_t{1} << 34,
                  "largest decoded feed body in bytes; larger aborts the fetch"),
      uint_option("client.max_redirects", &config::client, &C::max_redirects, 0, 20,
                  "redirects followed per fetch"),
      uint_option("client.per_host_connections", &config::client, &C::per_host_connections, 1, 64,
                  "keep-alive connections per host (politeness cap)"),
      string_option("client.user_agent", &config::client, &C::user_agent, check_nonempty,
                    "User-Agent sent by the crawler"),
      string_option("client.ca_file", &config::client, &C::ca_file, nullptr,
                    "PEM CA bundle for HTTPS; empty = the system CA store"),
      uint_option("reflector.k", &config::reflector, &R::k, 1, 10000,
                  "matches kept and served per subscription"),
      uint_option("reflector.backfill_window_s", &config::reflector, &R::backfill_window_s, 0, u32,
                  "a new subscription starts with its matches among this many seconds of "
                  "recent articles (0 = none)"),
      uint_option("reflector.article_cache_mb", &config::reflector, &R::article_cache_mb, 1,
                  1u << 20, "per shard: MiB of article text kept to render feeds"),
      uint_option("reflector.memory_limit_mb", &config::reflector, &R::memory_limit_mb, 0, 1u << 24,
                  "resident memory of the process: above 90% cached bodies and rendered feeds "
                  "are dropped and new matches keep no body; above it the shards pause the "
                  "article stream (backpressure to the crawlers) until memory returns; 0 = "
                  "no limit"),
      uint_option("reflector.render_cache_mb", &config::reflector, &R::render_cache_mb, 1, 1u << 20,
                  "per shard: MiB of rendered feeds kept between polls (beyond it the least "
                  "recently polled are rendered again at their next poll)"),
      uint_option("reflector.max_subscriptions", &config::reflector, &R::max_subscriptions, 1, u32,
                  "subscriptions per account (the admin bulk route has no limit)"),
      uint_option("reflector.snapshot_interval_s", &config::reflector, &R::snapshot_interval_s, 0,
                  86'400,
                  "seconds between snapshots of the match lists (a restart re-matches only "
                  "the articles after its partition's last one); 0 = never"),
      uint_option("reflector.article_gc_interval_s", &config::reflector, &R::article_gc_interval_s,
                  0, 604'800,
                  "seconds between collections of the article log: articles older than the "
                  "recent window (backfill_window_s) that no subscription's list holds are "
                  "deleted from the store; 0 = never (the log grows for ever)"),
      uint_option("reflector.weight_report_interval_s", &config::reflector,
                  &R::weight_report_interval_s, 1, 3600,
                  "seconds between each shard's reports, to the crawler, of how many "
                  "subscriptions each source's new articles matched (the sources' fetch "
                  "weights)"),
      string_option("api.admin_token", &config::api, &A::admin_token, nullptr,
                    "bearer token of the admin API (sources, bulk loads); empty = admin API "
                    "off; --admin-token and FEEDPLANE_ADMIN_TOKEN override it"),
      bool_option("api.open_signup", &config::api, &A::open_signup,
                  "anyone may create an account (POST /api/accounts) without the admin token"),
      uint_option("crawler.min_interval_s", &config::crawler, &K::min_interval_s, 1, u32,
                  "floor of a feed's adaptive fetch interval, seconds"),
      uint_option("crawler.max_interval_s", &config::crawler, &K::max_interval_s, 1, u32,
                  "ceiling of a feed's adaptive fetch interval, seconds"),
      uint_option("crawler.recent_window_s", &config::crawler, &K::recent_window_s, 0, u32,
                  "first fetch of a source: entries published longer ago are recorded as "
                  "seen, not delivered"),
      uint_option("crawler.max_in_flight", &config::crawler, &K::max_in_flight, 1, 1'000'000,
                  "fetches in flight per shard"),
      uint_option("crawler.fetch_budget_per_hour", &config::crawler, &K::fetch_budget_per_hour, 0,
                  u32,
                  "fetches per hour shared by the feeds with enough posting history, in "
                  "proportion to sqrt(weight x posting rate) (Sia and Cho); 0 = no budget: "
                  "every feed on the adaptive interval"),
      uint_option("crawler.budget_max_interval_s", &config::crawler, &K::budget_max_interval_s, 1,
                  u32, "longest interval the budget's allocation gives a nearly silent feed"),
      uint_option("crawler.weight_half_life_s", &config::crawler, &K::weight_half_life_s, 0, u32,
                  "a feed's weight in the budget is 1 + the subscriptions one of its recent "
                  "articles matched; an article counts half as much per this many seconds "
                  "(0 = never ages)"),
      uint_option("crawler.weight_persist_interval_s", &config::crawler,
                  &K::weight_persist_interval_s, 0, u32,
                  "a feed's weight that moved is written by a fetch that found nothing new "
                  "at most once per this many seconds (a fetch with new articles always "
                  "writes it); a crash loses at most about twice this much of its updates "
                  "(0 = by every such fetch)"),
      uint_option("crawler.per_domain_connections", &config::crawler, &K::per_domain_connections, 1,
                  1024, "fetches in flight at once per registrable domain (or shared platform)"),
      uint_option("crawler.per_domain_rate", &config::crawler, &K::per_domain_rate, 0, 100'000,
                  "fetch starts per second per registrable domain (or shared platform); 0 = "
                  "no rate cap"),
      string_list_option("crawler.shared_domains", &config::crawler, &K::shared_domains,
                         check_nonempty,
                         "multi-tenant platforms whose blogs share one politeness cap"),
      bool_option("net.allow_private", &config::net, &net_config::allow_private,
                  "the crawler may connect to loopback, private, link-local and metadata "
                  "addresses that were not pinned with --resolve"),
      uint_option("net.wait_batch", &config::net, &net_config::wait_batch, 0, 4096,
                  "a shard sleeps until this many completions are ready, or until "
                  "net.min_wait_us has passed and one is: fewer wake-ups per request under "
                  "load (0 or 1 = wake for each; needs kernel 6.12, else ignored)"),
      uint_option("net.min_wait_us", &config::net, &net_config::min_wait_us, 0, 10'000,
                  "the most a completion waits for net.wait_batch others (microseconds; 0 = "
                  "no batching)"),
      string_list_option("net.resolve", &config::net, &net_config::resolve, check_resolve_pin,
                         "HOST:PORT:ADDR pins as curl's --resolve (HOST may be *); "
                         "--resolve and --resolve-file add more"),
      uint_option("api.account_requests_per_s", &config::api, &A::account_requests_per_s, 1, u32,
                  "API requests per second per account; more get 429 with Retry-After"),
      uint_option("api.signups_per_hour", &config::api, &A::signups_per_hour, 1, u32,
                  "accounts created per hour per client address; more get 429"),
  };
  return all;
}

}  // namespace

std::vector<option_doc> option_docs() {
  config defaults;
  std::vector<option_doc> out;
  for (const auto& o : options()) out.push_back({o.key, o.print(defaults), o.doc});
  return out;
}

namespace {
using base::errc_entry;
// Indexed by the enum value; the static_assert keeps the table in step with it.
constexpr errc_entry k_errc_table[] = {
    {"ok", "no error"},
    {"cannot_read", "the configuration file cannot be read"},
    {"syntax_error", "the configuration file is not valid TOML"},
    {"unknown_key", "a key in the configuration file is not an option"},
    {"bad_value", "an option has a value of the wrong type or out of range"},
};
static_assert(std::size(k_errc_table) == static_cast<size_t>(config_errc::bad_value) + 1);
}  // namespace

std::string_view config_errc_name(config_errc e) { return base::errc_lookup(k_errc_table, e).name; }

std::string_view config_errc_message(config_errc e) {
  return base::errc_lookup(k_errc_table, e).message;
}

std::string config_error::to_string() const {
  const std::string where = line == 0 ? source : fmt::format("{}:{}", source, line);
  switch (code) {
    case config_errc::unknown_key:
      return fmt::format("{}: unknown key '{}'{}{}", where, key, detail.empty() ? "" : " ", detail);
    case config_errc::bad_value:
      return fmt::format("{}: bad value for '{}': {}", where, key, detail);
    case config_errc::cannot_read:
      return fmt::format("{}: cannot open config file: {}", where, detail);
    default:
      return fmt::format("{}: {}", where, detail.empty() ? config_errc_message(code) : detail);
  }
}

std::vector<config_error> read_config_text(std::string_view text, std::string_view source_name,
                                           config& out) {
  std::vector<config_error> errors;
  const std::string source(source_name);
  toml::table root;
  try {
    root = toml::parse(text, source_name);
  } catch (const toml::parse_error& e) {
    const auto& b = e.source().begin;
    errors.push_back({config_errc::syntax_error,
                      source,
                      static_cast<uint32_t>(b.line),
                      {},
                      fmt::format("column {}: {}", b.column, e.description())});
    return errors;
  }
  config next = out;
  // Every key in the file must be a known option; every problem is reported, not the first.
  root.for_each([&](const toml::key& section_key, const toml::node& section) {
    const auto* tbl = section.as_table();
    if (!tbl) {
      errors.push_back(
          {config_errc::unknown_key, source, static_cast<uint32_t>(section_key.source().begin.line),
           std::string(section_key.str()), "(options live in sections such as [server])"});
      return;
    }
    tbl->for_each([&](const toml::key& k, const toml::node& v) {
      const auto line = static_cast<uint32_t>(k.source().begin.line);
      std::string full = fmt::format("{}.{}", section_key.str(), k.str());
      for (const auto& o : options()) {
        if (o.key == full) {
          if (auto e = o.read(v, next); !e.empty())
            errors.push_back({config_errc::bad_value, source, line, std::move(full), std::move(e)});
          return;
        }
      }
      errors.push_back({config_errc::unknown_key, source, line, std::move(full), {}});
    });
  });
  // toml++ walks tables in key order; the file is read top to bottom.
  std::stable_sort(errors.begin(), errors.end(),
                   [](const config_error& a, const config_error& b) { return a.line < b.line; });
  if (errors.empty()) out = std::move(next);
  return errors;
}

std::vector<config_error> read_config_file(const std::string& path, config& out) {
  std::string text, why;
  switch (read_file(path, max_config_bytes, text, &why)) {
    case read_status::ok:
      return read_config_text(text, path, out);
    case read_status::too_large:
      why = fmt::format("larger than {} bytes", max_config_bytes);
      break;
    case read_status::failed:
      break;
  }
  return {{config_errc::cannot_read, path, 0, {}, std::move(why)}};
}

namespace {
std::string describe(const std::vector<config_error>& errors) {
  std::string s;
  for (const auto& e : errors) {
    if (!s.empty()) s += '\n';
    s += e.to_string();
  }
  return s;
}
}  // namespace

std::string load_config_text(std::string_view text, std::string_view source_name, config& out) {
  return describe(read_config_text(text, source_name, out));
}

std::string load_config_file(const std::string& path, config& out) {
  return describe(read_config_file(path, out));
}

net::client_options client_options_from(const client_config& c) {
  net::client_options o;
  o.connect_timeout_ms = c.connect_timeout_ms;
  o.total_timeout_ms = c.total_timeout_ms;
  o.max_body = c.max_body;
  o.max_redirects = c.max_redirects;
  o.per_host_connections = c.per_host_connections;
  o.user_agent = c.user_agent;
  o.ca_file = c.ca_file;
  return o;
}

net::client_options client_options_from(const config& c) {
  net::client_options o = client_options_from(c.client);
  o.allow_private = c.net.allow_private;
  for (const std::string& text : c.net.resolve) {
    net::resolve_pin p;
    if (net::parse_resolve_pin(text, p, nullptr)) o.pins.push_back(std::move(p));
  }
  return o;
}

std::string add_resolve_pins(config& c, const std::vector<std::string>& pins,
                             const std::string& pin_file) {
  std::vector<std::string> all = pins;
  if (!pin_file.empty()) {
    std::string text, why;
    // 1M host names at ~40 bytes a line: a cap well above what a farm needs.
    if (read_file(pin_file, size_t{1} << 30, text, &why) != read_status::ok)
      return fmt::format("--resolve-file {}: cannot read: {}", pin_file, why);
    size_t pos = 0;
    while (pos < text.size()) {
      size_t nl = text.find('\n', pos);
      if (nl == std::string::npos) nl = text.size();
      const std::string_view line = base::ascii_trim(std::string_view(text).substr(pos, nl - pos));
      if (!line.empty() && line.front() != '#') all.emplace_back(line);
      pos = nl + 1;
    }
  }
  for (const std::string& p : all) {
    if (auto err = check_resolve_pin(p); !err.empty())
      return fmt::format("--resolve {:?}: {}", p, err);
  }
  c.net.resolve.insert(c.net.resolve.end(), all.begin(), all.end());
  return {};
}

net::server_options server_options_from(const server_config& c) {
  net::server_options o;
  o.limits.max_request_line = c.max_request_line;
  o.limits.max_header_bytes = c.max_header_bytes;
  o.limits.max_headers = c.max_headers;
  o.limits.max_body = c.max_body;
  o.header_timeout_ms = c.header_timeout_ms;
  o.idle_timeout_ms = c.idle_timeout_ms;
  o.gzip = c.gzip;
  return o;
}

std::string render_config(const config& c) {
  std::string out =
      "# feedplane configuration. Every key is optional; shown values are in effect.\n";
  // Sections in order of first appearance, each with all its options (a TOML table may be
  // defined once, wherever its options stand in the table above).
  std::vector<std::string_view> sections;
  for (const auto& o : options()) {
    const std::string_view sec = o.key.substr(0, o.key.find('.'));
    if (std::find(sections.begin(), sections.end(), sec) == sections.end()) sections.push_back(sec);
  }
  for (std::string_view sec : sections) {
    out += fmt::format("\n[{}]\n", sec);
    for (const auto& o : options()) {
      const auto dot = o.key.find('.');
      if (o.key.substr(0, dot) != sec) continue;
      out += fmt::format("# {}\n{} = {}\n", o.doc, o.key.substr(dot + 1), o.print(c));
    }
  }
  return out;
}

}  // namespace feedplane::dataplane
