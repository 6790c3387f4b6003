// The synthetic feed farm (issue 12): N feeds shaped like the small web, their posting
// processes, their documents, and the truth log the load harness's delivery check reads.
//
// Everything here is deterministic from options::seed: host names, formats, sizes, rates,
// and every entry's guid, link, title and text (an entry is regenerated from (seed, feed,
// seq) whenever it is rendered, so a million feeds cost no stored text). Publish times
// depend on the seed and on the moment publishing starts.
//
// Shapes (each a number in `options`, so the driver can change it):
// - hosts: sampled without replacement from the smallweb corpus (36,225 hosts, 17% on
//   hosting platforms), names generated in the same proportions once it runs out or when
//   it is absent; some hosts carry several feeds;
// - document size: log-normal, median 7.6 KB, p90 23 KB; 10-17 entries typical;
// - posting rate: 20% nearly silent (about one post a year); the rest a power law (Pareto)
//   fitted to Sia and Cho's 12K feeds (seed 001, Figure 7: 80% post in three months, a
//   third of those at least daily), capped at one post every 15 minutes;
// - within a feed, a periodic inhomogeneous Poisson process: a daily cycle around the
//   feed's peak hour and a weekly one (weekends quieter), sampled by thinning;
// - formats: RSS 2.0, Atom 1.0, JSON Feed 1.1; validators: ETag and Last-Modified on most
//   feeds, Last-Modified only or neither on some.
//
// `--speed X` scales only the posting process: simulated time runs X times faster than
// real time from the moment publishing starts; each post becomes visible at the real time
// its simulated time maps back to, and that real time is its true publish time (the date
// in the document and in the truth log), so no document ever carries a future date.
//
// Not thread-safe: one farm is used by one thread (the server's loop).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <queue>
#include <string>
#include <string_view>
#include <vector>

#include "feedplane/workload/workload.h"

namespace feedplane::farm {

enum class feed_format : uint8_t { rss, atom, json };
enum class validators : uint8_t { etag_and_last_modified, last_modified_only, none };

// How a misbehaving host treats every feed it carries (the truth log's feed list names it,
// so the driver knows which feeds cannot be held to the delivery check as plain ones).
enum class misbehaviour : uint8_t {
  none,
  too_many_requests,       // every other request: 429 with Retry-After: 60
  too_many_requests_bare,  // every other request: 429 without Retry-After
  frozen_last_modified,    // Last-Modified (its only validator) never changes: IMS gets 304
  redirect_chain,          // 301, then 302s (`redirects` in all), then the document
  malformed,               // a bare '&' in the title, the closing tags (or "]}") missing
  slow,                    // every answer delayed by options::slow_seconds
  reset,                   // the connection reset (RST) once the request arrived, no answer
  endless,                 // 200, chunked, a body that never ends (a chunk a second)
};
inline constexpr size_t misbehaviour_count = 9;

std::string_view format_name(feed_format f);         // "rss", "atom", "json"
std::string_view validators_name(validators v);      // "etag+last-modified", ...
std::string_view content_type(feed_format f);        // the Content-Type it is served with
std::string_view file_extension(feed_format f);      // "xml", "atom", "json"
std::string_view misbehaviour_name(misbehaviour m);  // "none", "too_many_requests", ...
// Reset and endless hosts are served by the farm's raw listener on its own port, not by the
// HTTP server.
constexpr bool raw(misbehaviour m) {
  return m == misbehaviour::reset || m == misbehaviour::endless;
}

struct options {
  uint64_t seed = 1;
  uint32_t feeds = 10'000;
  // smallweb.txt: one feed URL a line; its hosts are sampled. "" or unreadable: names are
  // generated (hosts_from_corpus() says which happened).
  std::string hosts_file;
  uint16_t port = 80;      // in feed URLs (set_port() once the listener is bound)
  uint16_t raw_port = 81;  // in the URLs of reset and endless hosts
  // Share of hosts served over HTTPS (each host by a hash of the seed and its name, so a
  // host's feeds share one scheme), at https_port (set_https_port()). Reset and endless
  // hosts stay on the raw plain port.
  double https_share = 0;
  uint16_t https_port = 443;
  // Plain hosts are spread over 127.0.0.1 ... 127.0.0.<addresses> (all loopback), the farm
  // listening on each at `port`: a crawler's new connections to a million hosts otherwise
  // all go to one address and port, whose 28k ephemeral source ports (60 s in TIME_WAIT)
  // cap it near 470 connections a second and make every connect() scan for a free port.
  uint32_t addresses = 1;

