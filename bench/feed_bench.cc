// Feed parsing throughput (bench/RESULTS.md, "## feed parsing"): feedplane's parser on 8 KB
// RSS 2.0, Atom and JSON Feed documents of 10 entries, against the bare parse of the same
// bytes by pugixml, libxml2 (DOM and SAX2), expat and simdjson (the limits), and on a broken
// document against libxml2's recovering parser. python3-feedparser, the peer users pick, is
// timed on the same bytes by bench/feedparser_peer.py (`feed_bench --dump DIR` writes them).
//
// Every benchmark checks its output once before timing.
#include <benchmark/benchmark.h>
#include <expat.h>
#include <libxml/parser.h>
#include <simdjson.h>
#include <pugixml.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "feedplane/feed/dedup.h"
#include "feedplane/feed/parser.h"

using namespace feedplane::feed;

namespace {

constexpr int entries_per_doc = 10;
constexpr size_t target_bytes = 8192;

// Realistic entry text: a sentence of common words, HTML-escaped markup in RSS descriptions.
std::string words(int seed, size_t n) {
  static const char* w[] = {"the",     "market",  "city",   "council", "report", "new",
                            "data",    "shows",   "growth", "energy",  "policy", "after",
                            "weekend", "storm",   "school", "budget",  "vote",   "plan",
                            "health",  "service", "local",  "team",    "wins",   "final"};
  std::string s;
  uint32_t x = static_cast<uint32_t>(seed) * 2654435761u + 1;
  while (s.size() < n) {
    x = x * 1103515245u + 12345u;
    if (!s.empty()) s += ' ';
    s += w[(x >> 16) % 24];
  }
  return s;
}

// Pads entry bodies so the document is close to target_bytes.
template <typename Make>
std::string sized(Make make) {
  size_t body = 200;
  std::string d = make(body);
  body += (target_bytes - std::min(target_bytes, d.size())) / entries_per_doc;
  return make(body);
}

std::string rss_doc() {
  return sized([](size_t body) {
    std::string d =
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<rss version=\"2.0\" "
        "xmlns:content=\"http://purl.org/rss/1.0/modules/content/\" "
        "xmlns:atom=\"http://www.w3.org/2005/Atom\">\n<channel>\n<title>City News</title>\n"
        "<link>https://news.example.com/</link>\n<atom:link rel=\"self\" "
        "href=\"https://news.example.com/rss\"/>\n<description>Local news</description>\n"
        "<lastBuildDate>Sun, 22 Nov 2026 04:00:00 +0000</lastBuildDate>\n";
    for (int i = 0; i < entries_per_doc; ++i) {
      const std::string n = std::to_string(i);
      d += "<item>\n<title>" + words(i, 50) + "</title>\n<link>https://news.example.com/2026/11/" +
           n + "/story</link>\n<guid isPermaLink=\"false\">news-" + n +
           "</guid>\n<pubDate>Sun, 22 Nov 2026 0" + std::to_string(i % 10) +
           ":15:00 +0000</pubDate>\n<category>local</category>\n<description>&lt;p&gt;" +
           words(i + 100, body / 2) + "&lt;/p&gt;</description>\n<content:encoded><![CDATA[<p>" +
           words(i + 200, body / 2) + "</p>]]></content:encoded>\n</item>\n";
    }
    return d + "</channel>\n</rss>\n";
  });
}

std::string atom_doc() {
  return sized([](size_t body) {
    std::string d =
        "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<feed "
        "xmlns=\"http://www.w3.org/2005/Atom\">\n<title>City News</title>\n<link "
        "href=\"https://news.example.com/\"/>\n<link rel=\"self\" "
        "href=\"https://news.example.com/atom\"/>\n<id>urn:uuid:60a76c80</id>\n"
        "<updated>2026-11-22T04:00:00Z</updated>\n";
    for (int i = 0; i < entries_per_doc; ++i) {
      const std::string n = std::to_string(i);
      d += "<entry>\n<title>" + words(i, 50) + "</title>\n<link href=\"https://news.example.com/" +
           n + "\"/>\n<id>urn:news:" + n + "</id>\n<published>2026-11-22T0" +
           std::to_string(i % 10) + ":15:00Z</published>\n<updated>2026-11-22T0" +
           std::to_string(i % 10) + ":30:00+01:00</updated>\n<author><name>Reporter " + n +
           "</name></author>\n<summary>" + words(i + 100, body / 2) +
           "</summary>\n<content type=\"html\">&lt;p&gt;" + words(i + 200, body / 2) +
           "&lt;/p&gt;</content>\n</entry>\n";
    }
    return d + "</feed>\n";
  });
}

std::string json_doc() {
  return sized([](size_t body) {
    std::string d =
        "{\"version\":\"https://jsonfeed.org/version/1.1\",\"title\":\"City News\","
        "\"home_page_url\":\"https://news.example.com/\",\"feed_url\":"
        "\"https://news.example.com/feed.json\",\"items\":[";
    for (int i = 0; i < entries_per_doc; ++i) {
      const std::string n = std::to_string(i);
      if (i) d += ",";
      d += "{\"id\":\"news-" + n + "\",\"url\":\"https://news.example.com/" + n +
           "\",\"title\":\"" + words(i, 50) + "\",\"date_published\":\"2026-11-22T0" +
           std::to_string(i % 10) + ":15:00Z\",\"summary\":\"" + words(i + 100, body / 2) +
           "\",\"content_html\":\"<p>" + words(i + 200, body / 2) + "</p>\"}";
    }
    return d + "]}";
  });
}

// The RSS document broken the ways real feeds break: HTML entities, bare ampersands, an
// unclosed <br> in each title, a control character.
std::string broken_doc() {
  std::string d = rss_doc();
  size_t p = 0;
  while ((p = d.find("</title>\n<link>https", p)) != std::string::npos) {
    d.insert(p, " &nbsp;&mdash; AT&T<br>\x01");
    p += 40;
  }
  return d;
}

void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "feed_bench: output check failed: %s\n", what);
    std::exit(1);
  }
}

