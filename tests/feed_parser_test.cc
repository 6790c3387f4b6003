// The feed parser on hand-written documents: every format, encodings, dates, links,
// entities and each named recovery; unreadable documents give named errors.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "feedplane/feed/dedup.h"
#include "feedplane/feed/parser.h"
#include "feedplane/feed/render.h"
#include "feedplane/feed/text.h"

using namespace feedplane::feed;

namespace {

std::string date(std::string_view s) {
  int64_t t;
  if (!parse_date(s, &t)) return "absent";
  char buf[32];
  format_rfc3339(t, buf);
  return buf;
}

std::string decode(std::string_view s, uint32_t* flags = nullptr) {
  std::string out;
  decode_stats st;
  decode_entities(s, out, st);
  if (flags) *flags = st.flags;
  return out;
}

struct parsed {
  parse_errc rc;
  feed f;
};

parsed parse(std::string_view doc, std::string_view content_type = {}, std::string_view base = {}) {
  static parser p;  // one parser reused across documents, as in production
  parsed r;
  parse_options o;
  o.content_type = content_type;
  o.base_url = base;
  r.rc = p.parse(doc, o, r.f);
  return r;
}

// A file of the shared corpus (../shared/corpus, read in place), or empty when the corpus is
// absent (the test then skips).
std::string corpus_file(const std::string& rel) {
  const char* dir = std::getenv("FEEDPLANE_CORPUS_DIR");
  if (dir == nullptr || *dir == '\0') return {};
  std::ifstream in(std::filesystem::path(dir) / rel, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

std::string rss_item(std::string_view inner) {
  return "<rss version=\"2.0\"><channel><title>T</title><item>" + std::string(inner) +
         "</item></channel></rss>";
}

}  // namespace

TEST(feed_date, rfc822_and_variants) {
  EXPECT_EQ(date("Thu, 01 Jan 2004 19:48:21 GMT"), "2004-01-01T19:48:21Z");
  EXPECT_EQ(date("Thu, 01 Jan 2004 19:48:21 +0100"), "2004-01-01T18:48:21Z");
  EXPECT_EQ(date("Thu, 1 Jan 2004 19:48 EST"), "2004-01-02T00:48:00Z");
  EXPECT_EQ(date("01 Jan 04 19:48:21 PDT"), "2004-01-02T02:48:21Z");
  EXPECT_EQ(date("Sun Jan 4 16:29:06 PST 2004"), "2004-01-05T00:29:06Z");
  EXPECT_EQ(date("Thursday, January 1, 2004 7:48 PM"), "2004-01-01T19:48:00Z");
  EXPECT_EQ(date("Thu, 01 Jan 2004 19:48:21 -05:00"), "2004-01-02T00:48:21Z");
  EXPECT_EQ(date("mer, 16 nov 2022 00:38:15 +0100"), "2022-11-15T23:38:15Z");
  EXPECT_EQ(date("Thu, 01 Jan 2004 19:48:21"), "2004-01-01T19:48:21Z");  // no zone: UTC
  EXPECT_EQ(date("1 January 2004"), "2004-01-01T00:00:00Z");
}

TEST(feed_date, rfc3339_and_iso) {
  EXPECT_EQ(date("2004-01-01T19:48:21Z"), "2004-01-01T19:48:21Z");
  EXPECT_EQ(date("2004-01-01T19:48:21.123456+02:00"), "2004-01-01T17:48:21Z");
  EXPECT_EQ(date("2004-01-01 19:48:21"), "2004-01-01T19:48:21Z");
  EXPECT_EQ(date("2004-01-01"), "2004-01-01T00:00:00Z");
  EXPECT_EQ(date("2004-01-01T19:48Z"), "2004-01-01T19:48:00Z");
  EXPECT_EQ(date("2004-01-01T19:48:21-0800"), "2004-01-02T03:48:21Z");
  EXPECT_EQ(date("2024-02-29T00:00:00Z"), "2024-02-29T00:00:00Z");
  EXPECT_EQ(date("1969-12-31T23:59:59Z"), "1969-12-31T23:59:59Z");
}

TEST(feed_date, unreadable_is_absent_never_wrong) {
  for (const char* bad :
       {"", "yesterday", "2004-13-01T00:00:00Z", "2023-02-29", "Thu, 32 Jan 2004 10:00:00 GMT",
        "Thu, 01 Foo 2004 19:48:21 GMT", "2004-01-01T25:00:00Z", "12/11/2004",
        "Thu, 01 Jan 2004 19:48:21 XYZ", "2004-01-01T10:00:00Zjunk", "01 02 03", "Jan 2004",
        "99999999999999999999"}) {
    EXPECT_EQ(date(bad), "absent") << bad;
  }
}

TEST(feed_entities, xml_html_numeric_and_bare) {
  uint32_t fl = 0;
  EXPECT_EQ(decode("a &amp; b &lt;c&gt; &quot;&apos;", &fl), "a & b <c> \"'");
  EXPECT_EQ(fl, 0u);
  EXPECT_EQ(decode("caf&eacute; &nbsp;x", &fl), "caf\xc3\xa9 \xc2\xa0x");
  EXPECT_TRUE(fl & static_cast<uint32_t>(recovery::html_entity));
  EXPECT_EQ(decode("&#233;&#xE9;&#X1F600;"), "\xc3\xa9\xc3\xa9\xf0\x9f\x98\x80");
  EXPECT_EQ(decode("&#150;"), "\xe2\x80\x93");  // C1 read as windows-1252, as HTML does
  EXPECT_EQ(decode("&#0;&#xD800;&#x110000;"), "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");
  EXPECT_EQ(decode("Fish & Chips", &fl), "Fish & Chips");
  EXPECT_TRUE(fl & static_cast<uint32_t>(recovery::bare_ampersand));
  EXPECT_EQ(decode("?page=1&copy=2 &amp; done"), "?page=1&copy=2 & done");
  EXPECT_EQ(decode("&bogus; &", &fl), "&bogus; &");
  EXPECT_TRUE(fl & static_cast<uint32_t>(recovery::undefined_entity));
}

TEST(feed_parse, rss20_full_item) {
  const auto r = parse(
      "<?xml version=\"1.0\"?><rss version=\"2.0\" "
      "xmlns:content=\"http://purl.org/rss/1.0/modules/content/\" "
      "xmlns:atom=\"http://www.w3.org/2005/Atom\"><channel><title>Feed &amp; Co</title>"
      "<link>https://example.org/</link><atom:link rel=\"self\" href=\"https://example.org/rss\"/>"
      "<atom:link rel=\"hub\" href=\"https://hub.example/\"/>"
      "<item><title>Hello <![CDATA[<b>World</b>]]></title><link>/posts/1</link>"
      "<guid isPermaLink=\"false\">id-1</guid><pubDate>Tue, 10 Jun 2003 04:00:00 GMT</pubDate>"
      "<description>Sum &lt;i&gt;mary&lt;/i&gt;</description>"
      "<content:encoded><![CDATA[<p>Body <a href=\"rel.html\">x</a></p>]]></content:encoded>"
      "<author>jo@example.org (Jo)</author><category>news</category>"
      "<enclosure url=\"ep.mp3\" type=\"audio/mpeg\" length=\"1234\"/></item></channel></rss>",
      {}, "https://example.org/feed/");
  ASSERT_EQ(r.rc, parse_errc::ok);
  const feed& f = r.f;
  EXPECT_EQ(f.format, feed_format::rss);
  EXPECT_EQ(f.version, "2.0");
  EXPECT_EQ(f.title, "Feed & Co");
  EXPECT_EQ(f.link, "https://example.org/");
  EXPECT_EQ(f.self_link, "https://example.org/rss");
  ASSERT_EQ(f.hub_links.size(), 1u);
  ASSERT_EQ(f.entries.size(), 1u);
  const entry& e = f.entries[0];
  EXPECT_EQ(e.title, "Hello <b>World</b>");
  EXPECT_EQ(e.link, "https://example.org/posts/1");
  EXPECT_EQ(e.id, "id-1");
  EXPECT_FALSE(e.id_is_permalink);
  EXPECT_TRUE(e.has_published);
  EXPECT_EQ(e.summary, "Sum <i>mary</i>");
  EXPECT_EQ(e.content, "<p>Body <a href=\"https://example.org/feed/rel.html\">x</a></p>");
  ASSERT_EQ(e.authors.size(), 1u);
  EXPECT_EQ(e.authors[0].name, "Jo");
  EXPECT_EQ(e.authors[0].email, "jo@example.org");
  ASSERT_EQ(e.categories.size(), 1u);
  ASSERT_EQ(e.enclosures.size(), 1u);
  EXPECT_EQ(e.enclosures[0].url, "https://example.org/feed/ep.mp3");
  EXPECT_EQ(e.enclosures[0].length, 1234);
  EXPECT_EQ(f.recovered, 0u);
}

TEST(feed_parse, rdf_and_rss09x) {
  const auto r = parse(
      "<rdf:RDF xmlns:rdf=\"http://www.w3.org/1999/02/22-rdf-syntax-ns#\" "
      "xmlns=\"http://purl.org/rss/1.0/\" xmlns:dc=\"http://purl.org/dc/elements/1.1/\">"
      "<channel rdf:about=\"x\"><title>R</title><link>http://r.example/</link></channel>"
      "<item rdf:about=\"http://r.example/1\"><title>one</title>"
      "<dc:date>2004-01-01T00:00:00Z</dc:date></item>"
      "<item rdf:about=\"http://r.example/2\"><title>two</title><link>http://r.example/2b</link>"
      "</item></rdf:RDF>");
  ASSERT_EQ(r.rc, parse_errc::ok);
  EXPECT_EQ(r.f.version, "1.0");
  ASSERT_EQ(r.f.entries.size(), 2u);
  EXPECT_EQ(r.f.entries[0].link, "http://r.example/1");
  EXPECT_TRUE(r.f.entries[0].has_published);
  EXPECT_EQ(r.f.entries[1].link, "http://r.example/2b");
  const auto r91 = parse(
      "<rss version=\"0.91\"><channel><title>Old</title><item><title>a</title></item>"
      "</channel></rss>");
  ASSERT_EQ(r91.rc, parse_errc::ok);
  EXPECT_EQ(r91.f.version, "0.91");
  EXPECT_EQ(r91.f.entries.size(), 1u);
}

TEST(feed_parse, atom10_with_xml_base_and_text_constructs) {
  const auto r = parse(
      "<feed xmlns=\"http://www.w3.org/2005/Atom\" xml:base=\"http://ex.org/blog/\">"
      "<title type=\"html\">A &amp;lt;b&amp;gt;</title><link href=\"./\"/>"
      "<link rel=\"self\" href=\"atom.xml\"/><updated>2005-07-31T12:29:29Z</updated>"
      "<entry xml:base=\"2005/\"><id>tag:ex.org,2005:1</id><title>E</title>"
      "<link rel=\"alternate\" href=\"post.html\"/>"
      "<link rel=\"enclosure\" href=\"a.mp3\" type=\"audio/mpeg\" length=\"10\"/>"
      "<published>2005-07-31T12:29:29+02:00</published><updated>2005-08-01T00:00:00Z</updated>"
      "<author><name>Mark</name><email>m@ex.org</email></author>"
      "<summary type=\"text\">plain</summary>"
      "<content type=\"xhtml\"><div xmlns=\"http://www.w3.org/1999/xhtml\"><p>Hi "
      "<a href=\"x.html\">x</a> &amp; bye</p></div></content>"
      "<category term=\"t\" label=\"Label\"/></entry>"
      "<entry><title type=\"text\">B64</title><content type=\"image/png\">aGVsbG8=</content>"
      "</entry></feed>");
  ASSERT_EQ(r.rc, parse_errc::ok);
  const feed& f = r.f;
  EXPECT_EQ(f.format, feed_format::atom);
  EXPECT_EQ(f.version, "1.0");
  EXPECT_EQ(f.title, "A &lt;b&gt;");
  EXPECT_EQ(f.link, "http://ex.org/blog/");
  EXPECT_EQ(f.self_link, "http://ex.org/blog/atom.xml");
  EXPECT_TRUE(f.has_updated);
  ASSERT_EQ(f.entries.size(), 2u);
  const entry& e = f.entries[0];
  EXPECT_EQ(e.link, "http://ex.org/blog/2005/post.html");
  ASSERT_EQ(e.enclosures.size(), 1u);
  EXPECT_EQ(e.enclosures[0].url, "http://ex.org/blog/2005/a.mp3");
  EXPECT_EQ(date("2005-07-31T12:29:29+02:00"), "2005-07-31T10:29:29Z");
  EXPECT_EQ(e.published, 1122805769);
  EXPECT_EQ(e.content, "<p>Hi <a href=\"http://ex.org/blog/2005/x.html\">x</a> &amp; bye</p>");
  EXPECT_EQ(e.summary, "plain");
  ASSERT_EQ(e.categories.size(), 1u);
  EXPECT_EQ(e.categories[0], "Label");
  EXPECT_EQ(f.entries[1].content, "hello");
}

TEST(feed_parse, atom03) {
  const auto r = parse(
      "<feed version=\"0.3\" xmlns=\"http://purl.org/atom/ns#\"><title mode=\"escaped\">"
      "x &lt;b&gt;</title><entry><title>e</title><issued>2003-12-13T18:30:02Z</issued>"
      "<modified>2003-12-13T18:30:02Z</modified><content mode=\"base64\" "
      "type=\"text/html\">PGI+aGk8L2I+</content></entry></feed>");
  ASSERT_EQ(r.rc, parse_errc::ok);
  EXPECT_EQ(r.f.version, "0.3");
  EXPECT_EQ(r.f.title, "x <b>");
  ASSERT_EQ(r.f.entries.size(), 1u);
  EXPECT_TRUE(r.f.entries[0].has_published);
  EXPECT_TRUE(r.f.entries[0].has_updated);
  EXPECT_EQ(r.f.entries[0].content, "<b>hi</b>");
}

TEST(feed_parse, json_feed) {
  const auto r = parse(
      R"({"version":"https://jsonfeed.org/version/1.1","title":"J","home_page_url":"https://j.example/",
      "feed_url":"https://j.example/feed.json","hubs":[{"type":"WebSub","url":"/hub"},
      {"type":"WebSub","url":"https://hub.example/"}],"items":[{"id":"1","url":"/a","title":"A",
      "content_html":"<p>a</p>","summary":"s","date_published":"2020-01-02T03:04:05Z",
      "authors":[{"name":"N"}],"tags":["x"]},{"id":2,"content_text":"plain",
      "date_modified":"not a date"}]})",
      {}, "https://j.example/feed.json");
  ASSERT_EQ(r.rc, parse_errc::ok);
  EXPECT_EQ(r.f.format, feed_format::json);
  EXPECT_EQ(r.f.version, "1.1");
  ASSERT_EQ(r.f.entries.size(), 2u);
  EXPECT_EQ(r.f.entries[0].link, "https://j.example/a");
  // Hub URLs resolve against the feed's URL like every other link.
  EXPECT_EQ(r.f.hub_links,
            (std::vector<std::string>{"https://j.example/hub", "https://hub.example/"}));
  EXPECT_EQ(r.f.entries[0].content, "<p>a</p>");
  EXPECT_EQ(r.f.entries[1].id, "2");
  EXPECT_EQ(r.f.entries[1].content, "plain");
  EXPECT_FALSE(r.f.entries[1].has_updated);
  EXPECT_TRUE(r.f.was_recovered(recovery::unparsed_date));
}

