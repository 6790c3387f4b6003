// feedplane-farm: the synthetic feed farm of the load harness (issue 12), served on loopback
// by net's HTTP server on one io_uring loop. `feedplane farm ARGS` runs it (dataplane's
// cmd_farm.cc execs this binary, found beside `feedplane`, as git runs its subcommands).
//
//   GET  /feed/ID.EXT   feed ID's document, chosen by the Host header and the path (404 when
//                       the host does not carry that feed); ETag / Last-Modified and 304 as
//                       the feed's validators say; gzip when asked
//   POST /_farm/start   starts publishing (with --start-paused); idempotent
//   POST /_farm/stop    stops publishing for good (the load driver's final check); idempotent
//   GET  /_farm/stats   {"feeds", "hosts", "initial_entries", "published", "publishing",
//                        "speed", "sim_time", "requests", "not_modified", "not_found"}
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
#include <time.h>
#include <unistd.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>
#include <limits>
#include <string>
#include <unordered_set>

#include "feedplane/base/ascii.h"
#include "feedplane/farm/farm.h"
#include "feedplane/farm/farm_ca.h"
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
  std::string truth;
  bool truth_brief_initial = false;
  std::string opml;
  std::string pins;
  double https_share = 0;
  std::string https_listen = "127.0.0.1:0";
  std::string ca_out;
  size_t cert_cache = 65536;
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
  net::http_server* tls_srv = nullptr;  // the HTTPS listener's server (null without one)
  farm::cert_authority* ca = nullptr;
  double speed = 1;
  net::timer publish_timer;
  std::string etag;  // the response's ETag, alive until the handler returns
  uint64_t requests = 0;
  uint64_t not_found = 0;
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
    s.fm->render(i, r.storage);
    r.body = r.storage;
    r.content_type = farm::content_type(s.fm->info(i).format);
    s.etag = s.fm->etag(i);
    r.etag = s.etag;
    r.last_modified = s.fm->last_modified(i);
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
        "\"requests\":{},\"not_modified\":{},\"not_found\":{},"
        "\"tls_handshakes\":{},\"tls_resumed\":{},\"tls_failed\":{},"
        "\"certs_issued\":{}}}\n",
        s.fm->size(), s.fm->hosts().size(), s.fm->initial_entries(), s.fm->published(),
        s.fm->started(), s.fm->started() ? s.fm->speed() : s.speed, now, s.fm->sim_time(now),
        s.requests,
        s.srv->stats().not_modified + (s.tls_srv != nullptr ? s.tls_srv->stats().not_modified : 0),
        s.not_found, s.tls_srv != nullptr ? s.tls_srv->stats().tls_handshakes : 0,
        s.tls_srv != nullptr ? s.tls_srv->stats().tls_resumed : 0,
        s.tls_srv != nullptr ? s.tls_srv->stats().tls_failed : 0,
        s.ca != nullptr ? s.ca->issued() : 0));
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
  opt.https_share = fl.https_share;
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
  net::server_options so;
  so.idle_timeout_ms = 120'000;  // crawlers keep connections to many hosts open between polls
  net::http_server srv(*loop, routes, so, &state);
  state.srv = &srv;
  if (!srv.start(lfd)) {
    fmt::print(stderr, "farm: cannot accept on {}\n", fl.listen);
    return 1;
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
  srv.shutdown();
  if (tls_srv) tls_srv->shutdown();
  truth.flush();
  close(lfd);
  if (tls_lfd >= 0) close(tls_lfd);
  close(sfd);
  if (r < 0) {
    fmt::print(stderr, "farm: io_uring: {}\n", std::strerror(-r));
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
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
  app.add_option("--https-share", fl.https_share,
                 "share of hosts served over HTTPS (0..1), on a second listener with "
                 "certificates from a CA made at start-up")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--https-listen", fl.https_listen, "ADDR:PORT of the HTTPS listener")
      ->capture_default_str();
  app.add_option("--ca-out", fl.ca_out,
                 "write the farm CA's certificate (PEM) to FILE, for feedplane's [client] "
                 "ca_file");
  app.add_option("--cert-cache", fl.cert_cache,
                 "leaf certificates kept (one per HTTPS name; the oldest is dropped)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    return run(fl);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "farm: %s\n", e.what());
  }
  return 1;
}
