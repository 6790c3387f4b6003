// `feedplane fetch URL [-H 'Name: value']... [--cacert FILE] [--insecure] [--output FILE]
// [--config FILE]`: one GET through the crawler's own HTTP client (same DNS, TLS, redirects,
// decoding and limits), printed as one JSON object; the tool to reach for when a feed misbehaves.
#include <fmt/format.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "commands.h"
#include "feedplane/base/ascii.h"
#include "feedplane/base/json.h"
#include "feedplane/dataplane/config.h"
#include "feedplane/net/http_client.h"
#include "feedplane/net/http_response.h"

namespace feedplane::dataplane {

namespace {

// s as a JSON string literal. Header bytes are not guaranteed UTF-8: invalid bytes print as
// U+FFFD, so the output is always valid JSON.
std::string json_string(std::string_view s) {
  std::string out;
  base::append_json_string(s, out);
  return out;
}

void print_error(std::string_view name, std::string_view message) {
  fmt::print("{{\"error\": {}, \"message\": {}}}\n", json_string(name), json_string(message));
}

struct fetch_opts {
  std::string url;
  std::vector<std::string> headers;
  std::string cacert;
  bool insecure = false;
  std::string output;
  std::string config_path;
};

int run_fetch(const fetch_opts& o) {
  config cfg;
  if (!o.config_path.empty()) {
    if (auto err = load_config_file(o.config_path, cfg); !err.empty()) {
      print_error("bad_config", err);
      return 2;
    }
  }
  net::fetch_request req;
  req.url = o.url;
  req.insecure = o.insecure;
  for (const auto& h : o.headers) {
    auto colon = h.find(':');
    if (colon == std::string::npos || colon == 0) {
      print_error("bad_request_header", "-H needs 'Name: value', got '" + h + "'");
      return 2;
    }
    std::string name = h.substr(0, colon);
    std::string value = h.substr(colon + 1);
    while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.erase(0, 1);
    req.headers.emplace_back(std::move(name), std::move(value));
  }
  net::client_options copt = client_options_from(cfg.client);
  if (!o.cacert.empty()) copt.ca_file = o.cacert;

  std::string err;
  net::loop_options lo;
  lo.ring_entries = 64;
  lo.buffer_count = 16;
  auto l = net::loop::create(lo, &err);
  if (!l) {
    print_error("internal", err);
    return 1;
  }
  auto client = net::http_client::create(*l, copt, &err);
  if (!client) {
    print_error(copt.ca_file.empty() ? "tls_error" : "bad_ca_file", err);
    return 1;
  }
  struct box {
    bool done = false;
    net::fetch_result r;
  } b;
  client->fetch(
      req,
      [](void* ctx, uint64_t, net::fetch_result& r) {
        auto* bb = static_cast<box*>(ctx);
        bb->r = std::move(r);
        bb->done = true;
      },
      &b);
  while (!b.done) {
    if (l->run_once(true) < 0) break;
  }
  client->shutdown();
  for (int i = 0; i < 1000 && !client->quiescent(); ++i) l->run_once(true);
  if (!b.done) {
    print_error("internal", "the event loop failed");
    return 1;
  }
  const auto& r = b.r;
  if (r.error != net::fetch_error::ok) {
    std::string msg(net::fetch_error_message(r.error));
    if (!r.detail.empty()) msg += ": " + r.detail;
    print_error(net::fetch_error_name(r.error), msg);
    return 1;
  }
  if (!o.output.empty()) {
    std::ofstream f(o.output, std::ios::binary | std::ios::trunc);
    f.write(r.body.data(), static_cast<std::streamsize>(r.body.size()));
    if (!f) {
      print_error("output_failed", "cannot write " + o.output);
      return 1;
    }
  }
  std::string out = "{";
  out += "\"url\": " + json_string(o.url);
  out += ", \"final_url\": " + json_string(r.final_url);
  out += ", \"redirects\": [";
  for (size_t i = 0; i < r.redirects.size(); ++i) {
    const auto& h = r.redirects[i];
    if (i) out += ", ";
    out += fmt::format("{{\"from\": {}, \"to\": {}, \"status\": {}, \"permanent\": {}}}",
                       json_string(h.from), json_string(h.to), h.status,
                       h.permanent ? "true" : "false");
  }
  out += "]";
  if (!r.permanent_url().empty()) out += ", \"permanent_url\": " + json_string(r.permanent_url());
  out += fmt::format(", \"status\": {}", r.status);
  // Header names keep their case; repeated headers are joined with ", " (a JSON object).
  std::vector<std::pair<std::string, std::string>> merged;
  for (const auto& [n, v] : r.headers) {
    bool found = false;
    for (auto& m : merged) {
      if (base::ascii_iequals(m.first, n)) {
        m.second += ", " + v;
        found = true;
        break;
      }
    }
    if (!found) merged.emplace_back(n, v);
  }
  out += ", \"headers\": {";
  for (size_t i = 0; i < merged.size(); ++i) {
    if (i) out += ", ";
    out += json_string(merged[i].first) + ": " + json_string(merged[i].second);
  }
  out += "}";
  out += fmt::format(", \"wire_bytes\": {}, \"decoded_bytes\": {}, \"elapsed_ms\": {}",
                     r.wire_bytes, r.decoded_bytes, r.elapsed_ms);
  if (!o.output.empty()) out += ", \"output\": " + json_string(o.output);
  out += "}\n";
  fmt::print("{}", out);
  return 0;
}

}  // namespace

void add_fetch_command(CLI::App& app, int* rc) {
  auto* cmd = app.add_subcommand(
      "fetch",
      "GET a URL with the crawler's HTTP client and print one JSON object: final URL, "
      "redirect chain, status, response headers, wire and decoded bytes, elapsed ms "
      "(or {\"error\": NAME, \"message\": ...} and a non-zero exit)");
  auto o = std::make_shared<fetch_opts>();
  cmd->add_option("url", o->url, "http:// or https:// URL")->required();
  cmd->add_option("-H,--header", o->headers, "extra request header 'Name: value' (repeatable)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  cmd->add_option("--cacert", o->cacert, "PEM CA file to verify the server with (default: system)");
  cmd->add_flag("--insecure,-k", o->insecure, "do not verify the server certificate");
  cmd->add_option("--output,-o", o->output, "write the decoded body to FILE");
  cmd->add_option("--config,-c", o->config_path, "TOML configuration file ([client] section)");
  cmd->callback([o, rc] { *rc = run_fetch(*o); });
}

}  // namespace feedplane::dataplane
