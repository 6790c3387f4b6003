// The feed parser: bytes -> UTF-8 -> pugixml tree (or simdjson On-Demand walk) -> model.
// pugixml parses in place without decoding entities (parse_escapes off): entities are decoded
// by our own forgiving decoder, so bare ampersands and HTML entities survive and are flagged.
#include "feedplane/feed/parser.h"

#include <simdjson.h>
#include <pugixml.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "feedplane/base/ascii.h"
#include "feedplane/base/base64.h"
#include "internal.h"

namespace feedplane::feed {

std::string_view errc_name(parse_errc e) {
  switch (e) {
    case parse_errc::ok:
      return "ok";
    case parse_errc::empty_document:
      return "empty_document";
    case parse_errc::too_large:
      return "too_large";
    case parse_errc::unknown_format:
      return "unknown_format";
    case parse_errc::html_not_feed:
      return "html_not_feed";
    case parse_errc::xml_unreadable:
      return "xml_unreadable";
    case parse_errc::json_invalid:
      return "json_invalid";
    case parse_errc::unsupported_encoding:
      return "unsupported_encoding";
    case parse_errc::out_of_memory:
      return "out_of_memory";
    case parse_errc::too_complex:
      return "too_complex";
  }
  return "unknown_error";
}

// pugixml's memory, bounded per document. A DOM node costs 64 bytes and an attribute 40,
// so markup as dense as "<x/>" costs 16 times the document; a shard parsing thousands of
// feeds cannot afford that. pugixml takes its pages from these two functions (installed
// before main, so no page is ever freed by the wrong one); while a parse runs on this
// thread, a page beyond the document's budget is refused, pugixml fails with
// status_out_of_memory and the parse with parse_errc::too_complex.
namespace {
struct xml_budget {
  int64_t limit = 0;  // 0: unbounded (outside feed::parser::parse, e.g. benchmarks' bare parses)
  int64_t used = 0;   // bytes handed to pugixml since the budget was set
  bool exceeded = false;
};
thread_local xml_budget t_xml_budget;
constexpr size_t k_page_header = 16;  // the size, padded to keep pugixml's alignment

void* budget_allocate(size_t n) {
  xml_budget& b = t_xml_budget;
  if (b.limit != 0 && b.used + static_cast<int64_t>(n) > b.limit) {
    b.exceeded = true;
    return nullptr;
  }
  auto* p = static_cast<unsigned char*>(std::malloc(n + k_page_header));
  if (p == nullptr) return nullptr;
  std::memcpy(p, &n, sizeof n);
  b.used += static_cast<int64_t>(n);
  return p + k_page_header;
}

void budget_deallocate(void* q) {
  if (q == nullptr) return;
  unsigned char* p = static_cast<unsigned char*>(q) - k_page_header;
  size_t n;
  std::memcpy(&n, p, sizeof n);
  t_xml_budget.used -= static_cast<int64_t>(n);
  std::free(p);
}

const bool k_budget_installed = [] {
  pugi::set_memory_management_functions(budget_allocate, budget_deallocate);
  return true;
}();

// By default the DOM may take twice the UTF-8 document plus 2 MiB: with the UTF-8 copy and
// the output, a parse peaks near 4x the document plus a constant (tests/feed_memory_test.cc).
// Real feeds need well under 2x (text outweighs markup); only markup-dense documents hit it.
int64_t default_tree_budget(size_t utf8_bytes) {
  return 2 * static_cast<int64_t>(utf8_bytes) + (int64_t{2} << 20);
}

// Sets the budget for one load_buffer_inplace; restores "unbounded" when it goes.
struct budget_scope {
  explicit budget_scope(int64_t limit) {
    t_xml_budget.limit = limit;
    t_xml_budget.used = 0;
    t_xml_budget.exceeded = false;
  }
  ~budget_scope() { t_xml_budget.limit = 0; }
  budget_scope(const budget_scope&) = delete;
  budget_scope& operator=(const budget_scope&) = delete;
};
}  // namespace

namespace {

using detail::note;

enum class ns : uint8_t {
  none,
  atom10,
  atom03,
  rss10,
  rss090,
  rss20,  // the RSS 2.0 / 0.91 namespaces some publishers declare as the default
  rdf,
  dc,
  dcterms,
  content,
  sy,  // RSS 1.0 syndication module (updatePeriod, updateFrequency)
  xhtml,
  media,
  itunes,
  xml,
  other,
  // An unprefixed element whose default namespace is one we do not know: read as the
  // format's own element, as feedparser and Go's encoding/xml (Miniflux, gofeed) do.
  unknown_default,
};

using base::ascii_iequals;

// Namespace URIs compare case-insensitively, as feedparser's do: publishers vary the case.
ns ns_from_uri(std::string_view u) {
  if (u.empty()) return ns::none;  // xmlns="": back to no namespace
  if (ascii_iequals(u, "http://www.w3.org/2005/Atom")) return ns::atom10;
  if (ascii_iequals(u, "http://purl.org/atom/ns#")) return ns::atom03;
  if (ascii_iequals(u, "http://purl.org/rss/1.0/")) return ns::rss10;
  if (ascii_iequals(u, "http://my.netscape.com/rdf/simple/0.9/") ||
      ascii_iequals(u, "http://channel.netscape.com/rdf/simple/0.9/"))
    return ns::rss090;
  if (ascii_iequals(u, "http://www.w3.org/1999/02/22-rdf-syntax-ns#")) return ns::rdf;
  if (ascii_iequals(u, "http://purl.org/dc/elements/1.1/")) return ns::dc;
  if (ascii_iequals(u, "http://purl.org/dc/terms/")) return ns::dcterms;
  if (ascii_iequals(u, "http://purl.org/rss/1.0/modules/content/")) return ns::content;
  if (ascii_iequals(u, "http://purl.org/rss/1.0/modules/syndication/")) return ns::sy;
  if (ascii_iequals(u, "http://www.w3.org/1999/xhtml")) return ns::xhtml;
  if (ascii_iequals(u, "http://search.yahoo.com/mrss/") ||
      ascii_iequals(u, "http://search.yahoo.com/mrss"))
    return ns::media;
  if (ascii_iequals(u, "http://www.itunes.com/dtds/podcast-1.0.dtd")) return ns::itunes;
  // RSS 2.0 in a namespace: any backend.userland.com/rss* URI (feedparser's rule; "rss2" is
  // the common one), Harvard's copy of the spec, and the RSS 1.0 module for 0.91 elements.
  if (base::ascii_ifind(u, "backend.userland.com/rss") != std::string_view::npos ||
      ascii_iequals(u, "http://blogs.law.harvard.edu/tech/rss") ||
      ascii_iequals(u, "http://purl.org/rss/1.0/modules/rss091#"))
    return ns::rss20;
  // Atom's drafts before 0.3 ("Echo", "Pie"), still found in old feeds: read as 0.3.
  if (ascii_iequals(u, "http://purl.org/echo/") || ascii_iequals(u, "http://purl.org/pie/") ||
      ascii_iequals(u, "http://example.com/newformat#") ||
      ascii_iequals(u, "http://example.com/necho") || ascii_iequals(u, "uri/of/echo/namespace#"))
    return ns::atom03;
  return ns::other;
}

// Conventional prefixes used without a declaration (a common publisher error).
ns ns_from_prefix(std::string_view p) {
  if (p == "atom") return ns::atom10;
  if (p == "dc") return ns::dc;
  if (p == "dcterms") return ns::dcterms;
  if (p == "content") return ns::content;
  if (p == "sy") return ns::sy;
  if (p == "media") return ns::media;
  if (p == "itunes") return ns::itunes;
  if (p == "rdf") return ns::rdf;
  if (p == "xhtml") return ns::xhtml;
  if (p == "xml") return ns::xml;
  return ns::other;
}

// The namespaces whose elements are RSS's own: none, RSS 1.0, 0.90, 2.0, or an unknown default.
bool rss_core(ns n) {
  return n == ns::none || n == ns::rss10 || n == ns::rss090 || n == ns::rss20 ||
         n == ns::unknown_default;
}

// The namespaces whose elements are Atom's own (0.3 or 1.0), inside an Atom document.
bool atom_core(ns n) {
  return n == ns::atom10 || n == ns::atom03 || n == ns::none || n == ns::unknown_default;
}

struct string_writer final : pugi::xml_writer {
  std::string* out = nullptr;
  void write(const void* data, size_t size) override {
    out->append(static_cast<const char*>(data), size);
  }
};

}  // namespace

struct parser::impl {
  detail::transcoder transcoder;
  detail::entry_pool pool;
  std::string utf8;     // the document in UTF-8, controls stripped; pugixml parses it in place
  std::string work;     // the repair pass's input
  std::string scratch;  // attribute values, dates
  std::string scratch2;
  std::string atype;  // an Atom text construct's type attribute
  pugi::xml_document doc;
  simdjson::ondemand::parser json;  // reused; its buffers dropped after a big document
  decode_stats st;
  const parse_options* opts = nullptr;
  feed* out = nullptr;
  string_writer writer;

