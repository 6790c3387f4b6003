// `feedplane serve [--config FILE] [--listen ADDR:PORT] [--data DIR] [--shards N]`: runs
// the data plane. Each shard is a thread pinned to a core with its own io_uring loop and
// its own SO_REUSEPORT listener; nothing is shared between shards but immutable data
// (the route table, static files). Answers GET /healthz; serves <data>/public/* under
// /static/.
#include <fmt/format.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "commands.h"
#include "feedplane/dataplane/config.h"
#include "feedplane/net/http_server.h"
#include "feedplane/net/http_static.h"
#include "feedplane/net/loop.h"

namespace feedplane::dataplane {

namespace {

struct serve_flags {
  std::string config_path;
  std::string listen;
  std::string data;
  uint32_t shards = 0;
  bool shards_set = false;
};

// One shard: a pinned thread owning a loop and an http_server.
struct shard {
  int index = 0;
  int cpu = -1;
  int listen_fd = -1;
  std::thread thread;
  std::atomic<net::loop*> loop_ptr{nullptr};
  // Owned here, not by the shard thread: main may still be inside request_stop() when the
  // thread leaves run(), so the loop is destroyed only after the thread was joined.
  std::unique_ptr<net::loop> loop;
  std::atomic<int> state{0};  // 0 starting, 1 running, -1 failed
  std::string error;
};

void raise_fd_limit() {
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
  }
}

int mkdir_p(const std::string& dir) {
  std::string cur;
  for (size_t i = 0; i <= dir.size(); ++i) {
    if (i == dir.size() || dir[i] == '/') {
      if (!cur.empty() && mkdir(cur.c_str(), 0755) != 0 && errno != EEXIST) return -errno;
    }
    if (i < dir.size()) cur.push_back(dir[i]);
  }
  return 0;
}

void run_shard(shard& s, const config& cfg, const net::router& routes) {
  if (s.cpu >= 0) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(s.cpu, &set);
    pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
  }
  net::loop_options lo;
  lo.ring_entries = 4096;
  lo.buffer_count = 1024;  // 4 MiB per shard, whatever the number of connections
  lo.buffer_size = 4096;
  std::string err;
  // The ring is created on the shard thread: SINGLE_ISSUER binds it to this task.
  s.loop = net::loop::create(lo, &err);
  net::loop* l = s.loop.get();
  if (l == nullptr) {
    s.error = fmt::format("shard {}: {}", s.index, err);
    s.state.store(-1, std::memory_order_release);
    return;
  }
  const net::server_options so = server_options_from(cfg.server);
  {
    net::http_server srv(*l, routes, so);
    if (!srv.start(s.listen_fd)) {
      s.error = fmt::format("shard {}: cannot start accepting", s.index);
      s.state.store(-1, std::memory_order_release);
      return;
    }
    s.loop_ptr.store(l, std::memory_order_release);
    s.state.store(1, std::memory_order_release);
    int r = l->run();
    if (r < 0) fmt::print(stderr, "feedplane: shard {}: io_uring: {}\n", s.index, strerror(-r));
    // Close connections, letting their cancellations complete (bounded).
    srv.shutdown();
    for (int i = 0; i < 1000 && srv.stats().open > 0; ++i) l->run_once(false);
    // How well the loop batched: completions handled per io_uring_enter that waited.
    const net::loop_stats& ls = l->stats();
    fmt::print(stderr,
               "feedplane: shard {}: {} requests, {} connections; {} completions in {} waits "
               "({:.1f} per wait), {} SQEs submitted\n",
               s.index, srv.stats().requests, srv.stats().accepted, ls.completions, ls.waits,
               ls.waits != 0 ? double(ls.completions) / double(ls.waits) : 0.0, ls.submitted);
  }
  close(s.listen_fd);
}

