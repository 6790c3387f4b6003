// `feedplane parse FILE|URL [--content-type CT] [--base-url URL] [--config FILE]`: parse one
// feed document (or fetch one with net's HTTP client, configured from [client] exactly as
// `feedplane fetch` is) and print the model as JSON. Exit 0 for a readable document (with
// `recovered` naming every repair), 3 with a named error for an unreadable one, 2 for a file
// that cannot be read or a bad configuration, 4 for a fetch that failed (error named).
#include <fmt/format.h>

#include <cstdio>
#include <memory>
#include <string>

#include "commands.h"
#include "feedplane/dataplane/config.h"
#include "feedplane/dataplane/file.h"
#include "feedplane/feed/parser.h"
#include "feedplane/feed/render.h"
#include "feedplane/net/http_client.h"
#include "feedplane/net/loop.h"

namespace feedplane::dataplane {
namespace {

struct parse_args {
  std::string source;
  std::string content_type;
  std::string base_url;
  std::string config_path;
};

bool is_url(const std::string& s) { return s.starts_with("http://") || s.starts_with("https://"); }

// One GET with net's HTTP client on a private loop; prints a named error and returns false
// when there is no 200 response to parse.
bool fetch(const std::string& url, const client_config& cc, net::fetch_result& out) {
  std::string err;
  net::loop_options lo;
  lo.ring_entries = 64;
  auto l = net::loop::create(lo, &err);
  if (!l) {
    fmt::print(stderr, "feedplane: parse {}: io_loop_unavailable: {}\n", url, err);
    return false;
  }
  auto c = net::http_client::create(*l, client_options_from(cc), &err);
  if (!c) {
    fmt::print(stderr, "feedplane: parse {}: http_client_unavailable: {}\n", url, err);
    return false;
  }
  struct state {
    bool done = false;
    net::fetch_result* out;
  } st{false, &out};
  net::fetch_request req;
  req.url = url;
  c->fetch(
      req,
      [](void* ctx, uint64_t, net::fetch_result& r) {
        auto* s = static_cast<state*>(ctx);
        *s->out = std::move(r);
        s->done = true;
      },
      &st);
  // The client's whole-fetch timeout (5 s by default) guarantees the callback runs.
  while (!st.done) l->run_once(true);
  c->shutdown();
  for (int i = 0; i < 1000 && !c->quiescent(); ++i) l->run_once(true);
  if (out.error != net::fetch_error::ok) {
    fmt::print(stderr, "feedplane: parse {}: {}{}{}\n", url, net::fetch_error_name(out.error),
               out.detail.empty() ? "" : ": ", out.detail);
    return false;
  }
  if (out.status != 200) {
    fmt::print(stderr, "feedplane: parse {}: http_status_{}\n", url, out.status);
    return false;
  }
  return true;
}

}  // namespace

void add_parse_command(CLI::App& app, int* rc) {
  auto* cmd = app.add_subcommand(
      "parse", "parse a feed document (RSS, Atom, JSON Feed) and print it as JSON");
  auto args = std::make_shared<parse_args>();
  cmd->add_option("source", args->source, "feed file (or http(s) URL)")->required();
  cmd->add_option("--content-type", args->content_type,
                  "HTTP Content-Type the document came with (its charset counts)");
  cmd->add_option("--base-url", args->base_url,
                  "URL the document was fetched from (resolves relative links)");
  cmd->add_option("--config,-c", args->config_path,
                  "TOML configuration file ([client] section, for URLs)");
  cmd->callback([args, rc] {
    std::string bytes, content_type = args->content_type, base_url = args->base_url;
    const feed::parse_options defaults;
    config cfg;
    if (!args->config_path.empty()) {
      if (auto err = load_config_file(args->config_path, cfg); !err.empty()) {
        fmt::print(stderr, "feedplane: parse: {}\n", err);
        *rc = 2;
        return;
      }
    }
    if (is_url(args->source)) {
      net::fetch_result r;
      if (!fetch(args->source, cfg.client, r)) {
        *rc = 4;
        return;
      }
      bytes = std::move(r.body);
      if (content_type.empty()) content_type = r.content_type;  // the server's charset counts
      if (base_url.empty()) base_url = r.final_url;             // links resolve where it ended
    } else {
      std::string why;
      const read_status rs = read_file(args->source, defaults.max_bytes, bytes, &why);
      if (rs == read_status::failed) {
        fmt::print(stderr, "feedplane: parse: cannot open '{}': {}\n", args->source, why);
        *rc = 2;
        return;
      }
      if (rs == read_status::too_large) {
        fmt::print(stderr, "feedplane: parse {}: {}\n", args->source,
                   feed::errc_name(feed::parse_errc::too_large));
        *rc = 3;
        return;
      }
    }
    feed::parser p;
    feed::feed f;
    feed::parse_options opts = defaults;
    opts.content_type = content_type;
    opts.base_url = base_url;
    const feed::parse_errc e = p.parse(bytes, opts, f);
    if (e != feed::parse_errc::ok) {
      fmt::print(stderr, "feedplane: parse {}: {}\n", args->source, feed::errc_name(e));
      *rc = 3;
      return;
    }
    std::string out;
    feed::render_json(f, out);
    out.push_back('\n');
    std::fwrite(out.data(), 1, out.size(), stdout);
  });
}

}  // namespace feedplane::dataplane
