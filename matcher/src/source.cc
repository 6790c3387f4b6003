#include "feedplane/matcher/source.h"

#include "feedplane/base/ascii.h"
#include "feedplane/matcher/article.h"

namespace feedplane::matcher {

namespace {

char lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c; }
bool digit(char c) { return c >= '0' && c <= '9'; }

std::string make_token(char kind, std::string_view value) {
  std::string t;
  t.reserve(2 + value.size());
  t += source_token_mark;
  t += kind;
  t += value;
  return t;
}

}  // namespace

std::string source_host_token(std::string_view host) { return make_token('h', host); }

std::string source_id_token(uint64_t id) {
  char hex[16];
  base::hex16(id, hex);
  return make_token('i', {hex, sizeof hex});
}

std::string_view url_host(std::string_view url) {
  const size_t scheme = url.find("://");
  if (scheme == std::string_view::npos) return {};
  std::string_view rest = url.substr(scheme + 3);
  rest = rest.substr(0, rest.find_first_of("/?#"));
  if (const size_t at = rest.rfind('@'); at != std::string_view::npos) rest.remove_prefix(at + 1);
  if (!rest.empty() && rest[0] == '[') return rest.substr(0, rest.find(']') + 1);  // IPv6
  return rest.substr(0, rest.find(':'));
}

void source_scope::push(char kind, std::string_view value) {
  bounds_.push_back(static_cast<uint32_t>(text_.size()));
  text_ += source_token_mark;
  text_ += kind;
  text_ += value;
  bounds_.push_back(static_cast<uint32_t>(text_.size()));
  hashes_.push_back(word_hash(token(hashes_.size())));
}

void source_scope::assign(std::string_view host, uint64_t id) {
  host_.clear();
  for (char c : host) host_ += lower(c);
  if (!host_.empty() && host_.back() == '.') host_.pop_back();
  id_ = id;
  text_.clear();
  bounds_.clear();
  hashes_.clear();
  // Host tokens (source.h): check the labels first, then push the suffixes.
  const std::string_view h = host_;
  size_t labels = 1;
  bool numeric = true, valid = !h.empty() && h.size() <= max_source_host_bytes && h.back() != '.';
  for (size_t i = 0; i < h.size() && valid; ++i) {
    const char c = h[i];
    if (c == '.') {
      valid = i != 0 && h[i - 1] != '.';
      ++labels;
    } else {
      valid = c != ':' && c != '[';  // an IPv6 literal
      numeric &= digit(c);
    }
  }
  if (valid && labels >= 2) {
    if (numeric) {
      push('h', h);
    } else {
      // Every suffix starting at a label with at least one more label after it.
      for (size_t at = 0; at != std::string_view::npos;) {
        const std::string_view suffix = h.substr(at);
        const size_t dot = suffix.find('.');
        if (dot == std::string_view::npos) break;
        push('h', suffix);
        at += dot + 1;
      }
    }
  }
  if (id != 0) {
    char hex[16];
    base::hex16(id, hex);
    push('i', {hex, sizeof hex});
  }
}

}  // namespace feedplane::matcher
