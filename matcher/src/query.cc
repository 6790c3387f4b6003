// Query parser: lexer, recursive descent into query_node, then disjunctive normal form.
#include "feedplane/matcher/query.h"

#include "feedplane/base/errc.h"
#include "feedplane/matcher/source.h"

#include <algorithm>
#include <iterator>
#include <string>
#include <utility>

namespace feedplane::matcher {

namespace {
using base::errc_entry;
// Indexed by the enum value; the static_assert keeps the table in step with it.
constexpr errc_entry k_errc_table[] = {
    {"ok", "no error"},
    {"empty_query", "the query has no words"},
    {"unbalanced_quotes", "a quote is never closed"},
    {"empty_phrase", "a quoted phrase has no words"},
    {"unbalanced_parentheses", "a parenthesis is never closed or never opened"},
    {"empty_parentheses", "a pair of parentheses holds nothing"},
    {"dangling_operator", "an operator (OR, AND, NOT, '-', title:) has nothing to apply to"},
    {"too_deep", "the query nests deeper than the limit"},
    {"word_too_long", "a word is longer than the limit"},
    {"too_many_words", "the query has more words than the limit"},
    {"too_many_clauses", "OR and NOT expand the query to more AND-clauses than the limit"},
    {"never_matches", "every alternative excludes a word it requires"},
    {"only_exclusions", "an alternative excludes words but requires none"},
    {"only_frequent_words", "an alternative requires only very frequent words"},
    {"bad_source", "a source: term names no host or source id"},
};
static_assert(std::size(k_errc_table) == static_cast<size_t>(errc::bad_source) + 1);
}  // namespace

std::string_view errc_name(errc e) { return base::errc_lookup(k_errc_table, e).name; }

std::string_view errc_message(errc e) { return base::errc_lookup(k_errc_table, e).message; }

const std::vector<std::string>& default_frequent_words() {
  // The first 29 lines of bench/workload/data/english_by_rank.txt.
  static const std::vector<std::string> words = {
      "the", "you", "of",   "i",    "and", "to",   "in",  "that", "was",  "it",
      "is",  "me",  "for",  "what", "as",  "this", "on",  "know", "with", "by",
      "no",  "he",  "have", "at",   "my",  "from", "his", "just", "an"};
  return words;
}

namespace {

enum class tok : uint8_t { end, lparen, rparen, op_or, op_and, op_not, minus, title, word };

struct token {
  tok type;
  size_t column;                   // 1-based
  std::vector<std::string> words;  // tok::word: one word, or a phrase, or a source token
  bool quoted = false;
  term_kind kind = term_kind::words;
};

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}
bool ends_bare(char c) { return is_space(c) || c == '(' || c == ')' || c == '"'; }

query_error fail(errc code, size_t column, std::string message) {
  return {code, column, std::move(message)};
}

class parser {
 public:
  parser(std::string_view text, size_t max_depth, token_buffer& scratch)
      : text_(text), max_depth_(max_depth), scratch_(scratch) {}

  query_error run(query_node& out) {
    if (auto err = lex(); !err.ok()) return err;
    if (tokens_.size() == 1) return fail(errc::empty_query, 0, "empty query: it has no words");
    if (auto err = parse_or(out); !err.ok()) return err;
    if (peek().type == tok::rparen) {
      return fail(errc::unbalanced_parentheses, peek().column,
                  "unbalanced parentheses: ')' at column " + std::to_string(peek().column) +
                      " has no matching '('");
    }
    return {};
  }

 private:
  std::vector<std::string> fold(std::string_view s) {
    scratch_.clear();
    tokenize(s, scratch_);
    std::vector<std::string> words;
    words.reserve(scratch_.size());
    for (size_t i = 0; i < scratch_.size(); ++i) words.emplace_back(scratch_.word(i));
    return words;
  }

