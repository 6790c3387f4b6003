#include "feedplane/net/url.h"

#include <gtest/gtest.h>

using feedplane::net::has_scheme;
using feedplane::net::parse_url;
using feedplane::net::resolve_url;
using feedplane::net::url;

TEST(Url, ParsesHttpAndHttps) {
  url u;
  ASSERT_TRUE(parse_url("HTTP://Example.COM/feed.xml?a=1#frag", u));
  EXPECT_FALSE(u.https);
  EXPECT_EQ(u.host, "example.com");
  EXPECT_EQ(u.port, 80);
  EXPECT_EQ(u.target, "/feed.xml?a=1");
  EXPECT_EQ(u.authority(), "example.com");
  EXPECT_EQ(u.str(), "http://example.com/feed.xml?a=1");

  ASSERT_TRUE(parse_url("https://a.b:8443", u));
  EXPECT_TRUE(u.https);
  EXPECT_EQ(u.port, 8443);
  EXPECT_EQ(u.target, "/");
  EXPECT_EQ(u.authority(), "a.b:8443");

  ASSERT_TRUE(parse_url("https://example.com:443/x", u));
  EXPECT_EQ(u.authority(), "example.com");
  ASSERT_TRUE(parse_url("http://example.com?q", u));
  EXPECT_EQ(u.target, "/?q");
}

TEST(Url, Ipv6AndUserinfo) {
  url u;
  ASSERT_TRUE(parse_url("http://[::1]:8080/a", u));
  EXPECT_TRUE(u.ipv6_literal);
  EXPECT_EQ(u.host, "::1");
  EXPECT_EQ(u.port, 8080);
  EXPECT_EQ(u.authority(), "[::1]:8080");
  ASSERT_TRUE(parse_url("http://user:pw@host/p", u));
  EXPECT_EQ(u.host, "host");
  EXPECT_FALSE(parse_url("http://[::1/a", u));
  EXPECT_FALSE(parse_url("http://[zz]/a", u));
}

TEST(Url, RejectsBadInput) {
  url u;
  bool unsupported = false;
  EXPECT_FALSE(parse_url("ftp://x/y", u, &unsupported));
  EXPECT_TRUE(unsupported);
  EXPECT_FALSE(parse_url("example.com/feed", u, &unsupported));
  EXPECT_FALSE(unsupported);
  EXPECT_FALSE(parse_url("http://", u));
  EXPECT_FALSE(parse_url("http:///x", u));
  EXPECT_FALSE(parse_url("http://host:0/", u));
  EXPECT_FALSE(parse_url("http://host:65536/", u));
  EXPECT_FALSE(parse_url("http://host:12a/", u));
  EXPECT_FALSE(parse_url("http://ho st/", u));
  EXPECT_FALSE(parse_url("", u));
  EXPECT_FALSE(parse_url(":", u));
}

TEST(Url, EncodesUnsafeTargetBytes) {
  url u;
  ASSERT_TRUE(parse_url("http://h/a b\x01\xc3\xa9%20", u));
  EXPECT_EQ(u.target, "/a%20b%01%C3%A9%20");
}

// The examples of RFC 3986 section 5.4.
TEST(Url, ResolvesRfc3986Examples) {
  url base;
  ASSERT_TRUE(parse_url("http://a/b/c/d;p?q", base));
  const std::pair<const char*, const char*> cases[] = {
      {"g", "http://a/b/c/g"},
      {"./g", "http://a/b/c/g"},
      {"g/", "http://a/b/c/g/"},
      {"/g", "http://a/g"},
      {"//g", "http://g/"},
      {"?y", "http://a/b/c/d;p?y"},
      {"g?y", "http://a/b/c/g?y"},
      {"#s", "http://a/b/c/d;p?q"},
      {"g#s", "http://a/b/c/g"},
      {";x", "http://a/b/c/;x"},
      {"", "http://a/b/c/d;p?q"},
      {".", "http://a/b/c/"},
      {"./", "http://a/b/c/"},
      {"..", "http://a/b/"},
      {"../", "http://a/b/"},
      {"../g", "http://a/b/g"},
      {"../..", "http://a/"},
      {"../../g", "http://a/g"},
      {"../../../g", "http://a/g"},
      {"/./g", "http://a/g"},
      {"/../g", "http://a/g"},
      {"g.", "http://a/b/c/g."},
      {"..g", "http://a/b/c/..g"},
      {"./../g", "http://a/b/g"},
      {"g/./h", "http://a/b/c/g/h"},
      {"g/../h", "http://a/b/c/h"},
      {"https://other:8443/x", "https://other:8443/x"},
  };
  for (auto [ref, want] : cases) {
    url out;
    ASSERT_TRUE(resolve_url(base, ref, out)) << ref;
    EXPECT_EQ(out.str(), want) << ref;
  }
  url out;
  bool unsupported = false;
  EXPECT_FALSE(resolve_url(base, "mailto:x@y", out, &unsupported));
  EXPECT_TRUE(unsupported);
  ASSERT_TRUE(parse_url("https://h:8443/dir/f", base));
  ASSERT_TRUE(resolve_url(base, "//other/p", out));
  EXPECT_EQ(out.str(), "https://other/p");
  ASSERT_TRUE(resolve_url(base, "../up", out));
  EXPECT_EQ(out.str(), "https://h:8443/up");
}

