// Fuzz target: resolve_html_urls (relative URLs in feed HTML) on arbitrary bytes. Never
// crashes; when nothing is relative it writes nothing; a second pass over its output finds
// nothing left to resolve (every URL it writes is absolute and stays inside its attribute,
// whatever the base holds). The first byte picks the base.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "feedplane/feed/text.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static constexpr const char* bases[] = {"http://fuzz.example/dir/page.html", "https://h/",
                                          "http://h/a b/\"q'<x>=`,/", "mailto:x@y", "x:"};
  if (size == 0) return 0;
  const std::string_view base = bases[data[0] % 5];
  const std::string_view html(reinterpret_cast<const char*>(data + 1), size - 1);
  static std::string once, twice;
  if (!feedplane::feed::resolve_html_urls(html, base, once)) {
    if (!once.empty()) std::abort();
    return 0;
  }
  if (feedplane::feed::resolve_html_urls(once, base, twice)) std::abort();
  return 0;
}
