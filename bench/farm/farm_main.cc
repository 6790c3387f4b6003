// feedplane-farm: the synthetic feed farm of the load harness (issue 12), served on loopback
// by net's HTTP server on one io_uring loop. `feedplane farm ARGS` runs it (dataplane's
// cmd_farm.cc execs this binary, found beside `feedplane`, as git runs its subcommands).
//
//   GET  /feed/ID.EXT   feed ID's document, chosen by the Host header and the path (404 when
//                       the host does not carry that feed); ETag / Last-Modified and 304 as
//                       the feed's validators say; gzip when asked. Misbehaving hosts
//                       (--misbehaving) answer as farm::misbehaviour says: 429s, redirect
//                       chains through /moved/ID/K.EXT, late answers, broken documents.
//                       With --change-share F a plain feed first gets a new entry with
//                       probability F (bench/crawler_throughput.sh: a set share of
//                       fetches finds the feed changed, the rest get 304).
//   (raw port)          reset and endless hosts: one request read, then an RST, or a
//                       chunked 200 that sends a chunk a second for ever
//   POST /_farm/start   starts publishing (with --start-paused); idempotent
//   POST /_farm/stop    stops publishing for good (the load driver's final check); idempotent
//   GET  /_farm/stats   {"feeds", "hosts", "initial_entries", "published", "publishing",
//                        "speed", "sim_time", "changed", "requests", "not_modified", "not_found",
//                        "bytes_out", "bytes_in", ...}: bytes on the wire of its HTTP and HTTPS
//                        servers; "changed": entries --change-share published
//
// Prints "farm: listening on http://127.0.0.1:PORT" on stdout once the listener, the OPML,
// the pins and the truth log's feeds and initial entries are written (with --https-share,
// first "farm: https on https://127.0.0.1:PORT for N hosts"); stops on SIGINT or SIGTERM.
//
// HTTPS (--https-share F): a share F of the hosts is served over TLS on a second listener
// (the same routes, the same loop), with certificates from a CA made at start-up
// (--ca-out writes its PEM, for feedplane's [client] ca_file), one leaf per SNI name issued
// on the first handshake that names it and cached (farm_ca.h). Only the farm's HTTPS host
// names get a certificate: any other name fails the handshake.
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <deque>
#include <exception>
#include <limits>
#include <memory>
#include <string>
#include <unordered_set>

#include "feedplane/base/ascii.h"
#include "feedplane/farm/farm.h"
#include "feedplane/farm/farm_ca.h"
#include "feedplane/net/http_request.h"
#include "feedplane/net/http_server.h"
#include "feedplane/net/loop.h"
#include "feedplane/net/tls_server.h"

namespace {

using namespace feedplane;

struct flags {
  uint32_t feeds = 10'000;
  uint64_t seed = 1;
  std::string listen = "127.0.0.1:0";
  std::string hosts;
  double speed = 1;
  bool start_paused = false;
  uint32_t addresses = 1;
  std::string truth;
  bool truth_brief_initial = false;
  std::string opml;
  std::string pins;
  double misbehaving = 0;
  uint32_t slow_seconds = 3;
  double https_share = 0;
  std::string https_listen = "127.0.0.1:0";
  std::string ca_out;
  size_t cert_cache = 65536;
  double change_share = 0;
  double extra_feed_share = farm::options{}.extra_feed_share;
  uint32_t feed_bytes = 0;
};

double wall_now() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// The default host list: the smallweb corpus beside the checkout, when it is there.
std::string default_hosts_file() {
  for (const char* p : {FEEDPLANE_FARM_SOURCE_DIR "/../shared/corpus/smallweb/smallweb.txt",
                        "/work/shared/corpus/smallweb/smallweb.txt"}) {
    if (access(p, R_OK) == 0) return p;
  }
  return {};
}

// Everything the handlers and the publishing timer reach (the server's context pointer).
// Used on the loop's thread only.
struct farm_server {
  farm::farm* fm = nullptr;
  farm::truth_log* truth = nullptr;
  net::loop* loop = nullptr;
  net::http_server* srv = nullptr;
  net::http_server* tls_srv = nullptr;       // the HTTPS listener's server (null without one)
  std::vector<net::http_server*> more_srvs;  // plain, on 127.0.0.2 ... (--addresses)
  // A plain-server statistic summed over every plain listener.
  template <typename F>
  uint64_t plain(F f) const {
    uint64_t v = f(srv->stats());
    for (const net::http_server* m : more_srvs) v += f(m->stats());
    return v;
  }
  farm::cert_authority* ca = nullptr;
  double speed = 1;
  net::timer publish_timer;
  std::string etag;  // the response's ETag, alive until the handler returns
  uint64_t requests = 0;
  uint64_t not_found = 0;
  uint64_t raw_connections = 0;  // accepted on the raw port (reset and endless hosts)
  uint64_t misbehaved = 0;       // answers that were a misbehaviour (429, redirect, late...)
  std::vector<uint32_t> hits;    // requests per feed (the 429 hosts refuse every other one)
  std::string location;          // a redirect's Location header line

