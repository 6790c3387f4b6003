// feedplane-load (`feedplane load`): the load harness's driver (issue 12). Starts a feed
// farm and a feedplane, adds the farm's feeds through OPML
// import, loads M subscriptions with Cobra's workload through the bulk API, lets the farm
// publish for the set time while pollers read personal feeds with If-None-Match, then
// waits for the pipeline to go quiet, reads every checked feed and checks delivery against
// the farm's truth log with the reference matcher (reference.h). Its last line is the
// delivery line; an unexplained miss or a duplicate makes the exit status non-zero.
#include <curl/curl.h>
#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <openssl/rand.h>
#include <signal.h>
#include <simdjson.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "../../machine_tail.h"
#include "../../proc_stats.h"
#include "feedplane/base/json.h"
#include "feedplane/load/delivery.h"
#include "feedplane/workload/workload.h"

namespace {

using clock_type = std::chrono::steady_clock;
using feedplane::load::checked_subscription;

struct options {
  uint32_t feeds = 10'000;
  uint64_t subscriptions = 100'000;
  double duration = 60;
  std::string out = "load-out";
  double speed = 60;
  uint32_t pollers = 1;
  double poll_rate = 200;  // polls per second, all pollers together
  uint32_t shards = 0;
  uint32_t k = 10;
  uint32_t min_interval = 2;  // crawler floor and ceiling for the run, seconds
  uint32_t max_interval = 10;
  uint32_t max_in_flight = 0;
  uint32_t farm_addresses = 32;
  uint64_t check_subscriptions = 0;  // a uniform sample read and checked (0: every one)  //
                                     // loopback addresses the farm's plain hosts are spread over //
                                     // feedplane's fetches in flight per shard (0: its default)
  double quiet = 6;                  // seconds without a new sequenced article = quiesced
  uint64_t seed = 1;
  double https_share = 0;  // the farm's share of HTTPS hosts (its CA goes into ca_file)
  std::string farm_bin, feedplane_bin;
  uint32_t bulk_connections = 2;    // bulk requests in flight at once
  uint32_t restarts = 0;            // restarts timed after the subscriptions are loaded
  bool restart_during_run = false;  // one more halfway through publishing
  double floor_us = 25;             // the machine's own tail at this length (0: not timed)
  uint32_t probes = 1;              // probe articles of each length matched after each step
};

std::string self_dir() {
  char buf[4096];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return ".";
  std::string p(buf, size_t(n));
  return p.substr(0, p.rfind('/'));
}

double now_s() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// A child process whose stdout and stderr go to a file; the first line matching `marker`
// on stdout tells its URL.
struct child {
  pid_t pid = -1;
  std::string log;
  std::string url;
  bool start(const std::vector<std::string>& argv, const std::string& log_path,
             const std::vector<std::string>& env, const std::string& marker, std::string* err) {
    log = log_path;
    int fds[2];
    if (pipe(fds) != 0) return false;
    pid = fork();
    if (pid == 0) {
      const int lf = open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      dup2(fds[1], 1);
      dup2(lf, 2);
      close(fds[0]);
      for (const auto& e : env) putenv(const_cast<char*>(e.c_str()));
      std::vector<char*> a;
      for (const auto& s : argv) a.push_back(const_cast<char*>(s.c_str()));
      a.push_back(nullptr);
      execv(a[0], a.data());
      _exit(127);
    }
    close(fds[1]);
    // Read stdout until the marker line; copy everything to the log.
    FILE* f = fdopen(fds[0], "r");
    char line[4096];
    std::ofstream out(log_path + ".out");
    while (fgets(line, sizeof line, f) != nullptr) {
      out << line;
      out.flush();
      std::string_view l(line);
      const size_t at = l.find(marker);
      if (at != std::string_view::npos) {
        size_t e = at + marker.size();
        while (e < l.size() && l[e] != ' ' && l[e] != '\n' && l[e] != ',') ++e;
        url = std::string(l.substr(at, e - at));
        break;
      }
    }
    if (url.empty()) {
      *err = fmt::format("{} exited before it was listening; see {}", argv[0], log_path);
      fclose(f);
      return false;
    }
    // Keep draining its stdout in the background so it never blocks on a full pipe.
    std::thread([f, p = log_path + ".out"] {
      std::ofstream o(p, std::ios::app);
      char l2[4096];
      while (fgets(l2, sizeof l2, f) != nullptr) o << l2;
      fclose(f);
    }).detach();
    return true;
  }
  void stop() {
    if (pid <= 0) return;
    kill(pid, SIGTERM);
    int st = 0;
    for (int i = 0; i < 100; ++i) {
      if (waitpid(pid, &st, WNOHANG) == pid) {
        pid = -1;
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    kill(pid, SIGKILL);
    waitpid(pid, &st, 0);
    pid = -1;
  }
};

// ---- HTTP through libcurl (control calls and polls) ----

size_t collect(char* p, size_t s, size_t n, void* ud) {
  static_cast<std::string*>(ud)->append(p, s * n);
  return s * n;
}

size_t header_cb(char* p, size_t s, size_t n, void* ud) {
  std::string_view h(p, s * n);
  constexpr std::string_view etag = "etag:";
  if (h.size() > etag.size() && strncasecmp(h.data(), etag.data(), etag.size()) == 0) {
    h.remove_prefix(etag.size());
    while (!h.empty() && (h.front() == ' ')) h.remove_prefix(1);
    while (!h.empty() && (h.back() == '\r' || h.back() == '\n')) h.remove_suffix(1);
    static_cast<std::string*>(ud)->assign(h);
  }
  return s * n;
}

struct http {
  CURL* c = curl_easy_init();
  ~http() { curl_easy_cleanup(c); }
  // Returns the status (0 on a transport error, then body holds the reason).
  long request(const std::string& method, const std::string& url, const std::string& token,
               const std::string& body, const std::string& content_type, std::string& out,
               const std::string& if_none_match = {}, std::string* etag = nullptr) {
    out.clear();
    curl_easy_reset(c);
    curl_easy_setopt(c, CURLOPT_URL, url.c_str());
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &out);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 300L);
    curl_easy_setopt(c, CURLOPT_ACCEPT_ENCODING, "");
    if (etag != nullptr) {
      etag->clear();
      curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, header_cb);
      curl_easy_setopt(c, CURLOPT_HEADERDATA, etag);
    }
    curl_slist* h = nullptr;
    if (!token.empty()) h = curl_slist_append(h, ("Authorization: Bearer " + token).c_str());
    if (!content_type.empty()) h = curl_slist_append(h, ("Content-Type: " + content_type).c_str());
    if (!if_none_match.empty())
      h = curl_slist_append(h, ("If-None-Match: " + if_none_match).c_str());
    if (h != nullptr) curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    if (method == "POST") {
      curl_easy_setopt(c, CURLOPT_POST, 1L);
      curl_easy_setopt(c, CURLOPT_POSTFIELDS, body.data());
      curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(body.size()));
    }
    const CURLcode rc = curl_easy_perform(c);
    curl_slist_free_all(h);
    if (rc != CURLE_OK) {
      out = curl_easy_strerror(rc);
      return 0;
    }
    long status = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    return status;
  }
};

// A counter or gauge from Prometheus text (summed over label sets); -1 when absent.
double metric(const std::string& text, std::string_view name) {
  double sum = -1;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    if (line.compare(0, name.size(), name) != 0) continue;
    if (line.size() > name.size() && line[name.size()] != ' ' && line[name.size()] != '{') continue;
    const size_t sp = line.rfind(' ');
    sum = (sum < 0 ? 0 : sum) + std::strtod(line.c_str() + sp + 1, nullptr);
  }
  return sum;
}

bool read_file(const std::string& path, std::string& out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream ss;
  ss << in.rdbuf();
  out = ss.str();
  return true;
}

// An item of a served JSON Feed as read: its id and _feedplane.seq.
struct served_raw {
  std::string id;
  uint64_t seq = 0;
};

// Items of a served JSON Feed: id and _feedplane.seq, in order.
bool parse_served(const std::string& body, std::vector<served_raw>& items, std::string* err) {
  items.clear();
  simdjson::dom::parser p;
  simdjson::dom::element doc;
  if (p.parse(body).get(doc) != simdjson::SUCCESS) {
    *err = "not JSON";
    return false;
  }
  simdjson::dom::array arr;
  if (doc["items"].get_array().get(arr) != simdjson::SUCCESS) {
    *err = "no items array";
    return false;
  }
  for (auto it : arr) {
    served_raw s;
    std::string_view id;
    if (it["id"].get_string().get(id) != simdjson::SUCCESS) {
      *err = "an item without id";
      return false;
    }
    s.id = id;
    uint64_t seq = 0;
    if (it["_feedplane"]["seq"].get_uint64().get(seq) == simdjson::SUCCESS) s.seq = seq;
    items.push_back(std::move(s));
  }
  return true;
}

// Writes DIR/NAME.dat (sorted values and their cumulative share) and, with gnuplot (Debian
// gnuplot-nox), DIR/NAME.png: a CDF for the report.
void plot_cdf(const std::string& dir, const std::string& name, const std::string& label,
              std::vector<double> v) {
  if (v.empty()) return;
  std::sort(v.begin(), v.end());
  const std::string dat = dir + "/" + name + ".dat";
  {
    std::ofstream d(dat);
    const size_t step = std::max<size_t>(1, v.size() / 2000);
    for (size_t i = 0; i < v.size(); i += step)
      d << fmt::format("{} {}\n", v[i], double(i + 1) / double(v.size()));
    d << fmt::format("{} 1\n", v.back());
  }
  const std::string script = dir + "/" + name + ".gp";
  {
    std::ofstream g(script);
    g << "set terminal pngcairo size 800,500 noenhanced\n";
    g << "set output '" << dir << "/" << name << ".png'\n";
    g << "set xlabel '" << label << "'\nset ylabel 'share'\nset grid\nset key off\n";
    g << "plot '" << dat << "' using 1:2 with lines lw 2\n";
  }
  const std::string cmd = "gnuplot '" + script + "' 2>/dev/null";
  if (std::system(cmd.c_str()) != 0) fmt::print(stderr, "load: gnuplot failed for {}\n", name);
}

