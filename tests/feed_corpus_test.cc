// feedplane's parser against other parsers' test data, read in place from ../shared/corpus:
// gofeed's translator/ (format-independent model) and parser/ (format-specific) expectations,
// compared field by field with per-folder pass rates printed; feed-rs's fixtures (entry
// count, titles, first links, dates); and every corpus file parsed without a crash (the ASan
// build runs the same test).
#include <gtest/gtest.h>
#include <simdjson.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "feedplane/feed/parser.h"
#include "feedplane/feed/text.h"

namespace fs = std::filesystem;
using namespace feedplane::feed;

namespace {

fs::path corpus_root() {
  if (const char* c = std::getenv("FEEDPLANE_CORPUS_DIR"); c && *c) return c;
  const char* src = std::getenv("FEEDPLANE_SOURCE_DIR");
  fs::path root = src ? fs::path(src) : fs::current_path();
  return root / ".." / "shared" / "corpus";
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// Differences from gofeed kept on purpose: (file stem, field) -> reason. A difference not
// listed here fails the test; a listed one that no longer happens is reported so the list
// stays honest.
struct deliberate {
  const char* file;
  const char* field;
  const char* reason;
};
constexpr deliberate deliberate_differences[] = {
#include "feed_corpus_deliberate.inc"
};

struct tally {
  int fields = 0;
  int passed = 0;
  std::vector<std::string> diffs;  // "file: field: got X, want Y"
};

struct comparer {
  tally* t;
  std::string file;
  std::set<std::string>* unexplained;
  std::set<std::string>* explained_seen;

  void check(const std::string& field, const std::string& got, const std::string& want) {
    ++t->fields;
    if (got == want) {
      ++t->passed;
      return;
    }
    const std::string key = file + ": " + field;
    t->diffs.push_back(key + ": got [" + got.substr(0, 120) + "] want [" + want.substr(0, 120) +
                       "]");
    bool listed = false;
    for (const auto& d : deliberate_differences) {
      if (file == d.file && (std::string(d.field) == "*" || field == d.field)) {
        listed = true;
        explained_seen->insert(std::string(d.file) + "|" + d.field);
      }
    }
    if (!listed) unexplained->insert(t->diffs.back());
  }
};

std::string str(simdjson::dom::element e) {
  std::string_view s;
  if (e.get_string().get(s) == simdjson::SUCCESS) return std::string(s);
  int64_t i;
  if (e.get_int64().get(i) == simdjson::SUCCESS) return std::to_string(i);
  return {};
}

bool has(simdjson::dom::element obj, const char* key, simdjson::dom::element* out) {
  return obj.is_object() && obj[key].get(*out) == simdjson::SUCCESS;
}

std::string date_str(bool has_date, int64_t t) {
  if (!has_date) return "(none)";
  char buf[32];
  format_rfc3339(t, buf);
  return buf;
}

std::string want_date(simdjson::dom::element e) {
  int64_t t;
  return parse_date(str(e), &t) ? date_str(true, t) : "(unreadable expectation)";
}

std::string persons_str(const std::vector<person>& v) {
  std::string s;
  for (const auto& p : v) s += "{" + p.name + "|" + p.email + "}";
  return s;
}

std::string want_persons(simdjson::dom::element arr, const char* name_key = "name",
                         const char* email_key = "email") {
  std::string s;
  simdjson::dom::array a;
  if (arr.get_array().get(a) != simdjson::SUCCESS) return s;
  for (auto p : a) {
    simdjson::dom::element v;
    std::string n, e;
    if (has(p, name_key, &v)) n = str(v);
    if (has(p, email_key, &v)) e = str(v);
    s += "{" + n + "|" + e + "}";
  }
  return s;
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += "[" + x + "]";
  return s;
}

std::string format_name(feed_format f) {
  switch (f) {
    case feed_format::rss:
      return "rss";
    case feed_format::atom:
      return "atom";
    case feed_format::json:
      return "json";
    default:
      return "unknown";
  }
}

// gofeed's translator model (gofeed.Feed / gofeed.Item), compared where feedplane has the
// field.
void compare_translator(comparer& c, const feed& f, simdjson::dom::element want) {
  simdjson::dom::element v;
  if (has(want, "feedType", &v)) c.check("feedType", format_name(f.format), str(v));
  if (has(want, "feedVersion", &v)) c.check("feedVersion", f.version, str(v));
  if (has(want, "title", &v)) c.check("title", f.title, str(v));
  if (has(want, "link", &v)) c.check("link", f.link, str(v));
  if (has(want, "feedLink", &v)) c.check("feedLink", f.self_link, str(v));
  if (has(want, "description", &v)) c.check("description", f.description, str(v));
  if (has(want, "language", &v)) c.check("language", f.language, str(v));
  if (has(want, "updatedParsed", &v))
    c.check("updatedParsed", date_str(f.has_updated, f.updated), want_date(v));
  if (has(want, "publishedParsed", &v))
    c.check("publishedParsed", date_str(f.has_published, f.published), want_date(v));
  if (has(want, "authors", &v)) c.check("authors", persons_str(f.authors), want_persons(v));
  if (has(want, "categories", &v)) {
    std::vector<std::string> w;
    for (auto x : v.get_array()) w.push_back(str(x));
    c.check("categories", join(f.categories), join(w));
  }
  simdjson::dom::array items;
  if (want["items"].get_array().get(items) != simdjson::SUCCESS) return;
  c.check("items.count", std::to_string(f.entries.size()), std::to_string(items.size()));
  size_t i = 0;
  for (auto it : items) {
    if (i >= f.entries.size()) break;
    const entry& e = f.entries[i++];
    const std::string p = "items[].";
    if (has(it, "title", &v)) c.check(p + "title", e.title, str(v));
    if (has(it, "description", &v)) c.check(p + "description", e.summary, str(v));
    if (has(it, "content", &v)) c.check(p + "content", e.content, str(v));
    if (has(it, "link", &v)) c.check(p + "link", e.link, str(v));
    if (has(it, "guid", &v)) c.check(p + "guid", e.id, str(v));
    if (has(it, "updatedParsed", &v))
      c.check(p + "updatedParsed", date_str(e.has_updated, e.updated), want_date(v));
    if (has(it, "publishedParsed", &v))
      c.check(p + "publishedParsed", date_str(e.has_published, e.published), want_date(v));
    if (has(it, "authors", &v)) c.check(p + "authors", persons_str(e.authors), want_persons(v));
    if (has(it, "categories", &v)) {
      std::vector<std::string> w;
      for (auto x : v.get_array()) w.push_back(str(x));
      c.check(p + "categories", join(e.categories), join(w));
    }
    if (has(it, "enclosures", &v)) {
      std::string got, w;
      for (const auto& en : e.enclosures)
        got += "{" + en.url + "|" + en.type + "|" + std::to_string(en.length) + "}";
      for (auto x : v.get_array()) {
        simdjson::dom::element y;
        std::string u, ty, l = "0";
        if (has(x, "url", &y)) u = str(y);
        if (has(x, "type", &y)) ty = str(y);
        if (has(x, "length", &y)) l = str(y);
        w += "{" + u + "|" + ty + "|" + l + "}";
      }
      c.check(p + "enclosures", got, w);
    }
  }
}

// gofeed's RSS-specific model (rss.Feed / rss.Item).
void compare_rss(comparer& c, const feed& f, simdjson::dom::element want) {
  simdjson::dom::element v;
  if (has(want, "version", &v)) c.check("version", f.version, str(v));
  if (has(want, "title", &v)) c.check("title", f.title, str(v));
  if (has(want, "link", &v)) c.check("link", f.link, str(v));
  if (has(want, "description", &v)) c.check("description", f.description, str(v));
  if (has(want, "language", &v)) c.check("language", f.language, str(v));
  if (has(want, "pubDateParsed", &v))
    c.check("pubDateParsed", date_str(f.has_published, f.published), want_date(v));
  if (has(want, "lastBuildDateParsed", &v))
    c.check("lastBuildDateParsed", date_str(f.has_updated, f.updated), want_date(v));
  // Publishers' hints (issue 10): ttl in minutes, skipped hours and days as sets.
  if (has(want, "ttl", &v)) c.check("ttl", std::to_string(f.hints.ttl_s / 60), str(v));
  if (has(want, "skipHours", &v)) {
    std::string got, w;
    for (int h = 0; h < 24; ++h) {
      if ((f.hints.skip_hours >> h & 1u) != 0) got += "[" + std::to_string(h) + "]";
    }
    std::vector<int> hours;
    for (auto x : v.get_array()) hours.push_back(std::atoi(str(x).c_str()) % 24);
    std::sort(hours.begin(), hours.end());
    for (int h : hours) w += "[" + std::to_string(h) + "]";
    c.check("skipHours", got, w);
  }
  if (has(want, "skipDays", &v)) {
    static const char* const names[7] = {"Sunday",   "Monday", "Tuesday", "Wednesday",
                                         "Thursday", "Friday", "Saturday"};
    std::string got, w;
    std::set<std::string> wanted;
    for (auto x : v.get_array()) wanted.insert(str(x));
    for (int d = 0; d < 7; ++d) {
      if ((f.hints.skip_days >> d & 1u) != 0) got += std::string("[") + names[d] + "]";
      if (wanted.count(names[d]) != 0) w += std::string("[") + names[d] + "]";
    }
    c.check("skipDays", got, w);
  }
  simdjson::dom::array items;
  if (want["items"].get_array().get(items) != simdjson::SUCCESS) return;
  c.check("items.count", std::to_string(f.entries.size()), std::to_string(items.size()));
  size_t i = 0;
  for (auto it : items) {
    if (i >= f.entries.size()) break;
    const entry& e = f.entries[i++];
    const std::string p = "items[].";
    if (has(it, "title", &v)) c.check(p + "title", e.title, str(v));
    if (has(it, "description", &v)) c.check(p + "description", e.summary, str(v));
    if (has(it, "content", &v)) c.check(p + "content", e.content, str(v));
    if (has(it, "link", &v)) c.check(p + "link", e.link, str(v));
    if (has(it, "guid", &v)) {
      simdjson::dom::element g;
      if (has(v, "value", &g)) c.check(p + "guid", e.id, str(g));
    }
    if (has(it, "pubDateParsed", &v))
      c.check(p + "pubDateParsed", date_str(e.has_published, e.published), want_date(v));
    if (has(it, "author", &v))
      c.check(p + "author",
              e.authors.empty()
                  ? ""
                  : (e.authors[0].name.empty() ? e.authors[0].email : e.authors[0].name),
              str(v));
    if (has(it, "categories", &v)) {
      std::vector<std::string> w;
      for (auto x : v.get_array()) {
        simdjson::dom::element y;
        if (has(x, "value", &y)) w.push_back(str(y));
      }
      c.check(p + "categories", join(e.categories), join(w));
    }
    if (has(it, "enclosure", &v)) {
      simdjson::dom::element y;
      std::string u;
      if (has(v, "url", &y)) u = str(y);
      c.check(p + "enclosure.url", e.enclosures.empty() ? "" : e.enclosures[0].url, u);
    }
  }
}

// gofeed's Atom-specific model (atom.Feed / atom.Entry).
void compare_atom(comparer& c, const feed& f, simdjson::dom::element want) {
  simdjson::dom::element v;
  if (has(want, "version", &v)) c.check("version", f.version, str(v));
  if (has(want, "title", &v)) c.check("title", f.title, str(v));
  if (has(want, "subtitle", &v)) c.check("subtitle", f.description, str(v));
  if (has(want, "language", &v)) c.check("language", f.language, str(v));
  if (has(want, "updatedParsed", &v))
    c.check("updatedParsed", date_str(f.has_updated, f.updated), want_date(v));
  if (has(want, "authors", &v)) c.check("authors", persons_str(f.authors), want_persons(v));
  if (has(want, "links", &v)) {
    std::string alt;
    for (auto l : v.get_array()) {
      simdjson::dom::element r, h;
      const std::string rel = has(l, "rel", &r) ? str(r) : "";
      if ((rel.empty() || rel == "alternate") && alt.empty() && has(l, "href", &h)) alt = str(h);
    }
    if (!alt.empty()) c.check("links(alternate)", f.link, alt);
  }
  simdjson::dom::array entries;
  if (want["entries"].get_array().get(entries) != simdjson::SUCCESS) return;
  c.check("entries.count", std::to_string(f.entries.size()), std::to_string(entries.size()));
  size_t i = 0;
  for (auto it : entries) {
    if (i >= f.entries.size()) break;
    const entry& e = f.entries[i++];
    const std::string p = "entries[].";
    if (has(it, "title", &v)) c.check(p + "title", e.title, str(v));
    if (has(it, "id", &v)) c.check(p + "id", e.id, str(v));
    if (has(it, "summary", &v)) c.check(p + "summary", e.summary, str(v));
    if (has(it, "content", &v)) {
      simdjson::dom::element y;
      if (has(v, "value", &y)) c.check(p + "content", e.content, str(y));
    }
    if (has(it, "publishedParsed", &v))
      c.check(p + "publishedParsed", date_str(e.has_published, e.published), want_date(v));
    if (has(it, "updatedParsed", &v))
      c.check(p + "updatedParsed", date_str(e.has_updated, e.updated), want_date(v));
    if (has(it, "authors", &v)) c.check(p + "authors", persons_str(e.authors), want_persons(v));
    if (has(it, "links", &v)) {
      std::string alt;
      for (auto l : v.get_array()) {
        simdjson::dom::element r, h;
        const std::string rel = has(l, "rel", &r) ? str(r) : "";
        if ((rel.empty() || rel == "alternate") && alt.empty() && has(l, "href", &h)) alt = str(h);
      }
      if (!alt.empty()) c.check(p + "links(alternate)", e.link, alt);
    }
    if (has(it, "categories", &v)) {
      std::vector<std::string> w;
      // feedplane keeps one string per category: the label when there is one, else the term.
      for (auto x : v.get_array()) {
        simdjson::dom::element y;
        if (has(x, "label", &y) || has(x, "term", &y)) w.push_back(str(y));
      }
      c.check(p + "categories", join(e.categories), join(w));
    }
  }
}

// JSON Feed expectations are JSON Feeds themselves (gofeed's json.Feed).
void compare_json(comparer& c, const feed& f, simdjson::dom::element want) {
  simdjson::dom::element v;
  if (has(want, "title", &v)) c.check("title", f.title, str(v));
  if (has(want, "home_page_url", &v)) c.check("home_page_url", f.link, str(v));
  if (has(want, "feed_url", &v)) c.check("feed_url", f.self_link, str(v));
  if (has(want, "description", &v)) c.check("description", f.description, str(v));
  simdjson::dom::array items;
  if (want["items"].get_array().get(items) != simdjson::SUCCESS) return;
  c.check("items.count", std::to_string(f.entries.size()), std::to_string(items.size()));
  size_t i = 0;
  for (auto it : items) {
    if (i >= f.entries.size()) break;
    const entry& e = f.entries[i++];
    const std::string p = "items[].";
    if (has(it, "id", &v)) c.check(p + "id", e.id, str(v));
    if (has(it, "title", &v)) c.check(p + "title", e.title, str(v));
    if (has(it, "url", &v)) c.check(p + "url", e.link, str(v));
    if (has(it, "summary", &v)) c.check(p + "summary", e.summary, str(v));
    if (has(it, "content_html", &v)) c.check(p + "content_html", e.content, str(v));
    if (has(it, "date_published", &v))
      c.check(p + "date_published", date_str(e.has_published, e.published), want_date(v));
    if (has(it, "date_modified", &v))
      c.check(p + "date_modified", date_str(e.has_updated, e.updated), want_date(v));
  }
}

struct folder_result {
  std::string name;
  int files = 0;
  int fields = 0;
  int passed = 0;
};

class gofeed_corpus : public ::testing::Test {
 protected:
  std::set<std::string> unexplained_, explained_seen_;
  std::vector<folder_result> results_;
  parser parser_;
  simdjson::dom::parser json_;

  template <typename Compare>
  void run_folder(const fs::path& dir, const std::string& label, Compare compare,
                  const char* input_ext, const char* expected_suffix) {
    ASSERT_TRUE(fs::exists(dir)) << "the shared corpus (../shared/corpus) is not at " << dir;
    tally t;
    int files = 0;
    std::vector<fs::path> inputs;
    for (const auto& de : fs::directory_iterator(dir)) {
      const fs::path& p = de.path();
      if (p.extension() != input_ext) continue;
      const std::string stem = p.stem().string();
      if (stem.ends_with("_expected")) continue;
      inputs.push_back(p);
    }
    std::sort(inputs.begin(), inputs.end());
    for (const fs::path& p : inputs) {
      const fs::path exp = dir / (p.stem().string() + expected_suffix);
      if (!fs::exists(exp)) continue;
      const std::string bytes = read_file(p);
      feed f;
      const parse_errc rc = parser_.parse(bytes, parse_options{}, f);
      simdjson::dom::element want;
      const std::string want_text = read_file(exp);
      if (json_.parse(want_text).get(want) != simdjson::SUCCESS) continue;
      ++files;
      comparer c{&t, label + "/" + p.stem().string(), &unexplained_, &explained_seen_};
      c.check("parse", std::string(errc_name(rc)), "ok");
      compare(c, f, want);
    }
    results_.push_back({label, files, t.fields, t.passed});
    std::printf("[gofeed %-18s] %3d files, %4d/%4d fields equal (%.1f%%)\n", label.c_str(), files,
                t.passed, t.fields, t.fields ? 100.0 * t.passed / t.fields : 0.0);
    for (const auto& d : t.diffs) std::printf("    differs: %s\n", d.c_str());
  }
};

TEST_F(gofeed_corpus, field_pass_rates) {
  const fs::path g = corpus_root() / "gofeed" / "testdata";
  run_folder(g / "translator" / "rss", "translator/rss", compare_translator, ".xml", ".json");
  run_folder(g / "translator" / "atom", "translator/atom", compare_translator, ".xml", ".json");
  run_folder(g / "translator" / "json", "translator/json", compare_translator, ".json",
             "_expected.json");
  run_folder(g / "parser" / "rss", "parser/rss", compare_rss, ".xml", ".json");
  run_folder(g / "parser" / "atom", "parser/atom", compare_atom, ".xml", ".json");
  run_folder(g / "parser" / "json", "parser/json", compare_json, ".json", "_expected.json");
  int fields = 0, passed = 0;
  for (const auto& r : results_) {
    fields += r.fields;
    passed += r.passed;
  }
  EXPECT_GE(passed * 100, fields * 95) << "below 95% of gofeed's compared fields";
  std::printf("[gofeed total             ] %4d/%4d fields equal (%.1f%%)\n", passed, fields,
              fields ? 100.0 * passed / fields : 0.0);
  for (const auto& u : unexplained_) ADD_FAILURE() << "difference not listed as deliberate: " << u;
  for (const auto& d : deliberate_differences) {
    if (std::string_view(d.file).starts_with("feed-rs/")) continue;
    if (!explained_seen_.count(std::string(d.file) + "|" + d.field))
      std::printf("    listed difference no longer occurs: %s %s\n", d.file, d.field);
  }
}

// parser/universal: format detection from the bytes alone.
TEST(gofeed_universal, detects_format_from_content) {
  const fs::path u = corpus_root() / "gofeed" / "testdata" / "parser" / "universal";
  ASSERT_TRUE(fs::exists(u)) << "the shared corpus (../shared/corpus) is not at " << u;
  const std::map<std::string, std::pair<parse_errc, feed_format>> want = {
      {"atom03_feed.xml", {parse_errc::ok, feed_format::atom}},
      {"atom10_feed.xml", {parse_errc::ok, feed_format::atom}},
      {"rss_feed.xml", {parse_errc::ok, feed_format::rss}},
      {"rss_feed_bom.xml", {parse_errc::ok, feed_format::rss}},
      {"rss_feed_leading_spaces.xml", {parse_errc::ok, feed_format::rss}},
      {"rdf_feed.xml", {parse_errc::ok, feed_format::rss}},
      {"json10_feed.json", {parse_errc::ok, feed_format::json}},
      {"json11_feed.json", {parse_errc::ok, feed_format::json}},
      {"unknown_feed.xml", {parse_errc::unknown_format, feed_format::unknown}},
      {"invalid.json", {parse_errc::json_invalid, feed_format::unknown}},
      {"empty_feed.xml", {parse_errc::empty_document, feed_format::unknown}},
  };
  parser p;
  for (const auto& [name, expect] : want) {
    feed f;
    const std::string bytes = read_file(u / name);
    const parse_errc rc = p.parse(bytes, parse_options{}, f);
    EXPECT_EQ(errc_name(rc), errc_name(expect.first)) << name;
    EXPECT_EQ(format_name(f.format), format_name(expect.second)) << name;
  }
}

// feed-rs fixtures: their snapshots are feed-rs's opinion; we compare entry count, titles,
// first links and published dates and print the agreement. A disagreement was looked at and
// is listed (with the reason) in feed_corpus_deliberate.inc under "feed-rs/...".
TEST(feed_rs_corpus, agreement) {
  const fs::path dir = corpus_root() / "feed-rs" / "feed-rs" / "fixture";
  ASSERT_TRUE(fs::exists(dir)) << "the shared corpus (../shared/corpus) is not at " << dir;
  parser p;
  simdjson::dom::parser jp;
  tally t;
  std::set<std::string> unexplained, seen;
  int files = 0;
  std::vector<fs::path> inputs;
  for (const auto& de : fs::recursive_directory_iterator(dir)) {
    const std::string name = de.path().filename().string();
    if (!de.is_regular_file() || name.ends_with(".serde.json")) continue;
    if (fs::exists(de.path().parent_path() / (de.path().stem().string() + ".serde.json")))
      inputs.push_back(de.path());
  }
  std::sort(inputs.begin(), inputs.end());
  for (const auto& in : inputs) {
    const fs::path exp = in.parent_path() / (in.stem().string() + ".serde.json");
    const std::string bytes = read_file(in), want_text = read_file(exp);
    simdjson::dom::element want;
    if (jp.parse(want_text).get(want) != simdjson::SUCCESS) continue;
    feed f;
    const parse_errc rc = p.parse(bytes, parse_options{}, f);
    ++files;
    comparer c{&t, "feed-rs/" + in.parent_path().filename().string() + "/" + in.filename().string(),
               &unexplained, &seen};
    c.check("parse", std::string(errc_name(rc)), "ok");
    simdjson::dom::array entries;
    if (want["entries"].get_array().get(entries) != simdjson::SUCCESS) continue;
    c.check("entries.count", std::to_string(f.entries.size()), std::to_string(entries.size()));
    size_t i = 0;
    for (auto e : entries) {
      if (i >= f.entries.size()) break;
      const entry& got = f.entries[i++];
      simdjson::dom::element v, w;
      if (has(e, "title", &v) && has(v, "content", &w)) c.check("title", got.title, str(w));
      if (has(e, "links", &v)) {
        simdjson::dom::array links;
        if (v.get_array().get(links) == simdjson::SUCCESS && links.size() > 0) {
          simdjson::dom::element first = links.at(0), h;
          if (has(first, "href", &h)) c.check("links[0]", got.link, str(h));
        }
      }
      if (has(e, "published", &v) && !v.is_null())
        c.check("published", date_str(got.has_published, got.published), want_date(v));
    }
  }
  std::printf("[feed-rs fixtures         ] %3d files, %4d/%4d fields agree (%.1f%%)\n", files,
              t.passed, t.fields, t.fields ? 100.0 * t.passed / t.fields : 0.0);
  for (const auto& d : t.diffs) std::printf("    differs: %s\n", d.c_str());
  for (const auto& u : unexplained) ADD_FAILURE() << "feed-rs difference not looked at: " << u;
}

// Every file of every corpus folder goes through the parser (the ASan+UBSan build runs this
// too): any result is fine, a crash, a hang or a sanitizer report is not.
TEST(corpus, every_file_parses_without_crash) {
  const fs::path root = corpus_root();
  ASSERT_TRUE(fs::exists(root)) << "the shared corpus (../shared/corpus) is not at " << root;
  parser p;
  feed f;
  int n = 0, ok = 0;
  for (const auto& sub : {"gofeed", "feed-rs"}) {
    for (const auto& de : fs::recursive_directory_iterator(root / sub)) {
      if (!de.is_regular_file() || de.file_size() > (64u << 20)) continue;
      const std::string bytes = read_file(de.path());
      ok += p.parse(bytes, parse_options{}, f) == parse_errc::ok;
      ++n;
    }
  }
  std::printf("[corpus                   ] %d files parsed, %d as feeds\n", n, ok);
  EXPECT_GT(n, 500);
}

// Every corpus feed parsed with a document URL serves HTML with absolute URLs only: resolving
// its summaries and contents again finds nothing relative (Atom type="text" and JSON
// content_text are text, not markup, and are not looked at by the parser either).
TEST(corpus, markup_holds_no_relative_url_after_parsing) {
  const fs::path root = corpus_root();
  ASSERT_TRUE(fs::exists(root)) << "the shared corpus (../shared/corpus) is not at " << root;
  parser p;
  feed f;
  parse_options o;
  o.base_url = "https://corpus.example/dir/feed.xml";
  std::string again;
  int bodies = 0;
  for (const auto& sub : {"gofeed", "feed-rs"}) {
    for (const auto& de : fs::recursive_directory_iterator(root / sub)) {
      // Expectations (NAME.json beside NAME.xml, NAME.serde.json) are not feeds.
      const fs::path& path = de.path();
      if (!de.is_regular_file() || path.string().ends_with(".serde.json") ||
          (path.extension() == ".json" && fs::exists(fs::path(path).replace_extension(".xml"))))
        continue;
      if (p.parse(read_file(path), o, f) != parse_errc::ok) continue;
      for (const entry& e : f.entries) {
        for (const std::string* html : {&e.summary, &e.content}) {
          if (html->find('<') == std::string::npos) continue;
          ++bodies;
          EXPECT_FALSE(resolve_html_urls(*html, o.base_url, again))
              << de.path() << "\n"
              << html->substr(0, 400) << "\n->\n"
              << again.substr(0, 400);
        }
      }
    }
  }
  std::printf("[corpus                   ] %d bodies with markup, all absolute\n", bodies);
}

}  // namespace