  query_error lex() {
    tokens_.reserve(16);
    size_t i = 0;
    const size_t n = text_.size();
    while (i < n) {
      const char c = text_[i];
      const size_t column = i + 1;
      if (is_space(c)) {
        ++i;
      } else if (c == '(') {
        tokens_.push_back({tok::lparen, column, {}});
        ++i;
      } else if (c == ')') {
        tokens_.push_back({tok::rparen, column, {}});
        ++i;
      } else if (c == '"') {
        const size_t close = text_.find('"', i + 1);
        if (close == std::string_view::npos) {
          return fail(errc::unbalanced_quotes, column,
                      "unbalanced quotes: the '\"' at column " + std::to_string(column) +
                          " is never closed");
        }
        auto words = fold(text_.substr(i + 1, close - i - 1));
        if (words.empty()) {
          return fail(errc::empty_phrase, column,
                      "empty quoted phrase at column " + std::to_string(column));
        }
        tokens_.push_back({tok::word, column, std::move(words), true});
        i = close + 1;
      } else if (c == '-' && i + 1 < n && !is_space(text_[i + 1]) && text_[i + 1] != ')') {
        tokens_.push_back({tok::minus, column, {}});
        ++i;
      } else if (c == '-' && (i + 1 == n || is_space(text_[i + 1]) || text_[i + 1] == ')')) {
        return fail(errc::dangling_operator, column,
                    "'-' at column " + std::to_string(column) +
                        " must be followed directly by a word, phrase or group to exclude");
      } else if (text_.substr(i, 7) == "source:") {
        size_t j = i + 7;
        while (j < n && !ends_bare(text_[j])) ++j;
        token t{tok::word, column, {}};
        if (auto err = source_term(i + 7, j, column, t); !err.ok()) return err;
        tokens_.push_back(std::move(t));
        i = j;
      } else if (text_.substr(i, 6) == "title:") {
        if (i + 6 == n || is_space(text_[i + 6]) || text_[i + 6] == ')') {
          return fail(errc::dangling_operator, column,
                      "'title:' at column " + std::to_string(column) +
                          " must be followed directly by a word, phrase or group");
        }
        tokens_.push_back({tok::title, column, {}});
        i += 6;
      } else {
        size_t j = i;
        while (j < n && !ends_bare(text_[j])) ++j;
        const std::string_view bare = text_.substr(i, j - i);
        if (bare == "OR") {
          tokens_.push_back({tok::op_or, column, {}});
        } else if (bare == "AND") {
          tokens_.push_back({tok::op_and, column, {}});
        } else if (bare == "NOT") {
          tokens_.push_back({tok::op_not, column, {}});
        } else if (auto words = fold(bare); !words.empty()) {
          tokens_.push_back({tok::word, column, std::move(words)});
        }  // punctuation alone ("&", "|") carries no word: skipped
        i = j;
      }
    }
    tokens_.push_back({tok::end, n + 1, {}});
    return {};
  }

  // The term of the `source:` at `column` whose argument is text_[begin, end): a host
  // (source.h: case folded, one trailing dot dropped) or a source id (16 hex digits).
  query_error source_term(size_t begin, size_t end, size_t column, token& out) const {
    std::string_view arg = text_.substr(begin, end - begin);
    size_t shown = std::min<size_t>(arg.size(), 40);
    while (shown < arg.size() && (static_cast<unsigned char>(arg[shown]) & 0xC0) == 0x80) --shown;
    const std::string what = "'source:" + std::string(arg.substr(0, shown)) +
                             (shown < arg.size() ? "...'" : "'") + " at column " +
                             std::to_string(column);
    auto bad = [&](size_t at, const std::string& why) {
      return fail(errc::bad_source, at, what + ": " + why);
    };
    if (arg.empty()) {
      return fail(errc::bad_source, column,
                  "'source:' at column " + std::to_string(column) +
                      " needs a host or a source id right after it (source:example.com, "
                      "source:0123456789abcdef)");
    }
    if (arg.size() > 1 && arg.back() == '.') arg.remove_suffix(1);
    if (arg.size() > max_source_host_bytes) {
      return bad(column, "a host name is at most " + std::to_string(max_source_host_bytes) +
                             " bytes; this one has " + std::to_string(arg.size()));
    }
    std::string host;
    host.reserve(arg.size());
    size_t labels = 1, label_begin = 0;
    bool numeric = true, last_numeric = true, hex = arg.size() == 16;
    for (size_t k = 0; k <= arg.size(); ++k) {
      const size_t at = begin + k + 1;
      if (k == arg.size() || arg[k] == '.') {
        if (k == label_begin) return bad(at, "empty label at column " + std::to_string(at));
        if (k - label_begin > 63) {
          return bad(begin + label_begin + 1, "a label is at most 63 bytes; the one at column " +
                                                  std::to_string(begin + label_begin + 1) +
                                                  " has " + std::to_string(k - label_begin));
        }
        if (k == arg.size()) break;
        host += '.';
        ++labels;
        label_begin = k + 1;
        last_numeric = true;
        hex = false;
        continue;
      }
      char c = arg[k];
      if (c >= 'A' && c <= 'Z') c = static_cast<char>(c + 32);
      const bool digit = c >= '0' && c <= '9';
      if (!digit && !(c >= 'a' && c <= 'z') && c != '-' && c != '_' && c != '~') {
        if (static_cast<unsigned char>(c) >= 0x80) {
          return bad(at, "a host name is ASCII: write a non-ASCII name in its xn-- form");
        }
        return bad(at, "'" + std::string(1, c) + "' at column " + std::to_string(at) +
                           " cannot be in a host name (letters, digits, '-', '_', '~', '.')");
      }
      numeric &= digit;
      last_numeric &= digit;
      hex &= digit || (c >= 'a' && c <= 'f');
      host += c;
    }
    if (labels == 1) {
      if (hex) {
        uint64_t id = 0;
        for (char c : host) id = id << 4 | static_cast<uint64_t>(c <= '9' ? c - '0' : c - 'a' + 10);
        out.words.push_back(source_id_token(id));
        out.kind = term_kind::source_id;
        return {};
      }
      return bad(column,
                 "a single label is not a scope: give a host with at least two labels "
                 "(example.com; a bare top-level domain is not indexed) or a source id (16 hex "
                 "digits)");
    }
    if (last_numeric && !numeric) {
      return bad(column, "a top-level label is never a number (give an IPv4 address whole)");
    }
    out.words.push_back(source_host_token(host));
    out.kind = term_kind::source_host;
    return {};
  }