void verify_feed(const std::string& doc, bool broken) {
  parser p;
  feed f;
  check(p.parse(doc, {}, f) == parse_errc::ok, "parse ok");
  check(f.entries.size() == entries_per_doc, "entry count");
  check(!f.entries[0].title.empty() && !f.entries[9].link.empty(), "title and link");
  check(f.entries[0].has_published, "published date");
  check(broken == (f.recovered != 0), "recovered flags");
}

void feed_parse(benchmark::State& state, const std::string& doc, bool broken) {
  verify_feed(doc, broken);
  parser p;
  feed f;
  for (auto _ : state) {
    p.parse(doc, {}, f);
    benchmark::DoNotOptimize(f.entries.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * doc.size()));
  state.SetItemsProcessed(state.iterations());  // feeds
}

void BM_feedplane_rss(benchmark::State& s) { feed_parse(s, rss_doc(), false); }
void BM_feedplane_atom(benchmark::State& s) { feed_parse(s, atom_doc(), false); }
void BM_feedplane_json(benchmark::State& s) { feed_parse(s, json_doc(), false); }
void BM_feedplane_broken_rss(benchmark::State& s) { feed_parse(s, broken_doc(), true); }

// The whole ingestion step: parse plus identity/dedup classification against a warm set.
void BM_feedplane_rss_parse_and_dedup(benchmark::State& state) {
  const std::string doc = rss_doc();
  verify_feed(doc, false);
  parser p;
  feed f;
  feed_state st;
  std::vector<verdict> v;
  p.parse(doc, {}, f);
  st.classify(f, v);
  for (auto _ : state) {
    p.parse(doc, {}, f);
    st.classify(f, v);
    benchmark::DoNotOptimize(v.data());
  }
  check(v.size() == entries_per_doc && v[0] == verdict::seen, "dedup verdicts");
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * doc.size()));
  state.SetItemsProcessed(state.iterations());
}

// --- paired ratio: feedplane vs pugixml's bare parse in alternating slices ------------------

// On a shared, loaded machine two benchmarks run seconds apart see different machines. Here
// each iteration times feedplane and then pugixml's bare parse on the same bytes in ~2 ms
// slices of thread CPU time, back to back; the reported ratio is the median over the pairs
// of (pugixml time / feedplane time), so load drift between benchmarks cancels out.
double thread_cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e9 + static_cast<double>(ts.tv_nsec);
}

template <typename Fn>
double ns_per_call(Fn&& fn) {
  const double t0 = thread_cpu_ns();
  double t = t0;
  int n = 0;
  do {
    fn();
    ++n;
    t = thread_cpu_ns();
  } while (t - t0 < 2e6);
  return (t - t0) / n;
}

