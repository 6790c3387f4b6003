// `feedplane match --subscriptions FILE --articles FILE [--words]`: matches every article
// against every subscription with the index and prints one JSON line per article:
// {"article": i, "matches": [ids ascending]}. A subscription's id is its 0-based line
// number; an invalid query is reported on stderr with its line number and reason and
// skipped. Articles are JSON Lines objects with "title" and "content" (HTML allowed) and,
// for `source:` terms, optionally "source" (the URL of the article's feed, whose host is
// its source) and "source_id" (16 hex digits, as the crawler assigns it); blank lines are
// skipped. An article line that is not such an object is reported on
// stderr, prints no matches, and makes the exit status 1.
#include <fmt/format.h>
#include <simdjson.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "commands.h"
#include "feedplane/base/json.h"
#include "feedplane/matcher/article.h"
#include "feedplane/matcher/index.h"
#include "feedplane/matcher/source.h"

namespace feedplane::dataplane {
namespace {

struct match_args {
  std::string subscriptions;
  std::string articles;
  bool words = false;
};

// Reads "title", "content", "source" and "source_id" of one JSON object; returns "" or what
// is wrong.
std::string read_article(simdjson::ondemand::parser& parser, const std::string& line,
                         std::string& title, std::string& content, std::string& source,
                         uint64_t& source_id) {
  title.clear();
  content.clear();
  source.clear();
  source_id = 0;
  simdjson::padded_string padded(line);
  simdjson::ondemand::document doc;
  if (auto e = parser.iterate(padded).get(doc); e) return simdjson::error_message(e);
  simdjson::ondemand::object obj;
  if (auto e = doc.get_object().get(obj); e) return "not a JSON object";
  for (auto field : obj) {
    std::string_view key;
    if (auto e = field.unescaped_key().get(key); e) return simdjson::error_message(e);
    if (key != "title" && key != "content" && key != "source" && key != "source_id") continue;
    std::string_view value;
    if (auto e = field.value().get_string().get(value); e) {
      return fmt::format("\"{}\" is not a string", key);
    }
    if (key == "source_id") {
      bool hex = value.size() == 16;
      for (char c : value) {
        const bool digit = c >= '0' && c <= '9', lower = c >= 'a' && c <= 'f',
                   upper = c >= 'A' && c <= 'F';
        hex &= digit || lower || upper;
        source_id = source_id << 4 | uint64_t(digit ? c - '0' : (c | 0x20) - 'a' + 10);
      }
      if (!hex) return "\"source_id\" is not 16 hex digits";
      continue;
    }
    (key == "title" ? title : key == "content" ? content : source).assign(value);
  }
  return {};
}

int run_match(const match_args& args) {
  std::ifstream subs(args.subscriptions);
  if (!subs) {
    fmt::print(stderr, "feedplane: match: cannot open '{}'\n", args.subscriptions);
    return 2;
  }
  std::ifstream arts(args.articles);
  if (!arts) {
    fmt::print(stderr, "feedplane: match: cannot open '{}'\n", args.articles);
    return 2;
  }
  matcher::index idx;
  uint32_t id = 0;
  for (std::string line; std::getline(subs, line); ++id) {
    if (auto err = idx.add(id, line); !err.ok()) {
      fmt::print(stderr, "feedplane: match: {}:{}: subscription {} skipped: {}\n",
                 args.subscriptions, id + 1, id, err.message);
    }
  }
  simdjson::ondemand::parser parser;
  matcher::article art;
  matcher::source_scope scope;
  matcher::match_result result;
  std::string title, content, source, out;
  uint64_t source_id = 0;
  std::vector<uint32_t> order;
  std::vector<std::string_view> words;
  size_t article = 0, line_number = 0;
  int rc = 0;
  for (std::string line; std::getline(arts, line);) {
    ++line_number;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    out.clear();
    if (auto err = read_article(parser, line, title, content, source, source_id); !err.empty()) {
      fmt::print(stderr, "feedplane: match: {}:{}: article {} has no matches: {}\n", args.articles,
                 line_number, article, err);
      rc = 1;
      out = fmt::format("{{\"article\": {}, \"matches\": []}}\n", article);
      std::fwrite(out.data(), 1, out.size(), stdout);
      ++article;
      continue;
    }
    art.assign_html(title, content);
    scope.assign(matcher::url_host(source), source_id);
    idx.match(art.view(scope), result);
    const auto ids = result.ids();
    order.resize(ids.size());
    std::iota(order.begin(), order.end(), 0u);
    std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return ids[a] < ids[b]; });
    out = fmt::format("{{\"article\": {}, \"matches\": [", article);
    for (size_t k = 0; k < order.size(); ++k) {
      if (k) out += ", ";
      out += std::to_string(ids[order[k]]);
    }
    out += ']';
    if (args.words) {
      out += ", \"words\": [";
      for (size_t k = 0; k < order.size(); ++k) {
        if (k) out += ", ";
        idx.matched_words(result, order[k], words);
        out += '[';
        for (size_t j = 0; j < words.size(); ++j) {
          if (j) out += ", ";
          base::append_json_string(words[j], out);
        }
        out += ']';
      }
      out += ']';
    }
    out += "}\n";
    std::fwrite(out.data(), 1, out.size(), stdout);
    ++article;
  }
  std::fflush(stdout);
  return rc;
}

}  // namespace

void add_match_command(CLI::App& app, int* rc) {
  auto* cmd = app.add_subcommand(
      "match",
      "match articles (JSON Lines: title, content, optionally source and source_id) against "
      "subscriptions (one query a line)");
  cmd->footer(
      "Prints {\"article\": i, \"matches\": [subscription ids ascending]} per article, in input\n"
      "order. A subscription's id is its 0-based line number; an invalid query is reported on\n"
      "stderr with its line and reason and skipped. Query language: words (all required;\n"
      "AND may be written), OR, parentheses, -word or NOT word, \"quoted phrase\", title:word,\n"
      "source:HOST (its feed's host or a host under it: \"source\", the feed URL) and source:ID\n"
      "(\"source_id\", 16 hex digits).\n"
      "Limits: 16 words, 8 AND-clauses after expanding OR and NOT, 32 levels of nesting.");
  auto args = std::make_shared<match_args>();
  cmd->add_option("--subscriptions,-s", args->subscriptions, "file with one query per line")
      ->required();
  cmd->add_option("--articles,-a", args->articles, "JSON Lines file of {\"title\", \"content\"}")
      ->required();
  cmd->add_flag("--words", args->words,
                "also print, per match, the subscription's words that occur in the article");
  cmd->callback([args, rc] { *rc = run_match(*args); });
}

}  // namespace feedplane::dataplane