  const token& peek() const { return tokens_[pos_]; }
  static bool ends_operand(tok t) {
    return t == tok::end || t == tok::rparen || t == tok::op_or || t == tok::op_and;
  }
  static const char* name(tok t) {
    switch (t) {
      case tok::op_or:
        return "OR";
      case tok::op_and:
        return "AND";
      case tok::op_not:
        return "NOT";
      case tok::minus:
        return "'-'";
      case tok::title:
        return "'title:'";
      default:
        return "?";
    }
  }

  query_error parse_or(query_node& out) {
    std::vector<query_node> alternatives(1);
    if (auto err = parse_and(alternatives.back()); !err.ok()) return err;
    while (peek().type == tok::op_or) {
      const size_t column = peek().column;
      ++pos_;
      if (ends_operand(peek().type)) {
        return fail(errc::dangling_operator, column,
                    "OR at column " + std::to_string(column) + " has nothing after it");
      }
      alternatives.emplace_back();
      if (auto err = parse_and(alternatives.back()); !err.ok()) return err;
    }
    if (alternatives.size() == 1) {
      out = std::move(alternatives[0]);
    } else {
      out.type = query_node::kind::any;
      out.children = std::move(alternatives);
    }
    return {};
  }

  query_error parse_and(query_node& out) {
    std::vector<query_node> items;
    items.reserve(8);  // most queries' words: one allocation, no moves of grown nodes
    while (true) {
      const tok t = peek().type;
      if (t == tok::end || t == tok::rparen || t == tok::op_or) break;
      if (t == tok::op_and) {
        const size_t column = peek().column;
        if (items.empty())
          return fail(errc::dangling_operator, column,
                      "AND at column " + std::to_string(column) + " has nothing before it");
        ++pos_;
        if (ends_operand(peek().type)) {
          return fail(errc::dangling_operator, column,
                      "AND at column " + std::to_string(column) + " has nothing after it");
        }
        continue;
      }
      items.emplace_back();
      if (auto err = parse_unary(items.back()); !err.ok()) return err;
    }
    if (items.empty()) {
      const token& t = peek();
      if (t.type == tok::op_or)
        return fail(errc::dangling_operator, t.column,
                    "OR at column " + std::to_string(t.column) + " has nothing before it");
      if (t.type == tok::rparen) {
        if (pos_ > 0 && tokens_[pos_ - 1].type == tok::lparen) {
          const size_t column = tokens_[pos_ - 1].column;
          return fail(errc::empty_parentheses, column,
                      "empty parentheses at column " + std::to_string(column));
        }
        return fail(errc::unbalanced_parentheses, t.column,
                    "unbalanced parentheses: ')' at column " + std::to_string(t.column) +
                        " has no matching '('");
      }
      return fail(errc::empty_query, 0, "empty query: it has no words");
    }
    if (items.size() == 1) {
      out = std::move(items[0]);
    } else {
      out.type = query_node::kind::all;
      out.children = std::move(items);
    }
    return {};
  }