TEST(feed_encoding, declared_single_byte_encodings) {
  // "café" in ISO-8859-1, declared in the XML declaration.
  const auto r = parse(
      "<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?><rss version=\"2.0\"><channel>"
      "<title>caf\xe9 \x93q\x94</title></channel></rss>");
  ASSERT_EQ(r.rc, parse_errc::ok);
  EXPECT_EQ(r.f.title, "caf\xc3\xa9 \xe2\x80\x9cq\xe2\x80\x9d");  // windows-1252 quotes
  EXPECT_EQ(r.f.recovered, 0u);
  // KOI8-R through iconv, named only by the HTTP charset.
  const auto k = parse(
      "<rss version=\"2.0\"><channel><title>\xf0\xd2\xc9\xd7\xc5\xd4</title>"
      "</channel></rss>",
      "application/rss+xml; charset=KOI8-R");
  ASSERT_EQ(k.rc, parse_errc::ok);
  EXPECT_EQ(k.f.title, "\xd0\x9f\xd1\x80\xd0\xb8\xd0\xb2\xd0\xb5\xd1\x82");  // Привет
}

TEST(feed_encoding, http_charset_beats_declaration_unless_bytes_say_utf8) {
  const std::string latin =
      "<?xml version=\"1.0\" encoding=\"utf-8\"?><rss version=\"2.0\">"
      "<channel><title>caf\xe9</title></channel></rss>";
  const auto r = parse(latin, "text/xml; charset=iso-8859-1");
  ASSERT_EQ(r.rc, parse_errc::ok);
  EXPECT_EQ(r.f.title, "caf\xc3\xa9");
  const std::string utf8 =
      "<?xml version=\"1.0\" encoding=\"utf-8\"?><rss version=\"2.0\">"
      "<channel><title>caf\xc3\xa9</title></channel></rss>";
  const auto u = parse(utf8, "text/xml; charset=iso-8859-1");
  EXPECT_EQ(u.f.title, "caf\xc3\xa9");
}