  // Slow answers wait here, due in order (every one waits the same slow_seconds).
  struct late {
    uint64_t due_ms;
    net::deferred_response later;
    uint32_t feed;
  };
  std::deque<late> slow;
  net::timer slow_timer;
  net::http_response slow_resp;
  std::string slow_etag;

  // Fills r with feed i's document and validators for request `req` (null: a deferred
  // answer, whose request is gone; the server still decides 304 from what it copied).
  void serve(uint32_t i, const net::http_request* req, net::http_response& r,
             std::string& etag_store) {
    r.content_type = farm::content_type(fm->info(i).format);
    etag_store = fm->etag(i);
    r.etag = etag_store;
    r.last_modified = fm->last_modified(i);
    // Most crawler fetches revalidate an unchanged feed: the server will answer 304, so
    // skip rendering. The placeholder (no feed is shorter) keeps the 304's Vary and weak
    // ETag what they would be with the document.
    if (req != nullptr &&
        net::not_modified(req->if_none_match, req->if_modified_since, r.etag, r.last_modified)) {
      static const std::string placeholder(1024, ' ');
      r.body = placeholder;
      return;
    }
    fm->render(i, r.storage);
    r.body = r.storage;
  }

  static void on_slow(void* self) {
    auto* s = static_cast<farm_server*>(self);
    const uint64_t now = s->loop->now_ms();
    while (!s->slow.empty() && s->slow.front().due_ms <= now) {
      late l = s->slow.front();
      s->slow.pop_front();
      s->slow_resp.clear();
      s->serve(l.feed, nullptr, s->slow_resp, s->slow_etag);
      l.later.complete(s->slow_resp);  // false when the client left: nothing to do
    }
    if (!s->slow.empty()) s->loop->arm(s->slow_timer, s->slow.front().due_ms - now);
  }

  // The answer of a misbehaving host to a request for feed i (`moved`: through the
  // redirect chain, at hop `hop`). Returns false when it answers normally.
  bool misbehave(net::request_context& c, net::http_response& r, uint32_t i, uint32_t hop) {
    const farm::feed_info& f = fm->info(i);
    switch (f.misbehaves) {
      case farm::misbehaviour::too_many_requests:
      case farm::misbehaviour::too_many_requests_bare:
        if (hits[i]++ % 2 != 0) return false;
        if (f.misbehaves == farm::misbehaviour::too_many_requests) {
          r.extra_headers = "Retry-After: 60\r\n";
        }
        net::set_json_error(r, 429, "too_many_requests", "slow down");
        break;
      case farm::misbehaviour::redirect_chain: {
        if (hop >= f.redirects) return false;
        r.status = hop == 0 ? 301 : 302;
        location = fmt::format("Location: http://{}/moved/{}/{}.{}\r\n", c.request().host, i,
                               hop + 1, farm::file_extension(f.format));
        r.extra_headers = location;
        r.set_body("moved\n");
        break;
      }
      case farm::misbehaviour::slow:
        slow.push_back({loop->now_ms() + uint64_t{fm->opts().slow_seconds} * 1000, r.later, i});
        r.defer = true;
        if (!slow_timer.armed()) loop->arm(slow_timer, uint64_t{fm->opts().slow_seconds} * 1000);
        break;
      default:
        return false;
    }
    ++misbehaved;
    return true;
  }
  bool stopped = false;  // POST /_farm/stop: nothing more is published (for a final check)

