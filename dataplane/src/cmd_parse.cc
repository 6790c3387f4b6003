// `feedplane parse FILE|URL [--content-type CT] [--base-url URL]`: parse one feed document
// and print the model as JSON. Exit 0 for a readable document (with `recovered` naming every
// repair), 3 with a named error for an unreadable one, 2 for a file that cannot be read.
#include <fmt/format.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>

#include "commands.h"
#include "feedplane/feed/parser.h"
#include "feedplane/feed/render.h"

namespace feedplane::dataplane {
namespace {

struct parse_args {
  std::string source;
  std::string content_type;
  std::string base_url;
};

bool is_url(const std::string& s) { return s.starts_with("http://") || s.starts_with("https://"); }

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
  cmd->callback([args, rc] {
    if (is_url(args->source)) {
      fmt::print(stderr,
                 "feedplane: parse {}: fetch_unavailable: fetching URLs is not wired into "
                 "`parse` yet; save the document and pass the file (with --base-url)\n",
                 args->source);
      *rc = 2;
      return;
    }
    std::ifstream in(args->source, std::ios::binary);
    if (!in) {
      fmt::print(stderr, "feedplane: parse: cannot open '{}'\n", args->source);
      *rc = 2;
      return;
    }
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    feed::parser p;
    feed::feed f;
    feed::parse_options opts;
    opts.content_type = args->content_type;
    opts.base_url = args->base_url;
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