TEST(feed_encoding, utf16_with_and_without_bom) {
  const std::string ascii =
      "<rss version=\"2.0\"><channel><title>\xc3\xa9t\xc3\xa9</title>"
      "</channel></rss>";
  auto to16 = [&](bool le, bool bom) {
    std::string out;
    if (bom) out += le ? "\xff\xfe" : "\xfe\xff";
    std::string body = "<?xml version=\"1.0\" encoding=\"UTF-16\"?>" + ascii;
    for (size_t i = 0; i < body.size(); ++i) {
      uint32_t cp = static_cast<unsigned char>(body[i]);
      if (cp == 0xC3) cp = 0xC0 | (static_cast<unsigned char>(body[++i]) & 0x3F);
      const char hi = static_cast<char>(cp >> 8), lo = static_cast<char>(cp & 0xFF);
      out += le ? std::string{lo, hi} : std::string{hi, lo};
    }
    return out;
  };
  for (bool le : {true, false}) {
    for (bool bom : {true, false}) {
      const auto r = parse(to16(le, bom));
      ASSERT_EQ(r.rc, parse_errc::ok) << le << bom;
      EXPECT_EQ(r.f.title, "\xc3\xa9t\xc3\xa9") << le << bom;
    }
  }
}

TEST(feed_encoding, wrong_declared_encoding_and_invalid_bytes) {
  // Declared UTF-8, really windows-1252: no valid multi-byte sequence at all.
  const auto r = parse(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?><rss version=\"2.0\">"
      "<channel><title>na\xefve</title></channel></rss>");
  ASSERT_EQ(r.rc, parse_errc::ok);
  EXPECT_EQ(r.f.title, "na\xc3\xafve");
  EXPECT_TRUE(r.f.was_recovered(recovery::encoding_fallback));
  // Mostly UTF-8 with one broken byte: the byte becomes U+FFFD, the rest stays.
  const auto m =
      parse("<rss version=\"2.0\"><channel><title>\xc3\xa9 \xff</title></channel></rss>");
  EXPECT_EQ(m.f.title, "\xc3\xa9 \xef\xbf\xbd");
  EXPECT_TRUE(m.f.was_recovered(recovery::invalid_bytes_replaced));
  // A label nobody knows: read as UTF-8, flagged.
  const auto u = parse(
      "<?xml version=\"1.0\" encoding=\"x-martian\"?><rss version=\"2.0\">"
      "<channel><title>ok</title></channel></rss>");
  EXPECT_EQ(u.f.title, "ok");
  EXPECT_TRUE(u.f.was_recovered(recovery::encoding_fallback));
}

TEST(feed_recovery, control_characters_stripped) {
  const auto r =
      parse(rss_item(std::string("<title>a\x01\x02"
                                 "b\x0b"
                                 "c</title>")));
  ASSERT_EQ(r.rc, parse_errc::ok);
  EXPECT_EQ(r.f.entries[0].title, "abc");
  EXPECT_TRUE(r.f.was_recovered(recovery::control_chars_stripped));
  EXPECT_EQ(r.f.recovery_events, 3u);
}

TEST(feed_recovery, unclosed_tags_keep_the_item_structure) {
  const auto r = parse(
      "<rss version=\"2.0\"><channel><title>T</title>"
      "<item><title>one<br></title><description>a <p>para</description></item>"
      "<item><title>two</title><link>http://x/2</link></item></channel></rss>");
  ASSERT_EQ(r.rc, parse_errc::ok);
  EXPECT_TRUE(r.f.was_recovered(recovery::malformed_xml));
  ASSERT_EQ(r.f.entries.size(), 2u);
  EXPECT_EQ(r.f.entries[0].title, "one<br/>");
  EXPECT_EQ(r.f.entries[1].title, "two");
  EXPECT_EQ(r.f.entries[1].link, "http://x/2");
}

TEST(feed_recovery, truncated_document_keeps_complete_entries) {
  const auto r = parse(
      "<rss version=\"2.0\"><channel><title>T</title><item><title>one</title></item>"
      "<item><title>tw");
  ASSERT_EQ(r.rc, parse_errc::ok);
  EXPECT_TRUE(r.f.was_recovered(recovery::truncated));
  ASSERT_GE(r.f.entries.size(), 1u);
  EXPECT_EQ(r.f.entries[0].title, "one");
}

TEST(feed_recovery, html_entities_bare_ampersands_and_stray_lt) {
  const auto r = parse(rss_item("<title>AT&T &nbsp;&mdash; 1 < 2</title>"));
  ASSERT_EQ(r.rc, parse_errc::ok);
  EXPECT_EQ(r.f.entries[0].title, "AT&T \xc2\xa0\xe2\x80\x94 1 < 2");
  EXPECT_TRUE(r.f.was_recovered(recovery::bare_ampersand));
  EXPECT_TRUE(r.f.was_recovered(recovery::html_entity));
}

TEST(feed_recovery, leading_garbage_and_bom) {
  const auto r = parse(
      "\xef\xbb\xbf  junk<rss version=\"2.0\"><channel><title>x</title>"
      "</channel></rss>");
  ASSERT_EQ(r.rc, parse_errc::ok);
  EXPECT_EQ(r.f.title, "x");
  EXPECT_TRUE(r.f.was_recovered(recovery::leading_garbage));
}

TEST(feed_errors, named_errors_for_unreadable_documents) {
  EXPECT_EQ(parse("").rc, parse_errc::empty_document);
  EXPECT_EQ(parse("   \n").rc, parse_errc::empty_document);
  EXPECT_EQ(parse("hello world").rc, parse_errc::unknown_format);
  EXPECT_EQ(parse("<!DOCTYPE html><html><body><p>login<br></body></html>").rc,
            parse_errc::html_not_feed);
  EXPECT_EQ(parse("<note><to>x</to></note>").rc, parse_errc::unknown_format);
  EXPECT_EQ(parse("{\"version\": ").rc, parse_errc::json_invalid);
  EXPECT_EQ(parse("{\"a\": 1}").rc, parse_errc::unknown_format);
  // UTF-32LE with its BOM goes through iconv: "<a/>" is XML, but not a feed.
  const std::string utf32(
      "\xff\xfe\x00\x00<\x00\x00\x00"
      "a\x00\x00\x00/\x00\x00\x00>\x00\x00\x00",
      20);
  EXPECT_EQ(parse(utf32).rc, parse_errc::unknown_format);
  parser p;
  feed f;
  parse_options o;
  o.max_bytes = 10;
  EXPECT_EQ(p.parse("<rss version=\"2.0\"></rss>", o, f), parse_errc::too_large);
}