  // Every construct that recurses (NOT, '-', title:, a group) goes one level deeper; the
  // limit keeps the recursion here, and in every walk of the tree, off the end of the stack.
  query_error parse_unary(query_node& out) {
    const token& t = peek();
    const bool nests = t.type == tok::op_not || t.type == tok::minus || t.type == tok::title ||
                       t.type == tok::lparen;
    if (nests && depth_ == max_depth_) {
      return fail(
          errc::too_deep, t.column,
          "too deeply nested: " + std::string(t.type == tok::lparen ? "'('" : name(t.type)) +
              " at column " + std::to_string(t.column) + " opens level " +
              std::to_string(depth_ + 1) + " of parentheses, NOT, '-' and title: (the limit is " +
              std::to_string(max_depth_) + ")");
    }
    if (!nests) return parse_operand(out);
    ++depth_;
    auto err = parse_nested(out);
    --depth_;
    return err;
  }

  query_error parse_nested(query_node& out) {
    const token& t = peek();
    if (t.type == tok::op_not || t.type == tok::minus || t.type == tok::title) {
      const tok type = t.type;
      const size_t column = t.column;
      ++pos_;
      if (ends_operand(peek().type)) {
        return fail(errc::dangling_operator, column,
                    std::string(name(type)) + " at column " + std::to_string(column) +
                        " has nothing to apply to");
      }
      query_node child;
      if (auto err = parse_unary(child); !err.ok()) return err;
      if (type == tok::title) {
        set_title(child);
        out = std::move(child);
      } else {
        out.type = query_node::kind::negate;
        out.children.push_back(std::move(child));
      }
      return {};
    }
    if (t.type == tok::lparen) {
      const size_t column = t.column;
      ++pos_;
      if (peek().type == tok::rparen)
        return fail(errc::empty_parentheses, column,
                    "empty parentheses at column " + std::to_string(column));
      if (auto err = parse_or(out); !err.ok()) return err;
      if (peek().type != tok::rparen) {
        return fail(
            errc::unbalanced_parentheses, column,
            "unbalanced parentheses: '(' at column " + std::to_string(column) + " is never closed");
      }
      ++pos_;
      return {};
    }
    return parse_operand(out);
  }

  query_error parse_operand(query_node& out) {
    const token& t = peek();
    if (t.type == tok::word) {
      out.type = query_node::kind::term;
      out.term.words = std::move(tokens_[pos_].words);
      out.term.kind = tokens_[pos_].kind;
      ++pos_;
      return {};
    }
    return fail(errc::empty_query, t.column,
                "unexpected token at column " + std::to_string(t.column));  // unreachable
  }

  // A source term is about the article, not its title: title: leaves it as it is.
  static void set_title(query_node& node) {
    node.term.title = node.term.kind == term_kind::words;
    for (auto& c : node.children) set_title(c);
  }