  // Namespace scopes: (prefix, ns) pairs of the elements being visited, innermost last.
  std::vector<std::pair<std::string_view, ns>> scopes;
  // xml:base of the elements being visited (absolute), innermost last.
  std::vector<std::string> bases;
  size_t base_depth = 0;

  parse_errc parse(std::string_view bytes, const parse_options& o, feed& f);
  parse_errc run(std::string_view bytes, const parse_options& o, feed& f);
  // The first parse drops whitespace-only text; markup kept as markup (naked HTML in a
  // description, Atom XHTML) needs it back when two elements are adjacent in it: then
  // need_ws is set and the document is parsed again with ws_mode on (rare: only such feeds).
  bool ws_mode = false;
  bool need_ws = false;
  void check_ws(pugi::xml_node n);
  parse_errc parse_xml(std::string_view bytes);
  parse_errc parse_json(size_t first);  // the document is utf8[first, end)
  // Parses [text, text + len), readable (padded) up to text + cap.
  parse_errc walk_json(const char* text, size_t len, size_t cap);
  simdjson::error_code read_item(simdjson::ondemand::value item, size_t depth);
  simdjson::error_code read_hub(simdjson::ondemand::value h, size_t depth);
  simdjson::error_code read_attachment(simdjson::ondemand::value a, size_t depth, entry& e);

  // Enters element n: records its xmlns declarations and xml:base. Returns a mark for leave().
  struct mark {
    size_t scopes;
    size_t base_depth;
  };
  mark enter(pugi::xml_node n);
  void leave(mark m) {
    if (scopes.size() != m.scopes) scopes.resize(m.scopes);
    base_depth = m.base_depth;
    top = pugi::xml_node();
  }
  pugi::xml_node top;  // the element enter() saw last: entering it again changes nothing
  std::string_view base() const {
    return base_depth == 0 ? opts->base_url : std::string_view(bases[base_depth - 1]);
  }
  ns resolve(pugi::xml_node n, std::string_view* local) const;

  void text(pugi::xml_node n, std::string& out_s);  // gofeed's rule; trimmed
  void append_children_raw(pugi::xml_node n, std::string& out_s);
  void attr(pugi::xml_node n, const char* name, std::string& out_s);
  void link_attr(pugi::xml_node n, const char* name, std::string& out_s);
  void date(pugi::xml_node n, int64_t* t, bool* has);
  void atom_text(pugi::xml_node n, std::string& out_s);
  void atom_person(pugi::xml_node n, std::vector<person>& v);
  void atom_category(pugi::xml_node n, std::vector<std::string>& v);
  void itunes_categories(pugi::xml_node n, std::vector<std::string>& v);
  void keywords(pugi::xml_node n, std::vector<std::string>& v);
  void person_text(pugi::xml_node n, std::vector<person>& v);
  void resolve_markup(std::string& html);
  void atom_link(pugi::xml_node n, std::string* alternate, entry* e, bool feed_level);

  // Publishers' hints (model.h fetch_hints).
  void skip_hours(pugi::xml_node n);
  void skip_days(pugi::xml_node n);
  void ttl(pugi::xml_node n);
  // sy:updatePeriod / sy:updateFrequency of the channel or feed: n is either (or nothing).
  void update_period(pugi::xml_node period, pugi::xml_node frequency);