TEST(feed_errors, entity_expansion_and_deep_nesting_are_bounded) {
  // Billion laughs: internal entities are never expanded.
  std::string laughs = "<?xml version=\"1.0\"?><!DOCTYPE r [<!ENTITY a \"aaaaaaaaaa\">";
  for (int i = 1; i < 10; ++i)
    laughs += "<!ENTITY a" + std::to_string(i) + " \"&a" + (i > 1 ? std::to_string(i - 1) : "") +
              ";&a" + (i > 1 ? std::to_string(i - 1) : "") + ";\">";
  laughs += "]><rss version=\"2.0\"><channel><title>&a9;</title></channel></rss>";
  const auto r = parse(laughs);
  ASSERT_EQ(r.rc, parse_errc::ok);
  EXPECT_EQ(r.f.title, "&a9;");
  // 100k nested elements inside a description: no recursion blows the stack (with the tree
  // allowed the 6.4 MB this 300 KB document needs; by default it is too_complex).
  std::string deep = "<rss version=\"2.0\"><channel><item><description>";
  for (int i = 0; i < 100000; ++i) deep += "<b>";
  deep += "x</description></item></channel></rss>";
  EXPECT_EQ(parse(deep).rc, parse_errc::too_complex);
  parser p;
  feed f;
  parse_options unbounded;
  unbounded.max_tree_bytes = size_t{1} << 40;
  EXPECT_EQ(p.parse(deep, unbounded, f), parse_errc::ok);
  ASSERT_EQ(f.entries.size(), 1u);
}

TEST(feed_parse, parser_and_feed_reuse_leave_nothing_stale) {
  parser p;
  feed f;
  ASSERT_EQ(p.parse(rss_item("<title>a</title><guid>g</guid><category>c</category>"), {}, f),
            parse_errc::ok);
  ASSERT_EQ(p.parse("<feed xmlns=\"http://www.w3.org/2005/Atom\"><entry><title>b</title>"
                    "</entry><entry/></feed>",
                    {}, f),
            parse_errc::ok);
  ASSERT_EQ(f.entries.size(), 2u);
  EXPECT_EQ(f.title, "");
  EXPECT_EQ(f.entries[0].title, "b");
  EXPECT_EQ(f.entries[0].id, "");
  EXPECT_TRUE(f.entries[0].categories.empty());
  EXPECT_EQ(f.recovered, 0u);
}

TEST(feed_parse, max_entries_bounds_output) {
  std::string doc = "<rss version=\"2.0\"><channel>";
  for (int i = 0; i < 50; ++i) doc += "<item><title>t</title></item>";
  doc += "</channel></rss>";
  parser p;
  feed f;
  parse_options o;
  o.max_entries = 7;
  ASSERT_EQ(p.parse(doc, o, f), parse_errc::ok);
  EXPECT_EQ(f.entries.size(), 7u);
  // The cut is a named recovery with the number dropped, never silent.
  EXPECT_TRUE(f.was_recovered(recovery::entries_dropped));
  EXPECT_EQ(f.entries_dropped, 43u);
  std::string json;
  render_json(f, json);
  EXPECT_NE(json.find("\"recovered\":[\"entries_dropped\"]"), std::string::npos) << json;
  EXPECT_NE(json.find("\"entries_dropped\":43"), std::string::npos) << json;

  std::string atom = "<feed xmlns=\"http://www.w3.org/2005/Atom\"><title>a</title>";
  for (int i = 0; i < 9; ++i) atom += "<entry><id>" + std::to_string(i) + "</id></entry>";
  atom += "</feed>";
  ASSERT_EQ(p.parse(atom, o, f), parse_errc::ok);
  EXPECT_EQ(f.entries.size(), 7u);
  EXPECT_EQ(f.entries_dropped, 2u);
  EXPECT_TRUE(f.was_recovered(recovery::entries_dropped));

  std::string jf = "{\"version\":\"https://jsonfeed.org/version/1.1\",\"items\":[";
  for (int i = 0; i < 10; ++i)
    jf += std::string(i ? "," : "") + "{\"id\":\"" + std::to_string(i) + "\"}";
  jf += "]}";
  ASSERT_EQ(p.parse(jf, o, f), parse_errc::ok);
  EXPECT_EQ(f.entries.size(), 7u);
  EXPECT_EQ(f.entries_dropped, 3u);
  EXPECT_TRUE(f.was_recovered(recovery::entries_dropped));

  // Exactly at the limit nothing is dropped, and the count does not leak into the next parse.
  o.max_entries = 50;
  ASSERT_EQ(p.parse(doc, o, f), parse_errc::ok);
  EXPECT_EQ(f.entries.size(), 50u);
  EXPECT_EQ(f.entries_dropped, 0u);
  EXPECT_EQ(f.recovered, 0u);
}

TEST(feed_render, json_output_shape) {
  const auto r = parse(rss_item("<title>q\"t</title><pubDate>Thu, 01 Jan 2004 19:48:21 GMT"
                                "</pubDate>") +
                       "");
  std::string out;
  render_json(r.f, out);
  EXPECT_NE(out.find("\"title\":\"q\\\"t\""), std::string::npos) << out;
  EXPECT_NE(out.find("\"published\":\"2004-01-01T19:48:21Z\""), std::string::npos) << out;
  EXPECT_NE(out.find("\"updated\":null"), std::string::npos) << out;
  EXPECT_NE(out.find("\"recovered\":[]"), std::string::npos) << out;
}

// The model is UTF-8 after transcoding, but not every field passes the transcoder (base64
// content decodes to any bytes): the JSON stays valid whatever a field holds.
TEST(feed_render, json_output_is_valid_for_any_bytes) {
  feed f;
  f.title = "caf\xc3\xa9 \xff\x01\"\\";
  std::string out;
  render_json(f, out);
  EXPECT_NE(out.find("\"title\":\"caf\xc3\xa9 \\ufffd\\u0001\\\"\\\\\""), std::string::npos) << out;
}

TEST(feed_errors, repair_stays_linear_on_floods) {
  // 50k unclosed elements then 50k stray end tags, and a tag with 50k attributes: the repair
  // pass must finish (it is bounded to 64 levels / 64 attributes), not go quadratic.
  std::string doc = "<rss version=\"2.0\"><channel><title>t</title>";
  for (int i = 0; i < 50000; ++i) doc += "<a>";
  for (int i = 0; i < 50000; ++i) doc += "</b>";
  doc += "<item a0=\"\"";
  for (int i = 1; i < 50000; ++i) doc += " a" + std::to_string(i) + "=\"\" a0=\"\"";
  doc += "><title>x</title></item></channel></rss>";
  // Its first (failing) tree is denser than the default budget allows: lift the budget so
  // that the repair pass is what this test exercises.
  parser p;
  feed f;
  parse_options unbounded;
  unbounded.max_tree_bytes = size_t{1} << 40;
  EXPECT_EQ(p.parse(doc, unbounded, f), parse_errc::ok);
  EXPECT_TRUE(f.was_recovered(recovery::malformed_xml));
  EXPECT_EQ(parse(doc).rc, parse_errc::too_complex);  // by default: named, bounded
}

TEST(feed_date, years_are_never_guessed_and_edges_hold) {
  // Only a 2-digit year gets a century (RFC 2822 4.3); "0000" or "0049" is not 2000 / 2049.
  for (const char* bad :
       {"0000-01-01T00:00:00Z", "0049-06-01T00:00:00Z", "0999-01-01", "4 Jan 0004 10:00:00 GMT",
        "Thu, 01 Jan 0049 19:48:21 GMT", "Jan 4 5", "Jan 4 5 10:00 GMT",
        "Thu, 01 Jan 2004 19:48:21 +2500", "2004-01-01T00:00:00+25:00", "2004-01-01T00:00:00-1500",
        "Mon, 30 Feb 2004 10:00:00 GMT", "Feb 30, 2004", "2004-02-30", "2100-02-29",
        "10000-01-01T00:00:00Z", "2004-01-01T23:60:00Z", "2004-01-01T24:00:01Z"}) {
    EXPECT_EQ(date(bad), "absent") << bad;
  }
  EXPECT_EQ(date("01 Jan 49 00:00:00 GMT"), "2049-01-01T00:00:00Z");
  EXPECT_EQ(date("01 Jan 50 00:00:00 GMT"), "1950-01-01T00:00:00Z");
  EXPECT_EQ(date("9999-12-31T23:59:59Z"), "9999-12-31T23:59:59Z");
  EXPECT_EQ(date("9999-12-31T23:59:59-14:00"), "absent");  // year 10000 in UTC: unprintable
  EXPECT_EQ(date("1000-01-01T00:00:00Z"), "1000-01-01T00:00:00Z");
  EXPECT_EQ(date("2000-02-29T12:00:00+14:00"), "2000-02-28T22:00:00Z");
  EXPECT_EQ(date("2004-12-31T24:00:00Z"), "2005-01-01T00:00:00Z");
}