namespace {
std::string resolve(std::string_view base, std::string_view ref) {
  std::string out;
  resolve_url(base, ref, out);
  return out;
}
}  // namespace

// The text form feed links use: any scheme, query and fragment kept, nothing encoded.
TEST(Url, ResolvesReferenceText) {
  // RFC 3986 section 5.4 examples.
  const char* base = "http://a/b/c/d;p?q";
  EXPECT_EQ(resolve(base, "g"), "http://a/b/c/g");
  EXPECT_EQ(resolve(base, "./g"), "http://a/b/c/g");
  EXPECT_EQ(resolve(base, "g/"), "http://a/b/c/g/");
  EXPECT_EQ(resolve(base, "/g"), "http://a/g");
  EXPECT_EQ(resolve(base, "//g"), "http://g");
  EXPECT_EQ(resolve(base, "?y"), "http://a/b/c/d;p?y");
  EXPECT_EQ(resolve(base, "g?y"), "http://a/b/c/g?y");
  EXPECT_EQ(resolve(base, "#s"), "http://a/b/c/d;p?q#s");
  EXPECT_EQ(resolve(base, "g#s"), "http://a/b/c/g#s");
  EXPECT_EQ(resolve(base, ".."), "http://a/b/");
  EXPECT_EQ(resolve(base, "../g"), "http://a/b/g");
  EXPECT_EQ(resolve(base, "../../g"), "http://a/g");
  EXPECT_EQ(resolve(base, "../../../g"), "http://a/g");
  EXPECT_EQ(resolve(base, "g;x=1/../y"), "http://a/b/c/y");
  EXPECT_EQ(resolve(base, "https://other/x"), "https://other/x");
  EXPECT_EQ(resolve(base, "mailto:jo@example.org"), "mailto:jo@example.org");
  EXPECT_EQ(resolve(base, " \t g \n"), "http://a/b/c/g");
  EXPECT_EQ(resolve(base, "a b/\xc3\xa9"), "http://a/b/c/a b/\xc3\xa9");  // not encoded
  EXPECT_EQ(resolve("", "rel/x"), "rel/x");
  EXPECT_EQ(resolve("rel/base", "x"), "x");
  EXPECT_EQ(resolve("http://example.org", "post/1"), "http://example.org/post/1");
  EXPECT_EQ(resolve("tag:example.org,2004:a/b", "c"), "tag:example.org,2004:a/c");
  std::string out = "kept:";
  resolve_url(base, "g", out);  // appends
  EXPECT_EQ(out, "kept:http://a/b/c/g");
}

TEST(Url, HasScheme) {
  EXPECT_TRUE(has_scheme("http://x"));
  EXPECT_TRUE(has_scheme("mailto:a@b"));
  EXPECT_TRUE(has_scheme("a+b.c-d:x"));
  EXPECT_FALSE(has_scheme(""));
  EXPECT_FALSE(has_scheme(":x"));
  EXPECT_FALSE(has_scheme("1http:x"));  // a scheme starts with a letter
  EXPECT_FALSE(has_scheme("a/b:c"));
  EXPECT_FALSE(has_scheme("no-colon"));
}

// Behaviour that changed when redirects started to resolve with the same code as feed links.
TEST(Url, RedirectResolutionFollowsRfc3986) {
  url base;
  ASSERT_TRUE(parse_url("http://a/b/c/d;p?q", base));
  url out;
  // A scheme starts with a letter: "1x:y" is a relative path (it used to fail as a scheme).
  ASSERT_TRUE(resolve_url(base, "1x:y", out));
  EXPECT_EQ(out.str(), "http://a/b/c/1x:y");
  // A network-path reference has its dot segments removed like any other path.
  ASSERT_TRUE(resolve_url(base, "//other/x/../y", out));
  EXPECT_EQ(out.str(), "http://other/y");
  // Still percent-encoded for the request target, still lower-cased host.
  ASSERT_TRUE(resolve_url(base, "//OTHER/a b", out));
  EXPECT_EQ(out.str(), "http://other/a%20b");
  ASSERT_TRUE(resolve_url(base, "g h?x y#frag", out));
  EXPECT_EQ(out.str(), "http://a/b/c/g%20h?x%20y");
}
