// feedplane_test_put_articles DIR < articles.jsonl: appends articles to the article log of
// the store in DIR (the `db` directory of a stopped `feedplane serve --data`), through the
// real store thread, as a crawling shard would: one durable write, sequenced by the store.
// Prints "SEQ GUID" for each, in order. For the end-to-end tests only (the product takes
// articles from its crawler); `feedplane serve` replays the log at start-up.
//
// Each line: {"title", "link", "guid", "summary" (HTML), "source_url", "published" (unix
// seconds), "replaces" (a sequence, 0 = new)}; every field optional.
#include <simdjson.h>

#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <thread>

#include "feedplane/net/loop.h"
#include "feedplane/runtime/shard.h"
#include "feedplane/store/store.h"

namespace rt = feedplane::runtime;
namespace st = feedplane::store;

namespace {

struct done_write : rt::store_write {
  bool* acked = nullptr;
  int32_t* result = nullptr;
  uint64_t* first = nullptr;
  void on_durable(rt::shard&) override {
    *acked = true;
    *result = status;
    *first = first_seq;
  }
};

struct quiet : rt::shard_listener {
  void on_article(rt::shard&, const rt::article_ref&) override {}
  void on_record(rt::shard&, rt::kind, std::string_view, std::string_view) override {}
  void on_streamed(rt::shard&) override {}
};

bool read_article(simdjson::ondemand::parser& p, const std::string& line, rt::article_builder& b) {
  simdjson::padded_string padded(line);
  simdjson::ondemand::document doc;
  simdjson::ondemand::object obj;
  if (p.iterate(padded).get(doc) || doc.get_object().get(obj)) return false;
  b.clear();
  for (auto field : obj) {
    std::string_view key, s;
    if (field.unescaped_key().get(key)) return false;
    auto v = field.value();
    if (key == "published" || key == "replaces") {
      int64_t n = 0;
      if (v.get_int64().get(n)) return false;
      if (key == "published") b.meta.published = n;
      if (key == "replaces") b.meta.replaces = uint64_t(n);
      continue;
    }
    if (v.get_string().get(s)) return false;
    if (key == "title") b.title = s;
    if (key == "link") b.link = s;
    if (key == "guid") b.guid = s;
    if (key == "summary") b.summary = s;
    if (key == "source_url") b.source_url = s;
  }
  b.meta.fetched_ms = b.meta.published * 1000;
  b.meta.identity_hash = std::hash<std::string>()(b.guid);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DB_DIR < articles.jsonl\n", argv[0]);
    return 2;
  }
  rt::mesh m(1, rt::mesh_options{});
  std::string err;
  st::store_options so;
  so.dir = argv[1];
  auto db = st::store::open(
      so, st::ports_from_mesh(m), [](rt::kind, std::string_view) { return 0u; }, &err);
  if (!db) {
    std::fprintf(stderr, "store: %s\n", err.c_str());
    return 1;
  }
  m.set_store_notify([](void* d, bool api) { static_cast<st::store*>(d)->notify(api); }, db.get());
  feedplane::net::loop_options lo;
  lo.ring_entries = 64;
  lo.buffer_count = 8;
  lo.buffer_size = 1024;
  auto l = feedplane::net::loop::create(lo, &err);
  if (!l) {
    std::fprintf(stderr, "loop: %s\n", err.c_str());
    return 1;
  }
  int rc = 0;
  {
    rt::shard s(m, 0, *l);
    quiet q;
    s.set_listener(&q);
    bool acked = false;
    int32_t result = 0;
    uint64_t first = 0;
    auto w = std::make_unique<done_write>();
    w->acked = &acked;
    w->result = &result;
    w->first = &first;
    simdjson::ondemand::parser p;
    rt::article_builder b;
    std::vector<std::string> guids;
    for (std::string line; std::getline(std::cin, line);) {
      if (line.empty()) continue;
      if (!read_article(p, line, b)) {
        std::fprintf(stderr, "bad article line: %s\n", line.c_str());
        return 2;
      }
      guids.push_back(b.guid);
      w->articles.push_back(b.freeze());
    }
    db->start();
    rt::write_ptr wp = std::move(w);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    bool sent = false;
    while (!acked && std::chrono::steady_clock::now() < deadline) {
      if (!sent && s.store_streamed()) sent = s.write(wp);
      l->run_once(false);
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    if (!acked || result != 0) {
      std::fprintf(stderr, "the write was not acknowledged (status %d)\n", int(result));
      rc = 1;
    } else {
      for (size_t i = 0; i < guids.size(); ++i)
        std::printf("%" PRIu64 " %s\n", first + uint64_t(i), guids[i].c_str());
    }
    for (int k = 0; k < 20; ++k) l->run_once(false);
    db->stop();
  }
  return rc;
}
