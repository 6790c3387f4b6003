// Normaliser and tokenizer: the documented rules, and the SIMD kernel against the scalar
// one and both against the code-point-at-a-time reference.
#include <gtest/gtest.h>
#include <hwy/targets.h>

#include <random>
#include <string>
#include <vector>

#include "feedplane/matcher/text.h"

namespace fm = feedplane::matcher;

namespace {

std::vector<std::string> words_of(const fm::token_buffer& t) {
  std::vector<std::string> w;
  for (size_t i = 0; i < t.size(); ++i) w.emplace_back(t.word(i));
  return w;
}

std::vector<std::string> simd(std::string_view s) {
  fm::token_buffer t;
  fm::tokenize(s, t);
  return words_of(t);
}
std::vector<std::string> scalar(std::string_view s) {
  fm::token_buffer t;
  fm::tokenize_scalar(s, t);
  return words_of(t);
}
std::vector<std::string> reference(std::string_view s) {
  fm::token_buffer t;
  fm::tokenize_reference(s, t);
  return words_of(t);
}
std::string visible(std::string_view html) {
  std::string out;
  fm::html_to_text(html, out);
  return out;
}

using W = std::vector<std::string>;

TEST(MatcherText, DocumentedRules) {
  EXPECT_EQ(simd("Hello, World!"), (W{"hello", "world"}));
  EXPECT_EQ(simd("don't"), (W{"don", "t"}));
  EXPECT_EQ(simd("don\u2019t"), (W{"don", "t"}));
  EXPECT_EQ(simd("e-mail"), (W{"e", "mail"}));
  EXPECT_EQ(simd("U.S."), (W{"u", "s"}));
  EXPECT_EQ(simd("snake_case"), (W{"snake", "case"}));
  EXPECT_EQ(simd("C++ and g++"), (W{"c++", "and", "g++"}));
  EXPECT_EQ(simd("c++11"), (W{"c", "11"}));
  EXPECT_EQ(simd("a+b"), (W{"a", "b"}));
  EXPECT_EQ(simd("+c"), (W{"c"}));
  EXPECT_EQ(simd("c+"), (W{"c+"}));
  EXPECT_EQ(simd("c++\u00e9"), (W{"c", "\u00e9"}));
  EXPECT_EQ(simd("c++\u2014"), (W{"c++"}));
  EXPECT_EQ(simd("3.14 and 42"), (W{"3", "14", "and", "42"}));
  EXPECT_EQ(simd(""), W{});
  EXPECT_EQ(simd("  ,;  "), W{});
}

TEST(MatcherText, UnicodeFolding) {
  EXPECT_EQ(simd("Stra\u00dfe"), (W{"strasse"}));
  EXPECT_EQ(simd("CAF\u00c9 caf\u00e9"), (W{"caf\u00e9", "caf\u00e9"}));
  EXPECT_EQ(simd("cafe\u0301"), (W{"caf\u00e9"}));    // composed (NFC)
  EXPECT_EQ(simd("\ufb01le"), (W{"file"}));           // ligature (NFKC)
  EXPECT_EQ(simd("\uff21\uff22\uff23"), (W{"abc"}));  // full width
  EXPECT_EQ(simd("\u039a\u03b1\u03bb\u03b7\u03bc\u03ad\u03c1\u03b1"),
            (W{"\u03ba\u03b1\u03bb\u03b7\u03bc\u03ad\u03c1\u03b1"}));
  EXPECT_EQ(simd("hy\u00adphen"), (W{"hyphen"}));  // soft hyphen stays inside
  EXPECT_EQ(simd("zero\u200bwidth"), (W{"zero", "width"}));
  EXPECT_EQ(simd("\u4e2d\u6587 text"), (W{"\u4e2d\u6587", "text"}));
  EXPECT_EQ(simd("bad\xff\xfe"
                 "bytes"),
            (W{"bad", "bytes"}));
  EXPECT_EQ(simd("emoji\U0001F600face"), (W{"emoji", "face"}));
}

TEST(MatcherText, Markup) {
  EXPECT_EQ(simd(visible("<div class=\"center-wrap\">hello</div>")), (W{"hello"}));
  EXPECT_EQ(simd(visible("<p>one</p><p>two</p>")), (W{"one", "two"}));
  EXPECT_EQ(simd(visible("<b>Fire</b>fox")), (W{"firefox"}));
  EXPECT_EQ(simd(visible("a<script>var center = 1;</script>b<style>.x{}</style>c")),
            (W{"a", "b", "c"}));
  EXPECT_EQ(simd(visible("x<SCRIPT type='a'>if (a<b) y()</SCRIPT>z")), (W{"x", "z"}));
  EXPECT_EQ(simd(visible("AT&amp;T &lt;tag&gt; caf&eacute; &#233;t&#xE9; &mdash;")),
            (W{"at", "t", "tag", "caf\u00e9", "\u00e9t\u00e9"}));
  EXPECT_EQ(simd(visible("a <!-- hidden center --> b")), (W{"a", "b"}));
  EXPECT_EQ(simd(visible("1 < 2 & 3")), (W{"1", "2", "3"}));
  EXPECT_EQ(simd(visible("<a href=\"x\" title='center'>link</a>")), (W{"link"}));
  EXPECT_EQ(simd(visible("&bogus; &amp")), (W{"bogus", "amp"}));
  EXPECT_EQ(visible("plain text stays"), "plain text stays");
}

// One entity decoder (decode_char_ref) for html_to_text and the feed parser: HTML5's full
// table, windows-1252 for &#128;..&#159;, and a ';' required, as the feed parser had it.
TEST(MatcherText, CharacterReferences) {
  // Names with digits and names beyond HTML 4 (the matcher's old table had neither).
  EXPECT_EQ(visible("&frac12; &sup2; &check; &Rarr; &nbsp;|"),
            "\u00bd \u00b2 \u2713 \u21a0 \u00a0|");
  EXPECT_EQ(visible("&#150;&#x80;&#X9f;"), "\u2013\u20ac\u0178");
  EXPECT_EQ(visible("&#0;&#xD800;&#x110000;&#99999999999;"), "\ufffd\ufffd\ufffd\ufffd");
  EXPECT_EQ(visible("?a=1&copy=2 &#233t &amp &#; &#x; &#12a;"),
            "?a=1&copy=2 &#233t &amp &#; &#x; &#12a;");
  EXPECT_EQ(visible("&bogus; &AMP; &LT;&Auml;"), "&bogus; & <\u00c4");

  struct ref_case {
    std::string_view in;
    size_t used;
    fm::char_ref kind;
    std::string_view out;
  };
  for (const auto& c : std::initializer_list<ref_case>{
           {"&amp;x", 5, fm::char_ref::xml, "&"},
           {"&apos;", 6, fm::char_ref::xml, "'"},
           {"&eacute;", 8, fm::char_ref::html, "\u00e9"},
           {"&CounterClockwiseContourIntegral;", 33, fm::char_ref::html, "\u2233"},
           {"&#233;", 6, fm::char_ref::numeric, "\u00e9"},
           {"&#x1F600;", 9, fm::char_ref::numeric, "\U0001F600"},
           {"&nosuch;", 0, fm::char_ref::unknown, ""},
           {"&amp", 0, fm::char_ref::none, ""},
           {"&", 0, fm::char_ref::none, ""},
           {"& x;", 0, fm::char_ref::none, ""},
           {"&#12a;", 0, fm::char_ref::none, ""},
       }) {
    std::string out = "<";
    const fm::char_ref_result r = fm::decode_char_ref(c.in, out);
    EXPECT_EQ(r.used, c.used) << c.in;
    EXPECT_EQ(r.kind, c.kind) << c.in;
    EXPECT_EQ(out, "<" + std::string(c.out)) << c.in;
  }
  // A name longer than the longest HTML5 name (31) is never looked up.
  std::string out;
  EXPECT_EQ(fm::decode_char_ref("&" + std::string(33, 'a') + ";", out).kind, fm::char_ref::none);
}

TEST(MatcherText, AppendUtf8) {
  std::string out;
  for (uint32_t cp : {0x41u, 0xE9u, 0x20ACu, 0x1F600u, 0u, 0xD800u, 0x110000u}) {
    fm::append_utf8(cp, out);
  }
  EXPECT_EQ(out, "A\u00e9\u20ac\U0001F600\ufffd\ufffd\ufffd");
}

TEST(MatcherText, TargetNamed) {
  const std::string t = fm::tokenizer_target();
  EXPECT_FALSE(t.empty());
  EXPECT_NE(t, "Unknown");
}

// Random text built from pieces that exercise every rule, at every length and offset.
std::string random_text(std::mt19937_64& rng, size_t len, bool unicode) {
  static const std::vector<std::string> ascii = {"a", "Z", "q", "0", "9",  " ",  " ",  ",", ".",
                                                 "'", "-", "_", "+", "++", "\n", "\t", "x", "M"};
  static const std::vector<std::string> extra = {
      "\u00e9", "\u00c9", "\u00df", "\u2019",     "\u2014", "\u00ad", "\u200b",
      "\u4e2d", "\xff",   "\xc3",   "\U0001F600", "\u0301", "\ufb01"};
  std::string s;
  while (s.size() < len) {
    if (unicode && rng() % 5 == 0) {
      s += extra[rng() % extra.size()];
    } else {
      s += ascii[rng() % ascii.size()];
    }
  }
  s.resize(len);  // may cut a UTF-8 sequence: deliberately
  return s;
}

TEST(MatcherText, SimdMatchesScalarAtEveryLengthAndAlignment) {
  std::mt19937_64 rng(7);
  constexpr size_t k_max_lanes = 64;
  std::string buffer(16 * k_max_lanes + 64, ' ');
  for (bool unicode : {false, true}) {
    for (size_t len = 0; len <= 16 * k_max_lanes; ++len) {
      for (size_t offset : {0, 1, 3, 7, 13, 31}) {
        if (len > 260 && offset != 0 && offset != 13) continue;  // keep it quick past 4 vectors
        const std::string text = random_text(rng, len, unicode);
        std::copy(text.begin(), text.end(), buffer.begin() + static_cast<long>(offset));
        const std::string_view view(buffer.data() + offset, len);
        const auto expect = reference(view);
        ASSERT_EQ(scalar(view), expect) << "len " << len << " offset " << offset;
        ASSERT_EQ(simd(view), expect) << "len " << len << " offset " << offset;
      }
    }
  }
}

// Every target this CPU runs (SSSE3, SSE4, AVX2, AVX3 here), each at every length up to
// 16 vectors of the widest one and three misalignments, against the scalar tokenizer.
TEST(MatcherText, EveryCompiledTargetAgrees) {
  std::mt19937_64 rng(11);
  constexpr size_t k_max_len = 16 * 64;
  std::string buffer(k_max_len + 64, ' ');
  int tested = 0;
  for (int64_t target : hwy::SupportedAndGeneratedTargets()) {
    hwy::SetSupportedTargetsForTest(target);
    const std::string name = hwy::TargetName(target);
    ASSERT_EQ(name, fm::tokenizer_target());
    for (size_t len = 0; len <= k_max_len; ++len) {
      for (size_t offset : {0, 1, 7}) {
        const std::string text = random_text(rng, len, len % 2 == 1);
        std::copy(text.begin(), text.end(), buffer.begin() + static_cast<long>(offset));
        const std::string_view view(buffer.data() + offset, len);
        ASSERT_EQ(simd(view), scalar(view)) << name << " len " << len << " offset " << offset;
      }
    }
    ++tested;
  }
  hwy::SetSupportedTargetsForTest(0);
  EXPECT_GE(tested, 1);
  std::printf("targets tested: %d\n", tested);
}

TEST(MatcherText, ScanKernelsWriteTheSameBounds) {
  std::mt19937_64 rng(3);
  for (size_t len = 0; len < 700; ++len) {
    const std::string s = random_text(rng, len, len % 3 == 0);
    const auto* in = reinterpret_cast<const uint8_t*>(s.data());
    std::vector<uint8_t> l1(len + 1), l2(len + 1);
    std::vector<uint32_t> b1(len + 1 + fm::detail::k_bounds_slack),
        b2(len + 1 + fm::detail::k_bounds_slack);
    unsigned f1 = 0, f2 = 0;
    const size_t n1 = fm::detail::scan_words_simd(in, len, l1.data(), b1.data(), &f1);
    const size_t n2 = fm::detail::scan_words_scalar(in, len, l2.data(), b2.data(), &f2);
    ASSERT_EQ(n1, n2);
    ASSERT_EQ(f1, f2);
    for (size_t i = 0; i < n1; ++i) ASSERT_EQ(b1[i], b2[i]);
    for (size_t i = 0; i < len; ++i) ASSERT_EQ(l1[i], l2[i]);
  }
}

TEST(MatcherText, AppendsAcrossCalls) {
  fm::token_buffer t;
  fm::tokenize("Title words", t);
  fm::tokenize("caf\u00e9 and C++", t);
  fm::tokenize("last", t);
  EXPECT_EQ(words_of(t), (W{"title", "words", "caf\u00e9", "and", "c++", "last"}));
  t.clear();
  fm::tokenize("again", t);
  EXPECT_EQ(words_of(t), (W{"again"}));
}

}  // namespace