// Writes DIR/NAME.dat (x y per line) and DIR/NAME.png: a line plot for the report.
void plot_xy(const std::string& dir, const std::string& name, const std::string& xlabel,
             const std::string& ylabel, const std::vector<std::pair<double, double>>& xy,
             bool log_x = false) {
  if (xy.size() < 2) return;
  const std::string dat = dir + "/" + name + ".dat";
  {
    std::ofstream d(dat);
    for (const auto& [x, y] : xy) d << fmt::format("{} {}\n", x, y);
  }
  const std::string script = dir + "/" + name + ".gp";
  {
    std::ofstream g(script);
    g << "set terminal pngcairo size 800,500 noenhanced\n";
    g << "set output '" << dir << "/" << name << ".png'\n";
    g << "set xlabel '" << xlabel << "'\nset ylabel '" << ylabel << "'\nset grid\nset key off\n";
    if (log_x) g << "set logscale x 2\n";
    g << "plot '" << dat << "' using 1:2 with linespoints lw 2\n";
  }
  const std::string cmd = "gnuplot '" + script + "' 2>/dev/null";
  if (std::system(cmd.c_str()) != 0) fmt::print(stderr, "load: gnuplot failed for {}\n", name);
}

// Writes DIR/NAME.dat (x y1 y2 ... per row) and DIR/NAME.png: one line per titled column.
void plot_lines(const std::string& dir, const std::string& name, const std::string& xlabel,
                const std::string& ylabel, const std::vector<std::string>& titles,
                const std::vector<std::vector<double>>& rows) {
  if (rows.size() < 2) return;
  const std::string dat = dir + "/" + name + ".dat";
  {
    std::ofstream d(dat);
    for (const auto& row : rows) {
      for (size_t i = 0; i < row.size(); ++i) d << (i == 0 ? "" : " ") << row[i];
      d << "\n";
    }
  }
  const std::string script = dir + "/" + name + ".gp";
  {
    std::ofstream g(script);
    g << "set terminal pngcairo size 800,500 noenhanced\n";
    g << "set output '" << dir << "/" << name << ".png'\n";
    g << "set xlabel '" << xlabel << "'\nset ylabel '" << ylabel
      << "'\nset grid\nset key top left\n";
    g << "plot ";
    for (size_t i = 0; i < titles.size(); ++i) {
      g << (i == 0 ? "" : ", ") << "'" << dat << "' using 1:" << i + 2
        << " with linespoints lw 2 title '" << titles[i] << "'";
    }
    g << "\n";
  }
  const std::string cmd = "gnuplot '" + script + "' 2>/dev/null";
  if (std::system(cmd.c_str()) != 0) fmt::print(stderr, "load: gnuplot failed for {}\n", name);
}

// CPU seconds (user + system) per thread name of a process, from /proc/PID/task/*/stat;
// threads of one name (shard-0, shard-1, ...) are summed under their name without digits.
std::map<std::string, double> thread_cpu(pid_t pid) {
  std::map<std::string, double> out;
  DIR* d = opendir(fmt::format("/proc/{}/task", pid).c_str());
  if (d == nullptr) return out;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    std::string name;
    double cpu = 0;
    if (!feedplane::bench::read_stat(fmt::format("/proc/{}/task/{}/stat", pid, e->d_name), &name,
                                     &cpu))
      continue;
    while (!name.empty() && (std::isdigit(static_cast<unsigned char>(name.back())) != 0 ||
                             name.back() == '-' || name.back() == '_'))
      name.pop_back();
    out[name.empty() ? "main" : name] += cpu;
  }
  closedir(d);
  return out;
}

// A quantile of a Prometheus histogram in `text` (cumulative buckets NAME_bucket{le="X"}),
// as the upper bound of the bucket that holds it; -1 when there is none.
// A histogram's cumulative buckets (le, count) in Prometheus text, ascending; `labels` is
// the text before le= inside the braces (`words="<=64",` or empty).
std::vector<std::pair<double, double>> histogram_buckets(const std::string& text,
                                                         const std::string& name,
                                                         const std::string& labels = {}) {
  std::vector<std::pair<double, double>> buckets;  // (le, cumulative count)
  const std::string prefix = name + "_bucket{" + labels + "le=\"";
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(prefix, 0) != 0) continue;
    const double le = line.compare(prefix.size(), 4, "+Inf") == 0
                          ? std::numeric_limits<double>::infinity()
                          : std::strtod(line.c_str() + prefix.size(), nullptr);
    buckets.emplace_back(le, std::strtod(line.c_str() + line.rfind(' ') + 1, nullptr));
  }
  std::sort(buckets.begin(), buckets.end());
  return buckets;
}

// The buckets of `end` less those of `start` (what was observed between the two scrapes).
std::vector<std::pair<double, double>> histogram_delta(const std::string& start,
                                                       const std::string& end,
                                                       const std::string& name,
                                                       const std::string& labels = {}) {
  auto e = histogram_buckets(end, name, labels);
  const auto s = histogram_buckets(start, name, labels);
  for (auto& [le, cum] : e) {
    for (const auto& [sle, scum] : s) {
      if (sle == le) cum = std::max(0.0, cum - scum);
    }
  }
  return e;
}

// Adds the buckets of `more` to those of `into` with the same bound (two processes' deltas).
void histogram_add(std::vector<std::pair<double, double>>& into,
                   const std::vector<std::pair<double, double>>& more) {
  if (into.empty()) {
    into = more;
    return;
  }
  for (auto& [le, cum] : into) {
    for (const auto& [mle, mcum] : more) {
      if (mle == le) cum += mcum;
    }
  }
}

// The upper bound of the bucket holding quantile q; -1 when nothing was observed.
double bucket_quantile(const std::vector<std::pair<double, double>>& buckets, double q) {
  if (buckets.empty() || buckets.back().second <= 0) return -1;
  const double want = q * buckets.back().second;
  for (const auto& [le, cum] : buckets)
    if (cum >= want) return le;
  return buckets.back().first;
}

double histogram_quantile(const std::string& text, const std::string& name, double q) {
  return bucket_quantile(histogram_buckets(text, name), q);
}

// A JSON number field of a flat object; 0 when absent.
double json_number(const std::string& body, std::string_view key) {
  simdjson::dom::parser p;
  simdjson::dom::element e;
  if (p.parse(body).get(e) != simdjson::SUCCESS) return 0;
  double v = 0;
  if (e[key].get_double().get(v) == simdjson::SUCCESS) return v;
  uint64_t u = 0;
  if (e[key].get_uint64().get(u) == simdjson::SUCCESS) return double(u);
  return 0;
}

// A progress bar on a terminal (redrawn at most 4 times a second), else a line every 10 s.
// True when GET /api/sources shows every source's last fetch at or after since_ms.
bool all_fetched_since(http& h, const std::string& base, const std::string& token,
                       double since_ms) {
  std::string after, body;
  for (;;) {
    const std::string url =
        base + "/api/sources?limit=1000" + (after.empty() ? "" : "&after=" + after);
    if (h.request("GET", url, token, "", "", body) != 200) return false;
    simdjson::dom::parser p;
    simdjson::dom::element e;
    simdjson::dom::array arr;
    if (p.parse(body).get(e) != simdjson::SUCCESS ||
        e["sources"].get_array().get(arr) != simdjson::SUCCESS)
      return false;
    for (auto src : arr) {
      double last = 0;
      int64_t li = 0;
      if (src["last_fetch_ms"].get_double().get(last) != simdjson::SUCCESS) {
        if (src["last_fetch_ms"].get_int64().get(li) != simdjson::SUCCESS) return false;
        last = double(li);
      }
      if (last < since_ms) return false;
    }
    std::string_view next;
    if (e["next"].get_string().get(next) != simdjson::SUCCESS) return true;  // null: the end
    after = next;
  }
}

// Waits until the pipeline is quiet: no article sequenced for still_s seconds, at least
// min_s since the call, and every source fetched at or after since_ms (unix ms). Gives up
// after limit_s. Returns whether it got quiet; *sequenced is the last count it saw.
bool wait_until_quiet(http& h, const std::string& base, const std::string& token, double since_ms,
                      double still_s, double min_s, double limit_s, double* sequenced) {
  const auto start = clock_type::now();
  auto still_since = start;
  double last = -1;
  for (;;) {
    std::string m;
    h.request("GET", base + "/metrics", "", "", "", m);
    const double seq = metric(m, "feedplane_store_articles_sequenced_total");
    if (seq != last) {
      last = seq;
      still_since = clock_type::now();
    }
    *sequenced = std::max(0.0, last);
    const auto now = clock_type::now();
    const double waited = std::chrono::duration<double>(now - start).count();
    if (waited > limit_s) return false;
    // The sources' list is read only once the count stands still (a million sources are a
    // thousand pages).
    if (std::chrono::duration<double>(now - still_since).count() >= still_s && waited >= min_s &&
        all_fetched_since(h, base, token, since_ms))
      return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
}

void progress(const char* phase, double done, double total, const std::string& extra) {
  static const bool tty = isatty(2) != 0;
  static auto last = clock_type::now() - std::chrono::hours(1);
  const auto now = clock_type::now();
  if (done < total &&
      now - last < (tty ? std::chrono::milliseconds(250) : std::chrono::seconds(10)))
    return;
  last = now;
  if (!tty) {
    fmt::print(stderr, "{} {:.0f}/{:.0f} {}\n", phase, done, total, extra);
    return;
  }
  const int width = 30;
  const int fill = total > 0 ? int(std::min(1.0, done / total) * width) : 0;
  fmt::print(stderr, "\r{:<10} [{}{}] {:5.1f}% {}   ", phase, std::string(size_t(fill), '#'),
             std::string(size_t(width - fill), '.'), total > 0 ? 100.0 * done / total : 0.0, extra);
  std::fflush(stderr);
}

struct percentiles {
  std::vector<double> v;
  double at(double q) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    return v[std::min(v.size() - 1, size_t(q * double(v.size())))];
  }
};

