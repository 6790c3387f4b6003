// The per-shard parts of the data plane (the crawler, the reflector) and what they reach.
//
// `feedplane serve` creates one instance of every component on every shard, on the shard's
// thread, after the shard's loop, HTTP client and HTTP server exist. Each component:
//   - owns the store record kinds it lists (owner() places a record on its shard at
//     start-up; keys are global, so --shards may change between runs: DESIGN.md 9);
//   - adds its routes once, to the one router every shard serves; a handler reaches its
//     shard's instance through the request context (shard_services::get<T>());
//   - receives the broadcast articles, its start-up records and the end of start-up
//     streaming (runtime::shard_listener), on its shard's thread.
// Shutdown: stop() when the process stops (stop starting work), then the loop runs until
// every component is quiescent() (bounded by the clock), then components are destroyed in
// reverse order of creation, before the client, the server and the loop.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "feedplane/dataplane/sources.h"
#include "feedplane/runtime/messages.h"
#include "feedplane/runtime/shard.h"

namespace feedplane::net {
class http_client;
class http_server;
class router;
}  // namespace feedplane::net
namespace feedplane::store {
class store;
}

namespace feedplane::dataplane {

struct config;
class backup_manager;

// Slots of the components, in creation order.
enum class component_id : uint8_t { crawler = 0, reflector = 1, count = 2 };

class component : public runtime::shard_listener {
 public:
  void on_article(runtime::shard&, const runtime::article_ref&) override {}
  void on_record(runtime::shard&, runtime::kind, std::string_view, std::string_view) override {}
  void on_streamed(runtime::shard&) override {}
  // The process is stopping: start nothing new (fetches, writes).
  virtual void stop() {}
  // Nothing the component started (fetches, timers) is still in flight.
  virtual bool quiescent() const { return true; }
  // Start-up is over for this component on this shard: it can serve reads (/readyz). The
  // reflector, say, once it re-matched the article log that the store replayed.
  virtual bool ready() const { return true; }
  // Counts of subscriptions matched by the new articles of sources this shard crawls
  // (source_shard), sent by some shard's reflector in a task: the crawler's weights.
  // Through this interface, not a crawler function, so the reflector need not link the
  // crawler (sources.h).
  virtual void on_source_matches(runtime::shard&, std::span<const source_matches>) {}
};

// What a shard's components and HTTP handlers reach. runtime::shard::context() and every
// route's request context point at the shard's one instance. Used on the shard's thread
// only; `db` also through its thread-safe accessors.
struct shard_services {
  runtime::shard* rt = nullptr;
  net::http_server* srv = nullptr;
  net::http_client* client = nullptr;  // the crawler's HTTP client
  store::store* db = nullptr;
  backup_manager* backups = nullptr;  // POST/GET /api/backups (admin); any thread
  const config* cfg = nullptr;
  runtime::counter* requests_deferred = nullptr;
  std::array<component*, size_t(component_id::count)> parts{};

  template <class T>
  T& get() const {
    return *static_cast<T*>(parts[size_t(T::id)]);
  }
  static shard_services& of(runtime::shard& s) {
    return *static_cast<shard_services*>(s.context());
  }
};

// How `feedplane serve` builds a component (one static instance per component).
struct component_def {
  const char* name = "";
  component_id id = component_id::count;
  // Record kinds this component owns; owner() says which shard gets each record.
  std::vector<runtime::kind> kinds;
  uint32_t (*owner)(runtime::kind k, std::string_view key, uint32_t shards) = nullptr;
  // Adds the component's routes (once, before any shard starts).
  void (*add_routes)(net::router& r, const config& cfg) = nullptr;
  // Creates the shard's instance (on the shard's thread).
  std::unique_ptr<component> (*create)(shard_services& s) = nullptr;
};

}  // namespace feedplane::dataplane