TEST(feed_encoding, utf16_without_bom_or_declaration) {
  const std::string body =
      "<rss version=\"2.0\"><channel><title>\xc3\xa9t\xc3\xa9</title>"
      "</channel></rss>";
  for (bool le : {true, false}) {
    std::string doc;
    for (size_t i = 0; i < body.size(); ++i) {
      uint32_t cp = static_cast<unsigned char>(body[i]);
      if (cp == 0xC3) cp = 0xC0 | (static_cast<unsigned char>(body[++i]) & 0x3F);
      const char hi = static_cast<char>(cp >> 8), lo = static_cast<char>(cp & 0xFF);
      doc += le ? std::string{lo, hi} : std::string{hi, lo};
    }
    const auto r = parse(doc);
    ASSERT_EQ(r.rc, parse_errc::ok) << le;
    EXPECT_EQ(r.f.title, "\xc3\xa9t\xc3\xa9") << le;  // not NUL-stripped mojibake
    EXPECT_FALSE(r.f.was_recovered(recovery::control_chars_stripped)) << le;
  }
}

TEST(feed_parse, rss_item_link_as_href_attribute) {
  const auto r =
      parse(rss_item("<title>t</title><link href=\"/p/1\"/>"), {}, "https://example.org/feed");
  ASSERT_EQ(r.rc, parse_errc::ok);
  ASSERT_EQ(r.f.entries.size(), 1u);
  EXPECT_EQ(r.f.entries[0].link, "https://example.org/p/1");
}

TEST(feed_parse, whitespace_between_adjacent_elements_of_kept_markup_survives) {
  // The first parse drops whitespace-only text; kept markup with adjacent elements needs it
  // back ("<b>a</b> <i>b</i>" must not read "ab"), so such documents are parsed again.
  const auto r =
      parse(rss_item("<title>t</title><description>x <b>a</b> <i>b</i>\n<p><u>c</u>"
                     " <s>d</s></p></description>"));
  ASSERT_EQ(r.rc, parse_errc::ok);
  ASSERT_EQ(r.f.entries.size(), 1u);
  EXPECT_EQ(r.f.entries[0].summary, "x <b>a</b> <i>b</i>\n<p><u>c</u> <s>d</s></p>");
  const auto a = parse(
      "<feed xmlns=\"http://www.w3.org/2005/Atom\"><entry><title>t</title>"
      "<content type=\"xhtml\"><div xmlns=\"http://www.w3.org/1999/xhtml\"><p>one</p>\n"
      "<p><em>two</em> <em>three</em></p></div></content></entry></feed>");
  ASSERT_EQ(a.rc, parse_errc::ok);
  ASSERT_EQ(a.f.entries.size(), 1u);
  EXPECT_EQ(a.f.entries[0].content, "<p>one</p>\n<p><em>two</em> <em>three</em></p>");
  // Pretty-printed structure itself needs no whitespace: one parse, same fields.
  const auto p = parse(
      "<rss version=\"2.0\">\n <channel>\n  <title> T </title>\n  <item>\n"
      "   <title>x</title>\n  </item>\n </channel>\n</rss>\n");
  ASSERT_EQ(p.rc, parse_errc::ok);
  EXPECT_EQ(p.f.title, "T");
  ASSERT_EQ(p.f.entries.size(), 1u);
  EXPECT_EQ(p.f.entries[0].title, "x");
}

TEST(feed_encoding, control_characters_found_at_every_position) {
  // The vector scan classifies 64-byte steps: a control in any lane, and in the tail, is found.
  for (size_t pos : {0u, 13u, 31u, 32u, 63u, 64u, 100u, 127u, 130u}) {
    std::string title(140, 'a');
    title[pos] = '\x0b';
    const auto r = parse(rss_item("<title>" + title + "</title>"));
    ASSERT_EQ(r.rc, parse_errc::ok) << pos;
    ASSERT_EQ(r.f.entries.size(), 1u);
    EXPECT_EQ(r.f.entries[0].title, std::string(139, 'a')) << pos;
    EXPECT_TRUE(r.f.was_recovered(recovery::control_chars_stripped)) << pos;
  }
  // Tab, LF, CR and bytes >= 0x80 are not controls.
  const auto ok = parse(rss_item("<title>\t\xc3\xa9\r\n" + std::string(200, 'b') + "\xff</title>"));
  EXPECT_FALSE(ok.f.was_recovered(recovery::control_chars_stripped));
}

TEST(feed_parse, entries_reused_in_place_never_leak_into_a_later_document) {
  parser p;
  feed f;
  auto doc = [](int n, const char* tag) {
    std::string d = "<rss version=\"2.0\"><channel>";
    for (int i = 0; i < n; ++i)
      d += "<item><title>" + std::string(tag) + std::to_string(i) + "</title><category>c" +
           std::to_string(i) + "</category></item>";
    return d + "</channel></rss>";
  };
  ASSERT_EQ(p.parse(doc(3, "a"), {}, f), parse_errc::ok);
  ASSERT_EQ(f.entries.size(), 3u);
  ASSERT_EQ(p.parse(doc(1, "b"), {}, f), parse_errc::ok);
  ASSERT_EQ(f.entries.size(), 1u);
  EXPECT_EQ(f.entries[0].title, "b0");
  ASSERT_EQ(f.entries[0].categories.size(), 1u);
  parse_options small;
  small.max_bytes = 8;
  EXPECT_EQ(p.parse(doc(2, "c"), small, f), parse_errc::too_large);
  EXPECT_TRUE(f.entries.empty());
  EXPECT_EQ(p.parse("<html><body>x</body></html>", {}, f), parse_errc::html_not_feed);
  EXPECT_TRUE(f.entries.empty());
  ASSERT_EQ(p.parse(doc(4, "d"), {}, f), parse_errc::ok);
  ASSERT_EQ(f.entries.size(), 4u);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(f.entries[i].title, "d" + std::to_string(i));
    ASSERT_EQ(f.entries[i].categories.size(), 1u);
  }
  parse_options two;
  two.max_entries = 2;
  ASSERT_EQ(p.parse(doc(5, "e"), two, f), parse_errc::ok);
  ASSERT_EQ(f.entries.size(), 2u);
  EXPECT_EQ(f.entries[1].title, "e1");
}

TEST(feed_encoding, latin1_label_on_utf8_bytes_reads_utf8) {
  const auto r = parse(
      "<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?><rss version=\"2.0\">"
      "<channel><title>caf\xc3\xa9</title></channel></rss>");
  ASSERT_EQ(r.rc, parse_errc::ok);
  EXPECT_EQ(r.f.title, "caf\xc3\xa9");
  EXPECT_TRUE(r.f.was_recovered(recovery::encoding_fallback));
  // Real Latin-1 (not valid UTF-8) is still read as declared, unflagged.
  const auto l = parse(
      "<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?><rss version=\"2.0\">"
      "<channel><title>caf\xe9</title></channel></rss>");
  EXPECT_EQ(l.f.title, "caf\xc3\xa9");
  EXPECT_FALSE(l.f.was_recovered(recovery::encoding_fallback));
}

TEST(feed_parse, json_feed_with_wrong_types_everywhere) {
  const auto r =
      parse(R"({"version":"https://jsonfeed.org/version/1.1","title":5,"home_page_url":[],)"
            R"("feed_url":{},"hubs":"x","authors":{"name":1},"items":[1,"x",null,{"id":{"a":1},)"
            R"("title":[],"url":7,"summary":false,"content_html":{},"date_published":123,)"
            R"("date_modified":"Feb 30 2004","authors":"x","author":5,"tags":[1,null,"ok",{}],)"
            R"("attachments":[1,{"url":5},{"url":"a","size_in_bytes":"9"},)"
            R"({"url":"b","size_in_bytes":-5}]},{"id":7}]})");
  ASSERT_EQ(r.rc, parse_errc::ok);
  EXPECT_EQ(r.f.title, "");
  ASSERT_EQ(r.f.entries.size(), 2u);
  const entry& e = r.f.entries[0];
  EXPECT_EQ(e.id, "");
  EXPECT_EQ(e.title, "");
  EXPECT_FALSE(e.has_published);
  EXPECT_FALSE(e.has_updated);  // "Feb 30": absent, not March 1st or 2nd
  EXPECT_TRUE(r.f.was_recovered(recovery::unparsed_date));
  ASSERT_EQ(e.categories.size(), 1u);
  ASSERT_EQ(e.enclosures.size(), 2u);
  EXPECT_EQ(e.enclosures[0].length, 0);
  EXPECT_EQ(e.enclosures[1].length, 0);  // a negative size is no size
  EXPECT_EQ(r.f.entries[1].id, "7");
}

