#include "unicode.h"

#include <utf8proc.h>

#include <cstdlib>
#include <cstring>

namespace feedplane::matcher::unicode {

bool is_word_code_point(int32_t cp) {
  if (cp < 0) return false;
  const int cat = utf8proc_category(cp);
  if (cat >= UTF8PROC_CATEGORY_LU && cat <= UTF8PROC_CATEGORY_NO) return true;
  return cat == UTF8PROC_CATEGORY_CF && cp != 0x200B;
}

size_t decode(const uint8_t* s, size_t n, int32_t* cp) {
  const auto len = utf8proc_iterate(s, static_cast<utf8proc_ssize_t>(n < 4 ? n : 4), cp);
  if (len <= 0) {
    *cp = -1;
    return 1;
  }
  return static_cast<size_t>(len);
}

size_t fold_append(const uint8_t* s, size_t len, raw_buffer<uint8_t>& out) {
  utf8proc_uint8_t* folded = nullptr;
  const auto n = utf8proc_map(
      s, static_cast<utf8proc_ssize_t>(len), &folded,
      static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPAT | UTF8PROC_COMPOSE |
                                     UTF8PROC_CASEFOLD | UTF8PROC_IGNORE));
  size_t appended = 0;
  if (n > 0) {
    appended = static_cast<size_t>(n);
    const size_t at = out.size();
    out.resize(at + appended);
    std::memcpy(out.data() + at, folded, appended);
  }
  std::free(folded);
  return appended;
}

}  // namespace feedplane::matcher::unicode