  std::string_view text_;
  size_t max_depth_;
  size_t depth_ = 0;  // constructs open around the current token
  token_buffer& scratch_;
  std::vector<token> tokens_;
  size_t pos_ = 0;
};

size_t count_words(const query_node& node) {
  size_t n = node.type == query_node::kind::term ? node.term.words.size() : 0;
  for (const auto& c : node.children) n += count_words(c);
  return n;
}

// Of the words only: a source term has its own limit (source_term).
std::string_view longest_word(const query_node& node) {
  std::string_view longest;
  for (const auto& w : node.term.words) {
    if (node.term.kind == term_kind::words && w.size() > longest.size()) longest = w;
  }
  for (const auto& c : node.children) {
    const std::string_view l = longest_word(c);
    if (l.size() > longest.size()) longest = l;
  }
  return longest;
}

using dnf = std::vector<query_clause>;

// Disjunctive normal form of node (negated if `negated`), with De Morgan for NOT.
// Fails if an intermediate form has more than limit clauses.
bool to_dnf(const query_node& node, bool negated, size_t limit, dnf& out) {
  using kind = query_node::kind;
  switch (node.type) {
    case kind::term: {
      query_clause c;
      (negated ? c.must_not : c.must).push_back(node.term);
      out.push_back(std::move(c));
      return true;
    }
    case kind::negate:
      return to_dnf(node.children[0], !negated, limit, out);
    case kind::any:
    case kind::all: {
      if ((node.type == kind::any) != negated) {  // a union of the children's forms
        for (const auto& child : node.children) {
          dnf part;
          if (!to_dnf(child, negated, limit, part)) return false;
          for (auto& c : part) out.push_back(std::move(c));
          if (out.size() > limit) return false;
        }
        return true;
      }
      dnf acc(1);  // a product: one empty clause, times each child's form
      for (const auto& child : node.children) {
        if (child.type == kind::term) {  // the common operand: straight into every clause
          for (query_clause& a : acc) (negated ? a.must_not : a.must).push_back(child.term);
          continue;
        }
        dnf part;
        if (!to_dnf(child, negated, limit, part)) return false;
        if (acc.size() * part.size() > limit) return false;
        if (part.size() == 1) {
          // The common case (a term, or an AND below): extend each clause in place, moving
          // into the last, instead of copying every clause built so far once per operand.
          query_clause& p = part[0];
          for (size_t i = 0; i < acc.size(); ++i) {
            query_clause& a = acc[i];
            if (i + 1 < acc.size()) {
              a.must.insert(a.must.end(), p.must.begin(), p.must.end());
              a.must_not.insert(a.must_not.end(), p.must_not.begin(), p.must_not.end());
            } else {
              a.must.insert(a.must.end(), std::make_move_iterator(p.must.begin()),
                            std::make_move_iterator(p.must.end()));
              a.must_not.insert(a.must_not.end(), std::make_move_iterator(p.must_not.begin()),
                                std::make_move_iterator(p.must_not.end()));
            }
          }
          continue;
        }
        dnf next;
        next.reserve(acc.size() * part.size());
        for (const auto& a : acc) {
          for (const auto& p : part) {
            query_clause c = a;
            c.must.insert(c.must.end(), p.must.begin(), p.must.end());
            c.must_not.insert(c.must_not.end(), p.must_not.begin(), p.must_not.end());
            next.push_back(std::move(c));
          }
        }
        acc = std::move(next);
      }
      for (auto& c : acc) out.push_back(std::move(c));
      return out.size() <= limit;
    }
  }
  return false;
}

// Keeps the first of equal terms, in order, in place (no second vector).
void dedupe(std::vector<query_term>& terms) {
  size_t kept = 0;
  for (size_t i = 0; i < terms.size(); ++i) {
    const auto end = terms.begin() + std::ptrdiff_t(kept);
    if (std::find(terms.begin(), end, terms[i]) != end) continue;
    if (i != kept) terms[kept] = std::move(terms[i]);
    ++kept;
  }
  terms.erase(terms.begin() + std::ptrdiff_t(kept), terms.end());
}

// True if the clause cannot match any article: it excludes what it requires.
bool contradictory(const query_clause& c) {
  for (const auto& no : c.must_not) {
    for (const auto& yes : c.must) {
      if (no == yes) return true;
      if (no.words.size() == 1 && (!no.title || yes.title) &&
          std::find(yes.words.begin(), yes.words.end(), no.words[0]) != yes.words.end()) {
        return true;
      }
    }
  }
  return false;
}

bool same_clause(const query_clause& a, const query_clause& b) {
  auto same_set = [](const std::vector<query_term>& x, const std::vector<query_term>& y) {
    if (x.size() != y.size()) return false;
    for (const auto& t : x) {
      if (std::find(y.begin(), y.end(), t) == y.end()) return false;
    }
    return true;
  };
  return same_set(a.must, b.must) && same_set(a.must_not, b.must_not);
}

}  // namespace

query_parser::query_parser(query_limits limits, const std::vector<std::string>& frequent)
    : limits_(limits), frequent_(frequent) {
  std::sort(frequent_.begin(), frequent_.end());
  for (const std::string& w : frequent_) {
    frequent_lengths_ |= w.size() < 64 ? uint64_t{1} << w.size() : 0;
    if (!w.empty()) frequent_firsts_[uint8_t(w[0]) >> 6] |= uint64_t{1} << (uint8_t(w[0]) & 63);
  }
}

