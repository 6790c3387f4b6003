// Tokenizer on arbitrary bytes: the Highway, scalar and reference tokenizers agree, and
// markup stripping never crashes.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "feedplane/matcher/text.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace fm = feedplane::matcher;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  fm::token_buffer simd, scalar, reference;
  fm::tokenize(text, simd);
  fm::tokenize_scalar(text, scalar);
  fm::tokenize_reference(text, reference);
  if (simd.size() != reference.size() || scalar.size() != reference.size()) std::abort();
  for (size_t i = 0; i < reference.size(); ++i) {
    if (simd.word(i) != reference.word(i) || scalar.word(i) != reference.word(i)) std::abort();
  }
  std::string visible;
  fm::html_to_text(text, visible);
  simd.clear();
  fm::tokenize(visible, simd);
  return 0;
}