  void start_publishing() {
    if (fm->started()) return;
    const double now = wall_now();
    fm->start(now, speed);
    if (truth->is_open()) {
      truth->write_start(now, speed);
      truth->flush();
    }
    schedule();
  }

  // Arms the timer for the next post (at most a second ahead, so a clock step is noticed).
  void schedule() {
    const double wait = fm->next_due() - wall_now();
    const double ms = std::clamp(std::ceil(wait * 1000), 1.0, 1000.0);
    loop->arm(publish_timer, static_cast<uint64_t>(ms));
  }

  void stop_publishing() {
    if (stopped) return;
    stopped = true;
    loop->disarm(publish_timer);
  }

  static void on_timer(void* self) {
    auto* s = static_cast<farm_server*>(self);
    if (s->stopped) return;
    s->fm->publish_due(wall_now(), [s](const farm::entry& e) {
      if (s->truth->is_open()) s->truth->write_entry(*s->fm, e);
    });
    // Flushed before the loop answers another request: whoever sees a post in a feed
    // finds it in the log.
    s->truth->flush();
    s->schedule();
  }
};

// The raw listener: hosts whose misbehaviour the HTTP server cannot express. It reads one
// request (net's request parser), finds the feed by Host and path, then resets the
// connection (SO_LINGER 0, so close() sends RST) or starts a chunked 200 whose body never
// ends: the opening of the feed's document, then a comment chunk a second until the client
// goes away. Anything else gets a 404 and a close. Each connection has at most one op in
// flight (a recv or a send), or its tick timer armed, so a slot is freed only when idle.
class raw_server {
 public:
  raw_server(net::loop& l, const farm::farm& fm, uint64_t& accepted)
      : loop_(l), fm_(fm), accepted_(accepted) {}
  raw_server(const raw_server&) = delete;
  raw_server& operator=(const raw_server&) = delete;

  void start(int listen_fd) {
    loop_.accept_multishot(listen_fd, net::bind<&raw_server::on_accept>(this));
  }
  void close_all() {
    for (auto& c : conns_) {
      if (c->fd >= 0) finish(*c);
    }
  }

 private:
  struct conn {
    raw_server* srv = nullptr;
    uint32_t index = 0;
    int fd = -1;
    std::string in;
    std::string out;  // bytes being sent; `sent` of them went
    size_t sent = 0;
    char buf[4096];
    net::request_parser parser;
    net::timer tick;
  };

  void on_accept(const net::completion& c) {
    if (c.res < 0) {
      if (!c.more()) fmt::print(stderr, "farm: raw accept: {}\n", std::strerror(-c.res));
      return;
    }
    ++accepted_;
    conn* k;
    if (!free_.empty()) {
      k = conns_[free_.back()].get();
      free_.pop_back();
    } else {
      conns_.push_back(std::make_unique<conn>());
      k = conns_.back().get();
      k->srv = this;
      k->index = static_cast<uint32_t>(conns_.size() - 1);
      k->tick.set(&raw_server::on_tick, k);
    }
    k->fd = c.res;
    k->in.clear();
    k->parser.reset();
    read_more(*k);
  }

  void read_more(conn& k) {
    loop_.recv(k.fd, k.buf, sizeof(k.buf), net::bind<&raw_server::on_recv>(this, k.index));
  }