void paired_ratio(benchmark::State& state, const std::string& doc) {
  verify_feed(doc, false);
  parser p;
  feed f;
  std::string work = doc;
  pugi::xml_document d;
  check(d.load_buffer_inplace(work.data(), work.size()), "pugixml parses");
  std::vector<double> ratios, feed_ns, pugi_ns;
  for (auto _ : state) {
    const double tf = ns_per_call([&] {
      p.parse(doc, {}, f);
      benchmark::DoNotOptimize(f.entries.data());
    });
    const double tp = ns_per_call([&] {
      work.assign(doc);
      d.load_buffer_inplace(work.data(), work.size(), pugi::parse_default, pugi::encoding_utf8);
      benchmark::DoNotOptimize(d.first_child());
    });
    ratios.push_back(tp / tf);
    feed_ns.push_back(tf);
    pugi_ns.push_back(tp);
  }
  auto median = [](std::vector<double>& v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0.0 : v[v.size() / 2];
  };
  state.counters["ratio"] = median(ratios);
  state.counters["feedplane_MBps"] = static_cast<double>(doc.size()) / median(feed_ns) * 1e3;
  state.counters["pugixml_MBps"] = static_cast<double>(doc.size()) / median(pugi_ns) * 1e3;
  state.counters["pairs"] = static_cast<double>(ratios.size());
}

void BM_paired_ratio_rss(benchmark::State& s) { paired_ratio(s, rss_doc()); }
void BM_paired_ratio_atom(benchmark::State& s) { paired_ratio(s, atom_doc()); }

// --- limits: the XML libraries' bare parse of the same bytes -----------------------------

void pugixml_bare(benchmark::State& state, const std::string& doc, bool well_formed = true) {
  std::string work = doc;
  pugi::xml_document d;
  // On the broken document pugixml stops at the first error: that partial parse is the limit.
  check(!well_formed || d.load_buffer_inplace(work.data(), work.size()), "pugixml parses");
  for (auto _ : state) {
    work.assign(doc);  // in-place parsing consumes the buffer; the copy is part of the cost
    d.load_buffer_inplace(work.data(), work.size(), pugi::parse_default, pugi::encoding_utf8);
    benchmark::DoNotOptimize(d.first_child());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * doc.size()));
  state.SetItemsProcessed(state.iterations());
}
void BM_pugixml_bare_rss(benchmark::State& s) { pugixml_bare(s, rss_doc()); }
void BM_pugixml_bare_atom(benchmark::State& s) { pugixml_bare(s, atom_doc()); }
void BM_pugixml_bare_broken(benchmark::State& s) { pugixml_bare(s, broken_doc(), false); }

void libxml2_dom(benchmark::State& state, const std::string& doc, int options) {
  xmlDocPtr d = xmlReadMemory(doc.data(), static_cast<int>(doc.size()), nullptr, "UTF-8",
                              options | XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING);
  check(d != nullptr, "libxml2 parses");
  xmlFreeDoc(d);
  for (auto _ : state) {
    d = xmlReadMemory(doc.data(), static_cast<int>(doc.size()), nullptr, "UTF-8",
                      options | XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING);
    benchmark::DoNotOptimize(d);
    xmlFreeDoc(d);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * doc.size()));
  state.SetItemsProcessed(state.iterations());
}
void BM_libxml2_dom_rss(benchmark::State& s) { libxml2_dom(s, rss_doc(), 0); }
void BM_libxml2_dom_atom(benchmark::State& s) { libxml2_dom(s, atom_doc(), 0); }
void BM_libxml2_recover_broken(benchmark::State& s) {
  libxml2_dom(s, broken_doc(), XML_PARSE_RECOVER);
}

void sax_chars(void* ctx, const xmlChar*, int len) { *static_cast<size_t*>(ctx) += len; }
void libxml2_sax(benchmark::State& state, const std::string& doc) {
  xmlSAXHandler h;
  std::memset(&h, 0, sizeof h);
  h.initialized = XML_SAX2_MAGIC;
  h.characters = sax_chars;
  h.cdataBlock = sax_chars;
  size_t chars = 0;
  check(
      xmlSAXUserParseMemory(&h, &chars, doc.data(), static_cast<int>(doc.size())) == 0 && chars > 0,
      "libxml2 SAX2 parses");
  for (auto _ : state) {
    xmlSAXUserParseMemory(&h, &chars, doc.data(), static_cast<int>(doc.size()));
    benchmark::DoNotOptimize(chars);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * doc.size()));
  state.SetItemsProcessed(state.iterations());
}
void BM_libxml2_sax2_rss(benchmark::State& s) { libxml2_sax(s, rss_doc()); }
void BM_libxml2_sax2_atom(benchmark::State& s) { libxml2_sax(s, atom_doc()); }