bool query_parser::is_frequent(std::string_view word) const {
  // Why it is fast: two bit tests turn away most words (longer, or another first letter)
  // before the binary search's string compares; called for every word of every query.
  if (!word.empty() && word.size() < 64 &&
      ((frequent_lengths_ >> word.size() & 1) == 0 ||
       (frequent_firsts_[uint8_t(word[0]) >> 6] >> (uint8_t(word[0]) & 63) & 1) == 0)) {
    return false;
  }
  auto it = std::lower_bound(frequent_.begin(), frequent_.end(), word,
                             [](const std::string& a, std::string_view b) { return a < b; });
  return it != frequent_.end() && *it == word;
}

// Why it is fast: one pass over the bytes with no tokenizer call, no allocation and no
// write beyond the folded copy (the bulk API validates every line with it, and the index
// files every plain query through it).
size_t query_parser::split_plain(std::string_view text, char* folded, std::string_view* words,
                                 size_t max_distinct) const {
  if (text.empty() || text.size() > split_plain_max_bytes) return 0;
  size_t n = 0, begin = 0, occurrences = 0;
  bool all_frequent = true;
  for (size_t i = 0; i <= text.size(); ++i) {
    const char c = i < text.size() ? text[i] : ' ';
    if (c != ' ') {
      const bool lower = c >= 'a' && c <= 'z', upper = c >= 'A' && c <= 'Z';
      if (!lower && !upper && !(c >= '0' && c <= '9')) return 0;
      folded[i] = upper ? static_cast<char>(c + 32) : c;
      continue;
    }
    if (i == begin) return 0;  // leading, trailing or double space
    if (i - begin > limits_.max_word_bytes) return 0;
    const std::string_view raw = text.substr(begin, i - begin);
    if (raw == "OR" || raw == "AND" || raw == "NOT") return 0;
    const std::string_view w(folded + begin, i - begin);
    begin = i + 1;
    // Repeated words count toward the limit as the parser counts them.
    if (++occurrences > limits_.max_words) return 0;
    if (std::find(words, words + n, w) != words + n) continue;
    if (n == max_distinct) return 0;
    words[n++] = w;
    if (all_frequent) all_frequent = is_frequent(w);
  }
  return all_frequent ? 0 : n;
}

// Why it is fast: one pass over the text, the words folded into the parser's scratch, and
// the tree and the one clause written into out's own vectors (reused when out is: the
// install at a restart allocates nothing for a query shaped like the last), where the
// general parser builds a token list, a tree, intermediate clause forms, and frees out's.
// False, out untouched, for anything else: an operator, a quote, a parenthesis, a scope,
// or a query the general parser rejects (its message is the general parser's).
bool query_parser::parse_plain(std::string_view text, parsed_query& out) {
  scratch_.clear();
  plain_terms_.clear();
  size_t words = 0;
  const size_t n = text.size();
  for (size_t i = 0; i < n;) {
    if (is_space(text[i])) {
      ++i;
      continue;
    }
    size_t j = i;
    for (; j < n && !is_space(text[j]); ++j) {
      if (text[j] == '(' || text[j] == ')' || text[j] == '"') return false;
    }
    const std::string_view bare = text.substr(i, j - i);
    if (bare[0] == '-' || bare == "OR" || bare == "AND" || bare == "NOT" ||
        bare.starts_with("source:") || bare.starts_with("title:"))
      return false;
    // As the lexer's fold: a bare word that splits is a phrase; punctuation alone, nothing.
    const auto before = static_cast<uint32_t>(scratch_.size());
    tokenize(bare, scratch_);
    const auto after = static_cast<uint32_t>(scratch_.size());
    if (after != before) plain_terms_.emplace_back(before, after);
    words += after - before;
    i = j;
  }
  if (plain_terms_.empty() || words > limits_.max_words) return false;
  bool all_frequent = true;
  for (size_t k = 0; k < scratch_.size(); ++k) {
    const std::string_view w = scratch_.word(k);
    if (w.size() > limits_.max_word_bytes) return false;
    all_frequent = all_frequent && is_frequent(w);
  }
  if (all_frequent) return false;

  auto fill = [this](query_term& t, std::pair<uint32_t, uint32_t> range) {
    t.title = false;
    t.kind = term_kind::words;
    t.words.resize(range.second - range.first);
    for (uint32_t k = range.first; k < range.second; ++k)
      t.words[k - range.first].assign(scratch_.word(k));
  };
  query_node& tree = out.tree;
  if (plain_terms_.size() == 1) {
    tree.type = query_node::kind::term;
    tree.children.clear();
    fill(tree.term, plain_terms_[0]);
  } else {
    tree.type = query_node::kind::all;
    tree.term.words.clear();
    tree.term.title = false;
    tree.term.kind = term_kind::words;
    tree.children.resize(plain_terms_.size());
    for (size_t k = 0; k < plain_terms_.size(); ++k) {
      query_node& child = tree.children[k];
      child.type = query_node::kind::term;
      child.children.clear();
      fill(child.term, plain_terms_[k]);
    }
  }
  out.clauses.resize(1);
  query_clause& c = out.clauses[0];
  c.must_not.clear();
  c.must.resize(plain_terms_.size());
  for (size_t k = 0; k < plain_terms_.size(); ++k) fill(c.must[k], plain_terms_[k]);
  dedupe(c.must);
  ++plain_parses_;
  return true;
}