// Issue 10's ingestion gap: dcterms:issued, dcterms:created and dcterms:date are dates like
// dc:date (they fill published and updated when absent); dcterms:modified is the update.
TEST(feed_rss, dcterms_dates) {
  auto item = [](std::string_view el) {
    return parse(
        "<rss version=\"2.0\" xmlns:dcterms=\"http://purl.org/dc/terms/\"><channel>"
        "<title>T</title><item><title>x</title>" +
        std::string(el) + "</item></channel></rss>");
  };
  for (const char* name : {"issued", "created", "date"}) {
    const std::string el =
        std::string("<dcterms:") + name + ">2004-01-01T00:00:00Z</dcterms:" + name + ">";
    parsed r = item(el);
    ASSERT_EQ(r.rc, parse_errc::ok) << name;
    ASSERT_EQ(r.f.entries.size(), 1u);
    EXPECT_TRUE(r.f.entries[0].has_published) << name;
    EXPECT_EQ(r.f.entries[0].published, 1072915200) << name;
    EXPECT_TRUE(r.f.entries[0].has_updated) << name;
  }
  parsed r = item(
      "<dcterms:issued>2004-01-01T00:00:00Z</dcterms:issued>"
      "<dcterms:modified>2004-01-02T00:00:00Z</dcterms:modified>");
  ASSERT_EQ(r.f.entries.size(), 1u);
  EXPECT_EQ(r.f.entries[0].published, 1072915200);
  EXPECT_EQ(r.f.entries[0].updated, 1072915200 + 86400);
}

// ---------------------------------------------------------------------------------------
// Issue 10's ingestion gaps.

// RSS 2.0 declared as the default namespace (Userland's and Harvard's URIs, any case, any
// backend.userland.com/rss* variant), or an unknown default namespace: read as RSS, as
// feedparser and Go's encoding/xml do. Prefixed elements of an unknown namespace stay foreign.
TEST(feed_rss, default_namespace_is_read_as_rss) {
  for (const char* uri :
       {"http://backend.userland.com/rss2", "http://backend.userland.com/rss",
        "HTTP://Backend.Userland.com/RSS2", "http://blogs.law.harvard.edu/tech/rss",
        "http://purl.org/rss/1.0/modules/rss091#", "http://example.com/unknown"}) {
    const auto r = parse(std::string("<rss version=\"2.0\" xmlns=\"") + uri +
                             "\" xmlns:x=\"http://example.com/x\"><channel><title>T</title>"
                             "<item><x:title>foreign</x:title><title>a</title>"
                             "<link>/p/1</link><guid isPermaLink=\"false\">g1</guid>"
                             "<description>&lt;img src=\"i.png\"&gt;</description></item>"
                             "<item><title>b</title></item></channel></rss>",
                         {}, "https://ex.org/feed");
    ASSERT_EQ(r.rc, parse_errc::ok) << uri;
    EXPECT_EQ(r.f.format, feed_format::rss) << uri;
    EXPECT_EQ(r.f.title, "T") << uri;
    ASSERT_EQ(r.f.entries.size(), 2u) << uri;
    EXPECT_EQ(r.f.entries[0].title, "a") << uri;
    EXPECT_EQ(r.f.entries[0].link, "https://ex.org/p/1") << uri;
    EXPECT_EQ(r.f.entries[0].id, "g1") << uri;
    EXPECT_EQ(r.f.entries[0].summary, "<img src=\"https://ex.org/i.png\">") << uri;
  }
  // An RDF document whose RSS 1.0 default is undeclared halfway (xmlns=""): still RSS.
  const auto r = parse(
      "<rdf:RDF xmlns:rdf=\"http://www.w3.org/1999/02/22-rdf-syntax-ns#\" "
      "xmlns=\"http://purl.org/rss/1.0/\"><channel><title>R</title></channel>"
      "<item xmlns=\"\"><title>i</title><link>http://ex.org/i</link></item></rdf:RDF>");
  ASSERT_EQ(r.rc, parse_errc::ok);
  ASSERT_EQ(r.f.entries.size(), 1u);
  EXPECT_EQ(r.f.entries[0].title, "i");
}

// Atom whose elements carry a prefix, Atom 0.3 (issued/modified/created, mode="escaped",
// mode="base64", type="text/html") and its pre-0.3 namespaces: all Atom.
TEST(feed_atom, prefixed_and_atom03) {
  const auto a = parse(
      "<atom:feed xmlns:atom=\"http://www.w3.org/2005/Atom\"><atom:title>P</atom:title>"
      "<atom:entry><atom:id>urn:1</atom:id><atom:title>E</atom:title>"
      "<atom:link rel=\"alternate\" href=\"/e\"/><atom:updated>2005-07-31T12:29:29Z</atom:updated>"
      "<atom:content type=\"html\">&lt;a href=\"x\"&gt;x&lt;/a&gt;</atom:content>"
      "</atom:entry></atom:feed>",
      {}, "https://ex.org/blog/atom.xml");
  ASSERT_EQ(a.rc, parse_errc::ok);
  EXPECT_EQ(a.f.format, feed_format::atom);
  EXPECT_EQ(a.f.version, "1.0");
  EXPECT_EQ(a.f.title, "P");
  ASSERT_EQ(a.f.entries.size(), 1u);
  EXPECT_EQ(a.f.entries[0].link, "https://ex.org/e");
  EXPECT_TRUE(a.f.entries[0].has_updated);
  EXPECT_EQ(a.f.entries[0].content, "<a href=\"https://ex.org/blog/x\">x</a>");

  const auto b = parse(
      "<a:feed version=\"0.3\" xmlns:a=\"http://purl.org/atom/ns#\" xml:base=\"http://ex.org/\">"
      "<a:title>Old</a:title><a:entry xml:base=\"2003/\"><a:title>e</a:title>"
      "<a:link rel=\"alternate\" type=\"text/html\" href=\"e.html\"/>"
      "<a:created>2003-12-13T08:29:29-04:00</a:created>"
      "<a:issued>2003-12-13T18:30:02Z</a:issued><a:modified>2003-12-14T18:30:02Z</a:modified>"
      "<a:summary type=\"text/html\" mode=\"base64\">PGEgaHJlZj0icy5odG1sIj5zPC9hPg==</a:summary>"
      "<a:content type=\"text/html\" mode=\"escaped\">&lt;p&gt;&lt;a href=\"c.html\"&gt;c&lt;/a&gt;"
      "&lt;/p&gt;</a:content></a:entry></a:feed>");
  ASSERT_EQ(b.rc, parse_errc::ok);
  EXPECT_EQ(b.f.format, feed_format::atom);
  EXPECT_EQ(b.f.version, "0.3");
  ASSERT_EQ(b.f.entries.size(), 1u);
  const entry& e = b.f.entries[0];
  EXPECT_EQ(e.link, "http://ex.org/2003/e.html");
  EXPECT_EQ(date("2003-12-13T18:30:02Z"), "2003-12-13T18:30:02Z");
  EXPECT_EQ(e.published, 1071340202);  // issued, not created
  EXPECT_EQ(e.updated, 1071340202 + 86400);
  EXPECT_EQ(e.content, "<p><a href=\"http://ex.org/2003/c.html\">c</a></p>");
  EXPECT_EQ(e.summary, "<a href=\"http://ex.org/2003/s.html\">s</a>");  // decoded, then resolved

  // Only created: it is the published date. A pre-0.3 ("Echo") namespace: Atom 0.3.
  const auto c = parse(
      "<feed xmlns=\"http://purl.org/echo/\"><entry><title>x</title>"
      "<created>2003-12-13T18:30:02Z</created></entry></feed>");
  ASSERT_EQ(c.rc, parse_errc::ok);
  EXPECT_EQ(c.f.version, "0.3");
  ASSERT_EQ(c.f.entries.size(), 1u);
  EXPECT_EQ(c.f.entries[0].published, 1071340202);
}

