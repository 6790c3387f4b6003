// NATS JetStream as DESIGN.md 7 uses it: what the servers spend per article, for the
// provisioner's nats_cpu_per_message, stream_bytes_per_article and nats_base_bytes
// (provisioner/models/measured.toml; scripts/cost-model runs this).
//
// The peer is the real thing: three Debian nats-server processes, started here as a
// cluster on loopback (free ports, JetStream storage in a temp dir, each child killed by
// PR_SET_PDEATHSIG if this process dies, stopped by pid at the end). One stream, file
// storage, 3 replicas; one publisher (a crawl host) sends M messages of --size bytes with
// JetStream async publish and waits for every ack, while H durable pull consumers (the
// matching hosts, H = 1 and 4, each on its own connection) read the whole stream, acking
// once per fetched batch (AckAll: a host applies in order and acks what it has applied).
// Each client connects to the server that leads its stream or consumer, so an article
// makes exactly the hops the provisioner charges; a client on another server adds a route
// hop each way (leaders_moved counts leaders that changed during the run). Every message
// is checked (its index and bytes), every consumer must see every index (duplicates and
// out-of-order deliveries are counted), the stream must hold M and every consumer's ack
// floor reach M; anything short fails the run and the exit status.
//
// Measured per server, between a sample after setup and one after the last ack: CPU time
// (utime + stime, /proc/PID/stat), messages and bytes in and out (the /varz monitoring
// endpoint: payload and headers, not the protocol lines), and VmRSS at the end.
// Counters (server figures summed over the three servers):
//   cpu_s_per_article       server CPU / M
//   cpu_s_per_message       server CPU / (M x (R + H)): the provisioner's unit, which charges
//                           R messages in and H out per article (nats_cpu_per_message)
//   cpu_s_per_varz_msg      server CPU / (in_msgs + out_msgs): replication entries, acks,
//                           pull requests and publish acks all count as messages there
//   in_bytes_per_article, out_bytes_per_article, varz_msgs_per_article
//   stream_bytes_per_article  max(in / (M x R), out / (M x (R - 1 + H))): the bytes per
//                           article per hop for which the provisioner's NATS in-bw
//                           (R hops) and out-bw (R - 1 + H hops) cover what was measured
//   rss_bytes_max, rss_bytes_min  VmRSS of the servers at the end
//   idle_cpu_s_per_s        the servers' CPU while idle for a second before the run
// Time is wall time from the first publish to the last message read; items are articles.
//
//   build/bench/nats_bench [--messages=N] [--size=B] [--batch=N] [--pending=N]
//     [--benchmark_out=F --benchmark_out_format=json]
#include <arpa/inet.h>
#include <benchmark/benchmark.h>
#include <nats/nats.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "../tests/nginx_fixture.h"  // free_port
#include "proc_stats.h"

namespace fs = std::filesystem;
using feedplane::test::free_port;

namespace {

constexpr int k_servers = 3;
constexpr int k_replicas = 3;  // DESIGN.md 7; the provisioner's nats_replicas
constexpr const char* k_stream = "articles";
constexpr const char* k_subject = "articles.new";

struct options {
  uint64_t messages = 200'000;
  int size = 868;          // Cobra's median article, 768 B, + ~100 B of headers
  int batch = 256;         // messages per pull request
  int64_t pending = 4096;  // async publishes in flight
} g_opt;

bool g_failed = false;

double wall_now() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// ---------------------------------------------------------------- the servers

struct proc_sample {
  double cpu_s = 0;  // utime + stime, all threads
  uint64_t rss = 0;  // VmRSS, bytes
};

// Reads /proc/PID/stat and /proc/PID/status; false if the process is gone.
bool sample_proc(pid_t pid, proc_sample* out) {
  if (!feedplane::bench::read_stat("/proc/" + std::to_string(pid) + "/stat", nullptr, &out->cpu_s))
    return false;
  out->rss = static_cast<uint64_t>(feedplane::bench::rss_bytes(pid));
  return true;
}

// GET http://127.0.0.1:port/path with HTTP/1.0 (the server closes); the body, or "".
std::string http_get(uint16_t port, const std::string& path) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(port);
  std::string resp;
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) {
    std::string req = "GET " + path + " HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
    if (send(fd, req.data(), req.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(req.size())) {
      char buf[16384];
      for (ssize_t n; (n = recv(fd, buf, sizeof buf, 0)) > 0;)
        resp.append(buf, static_cast<size_t>(n));
    }
  }
  close(fd);
  auto body = resp.find("\r\n\r\n");
  if (resp.rfind("HTTP/1.", 0) != 0 || resp.find(" 200 ") > 12 || body == std::string::npos)
    return {};
  return resp.substr(body + 4);
}

