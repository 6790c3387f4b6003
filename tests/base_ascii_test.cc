// feedplane::base ASCII case folding: letters fold, nothing else does (two of the copies it
// replaced compared `a | 0x20`, which also matched '-' with '\r' and '@' with '`').
#include <gtest/gtest.h>

#include <string>

#include "feedplane/base/ascii.h"

namespace fb = feedplane::base;

static_assert(fb::ascii_lower('A') == 'a' && fb::ascii_lower('Z') == 'z');
static_assert(fb::ascii_lower('@') == '@' && fb::ascii_lower('[') == '[');
static_assert(fb::ascii_iequals("Content-Length", "content-length"));

TEST(base_ascii, lower_folds_only_ascii_letters) {
  for (int c = 0; c < 256; ++c) {
    const char ch = static_cast<char>(c);
    const char want = c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : ch;
    EXPECT_EQ(fb::ascii_lower(ch), want) << c;
  }
}

TEST(base_ascii, iequals_folds_letters_and_nothing_else) {
  EXPECT_TRUE(fb::ascii_iequals("", ""));
  EXPECT_TRUE(fb::ascii_iequals("X-GZip", "x-gzip"));
  EXPECT_FALSE(fb::ascii_iequals("x-gzip", "x-gzi"));
  EXPECT_FALSE(fb::ascii_iequals("x-gzip", "x\rgzip"));  // '-' | 0x20 == '\r' | 0x20
  EXPECT_FALSE(fb::ascii_iequals("@", "`"));
  EXPECT_FALSE(fb::ascii_iequals("[", "{"));
  EXPECT_FALSE(fb::ascii_iequals(std::string(1, '\0'), " "));
  EXPECT_FALSE(fb::ascii_iequals("\xc3\xa9", "\xc3\x89"));  // é and É: not ASCII, not folded
  // Every pair of bytes: equal exactly when their folds are.
  for (int a = 0; a < 256; ++a) {
    for (int b = 0; b < 256; ++b) {
      const std::string x(1, static_cast<char>(a)), y(1, static_cast<char>(b));
      const bool want = fb::ascii_lower(x[0]) == fb::ascii_lower(y[0]);
      ASSERT_EQ(fb::ascii_iequals(x, y), want) << a << " " << b;
    }
  }
}

TEST(base_ascii, starts_with_and_find) {
  EXPECT_TRUE(fb::ascii_istarts_with("Charset=UTF-8", "charset="));
  EXPECT_FALSE(fb::ascii_istarts_with("char", "charset="));
  EXPECT_EQ(fb::ascii_ifind("text/xml; CharSet=latin1", "charset="), 10u);
  EXPECT_EQ(fb::ascii_ifind("text/xml", "charset="), std::string_view::npos);
  EXPECT_EQ(fb::ascii_ifind("abc", ""), 0u);
  EXPECT_EQ(fb::ascii_ifind("", "a"), std::string_view::npos);
}

TEST(base_ascii, trim_removes_html_whitespace_only) {
  EXPECT_EQ(fb::ascii_trim(" \t\n\r\fa b\f\r\n\t "), "a b");
  EXPECT_EQ(fb::ascii_trim("\v a"), "\v a");            // VT is not HTML whitespace
  EXPECT_EQ(fb::ascii_trim("\xc2\xa0x"), "\xc2\xa0x");  // nor is U+00A0
  EXPECT_EQ(fb::ascii_trim(""), "");
  EXPECT_EQ(fb::ascii_trim("   "), "");
  for (int c = 0; c < 256; ++c) {
    const bool space = c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f';
    EXPECT_EQ(fb::is_ascii_space(static_cast<char>(c)), space) << c;
  }
}

TEST(base_ascii, hex_digit_reads_both_cases_and_refuses_everything_else) {
  for (int c = 0; c < 256; ++c) {
    int want = -1;
    if (c >= '0' && c <= '9') want = c - '0';
    if (c >= 'a' && c <= 'f') want = c - 'a' + 10;
    if (c >= 'A' && c <= 'F') want = c - 'A' + 10;
    EXPECT_EQ(fb::hex_digit(static_cast<char>(c)), want) << c;
  }
  static_assert(fb::hex_digit('F') == 15 && fb::hex_digit('g') == -1);
}
