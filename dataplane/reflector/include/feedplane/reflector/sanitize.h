// The allowlist sanitizer of HTML that feedplane re-serves (summaries in feeds, previews):
// the fragment is parsed by an HTML5 parser (gumbo, as a browser would parse it inside a
// <div>) and the tree is serialized again with only allowlisted elements, attributes and
// URL schemes. Never a regular expression, never the matcher's markup stripper: parser
// differentials are how sanitizers are bypassed (DESIGN.md 9).
//
// Kept: p br hr div span b i u s em strong small mark sub sup del ins code kbd samp var
// pre blockquote q cite abbr time h1-h6 ul ol li dl dt dd table caption thead tbody tfoot
// tr th td figure figcaption a img, with the attributes a: href title; img: src alt title
// width height; td/th: colspan rowspan; abbr: title; blockquote/q: cite. Links get
// rel="nofollow noopener noreferrer".
// URLs: http, https, relative, and mailto: for links; http, https, relative and
// data:image/(png|gif|jpeg|webp) for images. Tabs and newlines inside a URL and leading
// control characters are removed first (as the URL parser does), so "java&#9;script:"
// is the javascript: it is. A link with another scheme loses its href; such an image goes.
// Dropped with everything inside: script style iframe frame frameset object embed applet
// form input button select textarea option svg math (anything outside the HTML namespace)
// template noscript noembed noframes xmp plaintext title head meta link base audio video
// canvas source track param. Comments and doctypes go. Any other element is
// unwrapped: its text and kept children stay.
// The output is escaped text and these elements only: no raw-text element, no foreign
// content, no comment is ever emitted, so however a browser parses it (the parser may
// re-nest what foster parenting built) it holds only allowlisted elements, attributes and
// URLs. Sanitizing the output again changes nothing in the cases tested; the fuzz target
// checks that a second pass is a fixed point.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace feedplane::reflector {

// Input beyond this is cut before parsing (the parser closes what the cut leaves open).
inline constexpr size_t sanitize_max_input = size_t{64} << 10;

// Appends the sanitized form of the HTML fragment to out; words whose folded form is in
// `mark` (folded words) are wrapped in <mark> in the text. The same as sanitize_html(html,
// out) followed by mark_sanitized over its output.
void sanitize_html(std::string_view html, const std::vector<std::string>& mark, std::string& out);
// Appends the sanitized form of the HTML fragment to out, nothing marked: what the
// reflector keeps once per article and marks per subscription.
void sanitize_html(std::string_view html, std::string& out);

// Appends sanitized HTML (this file's output, nothing else: its tags close at the first '>'
// and its text is escaped, with every entity ending in ';') to out, with every word of its
// text whose folded form is in `words` wrapped in <mark>, as append_marked marks plain text.
// Tags and entities are copied as they are, so the result is still sanitized. Fast because
// it is one pass over bytes with no parser: feeds mark each article once per subscription
// that renders it, while the HTML5 parse runs once per article.
void mark_sanitized(std::string_view html, const std::vector<std::string>& words, std::string& out);

}  // namespace feedplane::reflector