  void on_recv(const net::completion& c) {
    conn& k = *conns_[c.tag];
    if (c.res <= 0) return finish(k);
    k.in.append(k.buf, static_cast<size_t>(c.res));
    net::http_request req;
    switch (k.parser.parse(k.in, req)) {
      case net::parse_status::incomplete:
        return read_more(k);
      case net::parse_status::error:
        return finish(k);
      case net::parse_status::complete:
        break;
    }
    const std::string_view path = req.path;
    const int64_t id = path.starts_with("/feed/") ? fm_.find(req.host, path.substr(6)) : -1;
    if (id < 0 || !farm::raw(fm_.info(static_cast<uint32_t>(id)).misbehaves)) {
      k.out = "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
      k.in.clear();  // marks "close after sending"
      return send(k);
    }
    const farm::feed_info& f = fm_.info(static_cast<uint32_t>(id));
    if (f.misbehaves == farm::misbehaviour::reset) {
      const linger lg{1, 0};  // close() now sends RST instead of FIN
      setsockopt(k.fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
      return finish(k);
    }
    // Endless: headers and the opening of the document; chunks follow, one a second.
    std::string doc;
    fm_.render(static_cast<uint32_t>(id), doc);
    doc.resize(std::min<size_t>(doc.size(), 512));
    k.out = fmt::format(
        "HTTP/1.1 200 OK\r\nContent-Type: {}\r\nTransfer-Encoding: chunked\r\n\r\n{:x}\r\n{}\r\n",
        farm::content_type(f.format), doc.size(), doc);
    k.in = "endless";
    send(k);
  }

  void send(conn& k) {
    k.sent = 0;
    loop_.send(k.fd, k.out.data(), k.out.size(), net::bind<&raw_server::on_sent>(this, k.index));
  }

  void on_sent(const net::completion& c) {
    conn& k = *conns_[c.tag];
    if (c.res <= 0) return finish(k);  // the client went away: the usual end of an endless body
    k.sent += static_cast<size_t>(c.res);
    if (k.sent < k.out.size()) {
      loop_.send(k.fd, k.out.data() + k.sent, k.out.size() - k.sent,
                 net::bind<&raw_server::on_sent>(this, k.index));
      return;
    }
    if (k.in.empty()) return finish(k);  // the 404
    loop_.arm(k.tick, 1000);
  }

  static void on_tick(void* p) {
    conn& k = *static_cast<conn*>(p);
    static constexpr std::string_view chunk = "<!-- more is coming -->\n";
    k.out = fmt::format("{:x}\r\n{}\r\n", chunk.size(), chunk);
    k.srv->send(k);
  }

  void finish(conn& k) {
    loop_.disarm(k.tick);
    close(k.fd);
    k.fd = -1;
    free_.push_back(k.index);
  }

  net::loop& loop_;
  const farm::farm& fm_;
  uint64_t& accepted_;
  std::vector<std::unique_ptr<conn>> conns_;  // slots never move; tag = index
  std::vector<uint32_t> free_;
};

void add_routes(net::router& routes) {
  routes.add("GET", "/feed/{file}", [](net::request_context& c, net::http_response& r) {
    auto& s = c.context_as<farm_server>();
    ++s.requests;
    const int64_t id = s.fm->find(c.request().host, c.param("file"));
    if (id < 0) {
      ++s.not_found;
      net::set_json_error(r, 404, "not_found", "no such feed on this host");
      return;
    }
    const auto i = static_cast<uint32_t>(id);
    if (s.fm->info(i).misbehaves == farm::misbehaviour::none &&
        s.fm->change_on_request(i, wall_now(), [&s](const farm::entry& e) {
          if (s.truth->is_open()) s.truth->write_entry(*s.fm, e);
        })) {
      s.truth->flush();  // in the log before the document that shows it is sent
    }
    if (!s.misbehave(c, r, i, 0)) s.serve(i, &c.request(), r, s.etag);
  });
  // The hops of a redirect chain: /moved/ID/K.EXT, K = 1..redirects (the last serves).
  routes.add("GET", "/moved/{id}/{file}", [](net::request_context& c, net::http_response& r) {
    auto& s = c.context_as<farm_server>();
    ++s.requests;
    const std::string_view file = c.param("file");
    const size_t dot = file.find('.');
    uint32_t hop = 0;
    const auto [end, ec] =
        std::from_chars(file.data(), file.data() + std::min(dot, file.size()), hop);
    const int64_t id =
        dot == std::string_view::npos || ec != std::errc() || end != file.data() + dot
            ? -1
            : s.fm->find(c.request().host, fmt::format("{}{}", c.param("id"), file.substr(dot)));
    if (id < 0 ||
        s.fm->info(static_cast<uint32_t>(id)).misbehaves != farm::misbehaviour::redirect_chain ||
        hop == 0 || hop > s.fm->info(static_cast<uint32_t>(id)).redirects) {
      ++s.not_found;
      net::set_json_error(r, 404, "not_found", "no such feed on this host");
      return;
    }
    const auto i = static_cast<uint32_t>(id);
    if (!s.misbehave(c, r, i, hop)) s.serve(i, &c.request(), r, s.etag);
  });
  routes.add("POST", "/_farm/start", [](net::request_context& c, net::http_response& r) {
    auto& s = c.context_as<farm_server>();
    s.start_publishing();
    r.content_type = "application/json";
    r.set_body(fmt::format("{{\"publishing\":true,\"speed\":{:g}}}\n", s.fm->speed()));
  });
  routes.add("POST", "/_farm/stop", [](net::request_context& c, net::http_response& r) {
    auto& s = c.context_as<farm_server>();
    s.stop_publishing();
    r.content_type = "application/json";
    r.set_body(fmt::format("{{\"publishing\":false,\"published\":{}}}\n", s.fm->published()));
  });
  routes.add("GET", "/_farm/stats", [](net::request_context& c, net::http_response& r) {
    auto& s = c.context_as<farm_server>();
    const double now = wall_now();
    r.content_type = "application/json";
    r.set_body(fmt::format(
        "{{\"feeds\":{},\"hosts\":{},\"initial_entries\":{},\"published\":{},"
        "\"publishing\":{},\"speed\":{:g},\"time\":{:.3f},\"sim_time\":{:.3f},"
        "\"changed\":{},\"requests\":{},\"not_modified\":{},\"not_found\":{},\"misbehaved\":{},"
        "\"raw_connections\":{},\"tls_handshakes\":{},\"tls_resumed\":{},\"tls_failed\":{},"
        "\"certs_issued\":{},\"bytes_out\":{},\"bytes_in\":{}}}\n",
        s.fm->size(), s.fm->hosts().size(), s.fm->initial_entries(), s.fm->published(),
        s.fm->started(), s.fm->started() ? s.fm->speed() : s.speed, now, s.fm->sim_time(now),
        s.fm->changed(), s.requests, s.plain([](const auto& st) {
          return uint64_t(st.not_modified);
        }) + (s.tls_srv != nullptr ? s.tls_srv->stats().not_modified : 0),
        s.not_found, s.misbehaved, s.raw_connections,
        s.tls_srv != nullptr ? s.tls_srv->stats().tls_handshakes : 0,
        s.tls_srv != nullptr ? s.tls_srv->stats().tls_resumed : 0,
        s.tls_srv != nullptr ? s.tls_srv->stats().tls_failed : 0,
        s.ca != nullptr ? s.ca->issued() : 0, s.plain([](const auto& st) {
          return uint64_t(st.bytes_out);
        }) + (s.tls_srv != nullptr ? s.tls_srv->stats().bytes_out : 0),
        s.plain([](const auto& st) { return uint64_t(st.bytes_in); }) +
            (s.tls_srv != nullptr ? s.tls_srv->stats().bytes_in : 0)));
  });
}

int run(const flags& fl) {
  signal(SIGPIPE, SIG_IGN);
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGINT);
  sigaddset(&sigs, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &sigs, nullptr);
  const int sfd = signalfd(-1, &sigs, SFD_CLOEXEC | SFD_NONBLOCK);
  if (sfd < 0) {
    fmt::print(stderr, "farm: signalfd: {}\n", std::strerror(errno));
    return 1;
  }

