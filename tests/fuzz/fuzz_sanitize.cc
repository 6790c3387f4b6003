// The HTML sanitizer on arbitrary bytes: never crashes; a second pass is a fixed point
// (the first may re-nest what foster parenting built; nothing else changes after it); the
// output never holds a script element, and no tag it writes has an event handler; marking
// words on the sanitized output (as feeds do per subscription) only adds <mark> around
// text: remove the marks and the sanitized bytes are back (less any marks of their own), and a
// sanitizer pass over the marked output keeps every mark.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "feedplane/base/ascii.h"
#include "feedplane/reflector/sanitize.h"

namespace {

// Text and attribute values are escaped in the output, so '<' starts a tag and '"' inside
// a tag delimits a value: attribute names are the words after a space outside quotes.
bool has_event_handler(std::string_view html) {
  bool in_tag = false, in_value = false;
  for (size_t i = 0; i < html.size(); ++i) {
    const char c = html[i];
    if (!in_tag) {
      in_tag = c == '<';
    } else if (in_value) {
      in_value = c != '"';
    } else if (c == '"') {
      in_value = true;
    } else if (c == '>') {
      in_tag = false;
    } else if (c == ' ' && feedplane::base::ascii_istarts_with(html.substr(i + 1), "on")) {
      return true;
    }
  }
  return false;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace rf = feedplane::reflector;
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  static const std::vector<std::string> none;
  std::string once, twice, thrice;
  rf::sanitize_html(in, none, once);
  rf::sanitize_html(once, none, twice);
  rf::sanitize_html(twice, none, thrice);
  if (twice != thrice) std::abort();
  if (feedplane::base::ascii_ifind(once, "<script") != std::string_view::npos) std::abort();
  if (has_event_handler(once)) std::abort();
  // Words an attacker would aim at: entity names, tag and attribute names, and text.
  static const std::vector<std::string> words = {"amp", "lt",   "quot",   "39", "a", "href",
                                                 "img", "mark", "script", "on", "x"};
  std::string marked;
  rf::mark_sanitized(once, words, marked);
  // The source may hold <mark> elements of its own: compare both without any.
  const auto unmark = [](std::string_view h) {
    std::string out;
    for (size_t i = 0; i < h.size();) {
      if (h.substr(i).starts_with("<mark>")) {
        i += 6;
      } else if (h.substr(i).starts_with("</mark>")) {
        i += 7;
      } else {
        out += h[i++];
      }
    }
    return out;
  };
  if (unmark(marked) != unmark(once)) std::abort();
  std::string again;
  rf::sanitize_html(marked, none, again);
  if (feedplane::base::ascii_ifind(again, "<script") != std::string_view::npos) std::abort();
  if (has_event_handler(marked)) std::abort();
  return 0;
}
