// Fuzz target: arbitrary bytes as a JSON Feed (the parser sees them after a '{').
#include <cstddef>
#include <cstdint>
#include <string>

#include "feedplane/feed/parser.h"
#include "feedplane/feed/render.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static feedplane::feed::parser parser;
  static feedplane::feed::feed f;
  std::string doc = "{";
  doc.append(reinterpret_cast<const char*>(data), size);
  feedplane::feed::parse_options o;
  o.base_url = "https://fuzz.example/feed.json";
  // Limits small enough for the fuzzer's input length to reach (tests/CMakeLists.txt).
  o.max_entries = 100;
  o.max_bytes = 128 << 10;
  parser.parse(doc, o, f);
  std::string out;
  feedplane::feed::render_json(f, out);
  return 0;
}
