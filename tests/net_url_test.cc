#include "feedplane/net/url.h"

#include <gtest/gtest.h>

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