  farm::options opt;
  opt.seed = fl.seed;
  opt.feeds = fl.feeds;
  opt.hosts_file = fl.hosts.empty() ? default_hosts_file() : fl.hosts;
  opt.misbehaving_share = fl.misbehaving;
  opt.slow_seconds = fl.slow_seconds;
  opt.https_share = fl.https_share;
  opt.addresses = fl.addresses;
  opt.change_share = fl.change_share;
  opt.extra_feed_share = fl.extra_feed_share;
  if (fl.change_share > 0) {
    // Every feed revalidates: the fetches that find no change get 304.
    opt.last_modified_only_share = 0;
    opt.no_validators_share = 0;
  }
  if (fl.feed_bytes > 0) opt.size_median = opt.size_p90 = fl.feed_bytes;
  if (opt.hosts_file == "none") opt.hosts_file.clear();
  const workload::vocabulary& vocab = workload::vocabulary::english();
  const double now = wall_now();
  farm::farm fm(opt, vocab, now);

  std::string err;
  const int lfd = net::listen_tcp(fl.listen, false, &err);
  if (lfd < 0) {
    fmt::print(stderr, "farm: listen {}: {}\n", fl.listen, err);
    return 1;
  }
  const int port = net::bound_port(lfd);
  fm.set_port(static_cast<uint16_t>(port));
  // The further loopback addresses of plain hosts, at the same port (options::addresses).
  std::vector<int> more_lfds;
  if (fl.addresses > 1) {
    if (fl.listen.rfind("127.0.0.1:", 0) != 0) {
      fmt::print(stderr, "farm: --addresses needs --listen 127.0.0.1:PORT\n");
      return 1;
    }
    for (uint32_t k = 2; k <= fl.addresses; ++k) {
      const std::string a = fmt::format("127.0.0.{}:{}", k, port);
      const int fd = net::listen_tcp(a, false, &err);
      if (fd < 0) {
        fmt::print(stderr, "farm: listen {}: {}\n", a, err);
        return 1;
      }
      more_lfds.push_back(fd);
    }
  }
  // The raw listener: same address, any free port.
  const std::string raw_listen = fl.listen.substr(0, fl.listen.rfind(':')) + ":0";
  const int raw_fd = net::listen_tcp(raw_listen, false, &err);
  if (raw_fd < 0) {
    fmt::print(stderr, "farm: listen {}: {}\n", raw_listen, err);
    return 1;
  }
  fm.set_raw_port(static_cast<uint16_t>(net::bound_port(raw_fd)));