  // A feed on a host that already has one (the host's second, third... feed).
  double extra_feed_share = 0.05;
  // Misbehaving hosts: this share of hosts, the kinds of `misbehaviour` in equal parts.
  double misbehaving_share = 0;
  uint32_t slow_seconds = 3;
  // Document size in bytes: log-normal with this median and 90th percentile.
  double size_median = 7600;
  double size_p90 = 23000;
  // Posting rates (posts per simulated day).
  double silent_share = 0.20;  // nearly silent feeds
  double silent_rate = 1.0 / 365;
  double active_min_rate = 0.05;     // Pareto scale
  double active_daily_share = 0.32;  // P(rate >= 1/day) among active feeds: fixes the exponent
  double max_rate = 96;              // one post every 15 minutes
  double daily_amplitude = 0.6;      // rate(t) = rate (1 + a cos(2 pi (hour - peak) / 24)) w(day)
  double weekend_factor = 0.75;      // w on Saturday and Sunday; weekdays make the mean 1
  // Formats and validators, shares of feeds.
  double atom_share = 0.20;
  double json_share = 0.10;
  double last_modified_only_share = 0.12;
  double no_validators_share = 0.08;

  // The crawler throughput benchmark's changes (`--change-share`): each request of a plain
  // feed first publishes a new entry in it with this probability, so that share of fetches
  // finds the feed changed (a new ETag, 200 with a new document) and the rest find it as
  // their last fetch left it. The draws come from one stream seeded by `seed`, in request
  // order. 0: off (only the posting process publishes).
  double change_share = 0;
};

// What a feed is; fixed once the farm is built.
struct feed_info {
  std::string host;    // lower case, no port
  bool https = false;  // served over HTTPS (its host is one of the https_share)
  feed_format format = feed_format::rss;
  validators valid = validators::etag_and_last_modified;
  uint16_t keep = 15;                            // entries in the document
  uint32_t body_bytes = 300;                     // mean plain-text bytes of an entry's body
  double rate_per_day = 0;                       // mean posts per simulated day
  float peak_hour = 15;                          // UTC hour of the daily peak
  uint32_t title_seed = 0;                       // the feed's title words
  misbehaviour misbehaves = misbehaviour::none;  // its host's
  uint8_t redirects = 0;                         // redirect_chain: 2-4 hops
};

// One entry, as served and as logged.
struct entry {
  uint32_t feed = 0;
  uint64_t seq = 0;      // 0, 1, 2... within the feed; the initial backlog comes first
  double published = 0;  // unix seconds: when it became visible (the true publish time)
  double sim_time = 0;   // its time in the simulated posting process
  bool initial = false;  // present when the farm started (published > 24 h before)
  std::string guid, link, title, text;  // text: the body, plain text, exactly as served
};

class farm {
 public:
  // Builds every feed and its initial backlog, the newest initial entry published at
  // least 25 hours before `now` (unix seconds). Throws std::runtime_error when the
  // vocabulary is empty.
  farm(const options& opt, const workload::vocabulary& vocab, double now);

  size_t size() const { return feeds_.size(); }
  const feed_info& info(uint32_t id) const { return feeds_[id]; }
  const options& opts() const { return opt_; }
  bool hosts_from_corpus() const { return hosts_from_corpus_; }
  // Distinct host names, in order of first use, and how each behaves.
  const std::vector<std::string>& hosts() const { return hosts_; }
  misbehaviour host_misbehaves(size_t host) const { return host_kind_[host]; }