query_error query_parser::parse(std::string_view text, parsed_query& out) {
  if (plain_fast_path_ && parse_plain(text, out)) return {};
  out.tree = {};
  out.clauses.clear();
  if (auto err = parser(text, limits_.max_depth, scratch_).run(out.tree); !err.ok()) return err;
  if (const std::string_view w = longest_word(out.tree); w.size() > limits_.max_word_bytes) {
    return fail(errc::word_too_long, 0,
                "a word is too long: " + std::to_string(w.size()) + " bytes (the limit is " +
                    std::to_string(limits_.max_word_bytes) + "), starting \"" +
                    std::string(w.substr(0, 16)) + "\"");
  }
  if (const size_t words = count_words(out.tree); words > limits_.max_words) {
    return fail(errc::too_many_words, 0,
                "too many words: " + std::to_string(words) + " (the limit is " +
                    std::to_string(limits_.max_words) + ")");
  }
  dnf clauses;
  if (!to_dnf(out.tree, false, limits_.max_clauses, clauses)) {
    return fail(errc::too_many_clauses, 0,
                "too many alternatives: the query expands to more than " +
                    std::to_string(limits_.max_clauses) + " AND-clauses (OR and NOT multiply out)");
  }
  for (auto& c : clauses) {
    dedupe(c.must);
    dedupe(c.must_not);
    if (contradictory(c)) continue;
    bool seen = false;
    for (const auto& kept : out.clauses) seen |= same_clause(kept, c);
    if (!seen) out.clauses.push_back(std::move(c));
  }
  if (out.clauses.empty()) {
    return fail(errc::never_matches, 0,
                "the query can never match: every alternative excludes a word it requires");
  }
  for (const auto& c : out.clauses) {
    if (c.must.empty()) {
      std::string what = to_string(query_node{query_node::kind::term, c.must_not[0], {}});
      return fail(errc::only_exclusions, 0,
                  "only exclusions: an alternative excludes " + what +
                      " but requires no word; add a word that must appear");
    }
    bool all_frequent = true;
    for (const auto& t : c.must) {
      for (const auto& w : t.words) all_frequent &= is_frequent(w);
    }
    if (all_frequent) {
      return fail(errc::only_frequent_words, 0,
                  "only very frequent words: " +
                      to_string(query_node{query_node::kind::term, c.must[0], {}}) +
                      " would match nearly every article; add a rarer word");
    }
  }
  return {};
}

std::string to_string(const query_node& node) {
  using kind = query_node::kind;
  switch (node.type) {
    case kind::term: {
      if (node.term.kind != term_kind::words) {
        return "source:" + node.term.words[0].substr(2);  // the token's mark and kind byte
      }
      std::string s = node.term.title ? "title:" : "";
      const bool quote = node.term.words.size() != 1;
      if (quote) s += '"';
      for (size_t i = 0; i < node.term.words.size(); ++i) {
        if (i) s += ' ';
        s += node.term.words[i];
      }
      if (quote) s += '"';
      return s;
    }
    case kind::negate:
      return "-" + (node.children[0].type == kind::term ? to_string(node.children[0])
                                                        : "(" + to_string(node.children[0]) + ")");
    case kind::all:
    case kind::any: {
      std::string s;
      for (size_t i = 0; i < node.children.size(); ++i) {
        if (i) s += node.type == kind::any ? " OR " : " ";
        const auto& c = node.children[i];
        const bool group = c.type == kind::any || (c.type == kind::all && node.type == kind::all);
        s += group ? "(" + to_string(c) + ")" : to_string(c);
      }
      return s;
    }
  }
  return {};
}

}  // namespace feedplane::matcher