void expat_chars(void* ctx, const XML_Char*, int len) { *static_cast<size_t*>(ctx) += len; }
void expat_parse(benchmark::State& state, const std::string& doc) {
  XML_Parser p = XML_ParserCreate("UTF-8");
  size_t chars = 0;
  XML_SetUserData(p, &chars);
  XML_SetCharacterDataHandler(p, expat_chars);
  check(XML_Parse(p, doc.data(), static_cast<int>(doc.size()), 1) == XML_STATUS_OK && chars > 0,
        "expat parses");
  for (auto _ : state) {
    XML_ParserReset(p, "UTF-8");  // reused parser, as feedplane reuses its own
    XML_SetUserData(p, &chars);
    XML_SetCharacterDataHandler(p, expat_chars);
    XML_Parse(p, doc.data(), static_cast<int>(doc.size()), 1);
    benchmark::DoNotOptimize(chars);
  }
  XML_ParserFree(p);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * doc.size()));
  state.SetItemsProcessed(state.iterations());
}
void BM_expat_rss(benchmark::State& s) { expat_parse(s, rss_doc()); }
void BM_expat_atom(benchmark::State& s) { expat_parse(s, atom_doc()); }

void BM_simdjson_bare_json(benchmark::State& state) {
  const std::string doc = json_doc();
  simdjson::dom::parser p;
  simdjson::padded_string ps(doc);
  simdjson::dom::element e;
  check(p.parse(ps).get(e) == simdjson::SUCCESS, "simdjson parses");
  for (auto _ : state) {
    auto r = p.parse(ps);
    benchmark::DoNotOptimize(r);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * doc.size()));
  state.SetItemsProcessed(state.iterations());
}

// --- the corpora's XML files, and the broken ones among them --------------------------

struct corpus_files {
  std::vector<std::string> all, broken;  // broken: pugixml reports an error on them
};

const corpus_files& corpus() {
  static const corpus_files c = [] {
    corpus_files files;
    const char* corpus_dir = std::getenv("FEEDPLANE_CORPUS_DIR");
    const char* src = std::getenv("FEEDPLANE_SOURCE_DIR");
    const std::filesystem::path root =
        corpus_dir != nullptr && *corpus_dir != '\0'
            ? std::filesystem::path(corpus_dir)
            : std::filesystem::path(src ? src : ".") / ".." / "shared" / "corpus";
    std::error_code ec;
    for (const char* sub : {"gofeed", "feed-rs"}) {
      for (auto it = std::filesystem::recursive_directory_iterator(root / sub, ec);
           !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
        if (!it->is_regular_file() || it->path().extension() != ".xml") continue;
        std::ifstream in(it->path(), std::ios::binary);
        std::string doc((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        std::string work = doc;
        pugi::xml_document d;
        if (!d.load_buffer_inplace(work.data(), work.size())) files.broken.push_back(doc);
        files.all.push_back(std::move(doc));
      }
    }
    return files;
  }();
  return c;
}

// Parses every document of the set with one library per iteration; counters say how many
// it read (a document, for libxml2 recover: any tree at all; for feedplane: parse_errc::ok).
template <typename Parse>
void corpus_bench(benchmark::State& state, bool broken_only, Parse parse) {
  const auto& docs = broken_only ? corpus().broken : corpus().all;
  if (docs.empty()) {
    state.SkipWithError("corpus not found (set FEEDPLANE_CORPUS_DIR or FEEDPLANE_SOURCE_DIR)");
    return;
  }
  size_t bytes = 0, ok = 0;
  for (const auto& d : docs) {
    bytes += d.size();
    ok += parse(d);
  }
  for (auto _ : state)
    for (const auto& d : docs) benchmark::DoNotOptimize(parse(d));
  state.counters["documents"] = static_cast<double>(docs.size());
  state.counters["read"] = static_cast<double>(ok);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes));
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * docs.size()));
}

bool pugixml_reads(const std::string& doc) {
  static pugi::xml_document d;
  static std::string work;
  work.assign(doc);
  return static_cast<bool>(d.load_buffer_inplace(work.data(), work.size()));
}
bool libxml2_reads(const std::string& doc, int options) {
  xmlDocPtr d = xmlReadMemory(doc.data(), static_cast<int>(doc.size()), nullptr, nullptr,
                              options | XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING);
  const bool ok = d != nullptr && xmlDocGetRootElement(d) != nullptr;
  xmlFreeDoc(d);
  return ok;
}
bool expat_reads(const std::string& doc) {
  XML_Parser p = XML_ParserCreate(nullptr);
  const bool ok = XML_Parse(p, doc.data(), static_cast<int>(doc.size()), 1) == XML_STATUS_OK;
  XML_ParserFree(p);
  return ok;
}
bool feedplane_reads(const std::string& doc) {
  static parser p;
  static feed f;
  return p.parse(doc, {}, f) == parse_errc::ok;
}

