#include "feedplane/farm/farm.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <pugixml.hpp>
#include <stdexcept>
#include <unordered_set>

#include "feedplane/base/ascii.h"
#include "feedplane/base/json.h"
#include "feedplane/feed/text.h"
#include "feedplane/net/http_request.h"

namespace feedplane::farm {

namespace {

constexpr double day_s = 86400;

// Salts keep the random streams of one feed apart.
enum salt : uint64_t {
  salt_hosts = 1,
  salt_params = 2,
  salt_post = 3,
  salt_entry = 4,
  salt_https = 5,
  salt_change = 6
};

// One 64-bit seed from several numbers (splitmix64's finaliser on each step); workload::rng
// expands it further.
uint64_t mix(uint64_t a, uint64_t b, uint64_t c = 0, uint64_t d = 0) {
  uint64_t h = 0x243F6A8885A308D3ull;
  for (uint64_t v : {a, b, c, d}) {
    h ^= v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
    h = (h ^ (h >> 30)) * 0xBF58476D1CE4E5B9ull;
    h = (h ^ (h >> 27)) * 0x94D049BB133111EBull;
    h ^= h >> 31;
  }
  return h;
}

double normal(workload::rng& r) {  // Box-Muller
  const double u1 = std::max(r.uniform(), 1e-300), u2 = r.uniform();
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
}

double exponential(workload::rng& r, double mean) {
  return -std::log(std::max(1.0 - r.uniform(), 1e-300)) * mean;
}

// The hosting platforms of the smallweb corpus with at least ~25 blogs (its README: 17% of
// feeds on ten platforms), with their counts there: generated names keep these shares.
struct platform {
  std::string_view suffix;
  uint32_t weight;
};
constexpr platform platforms[] = {
    {"bearblog.dev", 1869}, {"github.io", 1325},    {"wordpress.com", 1119}, {"blogspot.com", 699},
    {"tumblr.com", 447},    {"neocities.org", 247}, {"hashnode.dev", 57},    {"leaflet.pub", 45},
    {"ghost.io", 45},       {"dreamwidth.org", 36}, {"micro.blog", 33},      {"mataroa.blog", 28},
    {"netlify.app", 26},
};
// Top-level domains for generated names when there is no corpus to copy them from.
constexpr std::string_view fallback_tlds[] = {"com", "com",  "com", "org", "net", "io",
                                              "dev", "blog", "de",  "uk",  "xyz"};

std::string_view platform_of(std::string_view host) {
  for (const platform& p : platforms) {
    if (host.size() > p.suffix.size() + 1 && host.ends_with(p.suffix) &&
        host[host.size() - p.suffix.size() - 1] == '.') {
      return p.suffix;
    }
  }
  return {};
}

// The host of a URL line ("https://a.b/feed.xml" -> "a.b"), lower case; "" when it is not
// a plain DNS name.
std::string host_of(std::string_view line) {
  line = base::ascii_trim(line);
  const size_t scheme = line.find("://");
  if (scheme == std::string_view::npos) return {};
  line.remove_prefix(scheme + 3);
  line = line.substr(0, line.find_first_of("/?#"));
  if (line.find('@') != std::string_view::npos) return {};
  line = line.substr(0, line.find(':'));
  std::string h;
  for (char c : line) {
    c = base::ascii_lower(c);
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.')) return {};
    h.push_back(c);
  }
  if (h.find('.') == std::string::npos || h.front() == '.' || h.back() == '.') return {};
  return h;
}

void append_xml(std::string& out, std::string_view s) {
  for (char c : s) {
    switch (c) {
      case '&':
        out.append("&amp;");
        break;
      case '<':
        out.append("&lt;");
        break;
      case '>':
        out.append("&gt;");
        break;
      case '"':
        out.append("&quot;");
        break;
      default:
        out.push_back(c);
    }
  }
}

void append_rfc3339(std::string& out, double t) {
  char buf[32];
  const int n = feed::format_rfc3339(static_cast<int64_t>(std::floor(t)), buf);
  out.append(buf, static_cast<size_t>(n));
}

void append_rfc822(std::string& out, double t) {
  char buf[32];
  out.append(net::format_http_date(static_cast<int64_t>(std::floor(t)), buf));
}

void append_time(std::string& out, double t) {
  fmt::format_to(std::back_inserter(out), "{:.3f}", t);
}

}  // namespace

std::string_view format_name(feed_format f) {
  switch (f) {
    case feed_format::rss:
      return "rss";
    case feed_format::atom:
      return "atom";
    case feed_format::json:
      return "json";
  }
  return "rss";
}

std::string_view validators_name(validators v) {
  switch (v) {
    case validators::etag_and_last_modified:
      return "etag+last-modified";
    case validators::last_modified_only:
      return "last-modified";
    case validators::none:
      return "none";
  }
  return "none";
}

std::string_view misbehaviour_name(misbehaviour m) {
  static constexpr std::string_view names[misbehaviour_count] = {"none",
                                                                 "too_many_requests",
                                                                 "too_many_requests_bare",
                                                                 "frozen_last_modified",
                                                                 "redirect_chain",
                                                                 "malformed",
                                                                 "slow",
                                                                 "reset",
                                                                 "endless"};
  return names[size_t(m)];
}

std::string_view content_type(feed_format f) {
  switch (f) {
    case feed_format::rss:
      return "application/rss+xml; charset=utf-8";
    case feed_format::atom:
      return "application/atom+xml; charset=utf-8";
    case feed_format::json:
      return "application/feed+json; charset=utf-8";
  }
  return "application/xml";
}

std::string_view file_extension(feed_format f) {
  switch (f) {
    case feed_format::rss:
      return "xml";
    case feed_format::atom:
      return "atom";
    case feed_format::json:
      return "json";
  }
  return "xml";
}

farm::farm(const options& opt, const workload::vocabulary& vocab, double now)
    : opt_(opt), vocab_(vocab), gen_(vocab), change_rng_(mix(opt.seed, 0, salt_change)) {
  if (vocab.words.size() < 100) throw std::runtime_error("farm: the vocabulary is missing or tiny");
  // E[bytes per word] of generator::text: Zipf(1) over all ranks of (length + a space),
  // plus 2/16 for its '.' or ','.
  {
    double total = 0, bytes = 0;
    for (size_t i = 0; i < vocab.words.size(); ++i) {
      const double p = 1.0 / static_cast<double>(i + 1);
      total += p;
      bytes += p * static_cast<double>(vocab.words[i].size() + 1);
    }
    bytes_per_word_ = bytes / total + 2.0 / 16;
  }
  feeds_.resize(opt_.feeds);
  state_.resize(opt_.feeds);
  build_hosts();
  for (feed_info& f : feeds_) f.https = https_host(f.host);

  // Per-entry overhead of each format beyond title and body (tags, guid, link, date), and
  // of the document beyond its entries; measured on rendered feeds (farm_test checks the
  // resulting sizes).
  const double entry_overhead[3] = {200, 250, 150};
  const double doc_overhead = 420;
  const double size_mu = std::log(opt_.size_median);
  const double size_sigma = (std::log(opt_.size_p90) - size_mu) / 1.2815515655446004;
  // Pareto exponent from P(rate >= 1/day) = active_daily_share.
  const double alpha = std::log(opt_.active_daily_share) / std::log(opt_.active_min_rate);
  const double title_bytes = 8 * bytes_per_word_;

  size_t times = 0;
  for (uint32_t i = 0; i < opt_.feeds; ++i) {
    feed_info& f = feeds_[i];
    workload::rng r(mix(opt_.seed, i, salt_params));
    double u = r.uniform();
    f.format = u < opt_.json_share                     ? feed_format::json
               : u < opt_.json_share + opt_.atom_share ? feed_format::atom
                                                       : feed_format::rss;
    u = r.uniform();
    f.valid = u < opt_.no_validators_share ? validators::none
              : u < opt_.no_validators_share + opt_.last_modified_only_share
                  ? validators::last_modified_only
                  : validators::etag_and_last_modified;
    u = r.uniform();
    f.keep = static_cast<uint16_t>(u < 0.75   ? 10 + r.below(8)   // 10-17: the usual
                                   : u < 0.85 ? 18 + r.below(33)  // up to 50
                                              : 1 + r.below(9));  // short feeds
    const double size = std::clamp(std::exp(size_mu + size_sigma * normal(r)), 1000.0, 4e6);
    const double per_entry =
        (size - doc_overhead) / f.keep - entry_overhead[size_t(f.format)] - title_bytes;
    f.body_bytes = static_cast<uint32_t>(std::max(per_entry, 20.0));
    u = r.uniform();
    if (u < opt_.silent_share) {
      f.rate_per_day = opt_.silent_rate;
    } else {
      const double v = std::max(r.uniform(), 1e-12);
      f.rate_per_day = std::min(opt_.active_min_rate * std::pow(v, -1.0 / alpha), opt_.max_rate);
    }
    f.peak_hour = static_cast<float>(std::fmod(15.0 + 4.0 * normal(r) + 48.0, 24.0));
    f.title_seed = static_cast<uint32_t>(r.next());
    if (f.misbehaves == misbehaviour::frozen_last_modified)
      f.valid = validators::last_modified_only;
    if (f.misbehaves == misbehaviour::redirect_chain)
      f.redirects = static_cast<uint8_t>(2 + r.below(3));
    state_[i].times_at = times;
    times += f.keep;
  }

  // The initial backlog: `keep` entries, the newest at least 25 h old, spaced by the feed's
  // mean interval (capped at 60 days between two entries).
  times_.resize(times);
  if (opt_.change_share > 0) {
    fragments_.resize(times);
    fragment_seq_.assign(times, 0);
  }
  post_rng_.reserve(opt_.feeds);
  for (uint32_t i = 0; i < opt_.feeds; ++i) {
    const feed_info& f = feeds_[i];
    post_rng_.emplace_back(mix(opt_.seed, i, salt_post));
    workload::rng& r = post_rng_.back();
    const double mean_gap = std::min(day_s / f.rate_per_day, 60 * day_s);
    double t = now - 25 * 3600 - exponential(r, std::min(mean_gap, day_s));
    for (uint64_t seq = f.keep; seq-- > 0;) {
      time_slot(i, seq) = t;
      t -= std::max(exponential(r, mean_gap), 1.0);
    }
    state_[i].next_seq = f.keep;
    state_[i].last_modified = static_cast<int64_t>(std::floor(time_of(i, f.keep - 1)));
    initial_entries_ += f.keep;
  }
}

void farm::build_hosts() {
  workload::rng r(mix(opt_.seed, 0, salt_hosts));
  std::vector<std::string> corpus;
  if (!opt_.hosts_file.empty()) {
    std::ifstream in(opt_.hosts_file);
    std::unordered_set<std::string> seen;
    for (std::string line; std::getline(in, line);) {
      std::string h = host_of(line);
      if (!h.empty() && seen.insert(h).second) corpus.push_back(std::move(h));
    }
  }
  hosts_from_corpus_ = !corpus.empty();
  // Fisher-Yates with the farm's seed: a different sample of the corpus per seed.
  for (size_t i = corpus.size(); i > 1; --i) std::swap(corpus[i - 1], corpus[r.below(i)]);

  // Labels for generated names: plain words of middling rank.
  std::vector<std::string_view> labels;
  for (size_t i = 100; i < vocab_.words.size() && labels.size() < 4000; ++i) {
    const std::string& w = vocab_.words[i];
    if (w.size() >= 3 &&
        std::all_of(w.begin(), w.end(), [](char c) { return c >= 'a' && c <= 'z'; }))
      labels.push_back(w);
  }
  uint64_t platform_total = 0;
  for (const platform& p : platforms) platform_total += p.weight;

  size_t next_corpus = 0;
  for (uint32_t i = 0; i < opt_.feeds; ++i) {
    feed_info& f = feeds_[i];
    if (i > 0 && r.uniform() < opt_.extra_feed_share) {
      const feed_info& other = feeds_[r.below(i)];  // another feed on a host that has one
      f.host = other.host;
      f.misbehaves = other.misbehaves;
      continue;
    }
    if (r.uniform() < opt_.misbehaving_share) {
      f.misbehaves = static_cast<misbehaviour>(1 + r.below(misbehaviour_count - 1));
    }
    if (next_corpus < corpus.size()) {
      f.host = corpus[next_corpus++];
    } else {
      // A new name shaped like a corpus one: a blog on the same platform, or a domain
      // under the same top-level domain. The feed's number keeps it unique.
      const std::string_view label = labels[r.below(labels.size())];
      std::string_view suffix;
      if (!corpus.empty()) {
        const std::string& model = corpus[r.below(corpus.size())];
        suffix = platform_of(model);
        if (suffix.empty()) suffix = std::string_view(model).substr(model.rfind('.') + 1);
      } else if (r.uniform() < 0.17) {
        uint64_t pick = r.below(platform_total);
        for (const platform& p : platforms) {
          if (pick < p.weight) {
            suffix = p.suffix;
            break;
          }
          pick -= p.weight;
        }
      } else {
        suffix = fallback_tlds[r.below(std::size(fallback_tlds))];
      }
      f.host = fmt::format("{}-{}.{}", label, i, suffix);
    }
    hosts_.push_back(f.host);
    host_kind_.push_back(f.misbehaves);
  }
}

std::string farm::path(uint32_t id) const {
  return fmt::format("/feed/{}.{}", id, file_extension(feeds_[id].format));
}

bool farm::https_host(std::string_view host) const {
  if (opt_.https_share <= 0) return false;
  uint64_t h = 0xcbf29ce484222325ULL;  // FNV-1a of the name, then mixed with the seed
  for (char c : host) h = (h ^ uint8_t(base::ascii_lower(c))) * 0x100000001b3ULL;
  const uint64_t m = mix(opt_.seed, h, salt_https);
  return static_cast<double>(m >> 11) * 0x1.0p-53 < opt_.https_share;
}

std::string farm::url(uint32_t id) const {
  return fmt::format("{}://{}:{}{}", https_feed(id) ? "https" : "http", feeds_[id].host,
                     port_of(id), path(id));
}

int64_t farm::find(std::string_view host, std::string_view file) const {
  if (const size_t colon = host.rfind(':'); colon != std::string_view::npos)
    host = host.substr(0, colon);
  uint64_t id = 0;
  size_t i = 0;
  for (; i < file.size() && file[i] >= '0' && file[i] <= '9' && i < 10; ++i)
    id = id * 10 + uint64_t(file[i] - '0');
  if (i == 0 || i >= file.size() || file[i] != '.' || id >= feeds_.size()) return -1;
  const feed_info& f = feeds_[id];
  if (file.substr(i + 1) != file_extension(f.format) || !base::ascii_iequals(host, f.host))
    return -1;
  return static_cast<int64_t>(id);
}

uint64_t farm::first_seq(uint32_t id) const {
  const uint64_t n = state_[id].next_seq, keep = feeds_[id].keep;
  return n > keep ? n - keep : 0;
}

entry farm::make_entry(uint32_t id, uint64_t seq) const {
  const feed_info& f = feeds_[id];
  workload::rng r(mix(opt_.seed, id, seq, salt_entry));
  entry e;
  e.feed = id;
  e.seq = seq;
  e.published = e.sim_time = time_of(id, seq);
  e.initial = seq < f.keep;
  e.guid = fmt::format("tag:{},2026:{}/{}", f.host, id, seq);
  e.link = fmt::format("http://{}/posts/{}/{}.html", f.host, id, seq);
  e.title = gen_.text(r, 4 + r.below(9));
  // Entry bodies vary around the feed's mean: log-normal, sigma 0.5, mean 1.
  const double factor = std::exp(0.5 * normal(r) - 0.125);
  const double words = static_cast<double>(f.body_bytes) * factor / bytes_per_word_;
  e.text = gen_.text(r, static_cast<size_t>(std::max(words, 3.0)));
  return e;
}

std::string farm::etag(uint32_t id) const {
  if (feeds_[id].valid != validators::etag_and_last_modified) return {};
  return fmt::format("\"{:x}-{:x}-{:x}\"", opt_.seed & 0xffff, id, state_[id].next_seq);
}

int64_t farm::last_modified(uint32_t id) const {
  return feeds_[id].valid == validators::none ? -1 : state_[id].last_modified;
}

void farm::render_entry(uint32_t id, uint64_t seq, std::string& out) const {
  const entry e = make_entry(id, seq);
  switch (feeds_[id].format) {
    case feed_format::rss:
      out.append("<item>\n<title>");
      append_xml(out, e.title);
      out.append("</title>\n<link>");
      append_xml(out, e.link);
      out.append("</link>\n<guid isPermaLink=\"false\">");
      append_xml(out, e.guid);
      out.append("</guid>\n<pubDate>");
      append_rfc822(out, e.published);
      out.append("</pubDate>\n<description>");
      append_xml(out, e.text);
      out.append("</description>\n</item>\n");
      break;
    case feed_format::atom:
      out.append("<entry>\n<title>");
      append_xml(out, e.title);
      out.append("</title>\n<id>");
      append_xml(out, e.guid);
      out.append("</id>\n<link href=\"");
      append_xml(out, e.link);
      out.append("\"/>\n<published>");
      append_rfc3339(out, e.published);
      out.append("</published>\n<updated>");
      append_rfc3339(out, e.published);
      out.append("</updated>\n<content type=\"text\">");
      append_xml(out, e.text);
      out.append("</content>\n</entry>\n");
      break;
    case feed_format::json:
      out.append("\n{\"id\":");
      base::append_json_string(e.guid, out);
      out.append(",\"url\":");
      base::append_json_string(e.link, out);
      out.append(",\"title\":");
      base::append_json_string(e.title, out);
      out.append(",\"date_published\":\"");
      append_rfc3339(out, e.published);
      out.append("\",\"content_text\":");
      base::append_json_string(e.text, out);
      out.push_back('}');
      break;
  }
}

void farm::append_entry(uint32_t id, uint64_t seq, std::string& out) const {
  if (fragments_.empty()) return render_entry(id, seq, out);
  const size_t slot = state_[id].times_at + seq % feeds_[id].keep;
  if (fragment_seq_[slot] != seq + 1) {
    fragments_[slot].clear();
    render_entry(id, seq, fragments_[slot]);
    fragment_seq_[slot] = seq + 1;
  }
  out.append(fragments_[slot]);
}

void farm::render(uint32_t id, std::string& out) const {
  const feed_info& f = feeds_[id];
  out.clear();
  workload::rng tr(f.title_seed);
  const std::string title = gen_.text(tr, 2 + tr.below(4));
  // Malformed: a bare ampersand (an XML well-formedness error) after the title, and the
  // document's closing tags missing (as if cut short).
  const bool malformed = f.misbehaves == misbehaviour::malformed;
  const std::string_view bad_title = malformed ? " & more" : "";
  const std::string home = fmt::format("http://{}/", f.host);
  const uint64_t first = first_seq(id), next = state_[id].next_seq;
  const double updated = time_of(id, next - 1);
  switch (f.format) {
    case feed_format::rss:
      out.append(
          "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<rss version=\"2.0\">\n<channel>\n<title>");
      append_xml(out, title);
      out.append(bad_title);
      out.append("</title>\n<link>").append(home).append("</link>\n<description>");
      append_xml(out, title);
      out.append("</description>\n<lastBuildDate>");
      append_rfc822(out, updated);
      out.append("</lastBuildDate>\n");
      for (uint64_t seq = next; seq-- > first;) append_entry(id, seq, out);
      if (!malformed) out.append("</channel>\n</rss>\n");
      break;
    case feed_format::atom:
      out.append(
          "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<feed "
          "xmlns=\"http://www.w3.org/2005/Atom\">\n<title>");
      append_xml(out, title);
      out.append(bad_title);
      out.append("</title>\n<id>");
      append_xml(out, fmt::format("tag:{},2026:{}", f.host, id));
      out.append("</id>\n<link href=\"");
      append_xml(out, home);
      out.append("\"/>\n<link rel=\"self\" href=\"");
      append_xml(out, url(id));
      out.append("\"/>\n<updated>");
      append_rfc3339(out, updated);
      out.append("</updated>\n<author><name>");
      append_xml(out, f.host);
      out.append("</name></author>\n");
      for (uint64_t seq = next; seq-- > first;) append_entry(id, seq, out);
      if (!malformed) out.append("</feed>\n");
      break;
    case feed_format::json:
      out.append("{\"version\":\"https://jsonfeed.org/version/1.1\",\"title\":");
      base::append_json_string(title, out);
      out.append(",\"home_page_url\":");
      base::append_json_string(home, out);
      out.append(",\"feed_url\":");
      base::append_json_string(url(id), out);
      out.append(",\"items\":[");
      for (uint64_t seq = next; seq-- > first;) {
        if (seq + 1 != next) out.push_back(',');
        append_entry(id, seq, out);
      }
      if (!malformed) out.append("]}\n");
      break;
  }
}

double farm::rate_at(const feed_info& f, double sim) const {
  const double hour = std::fmod(sim, day_s) / 3600;
  const int64_t day = static_cast<int64_t>(std::floor(sim / day_s));
  const int dow = static_cast<int>((day + 4) % 7);  // 1970-01-01 was a Thursday; 0 = Sunday
  const double weekday = (7 - 2 * opt_.weekend_factor) / 5;  // so the week's mean is 1
  const double w = dow == 0 || dow == 6 ? opt_.weekend_factor : weekday;
  return f.rate_per_day / day_s *
         (1 + opt_.daily_amplitude * std::cos(2 * M_PI * (hour - f.peak_hour) / 24)) * w;
}

double farm::draw_next(uint32_t id, double after) {
  const feed_info& f = feeds_[id];
  workload::rng& r = post_rng_[id];
  const double weekday = (7 - 2 * opt_.weekend_factor) / 5;
  const double peak = f.rate_per_day / day_s * (1 + opt_.daily_amplitude) *
                      std::max({weekday, opt_.weekend_factor, 1.0});
  // Thinning (Lewis and Shedler): candidates at the peak rate, each kept with probability
  // rate(t) / peak.
  double t = after;
  for (;;) {
    t += exponential(r, 1.0 / peak);
    if (r.uniform() * peak <= rate_at(f, t)) return t;
  }
}

void farm::start(double now, double speed) {
  if (started_) return;
  started_ = true;
  real0_ = now;
  speed_ = speed > 0 ? speed : 1;
  for (uint32_t i = 0; i < feeds_.size(); ++i) {
    if (feeds_[i].rate_per_day > 0) queue_.emplace(draw_next(i, now), i);
  }
}

double farm::sim_time(double real) const {
  return started_ ? real0_ + speed_ * (real - real0_) : real;
}

double farm::next_due() const {
  if (!started_ || queue_.empty()) return std::numeric_limits<double>::infinity();
  return real0_ + (queue_.top().first - real0_) / speed_;
}

size_t farm::publish_due(double now, const std::function<void(const entry&)>& on_entry) {
  if (!started_) return 0;
  const double sim_now = sim_time(now);
  size_t n = 0;
  while (!queue_.empty() && queue_.top().first <= sim_now) {
    const auto [sim, id] = queue_.top();
    queue_.pop();
    const entry e = publish_one(id, now, sim);
    ++n;
    on_entry(e);
    queue_.emplace(draw_next(id, sim), id);
  }
  return n;
}

entry farm::publish_one(uint32_t id, double now, double sim) {
  feed_state& s = state_[id];
  const uint64_t seq = s.next_seq++;
  time_slot(id, seq) = now;
  if (feeds_[id].misbehaves != misbehaviour::frozen_last_modified) {
    s.last_modified = std::max(s.last_modified + 1, static_cast<int64_t>(std::floor(now)));
  }
  entry e = make_entry(id, seq);
  e.sim_time = sim;
  ++published_;
  return e;
}

bool farm::change_on_request(uint32_t id, double now,
                             const std::function<void(const entry&)>& on_entry) {
  if (opt_.change_share <= 0 || change_rng_.uniform() >= opt_.change_share) return false;
  ++changed_;
  on_entry(publish_one(id, now, sim_time(now)));
  return true;
}

// ---- truth log ----

truth_log::~truth_log() {
  if (f_ != nullptr) std::fclose(f_);
}

bool truth_log::open(const std::string& path, std::string* error) {
  f_ = std::fopen(path.c_str(), "a");
  if (f_ == nullptr) {
    *error = fmt::format("{}: {}", path, std::strerror(errno));
    return false;
  }
  return true;
}

void truth_log::put(const std::string& line) { std::fwrite(line.data(), 1, line.size(), f_); }

void truth_log::write_header(const farm& fm, double now) {
  line_.assign("{\"kind\":\"farm\",\"seed\":");
  fmt::format_to(std::back_inserter(line_),
                 "{},\"feeds\":{},\"hosts\":{},\"port\":{},\"https_port\":{},"
                 "\"https_share\":{:g},\"time\":",
                 fm.opts().seed, fm.size(), fm.hosts().size(), fm.opts().port, fm.opts().https_port,
                 fm.opts().https_share);
  append_time(line_, now);
  line_.append(fm.hosts_from_corpus() ? ",\"hosts_from_corpus\":true}\n"
                                      : ",\"hosts_from_corpus\":false}\n");
  put(line_);
}

void truth_log::write_feed(const farm& fm, uint32_t id) {
  const feed_info& f = fm.info(id);
  line_.assign("{\"kind\":\"feed\",\"feed\":");
  fmt::format_to(std::back_inserter(line_), "{},\"url\":", id);
  base::append_json_string(fm.url(id), line_);
  line_.append(",\"host\":");
  base::append_json_string(f.host, line_);
  line_.append(fm.https_feed(id) ? ",\"https\":true" : ",\"https\":false");
  fmt::format_to(std::back_inserter(line_),
                 ",\"format\":\"{}\",\"validators\":\"{}\",\"keep\":{},\"rate_per_day\":{:.6g},"
                 "\"misbehaviour\":\"{}\",\"redirects\":{}}}\n",
                 format_name(f.format), validators_name(f.valid), f.keep, f.rate_per_day,
                 misbehaviour_name(f.misbehaves), f.redirects);
  put(line_);
}

void truth_log::write_start(double now, double speed) {
  line_.assign("{\"kind\":\"start\",\"time\":");
  append_time(line_, now);
  fmt::format_to(std::back_inserter(line_), ",\"speed\":{:g}}}\n", speed);
  put(line_);
}

void truth_log::write_entry(const farm& fm, const entry& e, bool brief) {
  line_.assign("{\"kind\":\"entry\",\"feed\":");
  fmt::format_to(std::back_inserter(line_), "{},\"url\":", e.feed);
  base::append_json_string(fm.url(e.feed), line_);
  fmt::format_to(std::back_inserter(line_), ",\"seq\":{},\"guid\":", e.seq);
  base::append_json_string(e.guid, line_);
  line_.append(",\"link\":");
  base::append_json_string(e.link, line_);
  line_.append(",\"published\":");
  append_time(line_, e.published);
  line_.append(",\"sim_time\":");
  append_time(line_, e.sim_time);
  line_.append(e.initial ? ",\"initial\":true" : ",\"initial\":false");
  if (!brief) {
    line_.append(",\"title\":");
    base::append_json_string(e.title, line_);
    line_.append(",\"text\":");
    base::append_json_string(e.text, line_);
  }
  line_.append("}\n");
  put(line_);
}

void truth_log::write_initial(const farm& fm, bool brief_initial) {
  for (uint32_t i = 0; i < fm.size(); ++i) write_feed(fm, i);
  for (uint32_t i = 0; i < fm.size(); ++i) {
    for (uint64_t seq = fm.first_seq(i); seq < fm.next_seq(i); ++seq) {
      write_entry(fm, fm.make_entry(i, seq), brief_initial);
    }
  }
}

void truth_log::flush() {
  if (f_ != nullptr) std::fflush(f_);
}

// ---- files for the driver ----

bool write_opml(const farm& fm, const std::string& path, std::string* error) {
  pugi::xml_document doc;
  pugi::xml_node decl = doc.append_child(pugi::node_declaration);
  decl.append_attribute("version") = "1.0";
  decl.append_attribute("encoding") = "UTF-8";
  pugi::xml_node opml = doc.append_child("opml");
  opml.append_attribute("version") = "2.0";
  opml.append_child("head").append_child("title").text().set("feedplane farm");
  pugi::xml_node body = opml.append_child("body");
  for (uint32_t i = 0; i < fm.size(); ++i) {
    const std::string u = fm.url(i);
    pugi::xml_node o = body.append_child("outline");
    o.append_attribute("type") = "rss";
    o.append_attribute("text") = fm.info(i).host.c_str();
    o.append_attribute("xmlUrl") = u.c_str();
  }
  if (!doc.save_file(path.c_str(), "  ")) {
    *error = fmt::format("{}: cannot write", path);
    return false;
  }
  return true;
}

std::string address_of(const farm& fm, size_t host_index) {
  const uint32_t n = std::max<uint32_t>(1, fm.opts().addresses);
  const uint32_t k = uint32_t(1 + host_index % n);  // 1 ... 250
  return fmt::format("127.0.0.{}", k);
}

bool write_pins(const farm& fm, const std::string& path, std::string* error) {
  std::ofstream out(path, std::ios::trunc);
  for (size_t i = 0; i < fm.hosts().size(); ++i) {
    const std::string& h = fm.hosts()[i];
    const uint16_t port = raw(fm.host_misbehaves(i)) ? fm.opts().raw_port
                          : fm.https_host(h)         ? fm.opts().https_port
                                                     : fm.opts().port;
    out << h << ':' << port << ':' << (port == fm.opts().port ? address_of(fm, i) : "127.0.0.1")
        << '\n';
  }
  out.flush();
  if (!out) {
    *error = fmt::format("{}: cannot write", path);
    return false;
  }
  return true;
}

}  // namespace feedplane::farm