  void rss_channel(pugi::xml_node ch, bool rdf);
  void rss_item(pugi::xml_node it, bool rdf);
  void atom_feed(pugi::xml_node root, bool atom03);
  void atom_entry(pugi::xml_node n, bool atom03);
  // True while one more entry fits; otherwise counts the entry as dropped (a named recovery).
  int64_t tree_budget(size_t utf8_bytes) const {
    return opts->max_tree_bytes != 0
               ? static_cast<int64_t>(std::min<size_t>(opts->max_tree_bytes, INT64_MAX / 2))
               : default_tree_budget(utf8_bytes);
  }
  bool room() {
    if (pool.used() < opts->max_entries) return true;
    if (out->entries_dropped++ == 0) note(st, recovery::entries_dropped);
    return false;
  }
};

parser::parser() : impl_(std::make_unique<impl>()) {}
parser::~parser() = default;

parse_errc parser::parse(std::string_view bytes, const parse_options& opts, feed& out) noexcept {
  try {
    return impl_->parse(bytes, opts, out);
  } catch (...) {  // nothing below throws but allocation; keep the promise regardless
    // Entries of an earlier document not reused by this one must not look like output.
    const size_t used = impl_->pool.used();
    if (out.entries.size() > used) out.entries.erase(out.entries.begin() + used, out.entries.end());
    return parse_errc::out_of_memory;
  }
}

parse_errc parser::impl::parse(std::string_view bytes, const parse_options& o, feed& f) {
  ws_mode = need_ws = false;
  parse_errc rc = run(bytes, o, f);
  if (need_ws) {
    ws_mode = true;
    rc = run(bytes, o, f);
    ws_mode = false;
  }
  return rc;
}

// Sets need_ws when n's subtree holds two adjacent elements: whitespace between them may
// have been dropped ("<b>a</b> <i>b</i>" must not become "ab"). Iterative: no recursion on
// deep markup.
void parser::impl::check_ws(pugi::xml_node n) {
  if (ws_mode || need_ws) return;
  pugi::xml_node c = n.first_child();
  while (c && c != n) {
    if (c.type() == pugi::node_element) {
      const pugi::xml_node next = c.next_sibling();
      if (next && next.type() == pugi::node_element) {
        need_ws = true;
        return;
      }
      if (c.first_child()) {
        c = c.first_child();
        continue;
      }
    }
    while (c != n && !c.next_sibling()) c = c.parent();
    if (c != n) c = c.next_sibling();
  }
}

parse_errc parser::impl::run(std::string_view bytes, const parse_options& o, feed& f) {
  opts = &o;
  out = &f;
  pool.recycle(f);
  f.format = feed_format::unknown;
  f.version.clear();
  f.title.clear();
  f.link.clear();
  f.self_link.clear();
  f.hub_links.clear();
  f.description.clear();
  f.language.clear();
  f.published = f.updated = 0;
  f.has_published = f.has_updated = false;
  f.authors.clear();
  f.categories.clear();
  f.hints = {};
  f.recovered = 0;
  f.recovery_events = 0;
  f.entries_dropped = 0;
  st = {};
  scopes.clear();
  base_depth = 0;

  if (bytes.size() > o.max_bytes) {
    pool.finish(f);
    return parse_errc::too_large;
  }
  parse_errc rc = transcoder.to_utf8(bytes, o.content_type, utf8, st);
  if (rc == parse_errc::ok) {
    const size_t first = utf8.find_first_not_of(" \t\r\n");
    if (first == std::string::npos) {
      rc = parse_errc::empty_document;
    } else if (utf8[first] == '{') {
      rc = parse_json(first);
    } else if (utf8[first] == '[') {
      rc = parse_errc::unknown_format;
    } else {
      if (utf8[first] != '<') {
        const size_t lt = utf8.find('<', first);
        if (lt == std::string::npos) {
          rc = parse_errc::unknown_format;
        } else {
          note(st, recovery::leading_garbage);
          utf8.erase(0, lt);
        }
      }
      if (rc == parse_errc::ok) rc = parse_xml(bytes);
    }
  }
  pool.finish(f);
  f.recovered = st.flags;
  f.recovery_events = st.events;
  return rc;
}

// ---------------------------------------------------------------------------------------
// XML

parse_errc parser::impl::parse_xml(std::string_view bytes) {
  // No entity decoding, no EOL normalisation, no PIs/comments/doctype: the least work that
  // still gives us CDATA sections and whitespace between inline elements.
  // Whitespace-only text between elements is dropped (half the nodes of a pretty-printed feed)
  // unless a walk found naked markup where it matters (see ws_lost).
  const unsigned flags = pugi::parse_cdata | (ws_mode ? pugi::parse_ws_pcdata : 0u);
  (void)k_budget_installed;
  // The previous document's DOM goes before this one is counted against its budget.
  doc.reset();
  // Parsed in place: the UTF-8 copy is consumed, so the cold repair path transcodes again.
  pugi::xml_parse_result r;
  {
    const budget_scope budget(tree_budget(utf8.size()));
    r = doc.load_buffer_inplace(utf8.data(), utf8.size(), flags, pugi::encoding_utf8);
    if (t_xml_budget.exceeded) return parse_errc::too_complex;
  }
  if (r.status == pugi::status_out_of_memory) return parse_errc::out_of_memory;
  if (!r) {
    doc.reset();         // the failed tree is not needed while the repaired copy is built
    decode_stats again;  // the transcoding repairs were counted the first time
    transcoder.to_utf8(bytes, opts->content_type, work, again);
    const size_t lt = work.find('<');
    if (lt != std::string::npos) work.erase(0, lt);
    detail::repair_xml(work, utf8, st);
    const budget_scope budget(tree_budget(utf8.size()));
    r = doc.load_buffer_inplace(utf8.data(), utf8.size(), flags, pugi::encoding_utf8);
    if (t_xml_budget.exceeded) return parse_errc::too_complex;
    if (r.status == pugi::status_out_of_memory) return parse_errc::out_of_memory;
  }
  pugi::xml_node root = doc.document_element();
  if (!root) return parse_errc::xml_unreadable;
  const mark m = enter(root);
  std::string_view local;
  const ns rns = resolve(root, &local);
  parse_errc rc = parse_errc::ok;
  if (local == "rss" || (local == "channel" && rss_core(rns))) {
    out->format = feed_format::rss;
    attr(root, "version", out->version);  // as sent; empty when the document names none
    if (local == "channel") {
      rss_channel(root, false);
    } else {
      for (pugi::xml_node c = root.first_child(); c; c = c.next_sibling()) {
        if (c.type() != pugi::node_element) continue;
        std::string_view l;
        resolve(c, &l);
        if (l == "channel") rss_channel(c, false);
        if (l == "item" && room()) rss_item(c, false);  // items outside the channel
      }
    }
  } else if (local == "RDF") {
    out->format = feed_format::rss;
    bool is090 = false;
    for (const auto& s : scopes) is090 = is090 || s.second == ns::rss090;
    out->version = is090 ? "0.9" : "1.0";
    for (pugi::xml_node c = root.first_child(); c; c = c.next_sibling()) {
      if (c.type() != pugi::node_element) continue;
      std::string_view l;
      resolve(c, &l);
      if (l == "channel") rss_channel(c, true);
      if (l == "item" && room()) rss_item(c, true);
    }
  } else if (local == "feed" && atom_core(rns)) {
    out->format = feed_format::atom;
    std::string& v = scratch;
    attr(root, "version", v);
    const bool atom03 = rns == ns::atom03 || v == "0.3";
    out->version = atom03 ? "0.3" : "1.0";
    atom_feed(root, atom03);
  } else if (local == "entry" && (rns == ns::atom10 || rns == ns::atom03)) {
    // A bare Atom entry document (RFC 4287 section 4.1.2): a feed of one entry.
    out->format = feed_format::atom;
    out->version = rns == ns::atom03 ? "0.3" : "1.0";
    atom_entry(root, rns == ns::atom03);
  } else if (ascii_iequals(local, "html")) {
    rc = parse_errc::html_not_feed;
  } else {
    rc = parse_errc::unknown_format;
  }
  leave(m);
  return rc;
}

parser::impl::mark parser::impl::enter(pugi::xml_node n) {
  const mark m{scopes.size(), base_depth};
  pugi::xml_attribute first = n.first_attribute();
  if (!first || n == top) return m;  // most elements have no attributes: nothing to record
  top = n;
  // Fast because almost every element has no attributes at all.
  for (pugi::xml_attribute a = first; a; a = a.next_attribute()) {
    const char* name = a.name();
    if (name[0] == 'x' && name[1] == 'm' && name[2] == 'l') {
      if (std::strncmp(name, "xmlns", 5) == 0 && (name[5] == 0 || name[5] == ':')) {
        scratch2.clear();
        decode_entities(a.value(), scratch2, st);
        scopes.emplace_back(name[5] == 0 ? std::string_view() : std::string_view(name + 6),
                            ns_from_uri(base::ascii_trim(scratch2)));
      } else if (std::strcmp(name, "xml:base") == 0) {
        scratch2.clear();
        decode_entities(a.value(), scratch2, st);
        if (bases.size() <= base_depth) bases.resize(base_depth + 1);
        std::string& b = bases[base_depth];
        b.clear();
        resolve_url(base(), scratch2, b);
        ++base_depth;
      }
    }
  }
  return m;
}

ns parser::impl::resolve(pugi::xml_node n, std::string_view* local) const {
  const std::string_view name = n.name();
  const size_t colon = name.find(':');
  std::string_view prefix;
  if (colon == std::string_view::npos) {
    *local = name;
  } else {
    prefix = name.substr(0, colon);
    *local = name.substr(colon + 1);
  }
  for (size_t i = scopes.size(); i > 0; --i) {
    if (scopes[i - 1].first != prefix) continue;
    const ns found = scopes[i - 1].second;
    return prefix.empty() && found == ns::other ? ns::unknown_default : found;
  }
  return prefix.empty() ? ns::none : ns_from_prefix(prefix);
}

void parser::impl::append_children_raw(pugi::xml_node n, std::string& o) {
  check_ws(n);
  writer.out = &o;
  for (pugi::xml_node c = n.first_child(); c; c = c.next_sibling()) {
    switch (c.type()) {
      case pugi::node_pcdata:  // still escaped as in the source: valid HTML text
      case pugi::node_cdata:
        o.append(c.value());
        break;
      case pugi::node_element:
        c.print(writer, "", pugi::format_raw | pugi::format_no_escapes, pugi::encoding_utf8);
        break;
      default:
        break;
    }
  }
}

void parser::impl::text(pugi::xml_node n, std::string& o) {
  o.clear();
  pugi::xml_node only = n.first_child();
  if (only && !only.next_sibling()) {
    // The common case, one text or CDATA child: no loop, no writer.
    const pugi::xml_node_type t = only.type();
    if (t == pugi::node_pcdata || t == pugi::node_cdata) {
      const std::string_view v = base::ascii_trim(only.value());
      if (t == pugi::node_pcdata) {
        decode_entities(v, o, st);
        // Only an entity at an end can have decoded to whitespace there.
        if (!v.empty() && (v.front() == '&' || v.back() == ';')) trim(o);
      } else {
        o.assign(v);
      }
      return;
    }
  }
  check_ws(n);
  writer.out = &o;
  for (pugi::xml_node c = n.first_child(); c; c = c.next_sibling()) {
    switch (c.type()) {
      case pugi::node_pcdata:
        decode_entities(c.value(), o, st);
        break;
      case pugi::node_cdata:
        o.append(c.value());
        break;
      case pugi::node_element:  // naked markup: kept as markup
        c.print(writer, "", pugi::format_raw | pugi::format_no_escapes, pugi::encoding_utf8);
        break;
      default:
        break;
    }
  }
  trim(o);
}

void parser::impl::attr(pugi::xml_node n, const char* name, std::string& o) {
  o.clear();
  const pugi::xml_attribute a = n.attribute(name);
  if (a) decode_entities(a.value(), o, st);
  trim(o);
}

void parser::impl::link_attr(pugi::xml_node n, const char* name, std::string& o) {
  attr(n, name, scratch2);
  o.clear();
  if (!scratch2.empty()) resolve_url(base(), scratch2, o);
}

void parser::impl::date(pugi::xml_node n, int64_t* t, bool* has) {
  int64_t v;
  // Fast because the usual date, one text child, is read where it lies: no copy, no entity
  // pass (a date holds no '&', so one that does fails here and takes the full path below).
  const pugi::xml_node only = n.first_child();
  if (only && !only.next_sibling() &&
      (only.type() == pugi::node_pcdata || only.type() == pugi::node_cdata) &&
      parse_date(only.value(), &v)) {
    *t = v;
    *has = true;
    return;
  }
  text(n, scratch);
  if (scratch.empty()) return;
  if (parse_date(scratch, &v)) {
    *t = v;
    *has = true;
  } else {
    note(st, recovery::unparsed_date);
  }
}

// ---------------------------------------------------------------------------------------
// RSS 0.90-2.0 and RDF

void parser::impl::rss_channel(pugi::xml_node ch, bool rdf) {
  const mark m = enter(ch);
  pugi::xml_node itunes_author, itunes_summary;  // fallbacks, used only when nothing better
  pugi::xml_node sy_period, sy_frequency;
  for (pugi::xml_node c = ch.first_child(); c; c = c.next_sibling()) {
    if (c.type() != pugi::node_element) continue;
    const mark cm = enter(c);
    std::string_view l;
    const ns n = resolve(c, &l);
    const bool core = rss_core(n);
    if (core) {
      if (l == "item") {
        if (room()) rss_item(c, rdf);
      } else if (l == "title") {
        text(c, out->title);
      } else if (l == "link" && out->link.empty()) {  // the first non-empty one
        text(c, scratch);
        if (scratch.empty()) attr(c, "href", scratch);
        if (!scratch.empty()) resolve_url(base(), scratch, out->link);
      } else if (l == "description") {
        text(c, out->description);
      } else if (l == "language") {
        text(c, out->language);
      } else if (l == "lastBuildDate") {
        date(c, &out->updated, &out->has_updated);
      } else if (l == "pubDate") {
        date(c, &out->published, &out->has_published);
      } else if (l == "managingEditor" || l == "webMaster") {
        text(c, scratch);
        if (!scratch.empty()) detail::parse_person(scratch, out->authors.emplace_back());
      } else if (l == "category") {
        text(c, scratch);
        if (!scratch.empty()) out->categories.push_back(scratch);
      } else if (l == "ttl") {
        ttl(c);
      } else if (l == "skipHours") {
        skip_hours(c);
      } else if (l == "skipDays") {
        skip_days(c);
      }
    } else if (n == ns::sy) {
      if (l == "updatePeriod") sy_period = c;
      if (l == "updateFrequency") sy_frequency = c;
    } else if (n == ns::atom10 || n == ns::atom03) {
      if (l == "link") atom_link(c, &out->link, nullptr, true);
    } else if (n == ns::dc) {
      if (l == "title" && out->title.empty()) {
        text(c, out->title);
      } else if (l == "language" && out->language.empty()) {
        text(c, out->language);
      } else if (l == "date" && !out->has_updated) {
        date(c, &out->updated, &out->has_updated);
      } else if (l == "creator" || l == "author") {
        person_text(c, out->authors);
      } else if (l == "subject") {
        text(c, scratch);
        if (!scratch.empty()) out->categories.push_back(scratch);
      } else if (l == "description" && out->description.empty()) {
        text(c, out->description);
      }
    } else if (n == ns::itunes) {
      if (l == "author") {
        itunes_author = c;
      } else if (l == "summary") {
        itunes_summary = c;
      } else if (l == "keywords") {
        keywords(c, out->categories);
      } else if (l == "category") {
        itunes_categories(c, out->categories);
      }
    }
    leave(cm);
  }
  if (out->authors.empty() && itunes_author) person_text(itunes_author, out->authors);
  if (out->description.empty() && itunes_summary) text(itunes_summary, out->description);
  update_period(sy_period, sy_frequency);
  leave(m);
}

namespace {
// A decimal of digits only (ASCII whitespace around it allowed), at most max; else false.
bool small_count(std::string_view s, uint32_t max, uint32_t* out) {
  s = base::ascii_trim(s);
  if (s.empty() || s.size() > 10) return false;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + uint64_t(c - '0');
  }
  if (v > max) return false;
  *out = uint32_t(v);
  return true;
}
}  // namespace

