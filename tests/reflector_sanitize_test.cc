// The allowlist sanitizer against hostile HTML of every kind issue 11 names (script, event
// handlers, javascript: and data: URLs outside images, style expressions, iframes, forms,
// SVG and MathML tricks) and the mutation-XSS classics. Each output is checked three ways:
// exact text where it matters; a fixed point (sanitizing it again changes nothing); and an
// independent check that parses it with the HTML5 parser again and walks the tree:
// every element and attribute allowlisted, every URL of an allowed scheme.
#include <gtest/gtest.h>
#include <gumbo.h>

#include <string>
#include <string_view>
#include <vector>

#include "feedplane/base/ascii.h"
#include "feedplane/reflector/sanitize.h"

namespace rf = feedplane::reflector;
using feedplane::base::ascii_istarts_with;

namespace {

std::string clean(std::string_view html, const std::vector<std::string>& mark = {}) {
  std::string out;
  rf::sanitize_html(html, mark, out);
  return out;
}

// What a browser would do with the URL: tabs/newlines removed, leading controls trimmed.
bool url_ok(std::string_view v, bool image) {
  std::string u;
  for (char c : v) {
    if (c != '\t' && c != '\n' && c != '\r') u.push_back(c);
  }
  while (!u.empty() && static_cast<unsigned char>(u[0]) <= 0x20) u.erase(0, 1);
  if (ascii_istarts_with(u, "http:") || ascii_istarts_with(u, "https:")) return true;
  if (!image && ascii_istarts_with(u, "mailto:")) return true;
  if (image &&
      (ascii_istarts_with(u, "data:image/png") || ascii_istarts_with(u, "data:image/gif") ||
       ascii_istarts_with(u, "data:image/jpeg") || ascii_istarts_with(u, "data:image/webp")))
    return true;
  const size_t colon = u.find(':');
  const size_t delim = u.find_first_of("/?#");
  return colon == std::string::npos || (delim != std::string::npos && delim < colon);
}

// Walks the parse of `html` (as a browser parses a fragment in a <div>); describes the first
// thing the allowlist does not allow, or "".
std::string violation(const std::string& html) {
  static const std::vector<std::string> elements = {
      "p",   "br",     "hr",     "div",        "span",       "b",     "i",     "u",     "s",
      "em",  "strong", "small",  "mark",       "sub",        "sup",   "del",   "ins",   "code",
      "kbd", "samp",   "var",    "pre",        "blockquote", "q",     "cite",  "abbr",  "time",
      "h1",  "h2",     "h3",     "h4",         "h5",         "h6",    "ul",    "ol",    "li",
      "dl",  "dt",     "dd",     "table",      "caption",    "thead", "tbody", "tfoot", "tr",
      "th",  "td",     "figure", "figcaption", "a",          "img"};
  GumboOptions opt = kGumboDefaultOptions;
  opt.fragment_context = GUMBO_TAG_DIV;
  GumboOutput* doc = gumbo_parse_with_options(&opt, html.data(), html.size());
  std::string why;
  std::vector<const GumboNode*> stack = {doc->root};
  bool root = true;
  while (!stack.empty() && why.empty()) {
    const GumboNode* n = stack.back();
    stack.pop_back();
    if (n->type == GUMBO_NODE_COMMENT) why = "a comment";
    if (n->type != GUMBO_NODE_ELEMENT && n->type != GUMBO_NODE_TEMPLATE) continue;
    const GumboElement& el = n->v.element;
    if (!root) {
      const std::string tag = gumbo_normalized_tagname(el.tag);
      if (el.tag_namespace != GUMBO_NAMESPACE_HTML) why = "foreign element " + tag;
      bool known = false;
      for (const auto& e : elements) known |= e == tag;
      if (!known) why = "element <" + tag + ">";
      for (unsigned i = 0; i < el.attributes.length && why.empty(); ++i) {
        const auto* a = static_cast<const GumboAttribute*>(el.attributes.data[i]);
        const std::string name = a->name;
        const bool img = el.tag == GUMBO_TAG_IMG, link = el.tag == GUMBO_TAG_A;
        bool ok = (link && (name == "href" || name == "title" || name == "rel")) ||
                  (img && (name == "src" || name == "alt" || name == "title" || name == "width" ||
                           name == "height")) ||
                  ((tag == "td" || tag == "th") && (name == "colspan" || name == "rowspan")) ||
                  (tag == "abbr" && name == "title") ||
                  ((tag == "q" || tag == "blockquote") && name == "cite");
        if (ok && (name == "href" || name == "src" || name == "cite")) ok = url_ok(a->value, img);
        if (!ok) {
          why = "attribute ";
          why.append(name).append("=\"").append(a->value).append("\" on <").append(tag) += '>';
        }
      }
    }
    root = false;
    for (unsigned i = 0; i < el.children.length; ++i)
      stack.push_back(static_cast<const GumboNode*>(el.children.data[i]));
  }
  gumbo_destroy_output(&opt, doc);
  return why;
}

void expect_safe(std::string_view hostile) {
  const std::string once = clean(hostile);
  EXPECT_EQ(violation(once), "") << "input:  " << hostile << "\noutput: " << once;
  EXPECT_EQ(clean(once), once) << "not a fixed point; input: " << hostile;
  EXPECT_EQ(feedplane::base::ascii_ifind(once, "<script"), std::string_view::npos) << once;
}

TEST(reflector_sanitize, keeps_ordinary_markup) {
  EXPECT_EQ(clean("<p>Hello <b>bold</b> and <em>em</em></p>"),
            "<p>Hello <b>bold</b> and <em>em</em></p>");
  EXPECT_EQ(clean("<a href=\"https://example.com/a?b=1&amp;c=2\" title=t>x</a>"),
            "<a href=\"https://example.com/a?b=1&amp;c=2\" title=\"t\" "
            "rel=\"nofollow noopener noreferrer\">x</a>");
  EXPECT_EQ(clean("<img src=\"https://example.com/i.png\" alt=\"an image\">"),
            "<img src=\"https://example.com/i.png\" alt=\"an image\" />");
  EXPECT_EQ(clean("<ul><li>one<li>two</ul>"), "<ul><li>one</li><li>two</li></ul>");
  EXPECT_EQ(clean("<b><i>unclosed"), "<b><i>unclosed</i></b>");
  EXPECT_EQ(clean("5 &lt; 6 &amp; \"q\""), "5 &lt; 6 &amp; &quot;q&quot;");
  EXPECT_EQ(clean("<pre>\n\nx</pre>"), "<pre>\n\nx</pre>");
  EXPECT_EQ(clean("<font color=red><center>text</center></font>"), "text");
  EXPECT_EQ(clean("<table><td>cell</table>"),
            "<table><tbody><tr><td>cell</td></tr></tbody></table>");
  EXPECT_EQ(clean("<a href=\"/relative/path\">r</a>"),
            "<a href=\"/relative/path\" rel=\"nofollow noopener noreferrer\">r</a>");
  EXPECT_EQ(clean("<a href=\"mailto:a@example.com\">m</a>"),
            "<a href=\"mailto:a@example.com\" rel=\"nofollow noopener noreferrer\">m</a>");
}

TEST(reflector_sanitize, marks_words_in_text_only) {
  EXPECT_EQ(clean("<p>Rust <a href=\"https://rust.example/rust\">RUST</a></p>", {"rust"}),
            "<p><mark>Rust</mark> <a href=\"https://rust.example/rust\" "
            "rel=\"nofollow noopener noreferrer\"><mark>RUST</mark></a></p>");
}

// The reflector sanitizes an article once and marks each subscription's words on the
// sanitized HTML: entities, tag names and attribute values are never words, the text is.
TEST(reflector_sanitize, marks_sanitized_html_once_parsed) {
  const auto mark = [](std::string_view html, const std::vector<std::string>& words) {
    std::string once, out;
    rf::sanitize_html(html, once);
    rf::mark_sanitized(once, words, out);
    return out;
  };
  EXPECT_EQ(mark("AT&amp;T &lt;amp&gt; &quot;quot&quot; lt", {"amp", "quot", "lt", "t"}),
            "AT&amp;<mark>T</mark> &lt;<mark>amp</mark>&gt; &quot;<mark>quot</mark>&quot; "
            "<mark>lt</mark>");
  EXPECT_EQ(mark("<p title=\"rust\">x</p><a href=\"https://rust.example/\" title=\"rust a\">"
                 "rust</a><img src=\"https://e.example/rust.png\" alt=\"rust\">",
                 {"rust", "a", "p", "img", "href"}),
            "<p>x</p><a href=\"https://rust.example/\" title=\"rust a\" "
            "rel=\"nofollow noopener noreferrer\"><mark>rust</mark></a>"
            "<img src=\"https://e.example/rust.png\" alt=\"rust\" />");
  EXPECT_EQ(mark("Stra\xc3\x9f"
                 "e <b>Rust</b>-lang",
                 {"strasse", "rust"}),
            "<mark>Stra\xc3\x9f"
            "e</mark> <b><mark>Rust</mark></b>-lang");
  // Nothing to mark: the sanitized bytes as they are.
  EXPECT_EQ(mark("<p>a &amp; b</p>", {}), "<p>a &amp; b</p>");
  // On hostile input too, marking only adds <mark> around text and keeps the output
  // sanitized (every element and attribute allowlisted, every URL allowed).
  for (std::string_view h :
       {"<p>Rust <a href=\"https://rust.example/rust\">RUST</a></p>",
        "rust<svg><p>rust<style><img src=x onerror=alert(rust)>",
        "<a title=\"&quot;><img src=x onerror=alert(1)>\">rust</a>",
        "<pre>\nrust\n</pre>&#x26;rust&#59; rust&", "<p>rust<script>rust</script> rust</p>"}) {
    const std::string marked = mark(h, {"rust", "alert", "quot"});
    EXPECT_NE(marked.find("<mark>"), std::string::npos) << h;
    EXPECT_EQ(violation(marked), "") << marked;
    std::string unmarked = marked;
    for (std::string_view tag : {"<mark>", "</mark>"}) {
      for (size_t at; (at = unmarked.find(tag)) != std::string::npos;)
        unmarked.erase(at, tag.size());
    }
    EXPECT_EQ(unmarked, clean(h)) << h;
  }
}

TEST(reflector_sanitize, script_and_raw_text_elements) {
  EXPECT_EQ(clean("a<script>alert(1)</script>b"), "ab");
  EXPECT_EQ(clean("<SCRIPT SRC=//evil.example/x.js></SCRIPT>ok"), "ok");
  EXPECT_EQ(clean("<<script>script>alert(1)<</script>/script>"), "&lt;/script&gt;");
  EXPECT_EQ(clean("<scr<script>ipt>alert(1)</script>"), "ipt&gt;alert(1)");
  EXPECT_EQ(clean("<style>body{background:url(javascript:alert(1))}</style>s"), "s");
  EXPECT_EQ(clean("<xmp><img src=x onerror=alert(1)></xmp>x"), "x");
  EXPECT_EQ(clean("<textarea><img src=x onerror=alert(1)></textarea>x"), "x");
  EXPECT_EQ(clean("<title><img src=x onerror=alert(1)></title>x"), "x");
  EXPECT_EQ(clean("<plaintext><b>all of it"), "");
  for (auto h : {"<script>alert(1)</script>", "<script/xss src=x></script>",
                 "<script\n>alert(1)</script\n>", "<template><script>alert(1)</script></template>",
                 "<noscript><script>alert(1)</script></noscript>"})
    expect_safe(h);
}

TEST(reflector_sanitize, event_handlers) {
  EXPECT_EQ(clean("<img src=x onerror=alert(1)>"), "<img src=\"x\" />");
  EXPECT_EQ(clean("<p onclick=\"alert(1)\" ONMOUSEOVER=alert(2)>t</p>"), "<p>t</p>");
  EXPECT_EQ(clean("<body onload=alert(1)>b</body>"), "b");
  for (auto h : {"<div onpointerenter=alert(1)>x</div>",
                 "<a href=https://x onfocus=alert(1) autofocus>x</a>",
                 "<img src=x:alert(1) onerror=eval(src)>", "<details open ontoggle=alert(1)>",
                 "<marquee onstart=alert(1)>", "<video><source onerror=alert(1)></video>",
                 "<input autofocus onfocus=alert(1)>", "<p/onclick=alert(1)>x",
                 "<p\tonclick=alert(1)>x", "<p\x0conclick=alert(1)>x"})
    expect_safe(h);
}

TEST(reflector_sanitize, urls) {
  const char* rel = " rel=\"nofollow noopener noreferrer\"";
  EXPECT_EQ(clean("<a href=\"javascript:alert(1)\">x</a>"), std::string("<a") + rel + ">x</a>");
  EXPECT_EQ(clean("<a href=\"  JaVaScRiPt:alert(1)\">x</a>"), std::string("<a") + rel + ">x</a>");
  EXPECT_EQ(clean("<a href=\"java&#x09;script:alert(1)\">x</a>"),
            std::string("<a") + rel + ">x</a>");
  EXPECT_EQ(clean("<a href=\"java\nscript:alert(1)\">x</a>"), std::string("<a") + rel + ">x</a>");
  EXPECT_EQ(clean("<a href=\"&#106;&#97;vascript:alert(1)\">x</a>"),
            std::string("<a") + rel + ">x</a>");
  EXPECT_EQ(clean("<a href=\"&#0;javascript:alert(1)\">x</a>"), std::string("<a") + rel + ">x</a>");
  EXPECT_EQ(clean("<a href=\"vbscript:msgbox(1)\">x</a>"), std::string("<a") + rel + ">x</a>");
  EXPECT_EQ(clean("<a href=\"data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==\">x</a>"),
            std::string("<a") + rel + ">x</a>");
  EXPECT_EQ(clean("<a href=\"data:image/png;base64,AAAA\">x</a>"),
            std::string("<a") + rel + ">x</a>")
      << "data: only in images";
  EXPECT_EQ(clean("<img src=\"data:image/png;base64,iVBORw0KGgo=\">"),
            "<img src=\"data:image/png;base64,iVBORw0KGgo=\" />");
  EXPECT_EQ(clean("<img src=\"data:image/svg+xml,<svg onload=alert(1)>\">"), "") << "no SVG images";
  EXPECT_EQ(clean("<img src=\"data:text/html,<script>alert(1)</script>\">"), "");
  EXPECT_EQ(clean("<img src=\"javascript:alert(1)\">"), "");
  EXPECT_EQ(clean("<img src=\"https://x.example/a.png\" srcset=\"javascript:alert(1) 1x\">"),
            "<img src=\"https://x.example/a.png\" />");
  EXPECT_EQ(clean("<blockquote cite=\"javascript:alert(1)\">q</blockquote>"),
            "<blockquote>q</blockquote>");
  for (auto h :
       {"<a href=\"jav&#x0A;ascript:alert(1)\">x</a>", "<a href=\"jav&Tab;ascript:alert(1)\">x</a>",
        "<a href=\" \x01javascript:alert(1)\">x</a>", "<a href=\"javascript&colon;alert(1)\">x</a>",
        "<a href=\"feed:javascript:alert(1)\">x</a>", "<a xlink:href=\"javascript:alert(1)\">x</a>",
        "<a href=\"http:\" onclick=alert(1)>x</a>",
        "<iframe srcdoc=\"<script>alert(1)</script>\">"})
    expect_safe(h);
}

TEST(reflector_sanitize, styles_iframes_forms_and_objects) {
  EXPECT_EQ(clean("<div style=\"background:url(javascript:alert(1))\">t</div>"), "<div>t</div>");
  EXPECT_EQ(clean("<span style=\"width: expression(alert(1))\">t</span>"), "<span>t</span>");
  EXPECT_EQ(clean("<iframe src=\"https://evil.example/\">hidden</iframe>after"), "after");
  EXPECT_EQ(
      clean("<form action=\"https://evil.example/\"><input name=p><button>go</button></form>x"),
      "x");
  EXPECT_EQ(clean("<button formaction=javascript:alert(1)>b</button>x"), "x");
  EXPECT_EQ(clean("<object data=\"javascript:alert(1)\"></object><embed src=x>x"), "x");
  EXPECT_EQ(clean("<base href=\"javascript:/\"><meta http-equiv=refresh "
                  "content=\"0;url=javascript:alert(1)\">x"),
            "x");
  EXPECT_EQ(clean("<link rel=stylesheet href=https://evil.example/x.css>x"), "x");
  for (auto h :
       {"<frameset><frame src=javascript:alert(1)></frameset>", "<applet code=x>",
        "<isindex action=javascript:alert(1) type=image>", "<keygen autofocus onfocus=alert(1)>",
        "<div style=\"behavior: url(x.htc)\">", "<p style=\"-moz-binding:url(x)\">"})
    expect_safe(h);
}

TEST(reflector_sanitize, svg_and_mathml) {
  EXPECT_EQ(clean("<svg><script>alert(1)</script></svg>x"), "x");
  EXPECT_EQ(clean("<svg onload=alert(1)><a xlink:href=javascript:alert(1)>t</a></svg>x"), "x");
  EXPECT_EQ(clean("<math><mi xlink:href=\"javascript:alert(1)\">m</mi></math>x"), "x");
  for (auto h : {"<svg><animate onbegin=alert(1) attributeName=x dur=1s>",
                 "<svg><foreignObject><img src=x onerror=alert(1)></foreignObject></svg>",
                 "<svg><use href=\"data:image/svg+xml,<svg id=x onload=alert(1)>\"/></svg>",
                 // NOLINTNEXTLINE(bugprone-suspicious-missing-comma): one string, split
                 "<math><annotation-xml encoding=\"text/html\"><img src=x "
                 "onerror=alert(1)></annotation-xml></math>",
                 "<svg><style><img src=x onerror=alert(1)></style></svg>"})
    expect_safe(h);
}

// Mutation XSS: markup whose serialization parses differently, the classics that beat
// sanitizers which trusted a serializer (DOMPurify, Google's, bleach advisories).
TEST(reflector_sanitize, mutation_xss_classics) {
  for (auto h : {
           "<noscript><p title=\"</noscript><img src=x onerror=alert(1)>\">",
           "<math><mtext><table><mglyph><style><img src=x onerror=alert(1)>",
           // NOLINTNEXTLINE(bugprone-suspicious-missing-comma): one string, split
           "<math><mtext><table><mglyph><style><!--</style><img title=\"--&gt;&lt;img src=1 "
           "onerror=alert(1)&gt;\">",
           "<svg></p><style><a id=\"</style><img src=1 onerror=alert(1)>\">",
           "<form><math><mtext></form><form><mglyph><style></math><img src onerror=alert(1)>",
           "<math><mi><table><mi><style><img src=x onerror=alert(1)>",
           "<svg><p><style><img src=x onerror=alert(1)></style></p></svg>",
           "<listing>&lt;img src=x onerror=alert(1)&gt;</listing>",
           "<a href=\"https://x\"><table><a href=\"javascript:alert(1)\">t</a></table></a>",
           "<!--><img src=x onerror=alert(1)>-->",
           "<!-- --!><img src=x onerror=alert(1)> -->",
           "<![CDATA[<img src=x onerror=alert(1)>]]>",
           "<?xml-stylesheet href=\"javascript:alert(1)\"?>",
           "<p>a</p><!--<img src=x onerror=alert(1)>-->b",
           "<img src=\"x\"/onerror=alert(1)>",
           "<img src=`x`onerror=alert(1)>",
           "<a href=\"x\" title=\"&quot;><img src=x onerror=alert(1)>\">t</a>",
           "<pre>\n<img src=x onerror=alert(1)></pre>",
           "<textarea></textarea><img src=x onerror=alert(1)>",
           "<select><template><img src=x onerror=alert(1)></template></select>",
       })
    expect_safe(h);
  // An attribute value holding markup stays a value, escaped.
  EXPECT_EQ(clean("<a title=\"&quot;><img src=x onerror=alert(1)>\">t</a>"),
            "<a title=\"&quot;&gt;&lt;img src=x onerror=alert(1)&gt;\" "
            "rel=\"nofollow noopener noreferrer\">t</a>");
}

TEST(reflector_sanitize, hostile_shapes_and_sizes) {
  std::string deep;
  for (int i = 0; i < 12000; ++i) deep += "<div>";
  deep += "x";
  const std::string out = clean(deep);
  EXPECT_NE(out.find('x'), std::string::npos);
  EXPECT_EQ(clean(out), out);
  std::string big(rf::sanitize_max_input + 1000, 'a');
  EXPECT_EQ(clean(big).size(), rf::sanitize_max_input) << "cut before parsing";
  static constexpr char nul[] = "<p>\0<img src=x\0 onerror=alert(1)>";
  expect_safe(std::string(nul, sizeof(nul) - 1));
  expect_safe("\xff\xfe<p>\xc0\xaf<b>bad utf-8</p>");
  expect_safe("<b><p><i><a><table><tr><td><b><s><a>adoption</b></s></a>");
}

}  // namespace