void BM_corpus_all_pugixml(benchmark::State& s) { corpus_bench(s, false, pugixml_reads); }
void BM_corpus_all_libxml2(benchmark::State& s) {
  corpus_bench(s, false, [](const std::string& d) { return libxml2_reads(d, 0); });
}
void BM_corpus_all_expat(benchmark::State& s) { corpus_bench(s, false, expat_reads); }
void BM_corpus_all_feedplane(benchmark::State& s) { corpus_bench(s, false, feedplane_reads); }
void BM_corpus_broken_libxml2(benchmark::State& s) {
  corpus_bench(s, true, [](const std::string& d) { return libxml2_reads(d, 0); });
}
void BM_corpus_broken_libxml2_recover(benchmark::State& s) {
  corpus_bench(s, true, [](const std::string& d) { return libxml2_reads(d, XML_PARSE_RECOVER); });
}
void BM_corpus_broken_expat(benchmark::State& s) { corpus_bench(s, true, expat_reads); }
void BM_corpus_broken_feedplane(benchmark::State& s) { corpus_bench(s, true, feedplane_reads); }

}  // namespace

BENCHMARK(BM_corpus_all_pugixml);
BENCHMARK(BM_corpus_all_libxml2);
BENCHMARK(BM_corpus_all_expat);
BENCHMARK(BM_corpus_all_feedplane);
BENCHMARK(BM_corpus_broken_libxml2);
BENCHMARK(BM_corpus_broken_libxml2_recover);
BENCHMARK(BM_corpus_broken_expat);
BENCHMARK(BM_corpus_broken_feedplane);
BENCHMARK(BM_feedplane_rss);
BENCHMARK(BM_feedplane_atom);
BENCHMARK(BM_feedplane_json);
BENCHMARK(BM_feedplane_broken_rss);
BENCHMARK(BM_feedplane_rss_parse_and_dedup);
BENCHMARK(BM_paired_ratio_rss)->Iterations(300);
BENCHMARK(BM_paired_ratio_atom)->Iterations(300);
BENCHMARK(BM_pugixml_bare_rss);
BENCHMARK(BM_pugixml_bare_atom);
BENCHMARK(BM_pugixml_bare_broken);
BENCHMARK(BM_libxml2_dom_rss);
BENCHMARK(BM_libxml2_dom_atom);
BENCHMARK(BM_libxml2_recover_broken);
BENCHMARK(BM_libxml2_sax2_rss);
BENCHMARK(BM_libxml2_sax2_atom);
BENCHMARK(BM_expat_rss);
BENCHMARK(BM_expat_atom);
BENCHMARK(BM_simdjson_bare_json);

int main(int argc, char** argv) {
  // `feed_bench --dump DIR`: write the benchmark documents for bench/feedparser_peer.py.
  if (argc == 3 && std::strcmp(argv[1], "--dump") == 0) {
    const std::pair<const char*, std::string> docs[] = {{"rss.xml", rss_doc()},
                                                        {"atom.xml", atom_doc()},
                                                        {"feed.json", json_doc()},
                                                        {"broken.xml", broken_doc()}};
    for (const auto& [name, doc] : docs) {
      std::ofstream(std::string(argv[2]) + "/" + name, std::ios::binary) << doc;
      std::printf("%s %zu bytes\n", name, doc.size());
    }
    return 0;
  }
  // `feed_bench --loop feedplane|pugixml FILE N`: parse FILE N times and nothing else, for
  // instruction counts (valgrind --tool=callgrind), which the machine's load does not move.
  if (argc == 5 && std::strcmp(argv[1], "--loop") == 0) {
    std::ifstream in(argv[3], std::ios::binary);
    const std::string doc((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const int n = std::atoi(argv[4]);
    size_t sink = 0;
    if (std::strcmp(argv[2], "pugixml") == 0) {
      pugi::xml_document d;
      std::string work;
      for (int i = 0; i < n; ++i) {
        work.assign(doc);
        d.load_buffer_inplace(work.data(), work.size(), pugi::parse_default, pugi::encoding_utf8);
        sink += d.first_child() ? 1 : 0;
      }
    } else {
      parser p;
      feed f;
      for (int i = 0; i < n; ++i) {
        p.parse(doc, {}, f);
        sink += f.entries.size();
      }
    }
    std::printf("%zu\n", sink);
    return 0;
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
