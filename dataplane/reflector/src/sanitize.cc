#include "feedplane/reflector/sanitize.h"

#include <gumbo.h>

#include <cstdint>

#include "feedplane/base/ascii.h"
#include "feedplane/reflector/render.h"

namespace feedplane::reflector {

namespace {

enum class action : uint8_t { unwrap, keep, keep_void, drop };

action action_of(GumboTag t) {
  switch (t) {
    case GUMBO_TAG_P:
    case GUMBO_TAG_DIV:
    case GUMBO_TAG_SPAN:
    case GUMBO_TAG_B:
    case GUMBO_TAG_I:
    case GUMBO_TAG_U:
    case GUMBO_TAG_S:
    case GUMBO_TAG_EM:
    case GUMBO_TAG_STRONG:
    case GUMBO_TAG_SMALL:
    case GUMBO_TAG_MARK:
    case GUMBO_TAG_SUB:
    case GUMBO_TAG_SUP:
    case GUMBO_TAG_DEL:
    case GUMBO_TAG_INS:
    case GUMBO_TAG_CODE:
    case GUMBO_TAG_KBD:
    case GUMBO_TAG_SAMP:
    case GUMBO_TAG_VAR:
    case GUMBO_TAG_PRE:
    case GUMBO_TAG_BLOCKQUOTE:
    case GUMBO_TAG_Q:
    case GUMBO_TAG_CITE:
    case GUMBO_TAG_ABBR:
    case GUMBO_TAG_TIME:
    case GUMBO_TAG_H1:
    case GUMBO_TAG_H2:
    case GUMBO_TAG_H3:
    case GUMBO_TAG_H4:
    case GUMBO_TAG_H5:
    case GUMBO_TAG_H6:
    case GUMBO_TAG_UL:
    case GUMBO_TAG_OL:
    case GUMBO_TAG_LI:
    case GUMBO_TAG_DL:
    case GUMBO_TAG_DT:
    case GUMBO_TAG_DD:
    case GUMBO_TAG_TABLE:
    case GUMBO_TAG_CAPTION:
    case GUMBO_TAG_THEAD:
    case GUMBO_TAG_TBODY:
    case GUMBO_TAG_TFOOT:
    case GUMBO_TAG_TR:
    case GUMBO_TAG_TH:
    case GUMBO_TAG_TD:
    case GUMBO_TAG_FIGURE:
    case GUMBO_TAG_FIGCAPTION:
    case GUMBO_TAG_A:
      return action::keep;
    case GUMBO_TAG_BR:
    case GUMBO_TAG_HR:
    case GUMBO_TAG_IMG:
      return action::keep_void;
    case GUMBO_TAG_SCRIPT:
    case GUMBO_TAG_STYLE:
    case GUMBO_TAG_IFRAME:
    case GUMBO_TAG_FRAME:
    case GUMBO_TAG_FRAMESET:
    case GUMBO_TAG_OBJECT:
    case GUMBO_TAG_EMBED:
    case GUMBO_TAG_APPLET:
    case GUMBO_TAG_FORM:
    case GUMBO_TAG_INPUT:
    case GUMBO_TAG_BUTTON:
    case GUMBO_TAG_SELECT:
    case GUMBO_TAG_TEXTAREA:
    case GUMBO_TAG_OPTION:
    case GUMBO_TAG_OPTGROUP:
    case GUMBO_TAG_SVG:
    case GUMBO_TAG_MATH:
    case GUMBO_TAG_TEMPLATE:
    case GUMBO_TAG_NOSCRIPT:
    case GUMBO_TAG_NOEMBED:
    case GUMBO_TAG_NOFRAMES:
    case GUMBO_TAG_XMP:
    case GUMBO_TAG_PLAINTEXT:
    case GUMBO_TAG_TITLE:
    case GUMBO_TAG_HEAD:
    case GUMBO_TAG_META:
    case GUMBO_TAG_LINK:
    case GUMBO_TAG_BASE:
    case GUMBO_TAG_AUDIO:
    case GUMBO_TAG_VIDEO:
    case GUMBO_TAG_CANVAS:
    case GUMBO_TAG_SOURCE:
    case GUMBO_TAG_TRACK:
    case GUMBO_TAG_PARAM:
    case GUMBO_TAG_ISINDEX:
    case GUMBO_TAG_KEYGEN:
    case GUMBO_TAG_MENUITEM:
      return action::drop;
    default:
      return action::unwrap;  // html, body, font, center, unknown and custom elements
  }
}

enum class url_kind : uint8_t { link, image };

// The URL as a browser reads it (tabs and newlines removed, leading and trailing controls
// and spaces trimmed) when its scheme is allowed for kind; false otherwise.
bool clean_url(std::string_view v, url_kind kind, std::string& out) {
  out.clear();
  for (char c : v) {
    if (c != '\t' && c != '\n' && c != '\r') out.push_back(c);
  }
  size_t b = 0, e = out.size();
  while (b < e && uint8_t(out[b]) <= 0x20) ++b;
  while (e > b && uint8_t(out[e - 1]) <= 0x20) --e;
  out = out.substr(b, e - b);
  // A scheme is ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ) ":" before any / ? #.
  size_t i = 0;
  if (!out.empty() && ((out[0] | 0x20) >= 'a' && (out[0] | 0x20) <= 'z')) {
    while (i < out.size() && (std::isalnum(static_cast<unsigned char>(out[i])) != 0 ||
                              out[i] == '+' || out[i] == '-' || out[i] == '.'))
      ++i;
  }
  if (i == 0 || i >= out.size() || out[i] != ':') {
    // No scheme: relative (a colon after / ? # is no scheme). A colon anywhere before them
    // that ended the scan early means an odd scheme: refused.
    const size_t colon = out.find(':');
    const size_t delim = out.find_first_of("/?#");
    return colon == std::string::npos || (delim != std::string::npos && delim < colon);
  }
  const std::string_view scheme(out.data(), i);
  if (base::ascii_iequals(scheme, "http") || base::ascii_iequals(scheme, "https")) return true;
  if (kind == url_kind::link) return base::ascii_iequals(scheme, "mailto");
  if (base::ascii_iequals(scheme, "data")) {
    const std::string_view rest = std::string_view(out).substr(i + 1);
    for (std::string_view t : {"image/png", "image/gif", "image/jpeg", "image/webp"}) {
      if (base::ascii_istarts_with(rest, t) && rest.size() > t.size() &&
          (rest[t.size()] == ';' || rest[t.size()] == ','))
        return true;
    }
  }
  return false;
}

bool allowed_attribute(GumboTag t, std::string_view name, bool* is_url) {
  *is_url = false;
  switch (t) {
    case GUMBO_TAG_A:
      *is_url = name == "href";
      return name == "href" || name == "title";
    case GUMBO_TAG_IMG:
      *is_url = name == "src";
      return name == "src" || name == "alt" || name == "title" || name == "width" ||
             name == "height";
    case GUMBO_TAG_TD:
    case GUMBO_TAG_TH:
      return name == "colspan" || name == "rowspan";
    case GUMBO_TAG_ABBR:
      return name == "title";
    case GUMBO_TAG_BLOCKQUOTE:
    case GUMBO_TAG_Q:
      *is_url = name == "cite";
      return name == "cite";
    default:
      return false;
  }
}

// Writes the open tag of a kept element; false when the element must go (an image without
// an acceptable source).
bool open_tag(const GumboElement& el, std::string& out, std::string& scratch) {
  const GumboTag t = el.tag;
  const size_t mark = out.size();
  out += '<';
  out += gumbo_normalized_tagname(t);
  bool has_src = false;
  for (unsigned i = 0; i < el.attributes.length; ++i) {
    const auto* a = static_cast<const GumboAttribute*>(el.attributes.data[i]);
    if (a->attr_namespace != GUMBO_ATTR_NAMESPACE_NONE) continue;
    bool is_url = false;
    if (!allowed_attribute(t, a->name, &is_url)) continue;
    std::string_view value = a->value;
    if (is_url) {
      if (!clean_url(value, t == GUMBO_TAG_IMG ? url_kind::image : url_kind::link, scratch))
        continue;
      value = scratch;
      if (t == GUMBO_TAG_IMG) has_src = true;
    }
    out += ' ';
    out += a->name;
    out += "=\"";
    append_escaped(value, out);
    out += '"';
  }
  if (t == GUMBO_TAG_IMG && !has_src) {
    out.resize(mark);
    return false;
  }
  if (t == GUMBO_TAG_A) out += " rel=\"nofollow noopener noreferrer\"";
  out += t == GUMBO_TAG_IMG || t == GUMBO_TAG_BR || t == GUMBO_TAG_HR ? " />" : ">";
  return true;
}

}  // namespace

void sanitize_html(std::string_view html, const std::vector<std::string>& mark, std::string& out) {
  if (mark.empty()) {
    sanitize_html(html, out);
    return;
  }
  std::string clean;
  sanitize_html(html, clean);
  mark_sanitized(clean, mark, out);
}

void mark_sanitized(std::string_view html, const std::vector<std::string>& words,
                    std::string& out) {
  if (words.empty()) {
    out += html;
    return;
  }
  size_t i = 0;
  while (i < html.size()) {
    // The text up to the next tag, marked; then the tag as it is.
    const size_t lt = html.find('<', i);
    const size_t text_end = lt == std::string_view::npos ? html.size() : lt;
    mark_escaped(html.substr(i, text_end - i), words, out);
    if (lt == std::string_view::npos) break;
    const size_t gt = html.find('>', lt);
    const size_t tag_end = gt == std::string_view::npos ? html.size() : gt + 1;
    out += html.substr(lt, tag_end - lt);
    i = tag_end;
  }
}

void sanitize_html(std::string_view html, std::string& out) {
  if (html.size() > sanitize_max_input) html = html.substr(0, sanitize_max_input);
  GumboOptions opt = kGumboDefaultOptions;
  opt.fragment_context = GUMBO_TAG_DIV;
  opt.fragment_namespace = GUMBO_NAMESPACE_HTML;
  opt.max_errors = 0;  // errors are not kept: nothing reads them
  GumboOutput* doc = gumbo_parse_with_options(&opt, html.data(), html.size());
  // An explicit stack, not recursion: a hostile fragment may nest thousands deep.
  struct frame {
    const GumboNode* node;
    unsigned next;
    const char* close;  // tag to close after the children, or null (unwrapped)
  };
  std::vector<frame> stack;
  std::string scratch;
  int links_open = 0;
  stack.push_back({doc->root, 0, nullptr});
  while (!stack.empty()) {
    frame& f = stack.back();
    const GumboVector& kids = f.node->v.element.children;
    if (f.next >= kids.length) {
      if (f.close != nullptr) {
        if (f.node->v.element.tag == GUMBO_TAG_A) --links_open;
        out += "</";
        out += f.close;
        out += '>';
      }
      stack.pop_back();
      continue;
    }
    const auto* n = static_cast<const GumboNode*>(kids.data[f.next++]);
    switch (n->type) {
      case GUMBO_NODE_TEXT:
      case GUMBO_NODE_WHITESPACE:
      case GUMBO_NODE_CDATA:
        append_escaped(n->v.text.text, out);
        break;
      case GUMBO_NODE_ELEMENT:
      case GUMBO_NODE_TEMPLATE: {
        const GumboElement& el = n->v.element;
        if (n->type == GUMBO_NODE_TEMPLATE || el.tag_namespace != GUMBO_NAMESPACE_HTML) break;
        switch (action_of(el.tag)) {
          case action::drop:
            break;
          case action::unwrap:
            stack.push_back({n, 0, nullptr});  // f is invalid from here
            break;
          case action::keep_void:
            open_tag(el, out, scratch);
            break;
          case action::keep:
            // A link inside a link (foster parenting makes them) would parse back as two:
            // the inner one is unwrapped.
            if (el.tag == GUMBO_TAG_A && links_open > 0) {
              stack.push_back({n, 0, nullptr});
              break;
            }
            if (!open_tag(el, out, scratch)) break;
            if (el.tag == GUMBO_TAG_A) ++links_open;
            // The parser drops a newline right after <pre>: one that was content is
            // written twice, so the output parses back to the same text.
            if (el.tag == GUMBO_TAG_PRE && el.children.length > 0) {
              const auto* first = static_cast<const GumboNode*>(el.children.data[0]);
              if ((first->type == GUMBO_NODE_TEXT || first->type == GUMBO_NODE_WHITESPACE) &&
                  first->v.text.text[0] == '\n')
                out += '\n';
            }
            stack.push_back({n, 0, gumbo_normalized_tagname(el.tag)});
            break;
        }
        break;
      }
      default:
        break;  // comments, the document
    }
  }
  gumbo_destroy_output(&opt, doc);
}

}  // namespace feedplane::reflector