int run(const options& o) {
  mkdir(o.out.c_str(), 0755);
  // A run starts from nothing: the farm appends to its truth log and feedplane opens the
  // store it finds, so an earlier run's files in OUT (the default --out included) would be
  // read as this run's: its entries counted unexplained misses, its subscriptions loaded
  // again. The other files of a run are rewritten whole.
  {
    std::error_code ec;
    std::filesystem::remove(o.out + "/truth.jsonl", ec);
    if (std::filesystem::exists(o.out + "/data", ec)) {
      fmt::print(stderr, "load: removing the earlier run's store ({}/data)\n", o.out);
      std::filesystem::remove_all(o.out + "/data", ec);
    }
    if (ec) {
      fmt::print(stderr, "load: cannot clear the earlier run in {}: {}\n", o.out, ec.message());
      return 2;
    }
  }
  const std::string dir = self_dir();
  const std::string farm_bin = o.farm_bin.empty() ? dir + "/feedplane-farm" : o.farm_bin;
  const std::string fp_bin = o.feedplane_bin.empty() ? dir + "/feedplane" : o.feedplane_bin;
  unsigned char rnd[24];
  RAND_bytes(rnd, sizeof rnd);
  std::string token;
  for (unsigned char b : rnd) token += fmt::format("{:02x}", b);

  std::string err;
  child farm, fp;
  auto cleanup = [&] {
    fp.stop();
    farm.stop();
  };
  fmt::print(stderr, "load: starting the farm ({} feeds)\n", o.feeds);
  std::vector<std::string> farm_args = {
      farm_bin, "--feeds", std::to_string(o.feeds), "--listen", "127.0.0.1:0", "--start-paused",
      "--speed", fmt::format("{}", o.speed), "--seed", std::to_string(o.seed), "--truth",
      o.out + "/truth.jsonl",
      // The backlog is never expected: its ids only.
      "--truth-brief-initial", "--opml", o.out + "/feeds.opml", "--pins", o.out + "/pins.txt",
      "--addresses", std::to_string(o.farm_addresses)};
  const std::string ca_path = o.out + "/farm-ca.pem";
  if (o.https_share > 0) {
    for (const std::string& a : {std::string("--https-share"), fmt::format("{}", o.https_share),
                                 std::string("--ca-out"), ca_path}) {
      farm_args.push_back(a);
    }
  }
  if (!farm.start(farm_args, o.out + "/farm.log", {}, "http://", &err)) {
    fmt::print(stderr, "load: {}\n", err);
    cleanup();
    return 2;
  }
  const std::string config_path = o.out + "/feedplane.toml";
  {
    std::ofstream c(config_path);
    // The farm's clock runs --speed times faster, so per-domain rate caps sized for real
    // time would throttle its shared platforms (hundreds of bearblog.dev feeds) into missing
    // entries: off for the run; concurrency stays capped.
    c << fmt::format(
        "[crawler]\nmin_interval_s = {}\nmax_interval_s = {}\nper_domain_rate = 0\n"
        "per_domain_connections = 4\n",
        o.min_interval, o.max_interval);
    if (o.max_in_flight != 0) c << fmt::format("max_in_flight = {}\n", o.max_in_flight);
    c << fmt::format("[reflector]\nk = {}\n", o.k);
    // The farm's HTTPS hosts have certificates from its own CA.
    if (o.https_share > 0) c << fmt::format("[client]\nca_file = \"{}\"\n", ca_path);
  }
  std::vector<std::string> fp_args = {
      fp_bin,     "serve",     "--listen",       "127.0.0.1:0",       "--data",  o.out + "/data",
      "--config", config_path, "--resolve-file", o.out + "/pins.txt", "--no-pin"};
  if (o.shards != 0) {
    fp_args.push_back("--shards");
    fp_args.push_back(std::to_string(o.shards));
  }
  fmt::print(stderr, "load: starting feedplane (farm at {})\n", farm.url);
  if (!fp.start(fp_args, o.out + "/feedplane.log", {"FEEDPLANE_ADMIN_TOKEN=" + token}, "http://",
                &err)) {
    fmt::print(stderr, "load: {}\n", err);
    cleanup();
    return 2;
  }
  std::string base = fp.url;  // changes with each restart (a new port)
  http h;
  std::string body;
  for (int i = 0; i < 300 && h.request("GET", base + "/readyz", "", "", "", body) != 200; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));

  // Sources, through OPML import.
  std::string opml;
  if (!read_file(o.out + "/feeds.opml", opml)) {
    fmt::print(stderr, "load: the farm wrote no OPML\n");
    cleanup();
    return 2;
  }
  // In documents of at most 2,000 outlines (the farm writes one outline a line), so that
  // each request stays under feedplane's request body limit whatever the farm's size.
  std::vector<std::string> outlines;
  {
    std::istringstream in(opml);
    std::string line;
    while (std::getline(in, line)) {
      if (line.find("<outline") != std::string::npos) outlines.push_back(line);
    }
  }
  auto t0 = clock_type::now();
  long st = 0;
  for (size_t first = 0; first < outlines.size(); first += 2000) {
    std::string doc = "<?xml version=\"1.0\"?>\n<opml version=\"2.0\"><body>\n";
    for (size_t i = first; i < std::min(outlines.size(), first + 2000); ++i)
      doc += outlines[i] + "\n";
    doc += "</body></opml>\n";
    st = h.request("POST", base + "/api/sources:import", token, doc, "text/x-opml", body);
    if (st != 200 && st != 201) {
      fmt::print(stderr, "load: OPML import: {} {}\n", st, body);
      cleanup();
      return 2;
    }
    progress("import", double(first + 2000), double(outlines.size()), "");
  }
  const double import_s = std::chrono::duration<double>(clock_type::now() - t0).count();
  fmt::print(stderr, "load: imported {} feeds in {:.2f} s\n", outlines.size(), import_s);
  // The farm's initial documents are its backlog, which the truth log leaves out of what
  // subscriptions expect: wait until every source was fetched once and its articles are
  // sequenced (the count stands still for a second), so no subscription is made while the
  // backlog still arrives (it would rightly match it live). After this, an article from the
  // backlog in a feed is a re-delivery, which the delivery check reports.
  // Articles sequenced by the end of the backlog crawl: sequences are dense from 1, so the
  // final read of the article log starts after them (a million feeds' backlog is ~14M).
  uint64_t backlog_articles = 0;
  {
    const auto w0 = clock_type::now();
    // 600 s, and a second per 500 feeds beyond (a million feeds' first fetch).
    const double limit = 600 + double(o.feeds) / 500;
    double last = 0;
    if (!wait_until_quiet(h, base, token, 1, 1, 0, limit, &last)) {
      fmt::print(stderr, "load: the initial crawl did not finish in {:.0f} s\n", limit);
      cleanup();
      return 2;
    }
    fmt::print(stderr, "\nload: initial crawl done in {:.2f} s ({:.0f} articles)\n",
               std::chrono::duration<double>(clock_type::now() - w0).count(), last);
    backlog_articles = uint64_t(last);
  }
  // Memory against subscriptions (Figure 7): feedplane's resident memory after each bulk
  // chunk, from the sources alone upwards.
  std::vector<std::pair<double, double>> memory_mib{
      {0.0, feedplane::bench::rss_bytes(fp.pid) / 1048576.0}};

  // Subscriptions with Cobra's workload, through the bulk API. The request bodies are made
  // first and then sent on --bulk-connections connections at once, so the rate measured is
  // feedplane's durable creation rate, not the driver's generation or one request's round
  // trip.
  const auto& vocab = feedplane::workload::vocabulary::english();
  feedplane::workload::generator gen(vocab);
  feedplane::workload::rng r(o.seed * 7919 + 1);
  std::vector<checked_subscription> subs;
  std::vector<std::string> feed_paths;
  subs.reserve(o.subscriptions);
  // Requests of at most 10,000 subscriptions, and at least ten of them when there are ten
  // subscriptions, so the bulk load has its ten steps (Figure 10's rows) at any size.
  const uint64_t chunk = std::clamp<uint64_t>(o.subscriptions / 10, 1, 10'000);
  const size_t chunks = size_t((o.subscriptions + chunk - 1) / chunk);
  std::vector<std::string> bodies(chunks), answers(chunks);
  std::vector<std::vector<std::string>> chunk_queries(chunks);
  std::vector<long> statuses(chunks, 0);
  for (size_t c = 0; c < chunks; ++c) {
    const uint64_t first = c * chunk, n = std::min(chunk, o.subscriptions - first);
    for (uint64_t i = 0; i < n; ++i) {
      chunk_queries[c].push_back(gen.subscription(r));
      bodies[c] += fmt::format("{{\"account\": \"load-{}\", \"query\": ", (first + i) / 100);
      feedplane::base::append_json_string(chunk_queries[c].back(), bodies[c]);
      bodies[c] += fmt::format(", \"k\": {}, \"backfill\": false}}\n", o.k);
    }
  }
  // Sent in ten steps; after each, feedplane matches probe articles of 61 (Cobra's median),
  // 500 and 2,000 words, title included as in matcher_bench, against what it holds (POST
  // /api/match-time): Figure 10, match time against subscriptions and words. One probe of
  // each length is matched 21 times (a warm match); --probes P > 1 sends a pool of P of each
  // length, matched in turn as a stream of articles is, each finding the caches as the one
  // before left them (matcher_bench's rows cycle through a pool the same way). Only the
  // sending counts in the bulk rate.
  const size_t steps = std::min<size_t>(10, chunks);
  const std::vector<size_t> probe_words = {61, 500, 2000};
  std::vector<std::string> probe_bodies;
  // One probe's members, "title" and "text", of w words with the title's 8.
  const auto probe_members = [&](size_t w) {
    std::string m = "\"title\": ";
    feedplane::base::append_json_string(gen.title(r), m);
    m += ", \"text\": ";
    feedplane::base::append_json_string(gen.text(r, w - 8), m);
    return m;
  };
  for (size_t w : probe_words) {
    if (o.probes == 1) {
      probe_bodies.push_back("{" + probe_members(w) + ", \"repeat\": 21}");
      continue;
    }
    std::string b = "{\"articles\": [";
    for (uint32_t p = 0; p < o.probes; ++p) b += (p == 0 ? "{" : ", {") + probe_members(w) + "}";
    probe_bodies.push_back(b + "]}");
  }
  // A chunk's answer: its subscriptions' ids and feeds, in order; then its request, answer
  // and queries are freed (a 10M-subscription run holds ~4 GB of them otherwise).
  const auto take_answer = [&](size_t c) -> bool {
    if (statuses[c] != 200) {
      fmt::print(stderr, "\nload: bulk load: {} {}\n", statuses[c], answers[c].substr(0, 500));
      return false;
    }
    simdjson::dom::parser p;
    std::istringstream in(answers[c]);
    std::string line;
    uint64_t i = 0;
    const size_t n = chunk_queries[c].size();
    while (std::getline(in, line)) {
      if (line.empty()) continue;
      simdjson::dom::element e;
      if (p.parse(line).get(e) != simdjson::SUCCESS || i >= n) {
        fmt::print(stderr, "\nload: bulk answer line unreadable: {}\n", line);
        return false;
      }
      std::string_view id, feed;
      if (e["id"].get_string().get(id) != simdjson::SUCCESS ||
          e["feed"].get_string().get(feed) != simdjson::SUCCESS) {
        fmt::print(stderr, "\nload: subscription refused: {}\n", line);
        return false;
      }
      checked_subscription cs;
      cs.id = id;
      cs.query = std::move(chunk_queries[c][i]);
      cs.k = o.k;
      subs.push_back(std::move(cs));
      feed_paths.emplace_back(feed);
      ++i;
    }
    if (i != n) {
      fmt::print(stderr, "\nload: bulk answer has {} lines for {} subscriptions\n", i, n);
      return false;
    }
    std::string().swap(bodies[c]);
    std::string().swap(answers[c]);
    std::vector<std::string>().swap(chunk_queries[c]);
    return true;
  };
  std::vector<std::vector<double>> match_rows;  // subscriptions, then per probe: slowest shard
  double subscribe_s = 0;
  // feedplane's CPU seconds (every thread) over the same windows, per subscription: the
  // work's cost apart from the wall clock. On a shared VM it moves with the rate all the
  // same (the same work costs more CPU when the host is busier): a record, not a steadier
  // figure (bench/RESULTS.md, 2026-11-27).
  double subscribe_cpu_s = 0;
  const auto process_cpu_s = [&fp] {
    double c = 0;
    feedplane::bench::read_stat("/proc/" + std::to_string(fp.pid) + "/stat", nullptr, &c);
    return c;
  };
  // Relaxed: each counter only hands out or counts chunks; a chunk's answer is read after
  // the senders are joined (join orders their writes before the reads).
  std::atomic<size_t> next_chunk{0}, chunks_done{0};
  for (size_t step = 0; step < steps; ++step) {
    const size_t hi = chunks * (step + 1) / steps;
    t0 = clock_type::now();
    const double cpu0 = process_cpu_s();
    std::vector<std::thread> senders;
    for (uint32_t t = 0; t < std::max<uint32_t>(1, o.bulk_connections); ++t) {
      senders.emplace_back([&] {
        http hc;
        for (size_t c; (c = next_chunk.fetch_add(1, std::memory_order_relaxed)) < hi;) {
          statuses[c] = hc.request("POST", base + "/api/subscriptions:bulk", token, bodies[c],
                                   "application/x-ndjson", answers[c]);
          chunks_done.fetch_add(1, std::memory_order_relaxed);
        }
      });
    }
    for (size_t seen = chunks_done.load(std::memory_order_relaxed); seen < hi;) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      const size_t d = chunks_done.load(std::memory_order_relaxed);
      if (d == seen) continue;
      seen = d;
      const double made = double(std::min<uint64_t>(uint64_t(d) * chunk, o.subscriptions));
      progress("subscribe", made, double(o.subscriptions), "");
      memory_mib.emplace_back(made, feedplane::bench::rss_bytes(fp.pid) / 1048576.0);
    }
    for (auto& t : senders) t.join();
    next_chunk.store(hi, std::memory_order_relaxed);  // the overshoot of the step's senders
    subscribe_s += std::chrono::duration<double>(clock_type::now() - t0).count();
    subscribe_cpu_s += process_cpu_s() - cpu0;
    for (size_t c = chunks * step / steps; c < hi; ++c) {
      if (!take_answer(c)) {
        cleanup();
        return 2;
      }
    }
    std::vector<double> row = {double(std::min<uint64_t>(uint64_t(hi) * chunk, o.subscriptions))};
    for (const std::string& pb : probe_bodies) {
      double slowest = -1;  // the slower shard bounds the articles/s of the whole
      simdjson::dom::parser pp;
      simdjson::dom::element pe;
      simdjson::dom::array shards_arr;
      if (h.request("POST", base + "/api/match-time", token, pb, "application/json", body) == 200 &&
          pp.parse(body).get(pe) == simdjson::SUCCESS &&
          pe["shards"].get_array().get(shards_arr) == simdjson::SUCCESS) {
        for (auto sh : shards_arr) {
          double m = 0;
          if (sh["median_us"].get_double().get(m) == simdjson::SUCCESS)
            slowest = std::max(slowest, m);
        }
      }
      row.push_back(slowest);
    }
    match_rows.push_back(std::move(row));
  }

  fmt::print(
      stderr,
      "\nload: {} subscriptions in {:.2f} s ({:.0f}/s), feedplane {:.2f} CPU-s ({:.2f} us each)\n",
      subs.size(), subscribe_s, double(subs.size()) / subscribe_s, subscribe_cpu_s,
      1e6 * subscribe_cpu_s / double(std::max<size_t>(1, subs.size())));

  // Restart time (issue 11: <= 3 s per million subscriptions): stop feedplane (SIGTERM),
  // start it again on the same data, and time exec to /readyz answering 200, which a shard
  // gives once it has loaded its subscriptions and re-matched the article log. The run
  // then goes on with the last instance.
  // Restart number n: SIGTERM, start on the same data, until /readyz is 200; the seconds,
  // or a negative value when it failed (said on stderr). The new URL goes to *url.
  uint32_t restarts_done = 0;
  const auto restart = [&](std::string* url) -> double {
    const uint32_t n = ++restarts_done;
    fp.stop();
    const std::string old_log = fmt::format("{}/feedplane.before-restart-{}.log", o.out, n);
    std::rename((o.out + "/feedplane.log").c_str(), old_log.c_str());
    const auto rt0 = clock_type::now();
    if (!fp.start(fp_args, o.out + "/feedplane.log", {"FEEDPLANE_ADMIN_TOKEN=" + token}, "http://",
                  &err)) {
      fmt::print(stderr, "load: restart {}: {}\n", n, err);
      return -1;
    }
    *url = fp.url;
    http rh;
    std::string rbody;
    bool ready = false;
    for (int w = 0; w < 60'000 && !ready; ++w) {
      ready = rh.request("GET", *url + "/readyz", "", "", "", rbody) == 200;
      if (!ready) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (!ready) {
      fmt::print(stderr, "load: restart {}: /readyz never answered 200\n", n);
      return -1;
    }
    return std::chrono::duration<double>(clock_type::now() - rt0).count();
  };
  std::vector<double> restart_s, restart_rss_mib;
  for (uint32_t i = 0; i < o.restarts; ++i) {
    const double took = restart(&base);
    if (took < 0) {
      cleanup();
      return 2;
    }
    restart_s.push_back(took);
    restart_rss_mib.push_back(feedplane::bench::rss_bytes(fp.pid) / 1048576.0);
    fmt::print(stderr, "load: restart {} with {} subscriptions: ready in {:.2f} s, {:.0f} MiB\n",
               i + 1, subs.size(), restart_s.back(), restart_rss_mib.back());
  }

  // Publishing and polling.
  const std::string farm_base = farm.url;
  st = h.request("POST", farm_base + "/_farm/start", "", "", "", body);
  if (st != 200) {
    fmt::print(stderr, "load: the farm did not start publishing: {} {}\n", st, body);
    cleanup();
    return 2;
  }
  const double publish_start = now_s();
  t0 = clock_type::now();
  // Counters at the start of publishing, for rates over the run.
  std::string start_metrics, farm_start, farm_end, end_metrics;
  h.request("GET", base + "/metrics", "", "", "", start_metrics);
  h.request("GET", farm_base + "/_farm/stats", "", "", "", farm_start);
  auto cpu_start = thread_cpu(fp.pid);
  const auto farm_cpu_start = thread_cpu(farm.pid);
  // With --restart-during-run, what the first process counted over its part of publishing
  // (its scrapes and thread CPU at the start and at its stop): the report adds it to the
  // second's, whose own counters start at zero.
  std::string first_start_metrics, first_end_metrics;
  std::map<std::string, double> first_cpu_start, first_cpu_end;
  double mid_restart_s = -1, mid_restart_at = 0;
  // The pollers read the URL under this lock (it changes at the restart) and wait while
  // feedplane is down, so that no poll counts an outage as an error.
  std::mutex base_mu;
  std::atomic<bool> restarting{false};  // relaxed: a pause hint; the lock orders the URL
  // Pollers: P threads, each with its own connection, together polling at poll_rate, each
  // subscription's feed chosen at random and revalidated with its last ETag.
  struct poller_state {
    percentiles ms;
    uint64_t polls = 0, not_modified = 0, errors = 0;
    std::unordered_map<std::string, double> first_seen;  // item id -> unix seconds
  };
  const uint32_t npollers = std::max<uint32_t>(1, o.pollers);
  std::vector<poller_state> pst(npollers);
  std::vector<std::string> etags(subs.size());  // subscription i is polled by poller i % P
  std::atomic<uint64_t> polls_total{0};         // relaxed: a progress figure only
  std::vector<std::thread> pollers;
  for (uint32_t p = 0; p < npollers; ++p) {
    pollers.emplace_back([&, p] {
      http ph;
      poller_state& ps = pst[p];
      feedplane::workload::rng pr(o.seed * 31 + 7 + p);
      std::vector<served_raw> items;
      std::string pbody, perr;
      const double rate = o.poll_rate / npollers;
      for (;;) {
        const double el = std::chrono::duration<double>(clock_type::now() - t0).count();
        if (el >= o.duration) break;
        if (double(ps.polls) >= el * rate || subs.size() <= p ||
            restarting.load(std::memory_order_relaxed)) {
          std::this_thread::sleep_for(std::chrono::milliseconds(2));
          continue;
        }
        std::string url;
        {
          std::lock_guard<std::mutex> g(base_mu);
          url = base;
        }
        // A subscription of this poller's residue class (its ETag is this thread's alone).
        const size_t i =
            size_t(pr.below((subs.size() - p + npollers - 1) / npollers)) * npollers + p;
        std::string etag;
        const auto p0 = clock_type::now();
        const long code =
            ph.request("GET", url + feed_paths[i] + ".json", "", "", "", pbody, etags[i], &etag);
        ps.ms.v.push_back(
            std::chrono::duration<double, std::milli>(clock_type::now() - p0).count());
        ++ps.polls;
        polls_total.fetch_add(1, std::memory_order_relaxed);
        if (code == 304) {
          ++ps.not_modified;
        } else if (code == 200 && parse_served(pbody, items, &perr)) {
          etags[i] = etag;
          const double t = now_s();
          for (auto& it : items) ps.first_seen.emplace(it.id, t);
        } else {
          ++ps.errors;
        }
      }
    });
  }
  // The machine's own tail over publishing (machine_tail.h): a register-only quantum of
  // floor_us timed in this thread's CPU time every 2 ms, the limit the shards' CPU-time
  // tail below is read against (anything that stretches it stretches a match as long).
  percentiles floor_ns;
  std::thread floor_thread;
  if (o.floor_us > 0) {
    floor_thread = std::thread([&] {
      const uint64_t quantum = feedplane::bench::spin_steps_for(o.floor_us * 1e3);
      uint64_t x = 1;
      while (std::chrono::duration<double>(clock_type::now() - t0).count() < o.duration) {
        const double c0 = feedplane::bench::thread_cpu_ns();
        x = feedplane::bench::spin(quantum, x);
        floor_ns.v.push_back(feedplane::bench::thread_cpu_ns() - c0);
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
      }
      asm volatile("" : : "r"(x));  // the loop's result is used
    });
  }
  std::string status_line;
  bool restart_failed = false;
  for (;;) {
    const double el = std::chrono::duration<double>(clock_type::now() - t0).count();
    if (el >= o.duration) break;
    if (o.restart_during_run && mid_restart_s < 0 && !restart_failed && el >= o.duration / 2) {
      // Halfway: stop feedplane while the farm publishes and start it again on the same
      // data. The first process's counters end here; the second's start when it is ready.
      restarting.store(true, std::memory_order_relaxed);
      h.request("GET", base + "/metrics", "", "", "", first_end_metrics);
      first_cpu_end = thread_cpu(fp.pid);
      first_start_metrics = std::move(start_metrics);
      first_cpu_start = std::move(cpu_start);
      mid_restart_at = el;
      std::string url;
      mid_restart_s = restart(&url);
      if (mid_restart_s < 0) {
        restart_failed = true;
        restarting.store(false, std::memory_order_relaxed);  // the pollers end at duration
        break;
      }
      {
        std::lock_guard<std::mutex> g(base_mu);
        base = url;
      }
      h.request("GET", base + "/metrics", "", "", "", start_metrics);
      cpu_start = thread_cpu(fp.pid);
      fmt::print(stderr, "\nload: restarted during the run at {:.0f} s: ready in {:.2f} s\n", el,
                 mid_restart_s);
      restarting.store(false, std::memory_order_relaxed);
    }
    std::string m;
    h.request("GET", base + "/metrics", "", "", "", m);
    status_line = fmt::format("{} polls, {:.0f} articles sequenced",
                              polls_total.load(std::memory_order_relaxed),
                              metric(m, "feedplane_store_articles_sequenced_total"));
    progress("run", el, o.duration, status_line);
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  for (auto& t : pollers) t.join();
  if (floor_thread.joinable()) floor_thread.join();
  if (restart_failed) {
    cleanup();
    return 2;
  }
  percentiles poll_ms;
  uint64_t polls = 0, polls_304 = 0, polls_err = 0;
  std::unordered_map<std::string, double> first_seen;
  std::unordered_map<std::string, uint64_t> known_seq;
  for (auto& ps : pst) {
    poll_ms.v.insert(poll_ms.v.end(), ps.ms.v.begin(), ps.ms.v.end());
    polls += ps.polls;
    polls_304 += ps.not_modified;
    polls_err += ps.errors;
    for (auto& [id, t] : ps.first_seen) {
      auto [it, added] = first_seen.emplace(id, t);
      if (!added) it->second = std::min(it->second, t);
    }
  }
  h.request("POST", farm_base + "/_farm/stop", "", "", "", body);
  const double publish_end = now_s();
  h.request("GET", base + "/metrics", "", "", "", end_metrics);
  h.request("GET", farm_base + "/_farm/stats", "", "", "", farm_end);
  const auto cpu_end = thread_cpu(fp.pid);
  const auto farm_cpu_end = thread_cpu(farm.pid);
  const double rss_end = feedplane::bench::rss_bytes(fp.pid);

  // Quiesce: no new article sequenced for `quiet` seconds, after at least one crawl ceiling.
  fmt::print(stderr, "\nload: publishing stopped; waiting for the pipeline to go quiet\n");
  {
    // After `quiet` seconds without a new article and two crawl ceilings (a source that
    // failed once is fetched again), or 600 s: the check then reports what is missing.
    double seq = 0;
    wait_until_quiet(h, base, token, publish_end * 1000, o.quiet, double(o.max_interval) * 2 + 1,
                     600, &seq);
  }

  // Every article feedplane sequenced: the sequence of each entry, served or not, and when
  // it was fetched and sequenced (the intra-network latency up to the broadcast).
  uint64_t sequenced = 0;
  percentiles intra_ms;
  std::unordered_map<std::string, int64_t> sequenced_at;
  for (uint64_t after = backlog_articles;;) {
    st = h.request("GET", fmt::format("{}/api/articles?after={}&limit=10000", base, after), token,
                   "", "", body);
    simdjson::dom::parser p;
    simdjson::dom::element e;
    simdjson::dom::array arr;
    uint64_t next_after = 0;
    if (st != 200 || p.parse(body).get(e) != simdjson::SUCCESS ||
        e["articles"].get_array().get(arr) != simdjson::SUCCESS ||
        e["next_after"].get_uint64().get(next_after) != simdjson::SUCCESS) {
      fmt::print(stderr, "\nload: GET /api/articles: {} {}\n", st, body.substr(0, 300));
      cleanup();
      return 2;
    }
    for (auto a : arr) {
      std::string_view guid, link;
      uint64_t seq = 0;
      int64_t fetched_ms = 0, sequenced_ms = 0;
      if (a["seq"].get_uint64().get(seq) != simdjson::SUCCESS) continue;
      if (a["fetched_ms"].get_int64().get(fetched_ms) == simdjson::SUCCESS &&
          a["sequenced_ms"].get_int64().get(sequenced_ms) == simdjson::SUCCESS && fetched_ms > 0 &&
          sequenced_ms > 0)
        intra_ms.v.push_back(double(sequenced_ms - fetched_ms));
      if (a["guid"].get_string().get(guid) != simdjson::SUCCESS) guid = {};
      if (a["link"].get_string().get(link) != simdjson::SUCCESS) link = {};
      known_seq[std::string(guid.empty() ? link : guid)] = seq;
      if (sequenced_ms > 0) sequenced_at[std::string(guid.empty() ? link : guid)] = sequenced_ms;
      ++sequenced;
    }
    if (next_after == after) break;
    after = next_after;
  }
  std::string final_metrics;
  h.request("GET", base + "/metrics", "", "", "", final_metrics);
  // Kept beside the report: every figure the run's feedplane counted, for what the report
  // does not show (OUT/metrics.txt; after the last restart, so that process's counts).
  std::ofstream(o.out + "/metrics.txt") << final_metrics;
  // Exact quantiles of the live articles' match times on the shards (issue 11's tail: p99
  // within 3x the median), by article length; "about 61 words" is matcher_bench's case.
  struct tail_row {
    std::string label;
    uint64_t lo, hi;
    double articles = 0, index[3] = {}, cpu[3] = {}, total[3] = {};  // p50, p99, p99/p50
    double postings = 0, candidates = 0;  // the index's work per article (means)
  };
  uint64_t upkeep_passes = 0, refiled = 0;  // the index's upkeep, shards summed
  std::vector<tail_row> tail = {{"about 61 words (50-75)", 50, 75},
                                {"<= 64", 0, 64},
                                {"65-256", 65, 256},
                                {"257-1024", 257, 1024},
                                {"> 1024", 1025, UINT32_MAX},
                                {"all", 0, UINT32_MAX}};
  for (tail_row& t : tail) {
    std::string stats;
    simdjson::dom::parser tp;
    simdjson::dom::element te;
    // The row of every article also brings every sample itself (when, its work, what else
    // the shard was doing), kept for a reader who wants to know what the slow articles
    // have in common (bench/match_samples.py).
    const bool all = t.lo == 0 && t.hi == UINT32_MAX;
    if (h.request("GET",
                  fmt::format("{}/api/match-stats?min_words={}&max_words={}{}", base, t.lo, t.hi,
                              all ? "&samples=1" : ""),
                  token, "", "", stats) != 200 ||
        tp.parse(stats).get(te) != simdjson::SUCCESS)
      continue;
    if (all) std::ofstream(o.out + "/match-samples.json") << stats;
    const auto read = [&](const char* part, double* out) {
      double v = 0;
      for (const auto& [i, k] : {std::pair{0, "p50"}, {1, "p99"}, {2, "p99_over_p50"}})
        if (te[part][k].get_double().get(v) == simdjson::SUCCESS) out[i] = v;
    };
    uint64_t n = 0;
    if (te["articles"].get_uint64().get(n) == simdjson::SUCCESS) t.articles = double(n);
    read("index_us", t.index);
    read("index_cpu_us", t.cpu);
    read("total_us", t.total);
    simdjson::dom::array shards;
    if (te["shards"].get_array().get(shards) != simdjson::SUCCESS) continue;
    uint64_t passes = 0, moved = 0;
    for (simdjson::dom::element sh : shards) {
      uint64_t count = 0, p = 0, m = 0;
      double post = 0, cand = 0;
      if (sh["articles"].get_uint64().get(count) != simdjson::SUCCESS ||
          sh["postings"].get_double().get(post) != simdjson::SUCCESS ||
          sh["candidates"].get_double().get(cand) != simdjson::SUCCESS ||
          sh["upkeep_passes"].get_uint64().get(p) != simdjson::SUCCESS ||
          sh["refiled"].get_uint64().get(m) != simdjson::SUCCESS)
        continue;
      if (t.articles > 0) {
        t.postings += post * double(count) / t.articles;
        t.candidates += cand * double(count) / t.articles;
      }
      passes += p;
      moved += m;
    }
    upkeep_passes = passes;
    refiled = moved;
  }

  // The truth log is whole: the farm stopped publishing before the quiesce, and flushes
  // after every publishing tick.
  std::vector<feedplane::load::truth_entry> truth_entries;
  if (!feedplane::load::read_truth(o.out + "/truth.jsonl", truth_entries, &err,
                                   /*keep_initial=*/false)) {
    fmt::print(stderr, "\nload: {}\n", err);
    cleanup();
    return 2;
  }
  const feedplane::load::truth_index truth(std::move(truth_entries));

  // Read every checked feed, on 32 connections at once (a 10M-subscription run reads ten
  // million feeds, and a poll of a feed owned by another shard waits for that shard's next
  // loop turn, a few milliseconds while it matches). Items are kept as truth-log indices,
  // 16 bytes each.
  //
  // With --check-subscriptions N, a uniform sample of N subscriptions (fixed by the seed) is
  // read and checked instead of all: at 10M subscriptions reading every feed took about two
  // hours on the 2-vCPU machine (each read renders its feed: 1,500 feeds/s while crawling).
  std::vector<size_t> checked_idx(subs.size());
  for (size_t i = 0; i < checked_idx.size(); ++i) checked_idx[i] = i;
  if (o.check_subscriptions != 0 && o.check_subscriptions < subs.size()) {
    feedplane::workload::rng cr(o.seed * 104729 + 3);
    for (size_t i = 0; i < o.check_subscriptions; ++i) {  // a partial Fisher-Yates shuffle
      std::swap(checked_idx[i], checked_idx[i + size_t(cr.below(checked_idx.size() - i))]);
    }
    checked_idx.resize(o.check_subscriptions);
    std::sort(checked_idx.begin(), checked_idx.end());
  }
  fmt::print(stderr, "load: reading {} feeds\n", checked_idx.size());
  std::atomic<uint64_t> read_errors{0};  // relaxed: counted, read after the join
  {
    std::atomic<size_t> next_feed{0}, feeds_read{0};  // relaxed: hand out indices, progress
    std::vector<std::thread> readers;
    for (int t = 0; t < 32; ++t) {
      readers.emplace_back([&] {
        http rh;
        std::string rbody, rerr;
        std::vector<served_raw> items;
        for (size_t n;
             (n = next_feed.fetch_add(1, std::memory_order_relaxed)) < checked_idx.size();) {
          const size_t i = checked_idx[n];
          const long code = rh.request("GET", base + feed_paths[i] + ".json", "", "", "", rbody);
          if (code != 200 || !parse_served(rbody, items, &rerr)) {
            read_errors.fetch_add(1, std::memory_order_relaxed);
          } else {
            auto& sub = subs[i];
            sub.served.clear();
            for (auto& it : items) {
              const uint32_t e = truth.find(it.id);
              if (e == feedplane::load::truth_index::unknown) {
                sub.unknown.push_back(std::move(it.id));
              } else {
                sub.served.push_back({e, it.seq});
              }
            }
            sub.served.shrink_to_fit();
          }
          feeds_read.fetch_add(1, std::memory_order_relaxed);
        }
      });
    }
    for (size_t seen = 0; seen < checked_idx.size();) {
      std::this_thread::sleep_for(std::chrono::milliseconds(250));
      seen = feeds_read.load(std::memory_order_relaxed);
      progress("read", double(seen), double(checked_idx.size()), "");
    }
    for (auto& t : readers) t.join();
  }
  cleanup();
  // The checked subscriptions, in order.
  std::vector<checked_subscription> checked;
  if (checked_idx.size() == subs.size()) {
    checked = std::move(subs);
  } else {
    checked.reserve(checked_idx.size());
    for (size_t i : checked_idx) checked.push_back(std::move(subs[i]));
  }
  const size_t subscriptions_n = feed_paths.size();

  // feedplane's sequence of every truth entry (0: never sequenced).
  std::vector<uint64_t> entry_seq(truth.size(), 0);
  for (const auto& [id, q] : known_seq) {
    const uint32_t e = truth.find(id);
    if (e != feedplane::load::truth_index::unknown) entry_seq[e] = q;
  }
  fmt::print(stderr, "\nload: checking delivery ({} truth entries)\n", truth.size());
  // An entry that left its feed sooner than the crawl ceiling (plus a fetch's time) after
  // it was published may never have been in a fetched document.
  const double grace = double(o.max_interval) + 5;
  const auto check_t0 = clock_type::now();
  const auto res = feedplane::load::check_delivery(truth, checked, entry_seq, grace);
  const double check_s = std::chrono::duration<double>(clock_type::now() - check_t0).count();
  percentiles lag;
  uint64_t published = 0, never_sequenced = 0;
  for (uint32_t i = 0; i < truth.size(); ++i) {
    if (truth.entries()[i].initial) continue;
    ++published;
    never_sequenced += entry_seq[i] == 0 ? 1 : 0;
  }
  // A published entry (not the initial backlog) by the id it is served as.
  const auto published_entry = [&](std::string_view id) -> const feedplane::load::truth_entry* {
    const uint32_t e = truth.find(id);
    if (e == feedplane::load::truth_index::unknown || truth.entries()[e].initial) return nullptr;
    return &truth.entries()[e];
  };
  // Lag from true publish to availability (sequenced and broadcast to every shard's
  // reflector); it includes the wait for the crawler's next fetch.
  for (const auto& [id, t] : sequenced_at) {
    if (const auto* e = published_entry(id)) lag.v.push_back(double(t) / 1000 - e->published);
  }
  percentiles seen_lag;  // true publish to first seen by a poller (adds the poll interval)
  for (const auto& [id, t] : first_seen) {
    if (const auto* e = published_entry(id)) seen_lag.v.push_back(t - e->published);
  }
  plot_cdf(o.out, "lag", "seconds from true publish to availability at the reflectors", lag.v);
  plot_cdf(o.out, "intra", "milliseconds from fetch to sequenced (Figure 13)", intra_ms.v);
  plot_cdf(o.out, "poll", "poll latency, milliseconds", poll_ms.v);

  std::ofstream rep(o.out + "/report.md");
  rep << fmt::format("# feedplane load run\n\n");
  rep << fmt::format(
      "- feeds {}, subscriptions {}, k {}, duration {} s, farm speed {}x, crawl "
      "interval {}-{} s\n",
      o.feeds, subscriptions_n, o.k, o.duration, o.speed, o.min_interval, o.max_interval);
  rep << fmt::format("- OPML import of {} feeds: {:.2f} s\n", o.feeds, import_s);
  rep << fmt::format(
      "- subscriptions loaded through the bulk API ({} connections): {:.2f} s ({:.0f}/s); "
      "feedplane's CPU over it: {:.2f} s ({:.2f} us per subscription)\n",
      std::max<uint32_t>(1, o.bulk_connections), subscribe_s, double(subscriptions_n) / subscribe_s,
      subscribe_cpu_s, 1e6 * subscribe_cpu_s / double(std::max<uint64_t>(1, subscriptions_n)));
  if (!restart_s.empty()) {
    std::vector<double> sorted = restart_s;
    std::sort(sorted.begin(), sorted.end());
    const double median = sorted[sorted.size() / 2];
    rep << fmt::format(
        "- restarts with {} subscriptions (SIGTERM, start, until /readyz is 200): median "
        "{:.2f} s (range {:.2f}-{:.2f}, {} restarts), {:.2f} s per million; resident after "
        "the last {:.0f} MiB\n",
        subscriptions_n, median, sorted.front(), sorted.back(), sorted.size(),
        (subscriptions_n == 0) ? 0.0 : median / (double(subscriptions_n) / 1e6),
        restart_rss_mib.back());
  }
  if (mid_restart_s >= 0) {
    rep << fmt::format(
        "- restart during publishing, at {:.0f} s of {:.0f} (SIGTERM, start, until /readyz is "
        "200; the farm went on publishing and the pollers waited): ready in {:.2f} s. Rates "
        "and CPU below add both processes' parts; the exact tail and the upkeep are the "
        "second's alone\n",
        mid_restart_at, o.duration, mid_restart_s);
  }
  rep << fmt::format("- entries published while running: {} (over {:.0f} s)\n", published,
                     publish_end - publish_start);
  rep << fmt::format(
      "- articles sequenced by feedplane: {} (entries published but never "
      "sequenced: {})\n",
      sequenced, never_sequenced);
  rep << fmt::format("- polls: {} ({} 304, {} errors); poll latency p50 {:.2f} ms, p99 {:.2f} ms\n",
                     polls, polls_304, polls_err, poll_ms.at(0.5), poll_ms.at(0.99));
  rep << fmt::format(
      "- time from true publish to availability at the reflectors (includes waiting for the "
      "crawler's next fetch; the farm's clock runs {}x): p50 {:.1f} s, p90 {:.1f} s, p99 {:.1f} s "
      "over {} articles (lag.png)\n",
      o.speed, lag.at(0.5), lag.at(0.9), lag.at(0.99), lag.v.size());
  rep << fmt::format(
      "- intra-network latency, fetch to sequenced (durable, then broadcast to every shard; "
      "Figure 13): p50 {:.1f} ms, p90 {:.1f} ms, p99 {:.1f} ms, max {:.1f} ms (intra.png)\n",
      intra_ms.at(0.5), intra_ms.at(0.9), intra_ms.at(0.99), intra_ms.at(1.0));
  // Cobra's intra-network latency ends at the reflector: fetch to the matches in every
  // shard's lists, from the shards' histogram over publishing and the quiesce.
  // The buckets observed over publishing and the quiesce, both processes' with a restart
  // during the run.
  const auto observed = [&](const std::string& name, const std::string& labels = {}) {
    auto b = histogram_delta(start_metrics, final_metrics, name, labels);
    if (!first_end_metrics.empty())
      histogram_add(b, histogram_delta(first_start_metrics, first_end_metrics, name, labels));
    return b;
  };
  const auto delivered = observed("feedplane_reflector_delivered_seconds");
  {
    std::vector<std::pair<double, double>> cdf;
    const double n = delivered.empty() ? 0 : delivered.back().second;
    for (const auto& [le, cum] : delivered) {
      if (std::isfinite(le) && n > 0) cdf.emplace_back(le * 1e3, cum / n);
    }
    plot_xy(o.out, "delivered", "milliseconds from fetch to matched in the lists of every shard",
            "share of (article, shard) pairs", cdf, true);
  }
  rep << fmt::format(
      "- intra-network latency to the reflectors, fetch to the matches in each shard's lists "
      "(Cobra's measure, Figure 13; power-of-two buckets, over {:.0f} article-shard pairs): "
      "p50 <= {:.0f} ms, p90 <= {:.0f} ms, p99 <= {:.0f} ms (delivered.png)\n",
      delivered.empty() ? 0.0 : delivered.back().second, bucket_quantile(delivered, 0.5) * 1e3,
      bucket_quantile(delivered, 0.9) * 1e3, bucket_quantile(delivered, 0.99) * 1e3);
  rep << fmt::format(
      "- time from true publish to first seen by a poller (adds the poll interval): "
      "p50 {:.1f} s, p90 {:.1f} s over {} items\n",
      seen_lag.at(0.5), seen_lag.at(0.9), seen_lag.v.size());
  rep << fmt::format(
      "- delivery checked on {} of {} subscriptions ({}); feeds that could not be read at the "
      "end: {}\n",
      checked.size(), subscriptions_n,
      checked.size() == subscriptions_n ? "every one" : "a uniform sample, --check-subscriptions",
      read_errors.load());
  rep << fmt::format(
      "- missed at source (never sequenced, left their feed within {:.0f} s of "
      "being published): {}\n",
      grace, res.missed_at_source);
  // ---- the paper's figures: bandwidth per tier, conditional GET, memory, match, CPU ----
  const double run_s = std::max(publish_end - publish_start, 1e-3);
  const auto delta = [&](const std::string& name) {
    double d =
        std::max(0.0, metric(end_metrics, name)) - std::max(0.0, metric(start_metrics, name));
    if (!first_end_metrics.empty())
      d += std::max(0.0, metric(first_end_metrics, name)) -
           std::max(0.0, metric(first_start_metrics, name));
    return d;
  };
  const auto mbps = [&](double bytes) { return bytes * 8 / run_s / 1e6; };
  const auto fetches = [&](const char* result) {
    return delta(fmt::format("feedplane_crawler_fetches_total{{result=\"{}\"}}", result));
  };
  const auto fetch_bytes = [&](const char* result) {
    return delta(fmt::format("feedplane_crawler_bytes_total{{result=\"{}\"}}", result));
  };
  const double farm_out = json_number(farm_end, "bytes_out") - json_number(farm_start, "bytes_out");
  const double article_bytes = delta("feedplane_crawler_article_bytes_total");
  const double entry_bytes = delta("feedplane_crawler_entry_bytes_total");
  const double articles_n = delta("feedplane_crawler_articles_total");
  const double served_out = delta("feedplane_http_bytes_sent_total");
  const double served_in = delta("feedplane_http_bytes_received_total");
  rep << fmt::format(
      "\n## Bandwidth per tier (Figure 12), over the {:.0f} s of publishing\n\n"
      "| tier | what | bytes | Mbit/s |\n| --- | --- | --- | --- |\n"
      "| crawler in | documents and 304s from the farm (its servers' bytes out) | {:.0f} | {:.3f} "
      "|\n"
      "| stream | new and updated articles handed to the store and every shard ({:.0f} "
      "articles, frozen with their word hashes) | {:.0f} | {:.3f} |\n"
      "| reflector in | poll and API requests | {:.0f} | {:.3f} |\n"
      "| reflector out | served feeds, 304s and API answers | {:.0f} | {:.3f} |\n",
      run_s, farm_out, mbps(farm_out), articles_n, article_bytes, mbps(article_bytes), served_in,
      mbps(served_in), served_out, mbps(served_out));
  const char* results[] = {"new_entries", "no_new_entries", "unchanged", "not_modified", "error"};
  double all_fetches = 0, ok_n = 0, ok_bytes = 0, wire = 0;
  rep << "\n| fetch result | fetches | bytes on the wire | mean bytes |\n| --- | --- | --- | --- "
         "|\n";
  for (const char* res_name : results) {
    const double n = fetches(res_name), b = fetch_bytes(res_name);
    all_fetches += n;
    wire += b;
    if (std::string_view(res_name) != "not_modified" && std::string_view(res_name) != "error") {
      ok_n += n;
      ok_bytes += b;
    }
    rep << fmt::format("| {} | {:.0f} | {:.0f} | {:.0f} |\n", res_name, n, b, n > 0 ? b / n : 0);
  }
  const double full_doc = ok_n > 0 ? ok_bytes / ok_n : 0;
  const double no_cond = all_fetches * full_doc;
  const double parsed = fetch_bytes("new_entries") + fetch_bytes("no_new_entries");
  const auto share = [&](double v) { return no_cond > 0 ? 100.0 * v / no_cond : 0.0; };
  rep << fmt::format(
      "\n## What each stage saves (Figure 8)\n\n"
      "| stage | bytes | of every fetch a full document |\n| --- | --- | --- |\n"
      "| every fetch a full document (no conditional GET; mean 2xx document {:.0f} B) | {:.0f} | "
      "100% |\n"
      "| on the wire with conditional GET (If-None-Match, If-Modified-Since) | {:.0f} | {:.1f}% |\n"
      "| parsed after the document hash (changed documents) | {:.0f} | {:.1f}% |\n"
      "| new and updated entries after the entry hashes (their text) | {:.0f} | {:.1f}% |\n",
      full_doc, no_cond, wire, share(wire), parsed, share(parsed), entry_bytes, share(entry_bytes));
  plot_xy(o.out, "memory", "subscriptions", "feedplane resident memory, MiB", memory_mib);
  rep << "\n## Memory against subscriptions (Figure 7; memory.png)\n\n"
         "| subscriptions | resident MiB |\n| --- | --- |\n";
  for (size_t i = 0; i < memory_mib.size(); ++i) {
    const size_t step = std::max<size_t>(1, memory_mib.size() / 10);
    if (i % step != 0 && i + 1 != memory_mib.size()) continue;
    rep << fmt::format("| {:.0f} | {:.1f} |\n", memory_mib[i].first, memory_mib[i].second);
  }
  rep << fmt::format("| at the end of publishing | {:.1f} |\n", rss_end / 1048576.0);
  if (memory_mib.size() >= 2 && memory_mib.back().first > 0) {
    rep << fmt::format(
        "\nGrowth per subscription: {:.0f} B (sources and runtime before any: {:.1f} MiB).\n",
        (memory_mib.back().second - memory_mib.front().second) * 1048576.0 /
            memory_mib.back().first,
        memory_mib.front().second);
  }
  const double match_n = delta("feedplane_reflector_match_seconds_count");
  const double match_s = delta("feedplane_reflector_match_seconds_sum");
  const uint32_t shards_n = uint32_t(std::max(1.0, metric(end_metrics, "feedplane_shards")));
  rep << fmt::format(
      "\n## Match time (Figure 10)\n\n"
      "Each article is matched on every shard against the subscriptions that shard owns ({} "
      "subscriptions over {} shards): {:.0f} matches of an article on a shard, mean {:.1f} us, "
      "p50 <= {:.0f} us, p99 <= {:.0f} us (power-of-two buckets), list appends included.\n",
      subscriptions_n, shards_n, match_n, match_n > 0 ? match_s / match_n * 1e6 : 0,
      histogram_quantile(end_metrics, "feedplane_reflector_match_seconds", 0.5) * 1e6,
      histogram_quantile(end_metrics, "feedplane_reflector_match_seconds", 0.99) * 1e6);
  rep << "\n| article words | matches on a shard | p50 us | p99 us |\n| --- | --- | --- | --- |\n";
  for (const char* words : {"<=64", "<=256", "<=1024", ">1024"}) {
    const auto b =
        observed("feedplane_reflector_match_by_words_seconds", fmt::format("words=\"{}\",", words));
    const double n = b.empty() ? 0 : b.back().second;
    if (n <= 0) continue;
    rep << fmt::format("| {} | {:.0f} | <= {:.0f} | <= {:.0f} |\n", words, n,
                       bucket_quantile(b, 0.5) * 1e6, bucket_quantile(b, 0.99) * 1e6);
  }
  rep << "\nThe tail, exactly (GET /api/match-stats: each shard's last 65,536 live articles, "
         "all shards together; the index's match alone in wall time and in the shard "
         "thread's CPU time, which leaves out preemption by other threads on shared cores, "
         "and with the list appends in wall time; the index's work per article, posting "
         "entries read and entries checked beyond their filing word, means):\n\n"
         "| article words | matches on a shard | index p50 us | index p99 us | index p99 / p50 | "
         "index CPU p50 us | CPU p99 us | CPU p99 / p50 | with appends p50 us | p99 us | "
         "p99 / p50 | postings | candidates |\n"
         "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n";
  for (const tail_row& t : tail) {
    if (t.articles <= 0) continue;
    rep << fmt::format(
        "| {} | {:.0f} | {:.1f} | {:.1f} | {:.2f} | {:.1f} | {:.1f} | {:.2f} | {:.1f} | {:.1f} | "
        "{:.2f} | {:.0f} | {:.0f} |\n",
        t.label, t.articles, t.index[0], t.index[1], t.index[2], t.cpu[0], t.cpu[1], t.cpu[2],
        t.total[0], t.total[1], t.total[2], t.postings, t.candidates);
  }
  if (floor_ns.v.size() >= 100) {
    const double p50 = floor_ns.at(0.5), p99 = floor_ns.at(0.99);
    rep << fmt::format(
        "\nThe machine's own tail, the limit for the CPU-time columns above (bench/"
        "machine_tail.h: a register-only loop of {:.0f} us, no loads or stores, timed in a "
        "driver thread's CPU time every 2 ms over publishing; what stretches it, interrupts "
        "and time the hypervisor takes unseen, stretches a match as long): {} samples, "
        "p50 {:.1f} us, p99 {:.1f} us, p99 / p50 {:.2f}.\n",
        o.floor_us, floor_ns.v.size(), p50 / 1e3, p99 / 1e3, p99 / p50);
  }
  rep << fmt::format(
      "\nThe index's upkeep (re-filing each clause under its rarest word as the word counts "
      "move): {} passes, {} clauses re-filed, shards summed, since the last start.\n",
      upkeep_passes, refiled);
  {
    std::vector<std::string> titles;
    for (size_t w : probe_words) titles.push_back(fmt::format("{} words", w));
    plot_lines(o.out, "match", "subscriptions (all shards)",
               "median us to match one article, slowest shard", titles, match_rows);
    rep << fmt::format(
        "\nMatch time against subscriptions and article words, measured after each step of "
        "the bulk load (POST /api/match-time, all shards at once: {}; the median of the "
        "slowest of {} shards, us; match.png):\n\n"
        "| subscriptions |",
        o.probes == 1
            ? std::string("every shard matches a probe article 21 times against what it holds")
            : fmt::format("every shard matches a pool of {} probe articles of each length in "
                          "turn, {} passes, against what it holds",
                          o.probes, std::max<uint32_t>(1, 1000 / o.probes)),
        shards_n);
    for (const auto& t : titles) rep << " " << t << " |";
    rep << "\n| --- |";
    for (size_t i = 0; i < titles.size(); ++i) rep << " --- |";
    rep << "\n";
    for (const auto& row : match_rows) {
      rep << fmt::format("| {:.0f} |", row[0]);
      for (size_t i = 1; i < row.size(); ++i) rep << fmt::format(" {:.1f} |", row[i]);
      rep << "\n";
    }
  }
  const double ingest_s = delta("feedplane_crawler_ingest_cpu_seconds_sum");
  rep << "\n## CPU per tier over the publishing time\n\n"
         "| process / thread | CPU seconds | cores |\n| --- | --- | --- |\n";
  double shard_cpu = 0;
  // Each thread kind's CPU over publishing: with a restart during the run, the first
  // process's up to its stop and the second's from ready (its start-up is the restart's).
  const auto used = [](const std::map<std::string, double>& from,
                       const std::map<std::string, double>& to, const std::string& name) {
    const auto e = to.find(name);
    const auto b = from.find(name);
    return (e == to.end() ? 0 : e->second) - (b == from.end() ? 0 : b->second);
  };
  for (const auto& kind : cpu_end) {
    const std::string& name = kind.first;
    const double d = used(cpu_start, cpu_end, name) + used(first_cpu_start, first_cpu_end, name);
    if (name == "shard") shard_cpu = d;
    rep << fmt::format("| feedplane {} | {:.2f} | {:.2f} |\n", name, d, d / run_s);
  }
  rep << fmt::format(
      "| of the shards: crawl (hash, parse, dedup, freeze) | {:.2f} | {:.2f} |\n"
      "| of the shards: match (index and list appends) | {:.2f} | {:.2f} |\n"
      "| of the shards: the rest (io_uring, HTTP client and server, polls, rendering, API) | "
      "{:.2f} | {:.2f} |\n",
      ingest_s, ingest_s / run_s, match_s, match_s / run_s,
      std::max(0.0, shard_cpu - ingest_s - match_s),
      std::max(0.0, shard_cpu - ingest_s - match_s) / run_s);
  double farm_cpu = 0;
  for (const auto& [name, end_s] : farm_cpu_end) {
    const auto it = farm_cpu_start.find(name);
    farm_cpu += end_s - (it == farm_cpu_start.end() ? 0 : it->second);
  }
  rep << fmt::format("| the farm (all threads) | {:.2f} | {:.2f} |\n\n", farm_cpu,
                     farm_cpu / run_s);
  rep << fmt::format(
      "- served items that are no true match: {}; queries the reference refused: "
      "{}\n\n",
      res.false_items, res.bad_queries);
  rep << fmt::format("- the delivery check took {:.1f} s ({} subscriptions, {} truth entries)\n\n",
                     check_s, res.subscriptions, truth.size());
  for (const auto& x : res.examples) rep << "    " << x << "\n";
  rep << "\n" << res.line() << "\n";
  rep.close();
  for (const auto& x : res.examples) fmt::print("  {}\n", x);
  fmt::print("report: {}/report.md\n", o.out);
  fmt::print("{}\n", res.line());
  return res.ok() && read_errors.load() == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "feedplane-load: starts a feed farm and feedplane, loads sources and subscriptions, runs, "
      "and checks delivery against the farm's truth log"};
  options o;
  app.add_option("--feeds", o.feeds, "synthetic feeds in the farm");
  app.add_option("--subscriptions", o.subscriptions, "subscriptions (Cobra's workload)");
  app.add_option("--duration", o.duration, "seconds of publishing");
  app.add_option("--out", o.out, "directory for logs, the truth log and the report");
  app.add_option("--speed", o.speed, "the farm's posting clock runs this much faster");
  app.add_option("--pollers", o.pollers, "poller threads");
  app.add_option("--poll-rate", o.poll_rate, "polls per second while running");
  app.add_option("--shards", o.shards, "feedplane shards (0: one per core)");
  app.add_option("--k", o.k, "matches kept per subscription");
  app.add_option("--min-interval", o.min_interval, "crawler floor for the run, seconds");
  app.add_option("--max-interval", o.max_interval, "crawler ceiling for the run, seconds");
  app.add_option("--check-subscriptions", o.check_subscriptions,
                 "read and check a uniform sample of this many subscriptions (0: every one; "
                 "each read renders a feed, so ten million take hours)");
  app.add_option("--farm-addresses", o.farm_addresses,
                 "loopback addresses (127.0.0.1 ... 127.0.0.N) the farm's plain hosts are "
                 "spread over, so new connections to many hosts do not run out of ephemeral "
                 "ports to one address")
      ->check(CLI::Range(1, 250))
      ->capture_default_str();
  app.add_option("--max-in-flight", o.max_in_flight,
                 "feedplane's fetches in flight per shard (0: its default; the farm is one "
                 "loop, and a million-feed backlog crawl with thousands queued at it times out)");
  app.add_option("--quiet", o.quiet,
                 "seconds without a new article before checking that every source was fetched");
  app.add_option("--seed", o.seed, "seed of the farm and the workload");
  app.add_option("--https-share", o.https_share,
                 "share of the farm's hosts served over HTTPS (feedplane trusts the farm's CA)")
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--bulk-connections", o.bulk_connections,
                 "bulk subscription requests in flight at once");
  app.add_option("--restarts", o.restarts,
                 "restart feedplane this many times after loading subscriptions and report "
                 "the time until it is ready");
  app.add_option("--floor-us", o.floor_us,
                 "length of the register-only loop timed over publishing as the machine's own "
                 "tail (0: none)")
      ->check(CLI::Range(0.0, 10000.0));
  app.add_option("--probes", o.probes,
                 "probe articles of each length (61, 500, 2,000 words) every shard matches "
                 "after each tenth of the bulk load: one is matched 21 times, a pool of "
                 "several in turn as a stream (Figure 10's table keeps the slowest shard's "
                 "median)")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  app.add_flag("--restart-during-run", o.restart_during_run,
               "also restart feedplane halfway through publishing (the farm goes on, pollers "
               "wait): the exact tail is then what a restart under load leaves, and the "
               "delivery check spans the restart");
  app.add_option("--farm-bin", o.farm_bin, "feedplane-farm binary (default: beside this one)");
  app.add_option("--feedplane-bin", o.feedplane_bin, "feedplane binary (default: beside this one)");
  CLI11_PARSE(app, argc, argv);
  signal(SIGPIPE, SIG_IGN);
  curl_global_init(CURL_GLOBAL_DEFAULT);
  const int rc = run(o);
  curl_global_cleanup();
  return rc;
}