struct varz {
  uint64_t in_msgs = 0, out_msgs = 0, in_bytes = 0, out_bytes = 0;
};

// The unsigned number after "key": in a JSON text, or false.
bool json_uint(const std::string& doc, const char* key, uint64_t* out) {
  std::string k = std::string("\"") + key + "\"";
  auto p = doc.find(k);
  if (p == std::string::npos) return false;
  p = doc.find_first_not_of(" \t\r\n:", p + k.size());
  if (p == std::string::npos || doc[p] < '0' || doc[p] > '9') return false;
  *out = std::strtoull(doc.c_str() + p, nullptr, 10);
  return true;
}

bool sample_varz(uint16_t mport, varz* v) {
  std::string doc = http_get(mport, "/varz");
  return json_uint(doc, "in_msgs", &v->in_msgs) && json_uint(doc, "out_msgs", &v->out_msgs) &&
         json_uint(doc, "in_bytes", &v->in_bytes) && json_uint(doc, "out_bytes", &v->out_bytes);
}

std::string find_nats_server() {
  std::string path = std::getenv("PATH") ? std::getenv("PATH") : "";
  path += ":/usr/sbin:/usr/local/sbin";
  std::istringstream dirs(path);
  for (std::string d; std::getline(dirs, d, ':');) {
    fs::path p = fs::path(d) / "nats-server";
    if (!d.empty() && access(p.c_str(), X_OK) == 0) return p.string();
  }
  return {};
}

// A JetStream cluster of k_servers nats-server children on loopback. Owns the processes
// (stopped by pid in stop() and the destructor; killed by the kernel if we die first)
// and the temp dir (storage and logs), removed at the end.
class nats_cluster {
 public:
  struct server {
    pid_t pid = -1;
    uint16_t port = 0, cluster_port = 0, mport = 0;
    std::string name;
  };

  ~nats_cluster() {
    stop();
    if (!dir_.empty()) {
      std::error_code ec;
      fs::remove_all(dir_, ec);
    }
  }

  // Starts the servers and waits until each answers /healthz (JetStream ready) or 60 s.
  std::string start() {
    std::string bin = find_nats_server();
    if (bin.empty()) return "no nats-server on PATH or in /usr/sbin (scripts/setup installs it)";
    std::string tmpl = (fs::temp_directory_path() / "feedplane_nats_XXXXXX").string();
    if (!mkdtemp(tmpl.data())) return "mkdtemp failed";
    dir_ = tmpl;
    std::set<uint16_t> used;
    auto pick = [&] {
      uint16_t p;
      do p = free_port();
      while (p == 0 || !used.insert(p).second);
      return p;
    };
    servers_.resize(k_servers);
    for (int i = 0; i < k_servers; ++i) {
      servers_[size_t(i)].name = "n" + std::to_string(i);
      servers_[size_t(i)].port = pick();
      servers_[size_t(i)].cluster_port = pick();
      servers_[size_t(i)].mport = pick();
    }
    for (auto& s : servers_) {
      std::string routes;
      for (auto& o : servers_)
        if (&o != &s)
          routes +=
              (routes.empty() ? "" : ",") + ("nats://127.0.0.1:" + std::to_string(o.cluster_port));
      std::vector<std::string> args = {"nats-server",
                                       "-a",
                                       "127.0.0.1",
                                       "-p",
                                       std::to_string(s.port),
                                       "-m",
                                       std::to_string(s.mport),
                                       "-n",
                                       s.name,
                                       "--cluster_name",
                                       "feedplane_bench",
                                       "--cluster",
                                       "nats://127.0.0.1:" + std::to_string(s.cluster_port),
                                       "--routes",
                                       routes,
                                       "-js",
                                       "-sd",
                                       (dir_ / s.name).string(),
                                       "-l",
                                       (dir_ / (s.name + ".log")).string()};
      std::vector<char*> argv;
      argv.reserve(args.size() + 1);
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      const pid_t parent = getpid();
      pid_t pid = fork();
      if (pid < 0) return "fork failed";
      if (pid == 0) {
        // Only async-signal-safe calls between fork and exec. The server dies with us.
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent) _exit(127);
        execv(bin.c_str(), argv.data());
        _exit(127);
      }
      s.pid = pid;
    }
    auto deadline = wall_now() + 60;
    for (auto& s : servers_) {
      while (http_get(s.mport, "/healthz").find("\"ok\"") == std::string::npos) {
        int st;
        if (waitpid(s.pid, &st, WNOHANG) == s.pid) {
          s.pid = -1;
          return s.name + " exited: " + tail_log(s);
        }
        if (wall_now() > deadline) return s.name + " not healthy after 60 s: " + tail_log(s);
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
    }
    return {};
  }