  void set_port(uint16_t port) { opt_.port = port; }
  void set_raw_port(uint16_t port) { opt_.raw_port = port; }
  void set_https_port(uint16_t port) { opt_.https_port = port; }
  // Whether `host` is served over HTTPS (a hash of the seed and the name against
  // https_share; any name, so the farm's certificate selector can ask too).
  bool https_host(std::string_view host) const;
  // Whether feed id is served over HTTPS (an HTTPS host that is not a raw misbehaver).
  bool https_feed(uint32_t id) const { return feeds_[id].https && !raw(feeds_[id].misbehaves); }
  uint16_t port_of(uint32_t id) const {
    return raw(feeds_[id].misbehaves) ? opt_.raw_port
           : https_feed(id)           ? opt_.https_port
                                      : opt_.port;
  }
  // "http://HOST:PORT/feed/ID.EXT", or "https://HOST:HTTPS_PORT/feed/ID.EXT"
  std::string url(uint32_t id) const;
  // The path a feed is served at: "/feed/ID.EXT".
  std::string path(uint32_t id) const;
  // The feed a request names: Host (port ignored, case-insensitive) and the last path
  // segment "ID.EXT". -1 when no feed has that host, id and extension.
  int64_t find(std::string_view host, std::string_view file) const;

  // Entries currently in feed `id`'s document, newest first: [first_seq(id), next_seq(id)).
  uint64_t next_seq(uint32_t id) const { return state_[id].next_seq; }
  uint64_t first_seq(uint32_t id) const;
  // Entry `seq` of feed `id`, regenerated (seq must be in the document).
  entry make_entry(uint32_t id, uint64_t seq) const;
  // The document, replacing out's contents.
  void render(uint32_t id, std::string& out) const;
  // Validators: a quoted ETag ("" when the feed sends none) and Last-Modified in unix
  // seconds (-1 when none). Last-Modified grows by at least a second on every post, so
  // If-Modified-Since never hides a post made within the same second.
  std::string etag(uint32_t id) const;
  int64_t last_modified(uint32_t id) const;

  // Publishing. Before start() nothing is due. start() maps simulated time to real time:
  // sim = now + speed * (real - now).
  void start(double now, double speed);
  bool started() const { return started_; }
  double speed() const { return speed_; }
  double sim_time(double real) const;
  // The real time of the next post (infinity when none is due or before start()).
  double next_due() const;
  // Publishes every post due at or before `now`, in time order, calling on_entry for each
  // after it is in the document. Returns how many.
  size_t publish_due(double now, const std::function<void(const entry&)>& on_entry);
  uint64_t published() const { return published_; }
  // One request of feed id under options::change_share: with that probability publishes a
  // new entry in it now (unix seconds, outside the posting process), calls on_entry after it
  // is in the document and returns true; else false. Call it before answering the request.
  bool change_on_request(uint32_t id, double now,
                         const std::function<void(const entry&)>& on_entry);
  uint64_t changed() const { return changed_; }  // entries change_on_request published
  uint64_t initial_entries() const { return initial_entries_; }

  // Expected plain-text bytes per word of workload::generator::text (the Zipf mean of
  // word length plus separator and punctuation): sizes bodies without rendering them.
  double bytes_per_word() const { return bytes_per_word_; }

 private:
  struct feed_state {
    uint64_t next_seq = 0;
    int64_t last_modified = 0;
    double next_sim = 0;  // simulated time of the next post (after start())
    size_t times_at = 0;  // first of `keep` slots in times_: ring of publish times by seq
  };
  void build_hosts();
  double rate_at(const feed_info& f, double sim) const;
  double draw_next(uint32_t id, double after);  // thinning; uses post_rng_[id]
  double& time_slot(uint32_t id, uint64_t seq) {
    return times_[state_[id].times_at + seq % feeds_[id].keep];
  }
  double time_of(uint32_t id, uint64_t seq) const {
    return times_[state_[id].times_at + seq % feeds_[id].keep];
  }
  // Appends the next entry to feed id, visible from real time `now`; returns it.
  entry publish_one(uint32_t id, double now, double sim);
  // Appends entry seq's element (RSS item, Atom entry, JSON Feed item without the comma
  // before it) to out; append_entry takes it from fragments_ when they are kept.
  void render_entry(uint32_t id, uint64_t seq, std::string& out) const;
  void append_entry(uint32_t id, uint64_t seq, std::string& out) const;