// Every Atom 0.3 file of gofeed's test data, in place: Atom 0.3, read without an error.
TEST(feed_atom, atom03_corpus_files_are_atom03) {
  const char* dir = std::getenv("FEEDPLANE_CORPUS_DIR");
  ASSERT_TRUE(dir != nullptr && *dir != '\0')
      << "FEEDPLANE_CORPUS_DIR is empty: the shared corpus (../shared/corpus) was not found";
  int files = 0;
  for (const auto& d : std::filesystem::recursive_directory_iterator(std::filesystem::path(dir) /
                                                                     "gofeed" / "testdata")) {
    if (d.path().extension() != ".xml") continue;
    std::ifstream in(d.path(), std::ios::binary);
    const std::string doc((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (doc.find("http://purl.org/atom/ns#") == std::string::npos) continue;
    ++files;
    const auto r = parse(doc);
    EXPECT_EQ(r.rc, parse_errc::ok) << d.path();
    EXPECT_EQ(r.f.format, feed_format::atom) << d.path();
    EXPECT_EQ(r.f.version, "0.3") << d.path();
  }
  EXPECT_GT(files, 50);
}

// An item without <link> takes its permalink guid as the link (isPermaLink absent or "true");
// dedup still sees the item as sent, so nothing seen before comes back as an update.
TEST(feed_rss, permalink_guid_becomes_the_link) {
  const auto r = parse(
      "<rss version=\"2.0\"><channel><title>T</title>"
      "<item><title>1</title><guid>https://ex.org/p/1</guid></item>"
      "<item><title>2</title><guid isPermaLink=\"true\">/p/2</guid></item>"
      "<item><title>3</title><guid isPermaLink=\"false\">https://ex.org/p/3</guid></item>"
      "<item><title>4</title><guid>12345</guid></item>"
      "<item><title>5</title><link>https://ex.org/l/5</link><guid>https://ex.org/p/5</guid></item>"
      "<item xml:base=\"https://other.example/x/\"><title>6</title>"
      "<guid isPermaLink=\"TRUE\">p6</guid></item>"
      "<item><title>7</title><guid>tag:ex.org,2024:7</guid></item>"
      "</channel></rss>",
      {}, "https://ex.org/feed.xml");
  ASSERT_EQ(r.rc, parse_errc::ok);
  ASSERT_EQ(r.f.entries.size(), 7u);
  const auto& en = r.f.entries;
  EXPECT_EQ(en[0].link, "https://ex.org/p/1");
  EXPECT_TRUE(en[0].link_from_guid);
  EXPECT_EQ(en[1].link, "https://ex.org/p/2");  // said true: a relative guid is resolved
  EXPECT_EQ(en[2].link, "");                    // not a permalink
  EXPECT_EQ(en[3].link, "");                    // the default, on a guid that is no URL
  EXPECT_EQ(en[4].link, "https://ex.org/l/5");  // <link> wins
  EXPECT_FALSE(en[4].link_from_guid);
  EXPECT_EQ(en[5].link, "https://other.example/x/p6");  // the item's xml:base
  EXPECT_EQ(en[6].link, "");                            // a URI, but not a web page

  // The keys are those of the same items without the guid-derived link.
  feed without = r.f;
  for (entry& e : without.entries) {
    if (e.link_from_guid) {
      e.link.clear();
      e.link_from_guid = false;
    }
  }
  std::vector<entry_key> a, b;
  compute_keys(r.f, a);
  compute_keys(without, b);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].identity, b[i].identity) << i;
    EXPECT_EQ(a[i].content, b[i].content) << i;
    EXPECT_EQ(a[i].link_alias, b[i].link_alias) << i;
  }
}

// The corpus: the RSS 2.0 spec's sample items have URL guids and no <link> (feed-rs leaves
// them without a link; feedparser and Miniflux link them); gofeed's guid without
// isPermaLink ("abc123") is no URL and makes no link.
TEST(feed_rss, permalink_guid_corpus_examples) {
  const std::string spec = corpus_file("feed-rs/feed-rs/fixture/rss2/rss_2.0_spec_1.xml");
  ASSERT_FALSE(spec.empty()) << "the shared corpus (../shared/corpus) was not found";
  const auto r = parse(spec);
  ASSERT_EQ(r.rc, parse_errc::ok);
  ASSERT_EQ(r.f.entries.size(), 2u);
  for (const entry& e : r.f.entries) {
    EXPECT_FALSE(e.id.empty());
    EXPECT_EQ(e.link, e.id);
  }
  const auto g =
      parse(corpus_file("gofeed/testdata/parser/rss/rss_channel_item_guid_no_permalink.xml"));
  ASSERT_EQ(g.f.entries.size(), 1u);
  EXPECT_EQ(g.f.entries[0].id, "abc123");
  EXPECT_TRUE(g.f.entries[0].id_is_permalink);
  EXPECT_EQ(g.f.entries[0].link, "");
}

namespace {
// resolve_html_urls' result: the rewritten HTML, or "=" when it left html as it was.
std::string resolved(std::string_view html, std::string_view base = "https://ex.org/a/b.html") {
  std::string out;
  if (!resolve_html_urls(html, base, out)) return out.empty() ? "=" : "(not empty: " + out + ")";
  return out;
}
}  // namespace

TEST(feed_html, relative_urls_resolved_in_every_url_attribute) {
  EXPECT_EQ(resolved("<a href=\"c\">x</a> <img src='/i.png'> <A HREF=d>"),
            "<a href=\"https://ex.org/a/c\">x</a> <img src='https://ex.org/i.png'> "
            "<A HREF=https://ex.org/a/d>");
  EXPECT_EQ(resolved("<blockquote cite=\"q.html\"><video poster=\"p.jpg\" src=\"v.mp4\">"),
            "<blockquote cite=\"https://ex.org/a/q.html\"><video poster=\"https://ex.org/a/p.jpg\" "
            "src=\"https://ex.org/a/v.mp4\">");
  // srcset: each candidate, descriptors and separators kept; absolute and data: ones untouched.
  EXPECT_EQ(resolved("<img srcset=\"s.png 1x, https://cdn.example/l.png 2x,/w.png 640w\">"),
            "<img srcset=\"https://ex.org/a/s.png 1x, https://cdn.example/l.png 2x,"
            "https://ex.org/w.png 640w\">");
  EXPECT_EQ(resolved("<img srcset=\"data:image/png;base64,AA,BB 1x, t.png,\">"),
            "<img srcset=\"data:image/png;base64,AA,BB 1x, https://ex.org/a/t.png,\">");
  EXPECT_EQ(resolved("<img srcset=\"a.png (x, y) 1x, b.png\">"),
            "<img srcset=\"https://ex.org/a/a.png (x, y) 1x, https://ex.org/a/b.png\">");
  // Scheme-relative and dot segments; a '>' inside a quoted value does not end the tag.
  EXPECT_EQ(resolved("<a title=\"a>b\" href=\"//cdn.example/x\"><a href=\"../up\">"),
            "<a title=\"a>b\" href=\"https://cdn.example/x\"><a href=\"https://ex.org/up\">");
  // A base holding what would end the value is percent-encoded there, never breaks out.
  EXPECT_EQ(resolved("<a href=\"x\"><a href='y'><a href=z>", "http://ex.org/q\"'< /"),
            "<a href=\"http://ex.org/q%22'< /x\"><a href='http://ex.org/q\"%27< /y'>"
            "<a href=http://ex.org/q%22%27%3C%20/z>");
  // ... and within a srcset candidate, whitespace (it would split the candidate).
  EXPECT_EQ(resolved("<img srcset=\"s.png 2x\">", "http://ex.org/a b/"),
            "<img srcset=\"http://ex.org/a%20b/s.png 2x\">");
}