int run_serve(const serve_flags& f) {
  // Signals first: a SIGINT/SIGTERM during start-up waits for sigwait below (and a clean
  // exit) instead of killing the process half set up. Threads inherit this mask.
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGINT);
  sigaddset(&sigs, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &sigs, nullptr);
  signal(SIGPIPE, SIG_IGN);

  config cfg;
  if (!f.config_path.empty()) {
    if (auto err = load_config_file(f.config_path, cfg); !err.empty()) {
      fmt::print(stderr, "feedplane: {}\n", err);
      return 2;
    }
  }
  // Flags override the file.
  if (!f.listen.empty()) cfg.server.listen = f.listen;
  if (!f.data.empty()) cfg.server.data_dir = f.data;
  if (f.shards_set) cfg.server.shards = f.shards;

  std::vector<int> cpus;
  {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof(set), &set) == 0) {
      for (int c = 0; c < CPU_SETSIZE; ++c) {
        if (CPU_ISSET(c, &set)) cpus.push_back(c);
      }
    }
    if (cpus.empty()) cpus.push_back(-1);
  }
  const uint32_t nshards = cfg.server.shards != 0 ? cfg.server.shards : uint32_t(cpus.size());
  raise_fd_limit();

  if (int r = mkdir_p(cfg.server.data_dir); r < 0) {
    fmt::print(stderr, "feedplane: cannot create data directory {}: {}\n", cfg.server.data_dir,
               strerror(-r));
    return 1;
  }
  net::static_files statics;
  const std::string public_dir = cfg.server.data_dir + "/public";
  if (auto err = statics.load(public_dir); !err.empty()) {
    fmt::print(stderr, "feedplane: static files: {}\n", err);
    return 1;
  }

  net::router routes;
  routes.add("GET", "/healthz", [](net::request_context&, net::http_response& r) {
    r.body = "ok\n";
    r.compressible = false;
    r.cache_control = "no-store";
  });
  statics.add_routes(routes, "/static/");

  // Listeners are opened here, in order, so that port 0 resolves once and every shard's
  // SO_REUSEPORT socket binds the same port; errors surface before any thread starts.
  std::vector<std::unique_ptr<shard>> shards;
  std::string listen = cfg.server.listen;
  for (uint32_t i = 0; i < nshards; ++i) {
    std::string err;
    int fd = net::listen_tcp(listen, true, &err);
    if (fd < 0) {
      fmt::print(stderr, "feedplane: {}\n", err);
      for (auto& s : shards) close(s->listen_fd);
      return 1;
    }
    if (i == 0) {
      const size_t colon = listen.rfind(':');
      listen = listen.substr(0, colon + 1) + std::to_string(net::bound_port(fd));
    }
    auto s = std::make_unique<shard>();
    s->index = int(i);
    s->cpu = cpus[i % cpus.size()];
    s->listen_fd = fd;
    shards.push_back(std::move(s));
  }

  // Signals are taken by sigwait on this thread only (blocked above, in every thread).
  for (auto& s : shards) {
    shard* sp = s.get();
    s->thread = std::thread([sp, &cfg, &routes] { run_shard(*sp, cfg, routes); });
  }
  bool failed = false;
  for (auto& s : shards) {
    int st;
    while ((st = s->state.load(std::memory_order_acquire)) == 0) std::this_thread::yield();
    if (st < 0) {
      fmt::print(stderr, "feedplane: {}\n", s->error);
      failed = true;
    }
  }
  if (!failed) {
    fmt::print(
        "feedplane: listening on http://{} with {} shard(s), {} static file(s) from {}; "
        "GET /healthz\n",
        listen, nshards, statics.count(), public_dir);
    std::fflush(stdout);
    int sig = 0;
    sigwait(&sigs, &sig);
  }
  for (auto& s : shards) {
    if (net::loop* l = s->loop_ptr.load(std::memory_order_acquire)) l->request_stop();
  }
  for (auto& s : shards) s->thread.join();
  shards.clear();  // loops are destroyed here, after every thread is gone
  return failed ? 1 : 0;
}

}  // namespace

void add_serve_command(CLI::App& app, int* rc) {
  auto* cmd = app.add_subcommand(
      "serve", "run the data plane: an HTTP server on every shard (GET /healthz, /static/*)");
  // Option storage is owned by the callback, which the app owns.
  auto f = std::make_shared<serve_flags>();
  cmd->add_option("--config,-c", f->config_path, "TOML configuration file");
  cmd->add_option("--listen", f->listen, "ADDR:PORT to listen on (overrides server.listen)");
  cmd->add_option("--data", f->data, "data directory (overrides server.data_dir)");
  auto* shards_opt = cmd->add_option("--shards", f->shards,
                                     "shards = threads pinned to cores; 0 = one per core "
                                     "(overrides server.shards)")
                         ->check(CLI::Range(0u, 1024u));
  cmd->callback([f, rc, shards_opt] {
    f->shards_set = shards_opt->count() > 0;
    *rc = run_serve(*f);
  });
}

}  // namespace feedplane::dataplane