  // SIGTERM (the server's clean shutdown), then SIGKILL after 10 s.
  void stop() {
    for (auto& s : servers_)
      if (s.pid > 0) kill(s.pid, SIGTERM);
    for (auto& s : servers_) {
      if (s.pid <= 0) continue;
      int st;
      for (int i = 0; i < 1000 && waitpid(s.pid, &st, WNOHANG) != s.pid; ++i) {
        if (i == 999) {
          kill(s.pid, SIGKILL);
          waitpid(s.pid, &st, 0);
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
      s.pid = -1;
    }
  }

  const std::vector<server>& servers() const { return servers_; }
  // The index of the server named `name`, or 0 when there is none (no leader known).
  size_t index(const std::string& name) const {
    for (size_t i = 0; i < servers_.size(); ++i)
      if (servers_[i].name == name) return i;
    return 0;
  }
  std::string url(size_t i) const {
    return "nats://127.0.0.1:" + std::to_string(servers_[i % servers_.size()].port);
  }
  std::string tail_log(const server& s) const {
    std::ifstream f(dir_ / (s.name + ".log"));
    std::string t((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    return t.size() > 1500 ? t.substr(t.size() - 1500) : t;
  }

 private:
  fs::path dir_;
  std::vector<server> servers_;
};

struct cluster_sample {
  std::vector<proc_sample> proc;
  std::vector<varz> v;
};

std::string sample_cluster(const nats_cluster& c, cluster_sample* out) {
  out->proc.assign(c.servers().size(), {});
  out->v.assign(c.servers().size(), {});
  for (size_t i = 0; i < c.servers().size(); ++i) {
    const auto& s = c.servers()[i];
    if (!sample_proc(s.pid, &out->proc[i])) return s.name + ": cannot read /proc";
    if (!sample_varz(s.mport, &out->v[i])) return s.name + ": cannot read /varz";
  }
  return {};
}

// ---------------------------------------------------------------- the clients

std::string nats_error(const char* what, natsStatus s, jsErrCode jerr = jsErrCode(0)) {
  std::string e = std::string(what) + ": " + natsStatus_GetText(s);
  if (jerr != 0) e += " (JetStream error " + std::to_string(int(jerr)) + ")";
  if (const char* last = nats_GetLastError(nullptr); last && *last) e += ": " + std::string(last);
  return e;
}

// One connection and its JetStream context; destroyed in reverse order.
struct nats_client {
  natsConnection* nc = nullptr;
  jsCtx* js = nullptr;
  natsSubscription* sub = nullptr;
  nats_client() = default;
  nats_client(const nats_client&) = delete;
  nats_client& operator=(const nats_client&) = delete;
  ~nats_client() {
    natsSubscription_Destroy(sub);
    jsCtx_Destroy(js);
    natsConnection_Destroy(nc);
  }
  std::string connect(const std::string& url, const jsOptions* jo) {
    natsOptions* o = nullptr;
    natsStatus s = natsOptions_Create(&o);
    if (s == NATS_OK) s = natsOptions_SetURL(o, url.c_str());
    if (s == NATS_OK) s = natsOptions_SetAllowReconnect(o, false);  // a drop is a failure here
    if (s == NATS_OK) s = natsConnection_Connect(&nc, o);
    natsOptions_Destroy(o);
    if (s != NATS_OK) return nats_error(("connect " + url).c_str(), s);
    jsOptions opts;
    jsOptions_Init(&opts);
    if (jo) opts = *jo;
    s = natsConnection_JetStream(&js, nc, &opts);
    return s == NATS_OK ? std::string() : nats_error("JetStream context", s);
  }
};

// What one consumer saw; written by its thread only, read after join.
struct consumer_result {
  uint64_t unique = 0, duplicates = 0, bad = 0, out_of_order = 0;
  std::string error;
};

// Reads the stream through the bound durable pull subscription until every index was
// seen, or no message came for 30 s.
void consume(nats_client* c, const std::string& payload, consumer_result* r) {
  const uint64_t m = g_opt.messages;
  std::vector<bool> seen(m);
  uint64_t next = 0;
  double last_progress = wall_now();
  while (r->unique < m) {
    natsMsgList list{};
    jsErrCode jerr = jsErrCode(0);
    natsStatus s = natsSubscription_Fetch(&list, c->sub, g_opt.batch, 500, &jerr);
    if (s == NATS_TIMEOUT) {
      if (wall_now() - last_progress > 30) {
        r->error = "no message for 30 s";
        return;
      }
      continue;
    }
    if (s != NATS_OK) {
      r->error = nats_error("fetch", s, jerr);
      natsMsgList_Destroy(&list);
      return;
    }
    for (int i = 0; i < list.Count; ++i) {
      const char* d = natsMsg_GetData(list.Msgs[i]);
      const int n = natsMsg_GetDataLength(list.Msgs[i]);
      uint64_t idx = m;
      if (n == g_opt.size) std::memcpy(&idx, d, sizeof idx);
      if (idx >= m || std::memcmp(d + 8, payload.data() + 8, payload.size() - 8) != 0) {
        ++r->bad;
        continue;
      }
      if (seen[idx]) {
        ++r->duplicates;
        continue;
      }
      seen[idx] = true;
      ++r->unique;
      if (idx != next) ++r->out_of_order;
      next = idx + 1;
    }
    if (list.Count > 0) {
      // AckAll: acknowledges this message and every one before it.
      s = natsMsg_Ack(list.Msgs[list.Count - 1], nullptr);
      last_progress = wall_now();
    }
    natsMsgList_Destroy(&list);
    if (s != NATS_OK) {
      r->error = nats_error("ack", s);
      return;
    }
  }
  if (natsStatus s = natsConnection_FlushTimeout(c->nc, 10000); s != NATS_OK)
    r->error = nats_error("flush after the last ack", s);
}

std::atomic<uint64_t> g_publish_errors{0};

void on_publish_error(jsCtx*, jsPubAckErr*, void*) {
  g_publish_errors.fetch_add(1, std::memory_order_relaxed);
}

// One run: a fresh cluster, stream and H consumers; M articles through them.
std::string run_once(benchmark::State& state, int consumers) {
  nats_cluster cluster;
  if (auto e = cluster.start(); !e.empty()) return e;

  // Setup and the checks at the end go through their own connection.
  auto admin = std::make_unique<nats_client>();
  if (auto e = admin->connect(cluster.url(0), nullptr); !e.empty()) return e;

  // The stream, as DESIGN.md 7: file storage, 3 replicas. The first meta leader election
  // may still be running, so retry for up to 30 s.
  jsStreamConfig sc;
  jsStreamConfig_Init(&sc);
  sc.Name = k_stream;
  const char* subjects[] = {"articles.>"};
  sc.Subjects = subjects;
  sc.SubjectsLen = 1;
  sc.Storage = js_FileStorage;
  sc.Retention = js_LimitsPolicy;
  sc.Replicas = k_replicas;
  std::string stream_leader;
  for (double deadline = wall_now() + 30;;) {
    jsStreamInfo* si = nullptr;
    jsErrCode jerr = jsErrCode(0);
    natsStatus s = js_AddStream(&si, admin->js, &sc, nullptr, &jerr);
    if (s == NATS_OK && si->Cluster && si->Cluster->Leader) stream_leader = si->Cluster->Leader;
    jsStreamInfo_Destroy(si);
    if (s == NATS_OK) break;
    if (wall_now() > deadline) return nats_error("add stream", s, jerr);
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }

  // One durable pull consumer per matching host.
  std::vector<std::string> durables, consumer_leaders;
  for (int h = 0; h < consumers; ++h) {
    durables.push_back("host" + std::to_string(h));
    jsConsumerConfig cc;
    jsConsumerConfig_Init(&cc);
    cc.Durable = durables.back().c_str();
    cc.DeliverPolicy = js_DeliverAll;
    cc.AckPolicy = js_AckAll;
    cc.FilterSubject = "articles.>";
    cc.MaxAckPending = 20000;
    jsConsumerInfo* ci = nullptr;
    jsErrCode jerr = jsErrCode(0);
    natsStatus s = js_AddConsumer(&ci, admin->js, k_stream, &cc, nullptr, &jerr);
    consumer_leaders.emplace_back(
        s == NATS_OK && ci->Cluster && ci->Cluster->Leader ? ci->Cluster->Leader : "");
    jsConsumerInfo_Destroy(ci);
    if (s != NATS_OK) return nats_error("add consumer", s, jerr);
  }

  if (stream_leader.empty()) return "the stream has no leader";
  for (size_t h = 0; h < durables.size(); ++h)
    if (consumer_leaders[h].empty()) return durables[h] + " has no leader";

  // Each client connects to the server that leads what it uses: the publisher to the
  // stream leader, each host to its consumer's leader. So every article makes the hops
  // the provisioner charges (in: R, out: R - 1 + H) and no more, whatever the placement;
  // a client on another server adds a route hop each way (not in the model).
  jsOptions pub_opts;
  jsOptions_Init(&pub_opts);
  pub_opts.PublishAsync.MaxPending = g_opt.pending;
  pub_opts.PublishAsync.ErrHandler = on_publish_error;
  pub_opts.Wait = 10000;
  auto pub = std::make_unique<nats_client>();
  if (auto e = pub->connect(cluster.url(cluster.index(stream_leader)), &pub_opts); !e.empty())
    return e;
  std::vector<std::unique_ptr<nats_client>> subs;
  for (int h = 0; h < consumers; ++h) {
    const auto& d = durables[size_t(h)];
    auto c = std::make_unique<nats_client>();
    if (auto e = c->connect(cluster.url(cluster.index(consumer_leaders[size_t(h)])), nullptr);
        !e.empty())
      return e;
    jsSubOptions so;
    jsSubOptions_Init(&so);
    so.Stream = k_stream;
    so.Consumer = d.c_str();
    jsErrCode jerr = jsErrCode(0);
    natsStatus s = js_PullSubscribe(&c->sub, c->js, "articles.>", d.c_str(), nullptr, &so, &jerr);
    if (s != NATS_OK) return nats_error("pull subscribe", s, jerr);
    subs.push_back(std::move(c));
  }

  // The payload: the index in the first 8 bytes, a fixed pattern after it.
  std::string payload(size_t(g_opt.size), '\0');
  for (size_t i = 8; i < payload.size(); ++i) payload[i] = char('a' + i % 26);

  // Let the raft groups settle, measuring what the idle cluster spends meanwhile.
  cluster_sample idle0, before, after;
  if (auto e = sample_cluster(cluster, &idle0); !e.empty()) return e;
  std::this_thread::sleep_for(std::chrono::seconds(1));
  if (auto e = sample_cluster(cluster, &before); !e.empty()) return e;
  const double idle_s = 1.0;

  g_publish_errors = 0;
  std::vector<consumer_result> results(static_cast<size_t>(consumers));
  std::vector<std::thread> threads;
  threads.reserve(size_t(consumers));
  const double t0 = wall_now();
  for (int h = 0; h < consumers; ++h)
    threads.emplace_back(consume, subs[size_t(h)].get(), std::cref(payload), &results[size_t(h)]);
  std::string publish_error;
  for (uint64_t i = 0; i < g_opt.messages; ++i) {
    std::memcpy(payload.data(), &i, sizeof i);
    natsStatus s = js_PublishAsync(pub->js, k_subject, payload.data(), g_opt.size, nullptr);
    if (s != NATS_OK) {
      publish_error = nats_error("publish", s);
      break;
    }
  }
  if (publish_error.empty()) {
    jsPubOptions po;
    jsPubOptions_Init(&po);
    po.MaxWait = 120000;
    if (natsStatus s = js_PublishAsyncComplete(pub->js, &po); s != NATS_OK)
      publish_error = nats_error("waiting for publish acks", s);
  }
  for (auto& t : threads) t.join();
  const double t1 = wall_now();
  if (!publish_error.empty()) return publish_error;
  if (g_publish_errors > 0)
    return std::to_string(g_publish_errors.load()) + " publishes were refused or timed out";

  uint64_t duplicates = 0, out_of_order = 0;
  for (int h = 0; h < consumers; ++h) {
    const auto& r = results[size_t(h)];
    if (!r.error.empty() || r.bad > 0 || r.unique != g_opt.messages)
      return durables[size_t(h)] + " read " + std::to_string(r.unique) + " of " +
             std::to_string(g_opt.messages) + " messages (" + std::to_string(r.bad) +
             " malformed)" + (r.error.empty() ? "" : ": " + r.error);
    duplicates += r.duplicates;
    out_of_order += r.out_of_order;
  }

  int leaders_moved = 0;  // a moved leader adds route hops to the figures
  // Every article stored, and every consumer's ack floor at the end of the stream: the
  // servers have handled every ack before the second sample.
  {
    jsStreamInfo* si = nullptr;
    jsErrCode jerr = jsErrCode(0);
    natsStatus s = js_GetStreamInfo(&si, admin->js, k_stream, nullptr, &jerr);
    const uint64_t stored = s == NATS_OK ? si->State.Msgs : 0;
    if (s == NATS_OK &&
        (!si->Cluster || !si->Cluster->Leader || stream_leader != si->Cluster->Leader))
      ++leaders_moved;
    jsStreamInfo_Destroy(si);
    if (s != NATS_OK) return nats_error("stream info", s, jerr);
    if (stored != g_opt.messages)
      return "the stream holds " + std::to_string(stored) + " of " +
             std::to_string(g_opt.messages) + " messages";
  }
  for (size_t h = 0; h < durables.size(); ++h) {
    const auto& d = durables[h];
    for (double deadline = wall_now() + 10;;) {
      jsConsumerInfo* ci = nullptr;
      jsErrCode jerr = jsErrCode(0);
      natsStatus s = js_GetConsumerInfo(&ci, admin->js, k_stream, d.c_str(), nullptr, &jerr);
      const uint64_t floor = s == NATS_OK ? ci->AckFloor.Stream : 0;
      if (s == NATS_OK && floor >= g_opt.messages &&
          (!ci->Cluster || !ci->Cluster->Leader || consumer_leaders[h] != ci->Cluster->Leader))
        ++leaders_moved;
      jsConsumerInfo_Destroy(ci);
      if (s != NATS_OK) return nats_error("consumer info", s, jerr);
      if (floor >= g_opt.messages) break;
      if (wall_now() > deadline)
        return d + ": ack floor " + std::to_string(floor) + " after 10 s, not " +
               std::to_string(g_opt.messages);
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  if (auto e = sample_cluster(cluster, &after); !e.empty()) return e;
  subs.clear();
  pub.reset();
  admin.reset();
  cluster.stop();

  double cpu = 0, idle_cpu = 0;
  varz sum;
  uint64_t rss_max = 0, rss_min = UINT64_MAX;
  for (size_t i = 0; i < after.proc.size(); ++i) {
    cpu += after.proc[i].cpu_s - before.proc[i].cpu_s;
    idle_cpu += before.proc[i].cpu_s - idle0.proc[i].cpu_s;
    sum.in_msgs += after.v[i].in_msgs - before.v[i].in_msgs;
    sum.out_msgs += after.v[i].out_msgs - before.v[i].out_msgs;
    sum.in_bytes += after.v[i].in_bytes - before.v[i].in_bytes;
    sum.out_bytes += after.v[i].out_bytes - before.v[i].out_bytes;
    rss_max = std::max(rss_max, after.proc[i].rss);
    rss_min = std::min(rss_min, after.proc[i].rss);
  }
  const double m = static_cast<double>(g_opt.messages);
  const double h = consumers;
  const double in_per = static_cast<double>(sum.in_bytes) / m;
  const double out_per = static_cast<double>(sum.out_bytes) / m;
  state.SetIterationTime(t1 - t0);
  state.SetItemsProcessed(int64_t(g_opt.messages));
  state.SetBytesProcessed(int64_t(g_opt.messages) * g_opt.size);
  state.counters["messages"] = m;
  state.counters["size"] = g_opt.size;
  state.counters["server_cpu_s"] = cpu;
  state.counters["cpu_s_per_article"] = cpu / m;
  state.counters["cpu_s_per_message"] = cpu / (m * (k_replicas + h));
  state.counters["cpu_s_per_varz_msg"] = cpu / static_cast<double>(sum.in_msgs + sum.out_msgs);
  state.counters["varz_msgs_per_article"] = static_cast<double>(sum.in_msgs + sum.out_msgs) / m;
  state.counters["in_bytes_per_article"] = in_per;
  state.counters["out_bytes_per_article"] = out_per;
  state.counters["stream_bytes_per_article"] =
      std::max(in_per / k_replicas, out_per / (k_replicas - 1 + h));
  state.counters["rss_bytes_max"] = static_cast<double>(rss_max);
  state.counters["rss_bytes_min"] = static_cast<double>(rss_min);
  state.counters["idle_cpu_s_per_s"] = idle_cpu / idle_s;
  state.counters["articles_per_s"] = m / (t1 - t0);
  state.counters["duplicates"] = static_cast<double>(duplicates);
  state.counters["out_of_order"] = static_cast<double>(out_of_order);
  state.counters["leaders_moved"] = leaders_moved;
  return {};
}

void bm_jetstream(benchmark::State& state) {
  std::string error;
  for (auto _ : state) {
    error = run_once(state, int(state.range(0)));
    if (!error.empty()) break;
  }
  if (!error.empty()) {
    std::fprintf(stderr, "nats_bench: %s\n", error.c_str());
    g_failed = true;
    state.SkipWithError(error.c_str());
  }
}

bool parse_flag(const char* arg, const char* name, int64_t min, int64_t* out) {
  size_t n = std::strlen(name);
  if (std::strncmp(arg, name, n) != 0 || arg[n] != '=') return false;
  char* end = nullptr;
  long long v = std::strtoll(arg + n + 1, &end, 10);
  if (*end != '\0' || v < min) {
    std::fprintf(stderr, "nats_bench: %s must be an integer >= %lld\n", name, (long long)min);
    std::exit(2);
  }
  *out = v;
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  for (int i = 1; i < argc; ++i) {
    int64_t v = 0;
    if (parse_flag(argv[i], "--messages", 1, &v)) {
      g_opt.messages = uint64_t(v);
    } else if (parse_flag(argv[i], "--size", 8, &v)) {
      g_opt.size = int(v);
    } else if (parse_flag(argv[i], "--batch", 1, &v)) {
      g_opt.batch = int(v);
    } else if (parse_flag(argv[i], "--pending", 1, &v)) {
      g_opt.pending = v;
    } else {
      std::fprintf(stderr,
                   "usage: nats_bench [--messages=N (200000)] [--size=BYTES (868)] "
                   "[--batch=N (256)] [--pending=N (4096)] [benchmark flags]\n");
      return 2;
    }
  }
  benchmark::RegisterBenchmark("jetstream_r3", bm_jetstream)
      ->ArgName("consumers")
      ->Arg(1)
      ->Arg(4)
      ->Iterations(1)
      ->UseManualTime()
      ->Unit(benchmark::kMillisecond);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  nats_Close();
  return g_failed ? 1 : 0;
}
