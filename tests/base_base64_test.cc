// feedplane::base base64: the one table of both alphabets (the feed token's decoder reads the
// URL-safe half, Atom content's lenient decoder both), the URL-safe encoder, and the lenient
// decoder's rules for padding and whitespace.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "feedplane/base/base64.h"

namespace fb = feedplane::base;

static_assert(fb::base64url_value('A') == 0 && fb::base64url_value('_') == 63);
static_assert(fb::base64url_value('+') == -1 && fb::base64_value('+') == 62);

// What each byte should be, written out from RFC 4648's tables rather than from the table.
static int standard_value(int c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}
static int url_value(int c) {
  if (c == '+' || c == '/') return -1;
  if (c == '-') return 62;
  if (c == '_') return 63;
  return standard_value(c);
}

TEST(base_base64, every_byte_in_each_alphabet) {
  int url = 0, any = 0;
  for (int c = 0; c < 256; ++c) {
    const char ch = static_cast<char>(c);  // negative for bytes above 0x7F
    EXPECT_EQ(fb::base64url_value(ch), url_value(c)) << c;
    const int either = url_value(c) >= 0 ? url_value(c) : standard_value(c);
    EXPECT_EQ(fb::base64_value(ch), either) << c;
    url += fb::base64url_value(ch) >= 0;
    any += fb::base64_value(ch) >= 0;
  }
  EXPECT_EQ(url, 64);
  EXPECT_EQ(any, 66);
}

TEST(base_base64, url_safe_encoding) {
  const uint8_t b[] = {0xfb, 0xff, 0x00, 0x10};
  EXPECT_EQ(fb::base64url(b, 0), "");
  EXPECT_EQ(fb::base64url(b, 1), "-w");
  EXPECT_EQ(fb::base64url(b, 2), "-_8");
  EXPECT_EQ(fb::base64url(b, 3), "-_8A");
  EXPECT_EQ(fb::base64url(b, 4), "-_8AEA");
  // RFC 4648 section 10's vectors, without their padding.
  const auto enc = [](std::string_view s) {
    return fb::base64url(reinterpret_cast<const uint8_t*>(s.data()), s.size());
  };
  EXPECT_EQ(enc("f"), "Zg");
  EXPECT_EQ(enc("fo"), "Zm8");
  EXPECT_EQ(enc("foo"), "Zm9v");
  EXPECT_EQ(enc("foob"), "Zm9vYg");
  EXPECT_EQ(enc("fooba"), "Zm9vYmE");
  EXPECT_EQ(enc("foobar"), "Zm9vYmFy");
  std::string out = "x=";  // appends
  fb::append_base64url(b, 3, out);
  EXPECT_EQ(out, "x=-_8A");
}

TEST(base_base64, lenient_decoding) {
  const auto dec = [](std::string_view in, std::string* out) {
    out->clear();
    return fb::decode_base64_lenient(in, *out);
  };
  std::string o;
  EXPECT_TRUE(dec("Zm9vYmFy", &o));
  EXPECT_EQ(o, "foobar");
  EXPECT_TRUE(dec("Zm9vYg==", &o));
  EXPECT_EQ(o, "foob");
  EXPECT_TRUE(dec("Zm9vYg", &o));  // padding optional
  EXPECT_EQ(o, "foob");
  EXPECT_TRUE(dec(" Zm9v\r\n YmE=\t", &o));  // whitespace anywhere
  EXPECT_EQ(o, "fooba");
  const std::string fb_ff_00("\xfb\xff\x00", 3);
  EXPECT_TRUE(dec("-_8A", &o));  // URL-safe
  EXPECT_EQ(o, fb_ff_00);
  EXPECT_TRUE(dec("+/8A", &o));  // standard
  EXPECT_EQ(o, fb_ff_00);
  EXPECT_TRUE(dec("", &o));
  EXPECT_EQ(o, "");
  EXPECT_FALSE(dec("Zm9v.mFy", &o));  // a byte in neither alphabet
  EXPECT_FALSE(dec("Zg=v", &o));      // a digit after padding
  EXPECT_FALSE(dec("Zg===", &o));     // three pads
  EXPECT_FALSE(dec("Zm9v\x80", &o));  // a byte above 0x7F
  // Every 0-3 byte string round-trips through the encoder.
  for (int n = 0; n <= 3; ++n) {
    for (int v = 0; v < (1 << (8 * n)); v += n == 3 ? 997 : 1) {
      uint8_t b[3] = {uint8_t(v >> 16), uint8_t(v >> 8), uint8_t(v)};
      const uint8_t* p = b + (3 - n);
      ASSERT_TRUE(dec(fb::base64url(p, size_t(n)), &o)) << n << " " << v;
      ASSERT_EQ(o, std::string(reinterpret_cast<const char*>(p), size_t(n))) << n << " " << v;
    }
  }
}
