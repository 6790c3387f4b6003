// Asynchronous DNS (c-ares) driven by fd readiness from the caller's event loop, with a
// TTL cache. IPv4 and IPv6 (A and AAAA); IP literals resolve at once without c-ares.
//
// Driving it: the resolver reports which fds c-ares wants watched through the watch
// function (fd, readable, writable; both false = stop watching). The driver polls them
// and calls process_fd() when one is ready, and calls process_timeouts() when
// next_timeout_ms() elapses. dns_loop_driver (http_client.h) does this on io_uring; tests
// can use poll(). Single-threaded: one resolver per shard.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "feedplane/net/fetch_error.h"

struct ares_addrinfo;

namespace feedplane::net {

struct ip_address {
  int family = AF_INET;  // AF_INET or AF_INET6
  uint8_t bytes[16] = {};
  // Fills `out` with this address and `port`; returns the sockaddr length.
  socklen_t to_sockaddr(uint16_t port, sockaddr_storage& out) const;
  std::string str() const;
  friend bool operator==(const ip_address& a, const ip_address& b);
};

// True when host is an IPv4 or IPv6 literal (no brackets); fills out.
bool parse_ip_literal(const std::string& host, ip_address& out);

struct dns_options {
  std::string servers;         // "127.0.0.1:5353,[::1]:53"; empty = /etc/resolv.conf
  uint32_t timeout_ms = 2000;  // per try
  uint32_t tries = 2;
  uint32_t min_ttl_s = 5;  // cache bounds for positive answers
  uint32_t max_ttl_s = 3600;
  uint32_t negative_ttl_s = 10;        // NXDOMAIN / no address cached this long
  bool use_hosts_file = true;          // /etc/hosts before DNS
  uint32_t max_cache_entries = 65536;  // beyond it expired entries are swept, then the oldest
};

class dns_resolver {
 public:
  // Result callback: error ok with at least one address, or a dns_* error / cancelled.
  using done_fn = void (*)(void* ctx, fetch_error e, const std::vector<ip_address>& addrs);
  using watch_fn = void (*)(void* ctx, int fd, bool readable, bool writable);

  // Returns null and sets *error when c-ares cannot be set up (bad server list, ...).
  static std::unique_ptr<dns_resolver> create(const dns_options& opt, std::string* error);
  ~dns_resolver();  // pending callbacks get `cancelled`
  dns_resolver(const dns_resolver&) = delete;
  dns_resolver& operator=(const dns_resolver&) = delete;

  void set_watch_fn(watch_fn fn, void* ctx) {
    watch_fn_ = fn;
    watch_ctx_ = ctx;
  }

  // Answers from the cache or an IP literal immediately (returns true, *e and *out set);
  // otherwise starts (or joins) a query and returns false; `done` is called later with
  // the id returned in *id. Same-host queries in flight are coalesced.
  bool resolve(const std::string& host, done_fn done, void* ctx, uint64_t* id, fetch_error* e,
               std::vector<ip_address>* out);
  // The callback for `id` will not be called.
  void cancel(uint64_t id);

  void process_fd(int fd, bool readable, bool writable);
  void process_timeouts();
  // Milliseconds until c-ares needs process_timeouts(), or -1 with nothing pending.
  int64_t next_timeout_ms();
  bool busy() const { return !pending_.empty(); }

  size_t cache_size() const { return cache_.size(); }
  uint64_t queries_sent() const { return queries_sent_; }
  void clear_cache() { cache_.clear(); }

 private:
  struct waiter {
    uint64_t id;
    done_fn fn;
    void* ctx;
  };
  struct pending_query {
    dns_resolver* self;
    std::string host;
    std::vector<waiter> waiters;
  };
  struct cache_entry {
    fetch_error error;
    std::vector<ip_address> addrs;
    std::chrono::steady_clock::time_point expires;
  };

  dns_resolver() = default;
  static void on_sock_state(void* ctx, int fd, int readable, int writable);
  // Keeps the cache under max_cache_entries: drops expired entries, then those expiring
  // soonest, down to 3/4 of the bound (amortised: runs once per bound/4 insertions).
  void trim_cache(std::chrono::steady_clock::time_point now);
  static void on_addrinfo(void* arg, int status, int timeouts, ::ares_addrinfo* res);

  void* channel_ = nullptr;  // ares_channel
  dns_options opt_;
  watch_fn watch_fn_ = nullptr;
  void* watch_ctx_ = nullptr;
  uint64_t next_id_ = 1;
  uint64_t queries_sent_ = 0;
  std::unordered_map<std::string, std::unique_ptr<pending_query>> pending_;
  std::unordered_map<std::string, cache_entry> cache_;
  // A query answered inside ares_getaddrinfo (see resolve()).
  pending_query* starting_ = nullptr;
  pending_query* delivering_ = nullptr;  // the query whose callbacks are running
  bool sync_done_ = false;
  fetch_error sync_error_ = fetch_error::ok;
  std::vector<ip_address> sync_addrs_;
};

}  // namespace feedplane::net
