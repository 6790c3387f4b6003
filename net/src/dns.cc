#include "feedplane/net/dns.h"

#include <ares.h>
#include <arpa/inet.h>

#include <algorithm>
#include <cstring>
#include <mutex>

namespace feedplane::net {

namespace {

std::once_flag g_ares_init;

}  // namespace

bool parse_ip_literal(const std::string& host, ip_address& out) {
  if (inet_pton(AF_INET, host.c_str(), out.bytes) == 1) {
    out.family = AF_INET;
    return true;
  }
  if (inet_pton(AF_INET6, host.c_str(), out.bytes) == 1) {
    out.family = AF_INET6;
    return true;
  }
  return false;
}

namespace {

fetch_error classify(int status) {
  switch (status) {
    case ARES_SUCCESS:
      return fetch_error::ok;
    case ARES_ENOTFOUND:
    case ARES_ENODATA:
    case ARES_ENONAME:
      return fetch_error::dns_not_found;
    case ARES_ETIMEOUT:
      return fetch_error::dns_timeout;
    case ARES_ECANCELLED:
    case ARES_EDESTRUCTION:
      return fetch_error::cancelled;
    default:
      return fetch_error::dns_failure;
  }
}

}  // namespace

socklen_t ip_address::to_sockaddr(uint16_t port, sockaddr_storage& out) const {
  std::memset(&out, 0, sizeof out);
  if (family == AF_INET6) {
    auto* s6 = reinterpret_cast<sockaddr_in6*>(&out);
    s6->sin6_family = AF_INET6;
    s6->sin6_port = htons(port);
    std::memcpy(&s6->sin6_addr, bytes, 16);
    return sizeof(sockaddr_in6);
  }
  auto* s4 = reinterpret_cast<sockaddr_in*>(&out);
  s4->sin_family = AF_INET;
  s4->sin_port = htons(port);
  std::memcpy(&s4->sin_addr, bytes, 4);
  return sizeof(sockaddr_in);
}

std::string ip_address::str() const {
  char buf[INET6_ADDRSTRLEN] = {};
  inet_ntop(family, bytes, buf, sizeof buf);
  return buf;
}

bool operator==(const ip_address& a, const ip_address& b) {
  return a.family == b.family && std::memcmp(a.bytes, b.bytes, a.family == AF_INET6 ? 16 : 4) == 0;
}

std::unique_ptr<dns_resolver> dns_resolver::create(const dns_options& opt, std::string* error) {
  std::call_once(g_ares_init, [] { ares_library_init(ARES_LIB_INIT_ALL); });
  std::unique_ptr<dns_resolver> r(new dns_resolver());
  r->opt_ = opt;
  ares_options o{};
  int mask = ARES_OPT_SOCK_STATE_CB | ARES_OPT_TIMEOUTMS | ARES_OPT_TRIES | ARES_OPT_LOOKUPS;
  o.sock_state_cb = &dns_resolver::on_sock_state;
  o.sock_state_cb_data = r.get();
  o.timeout = static_cast<int>(opt.timeout_ms);
  o.tries = static_cast<int>(opt.tries);
  char lookups_hosts[] = "fb";
  char lookups_dns[] = "b";
  o.lookups = opt.use_hosts_file ? lookups_hosts : lookups_dns;
  ares_channel ch = nullptr;
  int s = ares_init_options(&ch, &o, mask);
  if (s != ARES_SUCCESS) {
    *error = std::string("c-ares initialisation failed: ") + ares_strerror(s);
    return nullptr;
  }
  r->channel_ = ch;
  if (!opt.servers.empty()) {
    s = ares_set_servers_ports_csv(ch, opt.servers.c_str());
    if (s != ARES_SUCCESS) {
      *error = "bad DNS server list '" + opt.servers + "': " + ares_strerror(s);
      return nullptr;
    }
  }
  return r;
}

dns_resolver::~dns_resolver() {
  // ares_destroy calls every pending callback with ARES_EDESTRUCTION -> cancelled.
  if (channel_ != nullptr) ares_destroy(static_cast<ares_channel>(channel_));
}

void dns_resolver::on_sock_state(void* ctx, int fd, int readable, int writable) {
  auto* self = static_cast<dns_resolver*>(ctx);
  if (self->watch_fn_ != nullptr)
    self->watch_fn_(self->watch_ctx_, fd, readable != 0, writable != 0);
}

bool dns_resolver::resolve(const std::string& host, done_fn done, void* ctx, uint64_t* id,
                           fetch_error* e, std::vector<ip_address>* out) {
  *id = 0;
  ip_address lit;
  if (parse_ip_literal(host, lit)) {
    out->assign(1, lit);
    *e = fetch_error::ok;
    return true;
  }
  auto now = std::chrono::steady_clock::now();
  if (auto it = cache_.find(host); it != cache_.end()) {
    if (it->second.expires > now) {
      *e = it->second.error;
      *out = it->second.addrs;
      return true;
    }
    cache_.erase(it);
  }
  *id = next_id_++;
  auto [it, inserted] = pending_.try_emplace(host);
  if (inserted) {
    it->second = std::make_unique<pending_query>();
    it->second->self = this;
    it->second->host = host;
  }
  it->second->waiters.push_back({*id, done, ctx});
  if (inserted) {
    ++queries_sent_;
    ares_addrinfo_hints hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = ARES_AI_NOSORT;
    // c-ares may answer synchronously (hosts file, bad name): on_addrinfo then stores the
    // answer in sync_* instead of calling back, and resolve() returns it directly.
    starting_ = it->second.get();
    sync_done_ = false;
    ares_getaddrinfo(static_cast<ares_channel>(channel_), host.c_str(), nullptr, &hints,
                     &dns_resolver::on_addrinfo, it->second.get());
    starting_ = nullptr;
    if (sync_done_) {
      *id = 0;
      *e = sync_error_;
      out->swap(sync_addrs_);
      return true;
    }
  }
  return false;
}

void dns_resolver::cancel(uint64_t id) {
  if (delivering_ != nullptr)
    for (auto& x : delivering_->waiters)
      if (x.id == id) x.fn = nullptr;
  for (auto& [host, q] : pending_) {
    auto& w = q->waiters;
    for (auto& x : w)
      if (x.id == id) x.fn = nullptr;
  }
}

void dns_resolver::on_addrinfo(void* arg, int status, int /*timeouts*/, ::ares_addrinfo* res) {
  auto* q = static_cast<pending_query*>(arg);
  dns_resolver* self = q->self;
  std::vector<ip_address> addrs;
  int min_ttl = INT32_MAX;
  if (status == ARES_SUCCESS && res != nullptr) {
    // IPv4 first, then IPv6: most feed servers answer on both, and loopback test peers
    // usually listen on 127.0.0.1 only; the client tries the next address on failure.
    for (int fam : {AF_INET, AF_INET6}) {
      for (auto* n = res->nodes; n != nullptr; n = n->ai_next) {
        if (n->ai_family != fam || n->ai_addr == nullptr) continue;
        ip_address a;
        a.family = fam;
        if (fam == AF_INET)
          std::memcpy(a.bytes, &reinterpret_cast<sockaddr_in*>(n->ai_addr)->sin_addr, 4);
        else
          std::memcpy(a.bytes, &reinterpret_cast<sockaddr_in6*>(n->ai_addr)->sin6_addr, 16);
        if (std::find(addrs.begin(), addrs.end(), a) == addrs.end()) addrs.push_back(a);
        min_ttl = std::min(min_ttl, n->ai_ttl);
      }
    }
  }
  if (res != nullptr) ares_freeaddrinfo(res);
  fetch_error e = classify(status);
  if (e == fetch_error::ok && addrs.empty()) e = fetch_error::dns_not_found;

  // Take the query out of the table before calling back (callbacks may resolve again).
  auto node = self->pending_.extract(q->host);
  std::unique_ptr<pending_query> owned = std::move(node.mapped());
  if (e == fetch_error::ok || e == fetch_error::dns_not_found) {
    uint32_t ttl = e == fetch_error::ok
                       ? std::clamp<uint32_t>(min_ttl < 0 ? 0u : static_cast<uint32_t>(min_ttl),
                                              self->opt_.min_ttl_s, self->opt_.max_ttl_s)
                       : self->opt_.negative_ttl_s;
    auto now = std::chrono::steady_clock::now();
    if (self->cache_.size() >= self->opt_.max_cache_entries) self->trim_cache(now);
    self->cache_[owned->host] = {e, addrs, now + std::chrono::seconds(ttl)};
  }
  if (q == self->starting_) {
    self->sync_done_ = true;
    self->sync_error_ = e;
    self->sync_addrs_ = std::move(addrs);
    return;
  }
  // A callback may cancel a later waiter of this same query (its owner gave up): cancel()
  // looks in delivering_ too, and each waiter's fn is read just before its call.
  pending_query* outer = self->delivering_;
  self->delivering_ = owned.get();
  for (size_t i = 0; i < owned->waiters.size(); ++i) {
    waiter w = owned->waiters[i];
    if (w.fn != nullptr) w.fn(w.ctx, e, addrs);
  }
  self->delivering_ = outer;
}

void dns_resolver::trim_cache(std::chrono::steady_clock::time_point now) {
  std::erase_if(cache_, [now](const auto& kv) { return kv.second.expires <= now; });
  size_t target = size_t{opt_.max_cache_entries} / 4 * 3;
  if (cache_.size() <= target) return;
  std::vector<std::chrono::steady_clock::time_point> ex;
  ex.reserve(cache_.size());
  for (const auto& kv : cache_) ex.push_back(kv.second.expires);
  auto cut = ex.begin() + static_cast<std::ptrdiff_t>(cache_.size() - target);
  std::nth_element(ex.begin(), cut, ex.end());
  auto limit = *cut;
  std::erase_if(cache_, [limit](const auto& kv) { return kv.second.expires < limit; });
  // Ties at the limit: drop arbitrary entries so the bound always holds.
  for (auto it = cache_.begin(); cache_.size() > target && it != cache_.end();)
    it = cache_.erase(it);
}

void dns_resolver::process_fd(int fd, bool readable, bool writable) {
  ares_process_fd(static_cast<ares_channel>(channel_), readable ? fd : ARES_SOCKET_BAD,
                  writable ? fd : ARES_SOCKET_BAD);
}

void dns_resolver::process_timeouts() {
  ares_process_fd(static_cast<ares_channel>(channel_), ARES_SOCKET_BAD, ARES_SOCKET_BAD);
}

int64_t dns_resolver::next_timeout_ms() {
  if (pending_.empty()) return -1;
  timeval tv{};
  timeval* t = ares_timeout(static_cast<ares_channel>(channel_), nullptr, &tv);
  if (t == nullptr) return -1;
  return static_cast<int64_t>(t->tv_sec) * 1000 + (t->tv_usec + 999) / 1000;
}

}  // namespace feedplane::net
