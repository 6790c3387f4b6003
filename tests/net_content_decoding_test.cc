#include "feedplane/net/content_decoding.h"

#include <gtest/gtest.h>
#include <libdeflate.h>

#include <string>

using feedplane::net::content_decoder;
using feedplane::net::fetch_error;

namespace {

enum class wrap { gzip, zlib, raw };

std::string compress(const std::string& in, wrap w) {
  auto* c = libdeflate_alloc_compressor(6);
  std::string out(libdeflate_gzip_compress_bound(c, in.size()) + 64, '\0');
  size_t n = 0;
  switch (w) {
    case wrap::gzip:
      n = libdeflate_gzip_compress(c, in.data(), in.size(), out.data(), out.size());
      break;
    case wrap::zlib:
      n = libdeflate_zlib_compress(c, in.data(), in.size(), out.data(), out.size());
      break;
    case wrap::raw:
      n = libdeflate_deflate_compress(c, in.data(), in.size(), out.data(), out.size());
      break;
  }
  libdeflate_free_compressor(c);
  out.resize(n);
  return out;
}

std::string sample(size_t n) {
  std::string s;
  for (size_t i = 0; s.size() < n; ++i)
    s += "<item><title>entry " + std::to_string(i) + "</title></item>\n";
  s.resize(n);
  return s;
}

}  // namespace

TEST(ContentDecoding, Gzip) {
  content_decoder d;
  auto plain = sample(100000);
  std::string out;
  ASSERT_EQ(d.decode("gzip", compress(plain, wrap::gzip), 1 << 20, out), fetch_error::ok);
  EXPECT_EQ(out, plain);
  ASSERT_EQ(d.decode("x-gzip", compress(plain, wrap::gzip), 1 << 20, out), fetch_error::ok);
  EXPECT_EQ(out, plain);
  // Two concatenated members decode to the concatenation.
  auto two = compress("abc", wrap::gzip) + compress("def", wrap::gzip);
  ASSERT_EQ(d.decode("gzip", two, 1 << 20, out), fetch_error::ok);
  EXPECT_EQ(out, "abcdef");
}

TEST(ContentDecoding, DeflateZlibAndRaw) {
  content_decoder d;
  auto plain = sample(5000);
  std::string out;
  ASSERT_EQ(d.decode("deflate", compress(plain, wrap::zlib), 1 << 20, out), fetch_error::ok);
  EXPECT_EQ(out, plain);
  ASSERT_EQ(d.decode("Deflate", compress(plain, wrap::raw), 1 << 20, out), fetch_error::ok);
  EXPECT_EQ(out, plain);
}

TEST(ContentDecoding, StackedAndIdentity) {
  content_decoder d;
  auto plain = sample(3000);
  std::string out;
  auto stacked = compress(compress(plain, wrap::zlib), wrap::gzip);
  ASSERT_EQ(d.decode("deflate, gzip", stacked, 1 << 20, out), fetch_error::ok);
  EXPECT_EQ(out, plain);
  ASSERT_EQ(d.decode("identity", plain, 1 << 20, out), fetch_error::ok);
  EXPECT_EQ(out, plain);
  EXPECT_FALSE(content_decoder::needs_decoding(""));
  EXPECT_FALSE(content_decoder::needs_decoding(" identity "));
  EXPECT_TRUE(content_decoder::needs_decoding("gzip"));
}

TEST(ContentDecoding, Errors) {
  content_decoder d;
  std::string out;
  EXPECT_EQ(d.decode("gzip", "not gzip at all", 1 << 20, out), fetch_error::bad_gzip);
  EXPECT_EQ(d.decode("gzip", "", 1 << 20, out), fetch_error::bad_gzip);
  auto gz = compress(sample(5000), wrap::gzip);
  EXPECT_EQ(d.decode("gzip", gz.substr(0, gz.size() / 2), 1 << 20, out), fetch_error::bad_gzip);
  gz[gz.size() - 6] ^= 0x55;  // CRC mismatch
  EXPECT_EQ(d.decode("gzip", gz, 1 << 20, out), fetch_error::bad_gzip);
  EXPECT_EQ(d.decode("deflate", "\xff\xff\xff garbage", 1 << 20, out), fetch_error::bad_deflate);
  EXPECT_EQ(d.decode("br", "x", 1 << 20, out), fetch_error::unsupported_content_encoding);
  EXPECT_EQ(d.decode("compress", "x", 1 << 20, out), fetch_error::unsupported_content_encoding);
}

TEST(ContentDecoding, CapStopsDecompressionBombs) {
  content_decoder d;
  std::string zeros(4 << 20, '\0');  // 4 MiB of zeros compresses to a few KiB
  auto bomb = compress(zeros, wrap::gzip);
  ASSERT_LT(bomb.size(), 64u * 1024);
  std::string out;
  EXPECT_EQ(d.decode("gzip", bomb, 1 << 20, out), fetch_error::body_too_large);
  EXPECT_EQ(d.decode("deflate", compress(zeros, wrap::zlib), 1 << 20, out),
            fetch_error::body_too_large);
  ASSERT_EQ(d.decode("gzip", bomb, 4 << 20, out), fetch_error::ok);  // exactly the cap
  EXPECT_EQ(out.size(), zeros.size());
  EXPECT_EQ(d.decode("identity", zeros, 1 << 20, out), fetch_error::body_too_large);
}