// <ttl>: minutes, a positive integer; at most a year (anything longer is no hint a crawler
// can use: its own ceiling applies first).
void parser::impl::ttl(pugi::xml_node n) {
  text(n, scratch);
  uint32_t minutes = 0;
  if (small_count(scratch, 366 * 24 * 60, &minutes)) out->hints.ttl_s = minutes * 60;
}

// <skipHours><hour>0..23</hour>...: UTC hours; 24 (used by some for midnight) is 0. A list
// that skips every hour would forbid fetching at all: dropped as unreadable.
void parser::impl::skip_hours(pugi::xml_node n) {
  uint32_t bits = 0;
  for (pugi::xml_node c = n.first_child(); c; c = c.next_sibling()) {
    std::string_view l;
    if (c.type() != pugi::node_element || !rss_core(resolve(c, &l)) || l != "hour") continue;
    text(c, scratch);
    uint32_t h = 0;
    if (small_count(scratch, 24, &h)) bits |= 1u << (h % 24);
  }
  out->hints.skip_hours = bits == (1u << 24) - 1 ? 0 : bits;
}

// <skipDays><day>Monday</day>...: English day names, any case; unknown names ignored.
void parser::impl::skip_days(pugi::xml_node n) {
  static constexpr std::string_view names[7] = {"Sunday",   "Monday", "Tuesday", "Wednesday",
                                                "Thursday", "Friday", "Saturday"};
  uint32_t bits = 0;
  for (pugi::xml_node c = n.first_child(); c; c = c.next_sibling()) {
    std::string_view l;
    if (c.type() != pugi::node_element || !rss_core(resolve(c, &l)) || l != "day") continue;
    text(c, scratch);
    for (int d = 0; d < 7; ++d) {
      if (ascii_iequals(scratch, names[d])) bits |= 1u << d;
    }
  }
  out->hints.skip_days = bits == 0x7f ? 0 : uint8_t(bits);
}