TEST(feed_html, nothing_relative_leaves_the_html_untouched_and_unallocated) {
  for (const char* html :
       {"", "plain text", "a < b > c", "<p>no attributes</p>", "<a href=\"https://ex.org/\">",
        "<a href=\"#top\"> <a href=\"mailto:a@ex.org\"> <img src=\"data:image/png,x\">",
        "<a href=\"\"> <a href=>", "</a href=\"x\"> <!-- <a href=\"x\"> -->",
        "&lt;img src=\"code-sample.png\"&gt; src=text.png",  // text, not a tag
        "<img srcset=\"https://ex.org/1.png 1x, http://ex.org/2.png 2x\">",
        "<a href=\"javascript:x()\"> <a href=\"HTTP://EX.ORG\">"}) {
    std::string out;
    EXPECT_FALSE(resolve_html_urls(html, "https://ex.org/a/", out)) << html;
    EXPECT_TRUE(out.empty()) << html;
    EXPECT_EQ(out.capacity(), std::string().capacity()) << html;  // nothing allocated
  }
  // No absolute base: nothing to resolve against.
  EXPECT_EQ(resolved("<a href=\"x\">", ""), "=");
  EXPECT_EQ(resolved("<a href=\"x\">", "/relative/"), "=");
  // Unterminated quote: resolved up to it, the rest kept as sent.
  EXPECT_EQ(resolved("<a href=\"x\"><a href=\"y"), "<a href=\"https://ex.org/a/x\"><a href=\"y");
}

// In feeds: the base is the element's xml:base, then the entry's, then the feed's, then the
// document URL; in RSS descriptions, content:encoded, dc:description, Atom html/xhtml and
// JSON Feed content_html (never content_text or type="text").
TEST(feed_html, feed_markup_resolves_against_the_nearest_base) {
  const auto r = parse(
      "<feed xmlns=\"http://www.w3.org/2005/Atom\" xml:base=\"https://feed.example/f/\">"
      "<entry xml:base=\"https://entry.example/e/\"><title>a</title>"
      "<summary type=\"html\" xml:base=\"https://summary.example/s/\">&lt;a href=\"x\"&gt;"
      "</summary><content type=\"html\">&lt;img srcset=\"y 2x\"&gt;</content></entry>"
      "<entry><title>b</title><content type=\"html\">&lt;a href=\"z\"&gt;</content>"
      "<summary type=\"text\">&lt;a href=\"t\"&gt;</summary></entry></feed>",
      {}, "https://doc.example/atom.xml");
  ASSERT_EQ(r.rc, parse_errc::ok);
  ASSERT_EQ(r.f.entries.size(), 2u);
  EXPECT_EQ(r.f.entries[0].summary, "<a href=\"https://summary.example/s/x\">");
  EXPECT_EQ(r.f.entries[0].content, "<img srcset=\"https://entry.example/e/y 2x\">");
  EXPECT_EQ(r.f.entries[1].content, "<a href=\"https://feed.example/f/z\">");
  EXPECT_EQ(r.f.entries[1].summary, "<a href=\"t\">");  // text, not markup

  const auto d = parse(
      "<rss version=\"2.0\" xmlns:dc=\"http://purl.org/dc/elements/1.1/\"><channel><item>"
      "<dc:description>&lt;a href=\"d\"&gt;</dc:description></item></channel></rss>",
      {}, "https://doc.example/rss");
  ASSERT_EQ(d.f.entries.size(), 1u);
  EXPECT_EQ(d.f.entries[0].summary, "<a href=\"https://doc.example/d\">");

  const auto j = parse(
      R"({"version":"https://jsonfeed.org/version/1.1","items":[
      {"id":"1","content_html":"<img src=\"i.png\" srcset=\"i2.png 2x\">"},
      {"id":"2","content_text":"<a href=\"t\">"}]})",
      {}, "https://doc.example/j/feed.json");
  ASSERT_EQ(j.rc, parse_errc::ok);
  ASSERT_EQ(j.f.entries.size(), 2u);
  EXPECT_EQ(j.f.entries[0].content,
            "<img src=\"https://doc.example/j/i.png\" srcset=\"https://doc.example/j/i2.png 2x\">");
  EXPECT_EQ(j.f.entries[1].content, "<a href=\"t\">");
}

// Publishers' hints: <ttl>, <skipHours>, <skipDays>, sy:updatePeriod / sy:updateFrequency.
TEST(feed_rss, publishers_hints) {
  auto channel = [](std::string_view inner) {
    return parse(
        "<rss version=\"2.0\" xmlns:sy=\"http://purl.org/rss/1.0/modules/syndication/\">"
        "<channel><title>T</title>" +
        std::string(inner) + "</channel></rss>");
  };
  auto r = channel(
      "<ttl> 90 </ttl><skipHours><hour>0</hour><hour>7</hour><hour>24</hour><hour>25</hour>"
      "<hour>x</hour></skipHours><skipDays><day>saturday</day><day>Sunday</day>"
      "<day>Caturday</day></skipDays><sy:updatePeriod>daily</sy:updatePeriod>"
      "<sy:updateFrequency>4</sy:updateFrequency>");
  ASSERT_EQ(r.rc, parse_errc::ok);
  EXPECT_EQ(r.f.hints.ttl_s, 90u * 60);
  EXPECT_EQ(r.f.hints.skip_hours, (1u << 0) | (1u << 7));  // 24 is midnight; 25, x ignored
  EXPECT_EQ(r.f.hints.skip_days, (1u << 0) | (1u << 6));
  EXPECT_EQ(r.f.hints.update_s, 86'400u / 4);
  // Nothing said, or said unreadably: no hint.
  EXPECT_TRUE(channel("").f.hints.empty());
  for (const char* bad : {"<ttl>-5</ttl>", "<ttl>1.5</ttl>", "<ttl>soon</ttl>", "<ttl>0</ttl>",
                          "<ttl>99999999999</ttl>", "<sy:updatePeriod>often</sy:updatePeriod>",
                          "<sy:updateFrequency>0</sy:updateFrequency>",
                          "<skipDays><day>Funday</day></skipDays>", "<skipHours></skipHours>"}) {
    EXPECT_TRUE(channel(bad).f.hints.empty()) << bad;
  }
  // A list that skips every hour or every day would forbid fetching: dropped.
  std::string all_hours = "<skipHours>";
  for (int h = 0; h < 24; ++h) all_hours += "<hour>" + std::to_string(h) + "</hour>";
  EXPECT_EQ(channel(all_hours + "</skipHours>").f.hints.skip_hours, 0u);
  EXPECT_EQ(channel("<skipDays><day>Monday</day><day>Tuesday</day><day>Wednesday</day>"
                    "<day>Thursday</day><day>Friday</day><day>Saturday</day><day>Sunday</day>"
                    "</skipDays>")
                .f.hints.skip_days,
            0u);
  // The module's defaults: daily when only a frequency is given, once when only a period.
  EXPECT_EQ(channel("<sy:updateFrequency>2</sy:updateFrequency>").f.hints.update_s, 43'200u);
  EXPECT_EQ(channel("<sy:updatePeriod>Weekly</sy:updatePeriod>").f.hints.update_s, 604'800u);
  // Undeclared sy: prefix, RDF channels and Atom feeds carry the module too.
  EXPECT_EQ(parse("<rss version=\"2.0\"><channel><sy:updatePeriod>hourly</sy:updatePeriod>"
                  "</channel></rss>")
                .f.hints.update_s,
            3600u);
  EXPECT_EQ(parse("<feed xmlns=\"http://www.w3.org/2005/Atom\" "
                  "xmlns:sy=\"http://purl.org/rss/1.0/modules/syndication/\">"
                  "<sy:updatePeriod>monthly</sy:updatePeriod></feed>")
                .f.hints.update_s,
            30u * 86'400);
  // A later document does not inherit the hints of an earlier one (the parser is reused).
  EXPECT_TRUE(channel("<title>again</title>").f.hints.empty());
}

TEST(feed_rss, publishers_hints_corpus_examples) {
  const std::string rdf = corpus_file("feed-rs/feed-rs/fixture/rss1/rss_1.0_spec_2.xml");
  ASSERT_FALSE(rdf.empty()) << "the shared corpus (../shared/corpus) was not found";
  EXPECT_EQ(parse(rdf).f.hints.update_s, 1800u);  // hourly, twice
  const auto w = parse(corpus_file("feed-rs/feed-rs/fixture/rss2/rss_2.0_wirecutter.xml"));
  EXPECT_EQ(w.f.hints.update_s, 3600u);  // hourly, once
}