  options opt_;
  const workload::vocabulary& vocab_;
  workload::generator gen_;
  double bytes_per_word_ = 6;
  bool hosts_from_corpus_ = false;
  std::vector<feed_info> feeds_;
  std::vector<feed_state> state_;
  std::vector<workload::rng> post_rng_;  // one posting process per feed
  std::vector<double> times_;            // publish times, `keep` slots per feed
  // With change_share (most requests then render a document that changed by one entry):
  // each entry's rendered element in its slot of times_, so a render generates only the
  // entries it has not rendered before. fragment_seq_[slot] = seq + 1 of the element held
  // there (0: none). Caches inside const render(): the farm is used by one thread.
  mutable std::vector<std::string> fragments_;
  mutable std::vector<uint64_t> fragment_seq_;
  std::vector<std::string> hosts_;
  std::vector<misbehaviour> host_kind_;  // beside hosts_
  uint64_t initial_entries_ = 0;

  bool started_ = false;
  double real0_ = 0, speed_ = 1;
  uint64_t published_ = 0;
  workload::rng change_rng_;  // change_on_request's draws
  uint64_t changed_ = 0;
  // Next post of every feed that posts: (simulated time, feed), earliest on top.
  using due = std::pair<double, uint32_t>;
  std::priority_queue<due, std::vector<due>, std::greater<>> queue_;
};

// The truth log: JSON Lines, one object a line, written with stdio and flushed by the
// caller after each batch of posts (so a reader never sees half a batch it could act on).
//   {"kind":"farm", "seed", "feeds", "hosts", "port", "https_port", "https_share", "time",
//    "hosts_from_corpus"}
//   {"kind":"feed", "feed", "url", "host", "https", "format", "validators", "keep",
//    "rate_per_day", "misbehaviour", "redirects"}
//   {"kind":"start", "time", "speed"}
//   {"kind":"entry", "feed", "url", "seq", "guid", "link", "published", "sim_time",
//    "initial", "title", "text"}
// Times are unix seconds with a fraction. "initial" entries (the backlog present before
// publishing) may be written without title and text (brief_initial).
class truth_log {
 public:
  truth_log() = default;
  ~truth_log();
  truth_log(const truth_log&) = delete;
  truth_log& operator=(const truth_log&) = delete;
  // Opens `path` for appending. False with *error on failure.
  bool open(const std::string& path, std::string* error);
  bool is_open() const { return f_ != nullptr; }
  void write_header(const farm& fm, double now);
  void write_feed(const farm& fm, uint32_t id);
  void write_start(double now, double speed);
  void write_entry(const farm& fm, const entry& e, bool brief = false);
  // Every feed, then every entry of the initial backlog.
  void write_initial(const farm& fm, bool brief_initial);
  void flush();

 private:
  void put(const std::string& line);
  std::FILE* f_ = nullptr;
  std::string line_;
};

// The OPML 2.0 subscription list of every feed (pugixml). False with *error on failure.
bool write_opml(const farm& fm, const std::string& path, std::string* error);
// One "HOST:PORT:ADDR" line per host (feedplane's and curl's --resolve format), PORT the
// one its feed URLs name: the raw port for reset and endless hosts, https_port for HTTPS
// hosts. ADDR is 127.0.0.1 but for plain hosts with options.addresses > 1 (address_of()).
bool write_pins(const farm& fm, const std::string& path, std::string* error);
// The loopback address a plain host (by index) is pinned to: 127.0.0.1 + index % addresses.
std::string address_of(const farm& fm, size_t host_index);

}  // namespace feedplane::farm