  // HTTPS: its listener and CA before any file names a URL.
  int tls_lfd = -1;
  std::unique_ptr<farm::cert_authority> ca;
  std::unique_ptr<net::tls_server_context> tls;
  std::unordered_set<std::string> https_names;  // the HTTPS hosts: only they get a certificate
  if (fl.https_share > 0) {
    tls_lfd = net::listen_tcp(fl.https_listen, false, &err);
    if (tls_lfd < 0) {
      fmt::print(stderr, "farm: listen {}: {}\n", fl.https_listen, err);
      return 1;
    }
    fm.set_https_port(static_cast<uint16_t>(net::bound_port(tls_lfd)));
    ca = farm::cert_authority::create(30, &err);
    if (!ca) {
      fmt::print(stderr, "farm: {}\n", err);
      return 1;
    }
    ca->set_cache_capacity(fl.cert_cache);
    if (!fl.ca_out.empty()) {
      std::FILE* f = std::fopen(fl.ca_out.c_str(), "w");
      const std::string pem = ca->ca_pem();
      if (f == nullptr || std::fwrite(pem.data(), 1, pem.size(), f) != pem.size() ||
          std::fclose(f) != 0) {
        fmt::print(stderr, "farm: cannot write {}: {}\n", fl.ca_out, std::strerror(errno));
        return 1;
      }
    }
    // The selector runs on the loop's thread, inside a handshake: a cache hit is a hash
    // lookup, a miss one ECDSA signature.
    for (const std::string& h : fm.hosts()) {
      if (fm.https_host(h)) https_names.insert(h);
    }
    farm::cert_authority* cap = ca.get();
    const auto* names = &https_names;
    tls = net::tls_server_context::create(
        nullptr,
        [cap, names](std::string_view name) -> const net::tls_identity* {
          // SNI names arrive as the client sent them; the farm's are lower case.
          std::string n(name);
          for (char& c : n) c = base::ascii_lower(c);
          return names->contains(n) ? cap->identity_for(n) : nullptr;
        },
        &err);
    if (!tls) {
      fmt::print(stderr, "farm: TLS: {}\n", err);
      return 1;
    }
  }