// The syndication module: the feed updates `frequency` times per `period` (hourly, daily,
// weekly, monthly, yearly; daily and 1 when absent). An unknown period or a frequency that
// is not a positive integer makes no hint.
void parser::impl::update_period(pugi::xml_node period, pugi::xml_node frequency) {
  if (!period && !frequency) return;
  uint32_t period_s = 86'400;
  if (period) {
    text(period, scratch);
    static constexpr std::pair<std::string_view, uint32_t> periods[] = {{"hourly", 3600},
                                                                        {"daily", 86'400},
                                                                        {"weekly", 7 * 86'400},
                                                                        {"monthly", 30 * 86'400},
                                                                        {"yearly", 365 * 86'400}};
    period_s = 0;
    for (const auto& [name, s] : periods) {
      if (ascii_iequals(scratch, name)) period_s = s;
    }
    if (period_s == 0) return;
  }
  uint32_t times = 1;
  if (frequency) {
    text(frequency, scratch);
    if (!small_count(scratch, 1'000'000, &times) || times == 0) return;
  }
  out->hints.update_s = std::max<uint32_t>(1, period_s / times);
}

void parser::impl::rss_item(pugi::xml_node it, bool rdf) {
  const mark m = enter(it);
  entry& e = pool.add(*out);
  bool have_link = false;
  bool guid_said_permalink = false;  // isPermaLink="true" written out, not just the default
  pugi::xml_node itunes_author, itunes_summary;  // fallbacks, used only when nothing better
  for (pugi::xml_node c = it.first_child(); c; c = c.next_sibling()) {
    if (c.type() != pugi::node_element) continue;
    const mark cm = enter(c);
    std::string_view l;
    const ns n = resolve(c, &l);
    const bool core = rss_core(n);
    if (core) {
      if (l == "title") {
        text(c, e.title);
      } else if (l == "link") {
        text(c, scratch);
        // <link href="..."/>, Atom style without the namespace: the href when no text.
        if (scratch.empty()) attr(c, "href", scratch);
        if (!scratch.empty() && !have_link) {
          e.link.clear();
          resolve_url(base(), scratch, e.link);
          have_link = true;
        }
      } else if (l == "description") {
        text(c, e.summary);
        resolve_markup(e.summary);
      } else if (l == "guid") {
        text(c, e.id);
        attr(c, "isPermaLink", scratch);
        e.id_is_permalink = !e.id.empty() && !ascii_iequals(scratch, "false");
        guid_said_permalink = ascii_iequals(scratch, "true");
      } else if (l == "pubDate") {
        date(c, &e.published, &e.has_published);
      } else if (l == "author") {
        text(c, scratch);
        if (!scratch.empty()) detail::parse_person(scratch, e.authors.emplace_back());
      } else if (l == "category") {
        text(c, scratch);
        if (!scratch.empty()) e.categories.push_back(scratch);
      } else if (l == "enclosure") {
        enclosure& enc = e.enclosures.emplace_back();
        link_attr(c, "url", enc.url);
        attr(c, "type", enc.type);
        attr(c, "length", scratch);
        enc.length = 0;
        for (char ch : scratch) {
          if (ch < '0' || ch > '9' || enc.length > (INT64_MAX - 9) / 10) break;
          enc.length = enc.length * 10 + (ch - '0');
        }
        if (enc.url.empty()) e.enclosures.pop_back();
      } else if (l == "encoded") {  // content:encoded without its namespace declared
        text(c, e.content);
        resolve_markup(e.content);
      }
    } else if (n == ns::content && l == "encoded") {
      text(c, e.content);
      resolve_markup(e.content);
    } else if (n == ns::dc) {
      if (l == "date") {
        // dc:date is when the item was issued; it stands in for both dates when absent.
        if (!e.has_published) date(c, &e.published, &e.has_published);
        if (!e.has_updated) date(c, &e.updated, &e.has_updated);
      } else if (l == "description" && e.summary.empty()) {
        text(c, e.summary);
        resolve_markup(e.summary);
      } else if (l == "creator" || l == "author") {
        text(c, scratch);
        if (!scratch.empty()) detail::parse_person(scratch, e.authors.emplace_back());
      } else if (l == "subject") {
        text(c, scratch);
        if (!scratch.empty()) e.categories.push_back(scratch);
      } else if (l == "title" && e.title.empty()) {
        text(c, e.title);
      } else if (l == "identifier" && e.id.empty()) {
        text(c, e.id);
      }
    } else if (n == ns::dcterms) {
      if (l == "modified") date(c, &e.updated, &e.has_updated);
      // dcterms:issued/created/date are dates like dc:date: they stand in for both when absent.
      if (l == "issued" || l == "created" || l == "date") {
        if (!e.has_published) date(c, &e.published, &e.has_published);
        if (!e.has_updated) date(c, &e.updated, &e.has_updated);
      }
    } else if (n == ns::atom10 || n == ns::atom03) {
      if (l == "link") {
        atom_link(c, have_link ? nullptr : &e.link, &e, false);
        have_link = !e.link.empty();
      } else if (l == "updated") {
        date(c, &e.updated, &e.has_updated);
      } else if (l == "published" && !e.has_published) {
        date(c, &e.published, &e.has_published);
      } else if (l == "author") {
        atom_person(c, e.authors);
      } else if (l == "content" && e.content.empty()) {
        atom_text(c, e.content);
      } else if (l == "summary" && e.summary.empty()) {
        atom_text(c, e.summary);
      } else if (l == "id" && e.id.empty()) {
        text(c, e.id);
      } else if (l == "category") {
        atom_category(c, e.categories);
      }
    } else if (n == ns::itunes) {
      if (l == "author") {
        itunes_author = c;
      } else if (l == "summary") {
        itunes_summary = c;
      } else if (l == "keywords") {
        keywords(c, e.categories);
      }
    }
    leave(cm);
  }
  if (e.authors.empty() && itunes_author) person_text(itunes_author, e.authors);
  if (e.summary.empty() && itunes_summary) text(itunes_summary, e.summary);
  // RDF items name their link in rdf:about when they have no <link>.
  if (rdf && e.link.empty()) {
    attr(it, "rdf:about", scratch);
    if (!scratch.empty()) resolve_url(base(), scratch, e.link);
  }
  // A permalink guid is the link of an item that has none (RSS 2.0: isPermaLink defaults to
  // true), as feedparser and Miniflux read it. The default alone is trusted only for an
  // http(s) URL: many feeds omit isPermaLink on guids that are no URL at all ("12345").
  if (e.link.empty() && e.id_is_permalink &&
      (guid_said_permalink || base::ascii_istarts_with(e.id, "http://") ||
       base::ascii_istarts_with(e.id, "https://"))) {
    resolve_url(base(), e.id, e.link);
    e.link_from_guid = true;
  }
  leave(m);
}

// ---------------------------------------------------------------------------------------
// Atom 0.3 and 1.0

void parser::impl::atom_text(pugi::xml_node n, std::string& o) {
  // type and mode in one pass over the attributes (most text constructs have none).
  atype.clear();
  scratch.clear();
  for (pugi::xml_attribute a = n.first_attribute(); a; a = a.next_attribute()) {
    const char* name = a.name();
    if (std::strcmp(name, "type") == 0) {
      decode_entities(a.value(), atype, st);
      trim(atype);
    } else if (std::strcmp(name, "mode") == 0) {
      decode_entities(a.value(), scratch, st);
      trim(scratch);
    }
  }
  const std::string& type = atype;
  const bool base64 = scratch == "base64";
  if (type == "xhtml" || scratch == "xml" || type == "application/xhtml+xml") {
    o.clear();
    pugi::xml_node div;
    for (pugi::xml_node c = n.first_child(); c; c = c.next_sibling()) {
      if (c.type() == pugi::node_element) {
        std::string_view l;
        resolve(c, &l);
        if (l == "div" && !div) {
          div = c;
          continue;
        }
        div = pugi::xml_node();
        break;
      }
    }
    append_children_raw(div ? div : n, o);
    trim(o);
    resolve_markup(o);
    return;
  }
  if (type.ends_with("+xml") || type.ends_with("/xml")) {  // XML content: kept as XML
    o.clear();
    append_children_raw(n, o);
    trim(o);
    return;
  }
  text(n, o);
  // Binary media types arrive base64-encoded (RFC 4287 section 4.1.3.3); other types are text.
  const bool binary = type.starts_with("image/") || type.starts_with("audio/") ||
                      type.starts_with("video/") || type == "application/octet-stream";
  if (base64 || binary) {
    scratch.clear();
    if (base::decode_base64_lenient(o, scratch)) {
      o.swap(scratch);
    } else {
      note(st, recovery::bad_base64);
    }
  }
  // HTML: Atom 1.0's "html"; Atom 0.3 names the media type ("text/html", escaped or base64).
  if (type == "html" || type == "text/html") resolve_markup(o);
}

void parser::impl::atom_person(pugi::xml_node n, std::vector<person>& v) {
  person& p = v.emplace_back();
  for (pugi::xml_node c = n.first_child(); c; c = c.next_sibling()) {
    if (c.type() != pugi::node_element) continue;
    std::string_view l;
    resolve(c, &l);
    if (l == "name") {
      text(c, p.name);
    } else if (l == "email") {
      text(c, p.email);
    } else if (l == "uri" || l == "url" || l == "homepage") {
      text(c, scratch);
      p.uri.clear();
      resolve_url(base(), scratch, p.uri);
    }
  }
  if (p.name.empty() && p.email.empty() && p.uri.empty()) v.pop_back();
}

// The human-readable label when there is one, else the term.
void parser::impl::atom_category(pugi::xml_node n, std::vector<std::string>& v) {
  attr(n, "label", scratch);
  if (scratch.empty()) attr(n, "term", scratch);
  if (!scratch.empty()) v.push_back(scratch);
}

void parser::impl::itunes_categories(pugi::xml_node n, std::vector<std::string>& v) {
  attr(n, "text", scratch);
  if (!scratch.empty()) v.push_back(scratch);
  for (pugi::xml_node c = n.first_child(); c; c = c.next_sibling()) {
    std::string_view l;
    if (c.type() == pugi::node_element && resolve(c, &l) == ns::itunes && l == "category") {
      attr(c, "text", scratch);
      if (!scratch.empty()) v.push_back(scratch);
    }
  }
}

void parser::impl::keywords(pugi::xml_node n, std::vector<std::string>& v) {
  text(n, scratch);
  std::string_view rest = scratch;
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    const std::string_view k = base::ascii_trim(rest.substr(0, comma));
    if (!k.empty()) v.emplace_back(k);
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
}

void parser::impl::person_text(pugi::xml_node n, std::vector<person>& v) {
  text(n, scratch);
  if (!scratch.empty()) detail::parse_person(scratch, v.emplace_back());
}

// Relative URLs inside HTML resolved against the base in effect (xml:base of the element,
// then of its entry, then of the feed, else the document's URL), as feedparser and gofeed
// do, so the markup reads the same anywhere. Here, at ingestion, and not where the reflector
// sanitizes: only the parser knows xml:base, it runs once per article where rendering runs
// once per served feed, and the store, matcher and previews then all hold absolute URLs.
// HTML without a relative URL is left as it is (resolve_html_urls writes nothing then).
void parser::impl::resolve_markup(std::string& html) {
  const std::string_view b = base();
  if (b.empty() || html.find('<') == std::string::npos) return;
  if (resolve_html_urls(html, b, scratch)) html.swap(scratch);
}

void parser::impl::atom_link(pugi::xml_node n, std::string* alternate, entry* e, bool feed_level) {
  attr(n, "rel", scratch);
  std::string_view rel = scratch;
  if (rel.starts_with("http://www.iana.org/assignments/relation/"))
    rel.remove_prefix(std::strlen("http://www.iana.org/assignments/relation/"));
  attr(n, "href", scratch2);
  if (scratch2.empty()) return;
  // Resolved straight into its destination: no temporary string per link.
  if (rel.empty() || rel == "alternate") {
    if (alternate != nullptr && alternate->empty()) resolve_url(base(), scratch2, *alternate);
  } else if (feed_level && rel == "self") {
    if (out->self_link.empty()) resolve_url(base(), scratch2, out->self_link);
  } else if (feed_level && rel == "hub") {
    resolve_url(base(), scratch2, out->hub_links.emplace_back());
  } else if (e != nullptr && rel == "enclosure") {
    enclosure& enc = e->enclosures.emplace_back();
    resolve_url(base(), scratch2, enc.url);
    attr(n, "type", enc.type);
    attr(n, "length", scratch);
    enc.length = 0;
    for (char ch : scratch) {
      if (ch < '0' || ch > '9' || enc.length > (INT64_MAX - 9) / 10) break;
      enc.length = enc.length * 10 + (ch - '0');
    }
  }
}

void parser::impl::atom_feed(pugi::xml_node root, bool atom03) {
  pugi::xml_node sy_period, sy_frequency;
  for (pugi::xml_node c = root.first_child(); c; c = c.next_sibling()) {
    if (c.type() != pugi::node_element) continue;
    const mark cm = enter(c);
    std::string_view l;
    const ns n = resolve(c, &l);
    if (atom_core(n)) {
      if (l == "entry") {
        if (room()) atom_entry(c, atom03);
      } else if (l == "title") {
        atom_text(c, out->title);
      } else if (l == "link") {
        atom_link(c, &out->link, nullptr, true);
      } else if (l == "subtitle" || l == "tagline") {
        atom_text(c, out->description);
      } else if (l == "updated" || l == "modified") {
        date(c, &out->updated, &out->has_updated);
      } else if (l == "published" || l == "issued") {
        date(c, &out->published, &out->has_published);
      } else if (l == "author") {
        atom_person(c, out->authors);
      } else if (l == "category") {
        atom_category(c, out->categories);
      }
    } else if (n == ns::sy) {
      if (l == "updatePeriod") sy_period = c;
      if (l == "updateFrequency") sy_frequency = c;
    }
    leave(cm);
  }
  update_period(sy_period, sy_frequency);
  if (out->language.empty()) attr(root, "xml:lang", out->language);
}

void parser::impl::atom_entry(pugi::xml_node en, bool atom03) {
  const mark m = enter(en);
  entry& e = pool.add(*out);
  (void)atom03;
  for (pugi::xml_node c = en.first_child(); c; c = c.next_sibling()) {
    if (c.type() != pugi::node_element) continue;
    const mark cm = enter(c);
    std::string_view l;
    const ns n = resolve(c, &l);
    if (atom_core(n)) {
      if (l == "id") {
        text(c, e.id);
        if (!e.id.empty() && !has_scheme(e.id) && !base().empty()) {
          scratch.clear();
          resolve_url(base(), e.id, scratch);
          e.id.swap(scratch);
        }
      } else if (l == "title") {
        atom_text(c, e.title);
      } else if (l == "link") {
        atom_link(c, &e.link, &e, false);
      } else if (l == "summary") {
        atom_text(c, e.summary);
      } else if (l == "content") {
        atom_text(c, e.content);
        if (e.content.empty()) {
          // out-of-line content: keep its src as the link when nothing better exists
          link_attr(c, "src", scratch);
          if (e.link.empty()) e.link = scratch;
        }
      } else if (l == "published" || l == "issued" || (l == "created" && !e.has_published)) {
        date(c, &e.published, &e.has_published);
      } else if (l == "updated" || l == "modified") {
        date(c, &e.updated, &e.has_updated);
      } else if (l == "author") {
        atom_person(c, e.authors);
      } else if (l == "category") {
        atom_category(c, e.categories);
      }
    } else if (n == ns::dc && l == "subject") {
      text(c, scratch);
      if (!scratch.empty()) e.categories.push_back(scratch);
    }
    leave(cm);
  }
  leave(m);
}

// ---------------------------------------------------------------------------------------
// JSON Feed 1.0 / 1.1
//
// On-Demand: simdjson indexes the document's structurals and we walk them once, in order,
// so no tape is built. On-Demand checks only what is read, and a DOM parse refused every
// malformed document: so every value is read, the ones we do not use by skip_value(), and
// a field's first occurrence wins (as the DOM's lookup did).

namespace {

namespace od = simdjson::ondemand;
using simdjson::error_code;
using simdjson::SUCCESS;

// The DOM parser's depth limit: a non-empty container at this depth was refused.
constexpr size_t k_json_max_depth = simdjson::DEFAULT_MAX_DEPTH;

// Reads (and so validates) v and everything in it; depth is v's own.
error_code skip_value(od::value v, size_t depth) {  // NOLINT(misc-no-recursion)
  od::json_type t{};
  if (error_code e = v.type().get(t)) return e;
  switch (t) {
    case od::json_type::array: {
      od::array a;
      if (error_code e = v.get_array().get(a)) return e;
      for (auto el : a) {
        od::value x;
        if (error_code e = el.get(x)) return e;
        if (depth >= k_json_max_depth) return simdjson::DEPTH_ERROR;
        if (error_code e2 = skip_value(x, depth + 1)) return e2;
      }
      return SUCCESS;
    }
    case od::json_type::object: {
      od::object o;
      if (error_code e = v.get_object().get(o)) return e;
      for (auto f : o) {
        od::field fl;
        if (error_code e = std::move(f).get(fl)) return e;
        std::string_view k;
        if (error_code e = fl.unescaped_key().get(k)) return e;
        if (depth >= k_json_max_depth) return simdjson::DEPTH_ERROR;
        if (error_code e2 = skip_value(fl.value(), depth + 1)) return e2;
      }
      return SUCCESS;
    }
    case od::json_type::string: {
      std::string_view s;
      return v.get_string().get(s);
    }
    case od::json_type::number: {
      od::number n;
      return v.get_number().get(n);
    }
    case od::json_type::boolean: {
      bool b = false;
      return v.get_bool().get(b);
    }
    case od::json_type::null: {
      bool n = false;
      if (error_code e = v.is_null().get(n)) return e;
      return n ? SUCCESS : simdjson::N_ATOM_ERROR;
    }
  }
  return simdjson::TAPE_ERROR;
}

// A string value into s (got set), anything else read and dropped.
error_code take_str(od::value v, size_t depth, std::string_view& s, bool& got) {
  od::json_type t{};
  if (error_code e = v.type().get(t)) return e;
  if (t != od::json_type::string) return skip_value(v, depth);
  // `got` only once s holds the string: on an error s is left unspecified.
  if (error_code e = v.get_string().get(s)) return e;
  got = true;
  return SUCCESS;
}

// A field's value: a string into slot (first occurrence wins), anything else skipped.
struct str_field {
  std::string_view v;
  bool seen = false;  // the key occurred (its first value decides)
  bool got = false;   // ... and was a string
  error_code read(od::value x, size_t depth) {
    if (seen) return skip_value(x, depth);
    seen = true;
    return take_str(x, depth, v, got);
  }
  void trimmed_into(std::string& o) const {
    if (got) o.assign(base::ascii_trim(v));
  }
};

// An integer (as the DOM's get_int64 read it) into n/got; anything else read and dropped.
error_code take_int64(od::value v, size_t depth, int64_t& n, bool& got) {
  od::json_type t{};
  if (error_code e = v.type().get(t)) return e;
  if (t != od::json_type::number) return skip_value(v, depth);
  od::number num;
  if (error_code e = v.get_number().get(num)) return e;
  if (num.is_int64()) {
    n = num.get_int64();
    got = true;
  }
  return SUCCESS;
}

// An author object: name and url, trimmed; one with neither is dropped. depth is a's.
error_code json_person(od::value a, size_t depth, std::vector<person>& v) {
  od::json_type t{};
  if (error_code e = a.type().get(t)) return e;
  if (t != od::json_type::object) return skip_value(a, depth);
  od::object o;
  if (error_code e = a.get_object().get(o)) return e;
  str_field name, url;
  for (auto f : o) {
    od::field fl;
    if (error_code e = std::move(f).get(fl)) return e;
    std::string_view k;
    if (error_code e = fl.unescaped_key().get(k)) return e;
    if (depth >= k_json_max_depth) return simdjson::DEPTH_ERROR;
    error_code e2 = k == "name"  ? name.read(fl.value(), depth + 1)
                    : k == "url" ? url.read(fl.value(), depth + 1)
                                 : skip_value(fl.value(), depth + 1);
    if (e2) return e2;
  }
  person& p = v.emplace_back();
  name.trimmed_into(p.name);
  url.trimmed_into(p.uri);
  if (p.name.empty() && p.uri.empty()) v.pop_back();
  return SUCCESS;
}

// "authors" (an array, first occurrence) wins over "author" (first occurrence), as before:
// the array's people go straight into out; a lone author is held until the object ends.
struct authors_field {
  bool seen_array_key = false;  // "authors" occurred
  bool is_array = false;        // ... and its first value was an array
  bool seen_single = false;     // "author" occurred
  std::vector<person> single;   // its person, if any
  error_code read_array(od::value x, size_t depth, std::vector<person>& out) {
    od::json_type t{};
    if (error_code e = x.type().get(t)) return e;
    if (seen_array_key || t != od::json_type::array) {
      seen_array_key = true;
      return skip_value(x, depth);
    }
    seen_array_key = is_array = true;
    od::array a;
    if (error_code e = x.get_array().get(a)) return e;
    for (auto el : a) {
      od::value y;
      if (error_code e = el.get(y)) return e;
      if (depth >= k_json_max_depth) return simdjson::DEPTH_ERROR;
      if (error_code e2 = json_person(y, depth + 1, out)) return e2;
    }
    return SUCCESS;
  }
  error_code read_single(od::value x, size_t depth) {
    if (seen_single) return skip_value(x, depth);
    seen_single = true;
    return json_person(x, depth, single);
  }
  void finish(std::vector<person>& out) {
    if (!is_array && !single.empty()) out.push_back(std::move(single.front()));
  }
};

// The elements of array value x, each passed to fn(value, depth); a non-array is skipped.
template <typename Fn>
error_code each_element(od::value x, size_t depth, bool& was_array, Fn&& fn) {
  od::json_type t{};
  if (error_code e = x.type().get(t)) return e;
  if (t != od::json_type::array) return skip_value(x, depth);
  was_array = true;
  od::array a;
  if (error_code e = x.get_array().get(a)) return e;
  for (auto el : a) {
    od::value y;
    if (error_code e = el.get(y)) return e;
    if (depth >= k_json_max_depth) return simdjson::DEPTH_ERROR;
    if (error_code e2 = fn(y, depth + 1)) return e2;
  }
  return SUCCESS;
}

// Calls fn(key, value, depth of value) for each field of object value x (depth is x's).
template <typename Fn>
error_code each_field(od::object o, size_t depth, Fn&& fn) {
  for (auto f : o) {
    od::field fl;
    if (error_code e = std::move(f).get(fl)) return e;
    std::string_view k;
    if (error_code e = fl.unescaped_key().get(k)) return e;
    if (depth >= k_json_max_depth) return simdjson::DEPTH_ERROR;
    if (error_code e2 = fn(k, fl.value(), depth + 1)) return e2;
  }
  return SUCCESS;
}

// Above this, the parser's buffers (about 6x the document) are given back after the parse.
constexpr size_t k_json_keep_capacity = size_t{1} << 20;

}  // namespace

parse_errc parser::impl::parse_json(size_t first) {
  // simdjson reads up to SIMDJSON_PADDING bytes past the end: the padding goes on the UTF-8
  // buffer itself, so no second copy of the document exists while simdjson's index (4 bytes
  // a byte) and string buffer are alive. When the buffer has no room, growing it copies once,
  // and the old buffer is freed before simdjson allocates: the peak stays lower either way.
  const size_t end = utf8.size();
  utf8.resize(end + simdjson::SIMDJSON_PADDING, '\0');
  const parse_errc rc = walk_json(utf8.data() + first, end - first, utf8.size() - first);
  utf8.resize(end);
  if (json.capacity() > k_json_keep_capacity) {
    // One big feed does not pin its buffers: back to nothing, reallocated on demand.
    json = simdjson::ondemand::parser();
  }
  return rc;
}

parse_errc parser::impl::walk_json(const char* text, size_t len, size_t cap) {
  od::document jdoc;
  if (json.iterate(text, len, cap).get(jdoc) != SUCCESS) return parse_errc::json_invalid;
  // On-Demand does not look past the root value: it must end where the document does.
  std::string_view raw;
  if (jdoc.raw_json().get(raw) != SUCCESS || raw.data() + raw.size() != text + len)
    return parse_errc::json_invalid;
  jdoc.rewind();
  od::object root;
  if (jdoc.get_object().get(root) != SUCCESS) return parse_errc::json_invalid;

  // A JSON Feed names its version URL; some omit it or send only "1.1": an object with an
  // items array is read as one too. Root fields are held until the object ends, when that
  // is known; items go into the feed as they are read.
  str_field version, title, home, feed_url, description, language;
  bool hubs_seen = false, hubs_array = false, items_seen = false, items_array = false;
  authors_field authors;
  const size_t hubs_before = out->hub_links.size();
  const error_code e = each_field(root, 1, [&](std::string_view k, od::value v, size_t d) {
    if (k == "version") return version.read(v, d);
    if (k == "title") return title.read(v, d);
    if (k == "home_page_url") return home.read(v, d);
    if (k == "feed_url") return feed_url.read(v, d);
    if (k == "description") return description.read(v, d);
    if (k == "language") return language.read(v, d);
    if (k == "authors") return authors.read_array(v, d, out->authors);
    if (k == "author") return authors.read_single(v, d);
    if (k == "hubs" && !hubs_seen) {
      hubs_seen = true;
      return each_element(v, d, hubs_array,
                          [&](od::value h, size_t hd) { return read_hub(h, hd); });
    }
    if (k == "items" && !items_seen) {
      items_seen = true;
      return each_element(v, d, items_array,
                          [&](od::value item, size_t id) { return read_item(item, id); });
    }
    return skip_value(v, d);
  });
  if (e != SUCCESS) return parse_errc::json_invalid;
  std::string_view ver = version.got ? version.v : std::string_view();
  if (version.got && ver.find("jsonfeed.org/version/") != std::string_view::npos) {
    ver.remove_prefix(ver.find("jsonfeed.org/version/") + 21);
  } else if (!items_array) {
    out->authors.clear();
    out->hub_links.resize(hubs_before);
    return parse_errc::unknown_format;
  }
  out->format = feed_format::json;
  out->version.assign(ver.empty() ? std::string_view("1.0") : ver);
  title.trimmed_into(out->title);
  if (home.got) resolve_url(opts->base_url, home.v, out->link);
  if (feed_url.got) resolve_url(opts->base_url, feed_url.v, out->self_link);
  description.trimmed_into(out->description);
  language.trimmed_into(out->language);
  authors.finish(out->authors);
  return parse_errc::ok;
}

error_code parser::impl::read_hub(od::value h, size_t depth) {
  od::json_type t{};
  if (error_code e = h.type().get(t)) return e;
  if (t != od::json_type::object) return skip_value(h, depth);
  od::object o;
  if (error_code e = h.get_object().get(o)) return e;
  str_field url;
  if (error_code e = each_field(o, depth, [&](std::string_view k, od::value v, size_t d) {
        return k == "url" ? url.read(v, d) : skip_value(v, d);
      }))
    return e;
  if (url.got) resolve_url(opts->base_url, url.v, out->hub_links.emplace_back());
  return SUCCESS;
}

error_code parser::impl::read_attachment(od::value a, size_t depth, entry& e) {
  od::json_type t{};
  if (error_code err = a.type().get(t)) return err;
  if (t != od::json_type::object) return skip_value(a, depth);
  od::object o;
  if (error_code err = a.get_object().get(o)) return err;
  str_field url, mime;
  bool size_seen = false, size_got = false;
  int64_t n = 0;
  if (error_code err = each_field(o, depth, [&](std::string_view k, od::value v, size_t d) {
        if (k == "url") return url.read(v, d);
        if (k == "mime_type") return mime.read(v, d);
        if (k == "size_in_bytes" && !size_seen) {
          size_seen = true;
          return take_int64(v, d, n, size_got);
        }
        return skip_value(v, d);
      }))
    return err;
  if (!url.got) return SUCCESS;
  enclosure& enc = e.enclosures.emplace_back();
  resolve_url(opts->base_url, url.v, enc.url);
  mime.trimmed_into(enc.type);
  if (size_got && n > 0) enc.length = n;
  return SUCCESS;
}

error_code parser::impl::read_item(od::value item, size_t depth) {
  od::json_type t{};
  if (error_code err = item.type().get(t)) return err;
  if (t != od::json_type::object) return skip_value(item, depth);
  if (!room()) return skip_value(item, depth);  // counted, not kept
  entry& e = pool.add(*out);
  od::object o;
  if (error_code err = item.get_object().get(o)) return err;
  str_field id, title, url, external_url, summary, content_html, content_text, published, modified;
  bool id_int = false, tags_seen = false, tags_array = false, att_seen = false, att_array = false;
  int64_t id_n = 0;
  authors_field authors;
  const error_code err = each_field(o, depth, [&](std::string_view k, od::value v, size_t d) {
    if (k == "id") {
      if (id.seen) return skip_value(v, d);
      od::json_type vt{};
      if (error_code e2 = v.type().get(vt)) return e2;
      if (vt != od::json_type::number) return id.read(v, d);
      id.seen = true;
      return take_int64(v, d, id_n, id_int);  // 1.0 feeds sometimes send numbers
    }
    if (k == "title") return title.read(v, d);
    if (k == "url") return url.read(v, d);
    if (k == "external_url") return external_url.read(v, d);
    if (k == "summary") return summary.read(v, d);
    if (k == "content_html") return content_html.read(v, d);
    if (k == "content_text") return content_text.read(v, d);
    if (k == "date_published") return published.read(v, d);
    if (k == "date_modified") return modified.read(v, d);
    if (k == "authors") return authors.read_array(v, d, e.authors);
    if (k == "author") return authors.read_single(v, d);
    if (k == "tags" && !tags_seen) {
      tags_seen = true;
      return each_element(v, d, tags_array, [&](od::value tag, size_t td) {
        std::string_view s;
        bool got = false;
        if (error_code e2 = take_str(tag, td, s, got)) return e2;
        if (got) e.categories.emplace_back(s);
        return SUCCESS;
      });
    }
    if (k == "attachments" && !att_seen) {
      att_seen = true;
      return each_element(v, d, att_array,
                          [&](od::value a, size_t ad) { return read_attachment(a, ad, e); });
    }
    return skip_value(v, d);
  });
  if (err != SUCCESS) return err;
  id.trimmed_into(e.id);
  if (id_int) e.id = std::to_string(id_n);
  title.trimmed_into(e.title);
  if (url.got) {
    resolve_url(opts->base_url, url.v, e.link);
  } else if (external_url.got) {
    resolve_url(opts->base_url, external_url.v, e.link);
  }
  summary.trimmed_into(e.summary);
  content_html.trimmed_into(e.content);
  if (e.content.empty()) {
    content_text.trimmed_into(e.content);  // plain text: no markup to resolve
  } else {
    resolve_markup(e.content);  // against the document's URL: JSON has no xml:base
  }
  if (published.got) {
    if (parse_date(published.v, &e.published)) {
      e.has_published = true;
    } else {
      note(st, recovery::unparsed_date);
    }
  }
  if (modified.got) {
    if (parse_date(modified.v, &e.updated)) {
      e.has_updated = true;
    } else {
      note(st, recovery::unparsed_date);
    }
  }
  authors.finish(e.authors);
  return SUCCESS;
}

}  // namespace feedplane::feed
