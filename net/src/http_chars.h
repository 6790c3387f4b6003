// Character classes shared by the HTTP request and response parsers (private to net/).
#pragma once

namespace feedplane::net {

// RFC 9110 5.6.2 tchar: the characters of a token (methods, header field names).
constexpr bool is_tchar(unsigned char c) {
  if (c >= '0' && c <= '9') return true;
  if ((c | 0x20) >= 'a' && (c | 0x20) <= 'z') return true;
  switch (c) {
    case '!':
    case '#':
    case '$':
    case '%':
    case '&':
    case '\'':
    case '*':
    case '+':
    case '-':
    case '.':
    case '^':
    case '_':
    case '`':
    case '|':
    case '~':
      return true;
    default:
      return false;
  }
}

}  // namespace feedplane::net