  if (!fl.opml.empty() && !farm::write_opml(fm, fl.opml, &err)) {
    fmt::print(stderr, "farm: {}\n", err);
    return 1;
  }
  if (!fl.pins.empty() && !farm::write_pins(fm, fl.pins, &err)) {
    fmt::print(stderr, "farm: {}\n", err);
    return 1;
  }
  farm::truth_log truth;
  if (!fl.truth.empty()) {
    if (!truth.open(fl.truth, &err)) {
      fmt::print(stderr, "farm: {}\n", err);
      return 1;
    }
    truth.write_header(fm, now);
    truth.write_initial(fm, fl.truth_brief_initial);
    truth.flush();
  }

  net::loop_options lo;
  auto loop = net::loop::create(lo, &err);
  if (!loop) {
    fmt::print(stderr, "farm: io_uring: {}\n", err);
    return 1;
  }
  net::router routes;
  add_routes(routes);
  farm_server state;
  state.fm = &fm;
  state.truth = &truth;
  state.loop = loop.get();
  state.speed = fl.speed;
  state.publish_timer.set(&farm_server::on_timer, &state);
  state.slow_timer.set(&farm_server::on_slow, &state);
  state.hits.assign(fm.size(), 0);
  net::server_options so;
  so.idle_timeout_ms = 120'000;  // crawlers keep connections to many hosts open between polls
  // --change-share: most answers are a new document to compress; level 1 (nginx's default)
  // costs the farm a third of level 6, so it keeps up with the crawler it serves. Otherwise
  // level 6, as the crawler figures in bench/RESULTS.md were measured.
  so.gzip_level = fl.change_share > 0 ? 1 : 6;
  // A slow answer must come before the server gives up on it.
  so.defer_timeout_ms = std::max<uint32_t>(so.defer_timeout_ms, (fl.slow_seconds + 5) * 1000);
  net::http_server srv(*loop, routes, so, &state);
  state.srv = &srv;
  if (!srv.start(lfd)) {
    fmt::print(stderr, "farm: cannot accept on {}\n", fl.listen);
    return 1;
  }
  std::vector<std::unique_ptr<net::http_server>> more_srvs;
  for (const int fd : more_lfds) {
    more_srvs.push_back(std::make_unique<net::http_server>(*loop, routes, so, &state));
    state.more_srvs.push_back(more_srvs.back().get());
    if (!more_srvs.back()->start(fd)) {
      fmt::print(stderr, "farm: cannot accept on 127.0.0.{}:{}\n", more_srvs.size() + 1, port);
      return 1;
    }
  }
  std::unique_ptr<net::http_server> tls_srv;
  if (tls) {
    net::server_options tso = so;
    tso.tls = tls.get();
    tls_srv = std::make_unique<net::http_server>(*loop, routes, tso, &state);
    state.tls_srv = tls_srv.get();
    state.ca = ca.get();
    if (!tls_srv->start(tls_lfd)) {
      fmt::print(stderr, "farm: cannot accept on {}\n", fl.https_listen);
      return 1;
    }
  }
  struct stopper {
    net::loop* l;
    void on_signal(const net::completion&) { l->stop(); }
  } stop{loop.get()};
  loop->poll_add(sfd, POLLIN, net::bind<&stopper::on_signal>(&stop));
  raw_server raw(*loop, fm, state.raw_connections);
  raw.start(raw_fd);
  if (!fl.start_paused) state.start_publishing();

  if (tls_srv) {
    fmt::print("farm: https on https://127.0.0.1:{} for {} hosts\n", net::bound_port(tls_lfd),
               https_names.size());
  }
  fmt::print("farm: listening on http://127.0.0.1:{}\n", port);
  std::fflush(stdout);
  const int r = loop->run();
  if (loop->stopping()) fmt::print(stderr, "farm: stopping\n");
  loop->disarm(state.publish_timer);
  loop->disarm(state.slow_timer);
  raw.close_all();
  srv.shutdown();
  if (tls_srv) tls_srv->shutdown();
  for (auto& m : more_srvs) m->shutdown();
  for (const int fd : more_lfds) close(fd);
  truth.flush();
  close(lfd);
  close(raw_fd);
  if (tls_lfd >= 0) close(tls_lfd);
  close(sfd);
  if (r < 0) {
    fmt::print(stderr, "farm: io_uring: {}\n", std::strerror(-r));
    return 1;
  }
  return 0;
}

int cli_main(int argc, char** argv) {
  CLI::App app{
      "feedplane-farm: a synthetic feed farm on loopback for feedplane's load harness: N feeds "
      "under many host names, shaped like the small web, publishing on a simulated clock, "
      "with a truth log of every entry."};
  flags fl;
  app.add_option("--feeds", fl.feeds, "number of feeds")->capture_default_str();
  app.add_option("--seed", fl.seed, "seed: the same seed gives the same feeds and entries")
      ->capture_default_str();
  app.add_option("--listen", fl.listen, "ADDR:PORT to listen on (port 0: any free port)")
      ->capture_default_str();
  app.add_option("--hosts", fl.hosts,
                 "file of feed URLs whose host names are sampled (default: the smallweb corpus "
                 "in ../shared/corpus when present; 'none': generated names)");
  app.add_option("--speed", fl.speed, "simulated seconds per real second of the posting process")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_flag("--start-paused", fl.start_paused,
               "publish nothing until POST /_farm/start (the initial backlog is served)");
  app.add_option("--truth", fl.truth, "append the truth log (JSON Lines) to FILE");
  app.add_flag("--truth-brief-initial", fl.truth_brief_initial,
               "log the initial backlog without titles and texts (large farms)");
  app.add_option("--opml", fl.opml, "write an OPML 2.0 list of every feed URL to FILE");
  app.add_option("--pins", fl.pins, "write HOST:PORT:127.0.0.1 lines (--resolve pins) to FILE");
  app.add_option("--misbehaving", fl.misbehaving,
                 "share of hosts that misbehave (429s, frozen Last-Modified, redirect chains, "
                 "malformed documents, slow answers, resets, endless bodies; the truth log's feed "
                 "lines say which)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--slow-seconds", fl.slow_seconds, "how late a slow host answers")
      ->capture_default_str();
  app.add_option("--https-share", fl.https_share,
                 "share of hosts served over HTTPS (0..1), on a second listener with "
                 "certificates from a CA made at start-up")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--addresses", fl.addresses,
                 "spread plain hosts over 127.0.0.1 ... 127.0.0.N, listening on each at the "
                 "--listen port (a crawler's connections to one address and port run out of "
                 "ephemeral ports near 470 new connections a second)")
      ->check(CLI::Range(1, 250))
      ->capture_default_str();
  app.add_option("--https-listen", fl.https_listen, "ADDR:PORT of the HTTPS listener")
      ->capture_default_str();
  app.add_option("--ca-out", fl.ca_out,
                 "write the farm CA's certificate (PEM) to FILE, for feedplane's [client] "
                 "ca_file");
  app.add_option("--cert-cache", fl.cert_cache,
                 "leaf certificates kept (one per HTTPS name; the oldest is dropped)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--change-share", fl.change_share,
                 "crawler benchmark: each request of a plain feed first publishes a new entry "
                 "in it with probability F (draws seeded by --seed, in request order), so that "
                 "share of fetches finds it changed (new ETag, 200); every feed then has an "
                 "ETag and Last-Modified, so the rest get 304 to a conditional GET")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--extra-feed-share", fl.extra_feed_share,
                 "share of feeds placed on a host that already has one (more: fewer hosts, "
                 "so a crawler keeps its connections; 0.99 puts 10,000 feeds on about 100)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 0.9999));
  app.add_option("--feed-bytes", fl.feed_bytes,
                 "every document about B bytes (instead of log-normal sizes, median 7.6 KB)")
      ->check(CLI::Range(1000, 4'000'000));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  return run(fl);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return cli_main(argc, argv);
  } catch (const std::exception& e) {
    // Start-up may throw (allocation, a missing vocabulary): say what and exit non-zero.
    std::fprintf(stderr, "farm: %s\n", e.what());
  } catch (...) {
    std::fprintf(stderr, "farm: unknown exception\n");
  }
  return 1;
}
