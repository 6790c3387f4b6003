#include "feedplane/load/reference.h"

#include <utility>

namespace feedplane::load {

namespace {
bool word_byte(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c >= 0x80;
}
}  // namespace

std::vector<std::string> ref_words(std::string_view text) {
  std::vector<std::string> out;
  std::string cur;
  for (char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if (word_byte(c)) {
      cur.push_back(c >= 'A' && c <= 'Z' ? char(c - 'A' + 'a') : ch);
    } else if (!cur.empty()) {
      out.push_back(std::move(cur));
      cur.clear();
    }
  }
  if (!cur.empty()) out.push_back(std::move(cur));
  return out;
}

uint32_t ref_vocab::add(std::string_view w) {
  auto [it, added] = ids_.try_emplace(std::string(w), uint32_t(ids_.size()));
  return it->second;
}

uint32_t ref_vocab::find(std::string_view w) const {
  auto it = ids_.find(std::string(w));
  return it == ids_.end() ? absent : it->second;
}

ref_doc ref_doc::make(ref_vocab& v, std::string_view title, std::string_view body) {
  ref_doc d;
  auto set = [](std::vector<uint64_t>& b, uint32_t w) {
    if (b.size() <= w / 64) b.resize(w / 64 + 1, 0);
    b[w / 64] |= uint64_t{1} << (w % 64);
  };
  for (const auto& w : ref_words(title)) {
    const uint32_t id = v.add(w);
    d.title.push_back(id);
    set(d.title_bits, id);
    set(d.all_bits, id);
  }
  for (const auto& w : ref_words(body)) {
    const uint32_t id = v.add(w);
    d.body.push_back(id);
    set(d.all_bits, id);
  }
  return d;
}

struct ref_query::node {
  enum kind_t { word, phrase, all, any, negate } kind = word;
  bool title_only = false;
  std::vector<uint32_t> words;  // word: one; phrase: several (ref_vocab ids)
  std::vector<std::unique_ptr<node>> kids;
};

namespace {

using node = ref_query::node;

bool contains_run(const std::vector<uint32_t>& seq, const std::vector<uint32_t>& run) {
  for (uint32_t w : run) {
    if (w == ref_vocab::absent) return false;
  }
  if (run.empty() || run.size() > seq.size()) return false;
  for (size_t i = 0; i + run.size() <= seq.size(); ++i) {
    size_t j = 0;
    while (j < run.size() && seq[i + j] == run[j]) ++j;
    if (j == run.size()) return true;
  }
  return false;
}

bool eval(const node& n, const ref_doc& d, bool title_only) {
  const bool t = title_only || n.title_only;
  switch (n.kind) {
    case node::word:
      return n.words[0] != ref_vocab::absent && d.has(n.words[0], t);
    case node::phrase:
      return contains_run(d.title, n.words) || (!t && contains_run(d.body, n.words));
    case node::all:
      for (const auto& k : n.kids) {
        if (!eval(*k, d, t)) return false;
      }
      return true;
    case node::any:
      for (const auto& k : n.kids) {
        if (eval(*k, d, t)) return true;
      }
      return false;
    case node::negate:
      return !eval(*n.kids[0], d, t);
  }
  return false;
}

// Recursive descent: or := and ("OR" and)*; and := unary (["AND"] unary)*;
// unary := ("NOT" | "-") unary | "title:" primary | primary;
// primary := "(" or ")" | '"' words '"' | word.
class parser {
 public:
  parser(std::string_view s, const ref_vocab& v) : s_(s), vocab_(v) {}

  std::unique_ptr<node> parse(std::string* err) {
    auto n = parse_or(0);
    skip_space();
    if (n && i_ != s_.size()) fail("unexpected input");
    if (!error_.empty()) {
      *err = error_;
      return nullptr;
    }
    return n;
  }

 private:
  void skip_space() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t')) ++i_;
  }
  void fail(const std::string& why) {
    if (error_.empty()) error_ = why + " at " + std::to_string(i_);
  }
  bool keyword(std::string_view k) {
    skip_space();
    if (s_.substr(i_, k.size()) != k) return false;
    const size_t e = i_ + k.size();
    if (e < s_.size() && s_[e] != ' ' && s_[e] != '(' && s_[e] != '"') return false;
    i_ = e;
    return true;
  }
  std::unique_ptr<node> parse_or(int depth) {
    auto left = parse_and(depth);
    if (!left) return nullptr;
    if (!keyword("OR")) return left;
    auto n = std::make_unique<node>();
    n->kind = node::any;
    n->kids.push_back(std::move(left));
    do {
      auto r = parse_and(depth);
      if (!r) return nullptr;
      n->kids.push_back(std::move(r));
    } while (keyword("OR"));
    return n;
  }
  bool at_end_of_group() {
    skip_space();
    if (i_ >= s_.size() || s_[i_] == ')') return true;
    const size_t save = i_;
    const bool is_or = keyword("OR");
    i_ = save;
    return is_or;
  }
  std::unique_ptr<node> parse_and(int depth) {
    auto n = std::make_unique<node>();
    n->kind = node::all;
    while (!at_end_of_group()) {
      keyword("AND");
      auto u = parse_unary(depth);
      if (!u) return nullptr;
      n->kids.push_back(std::move(u));
    }
    if (n->kids.empty()) {
      fail("expected a word");
      return nullptr;
    }
    if (n->kids.size() == 1) return std::move(n->kids[0]);
    return n;
  }
  std::unique_ptr<node> parse_unary(int depth) {
    if (depth > 64) {
      fail("too deep");
      return nullptr;
    }
    skip_space();
    bool negated = keyword("NOT");
    if (!negated && i_ < s_.size() && s_[i_] == '-') {
      ++i_;
      negated = true;
    }
    if (negated) {
      auto k = parse_unary(depth + 1);
      if (!k) return nullptr;
      auto n = std::make_unique<node>();
      n->kind = node::negate;
      n->kids.push_back(std::move(k));
      return n;
    }
    if (s_.substr(i_, 6) == "title:") {
      i_ += 6;
      auto k = parse_primary(depth + 1);
      if (!k) return nullptr;
      k->title_only = true;
      return k;
    }
    return parse_primary(depth);
  }
  std::unique_ptr<node> words_node(std::string_view text) {
    auto ws = ref_words(text);
    if (ws.empty()) {
      fail("no word");
      return nullptr;
    }
    auto n = std::make_unique<node>();
    n->kind = ws.size() == 1 ? node::word : node::phrase;
    for (const auto& w : ws) n->words.push_back(vocab_.find(w));
    return n;
  }
  std::unique_ptr<node> parse_primary(int depth) {
    skip_space();
    if (i_ >= s_.size()) {
      fail("expected a word");
      return nullptr;
    }
    if (s_[i_] == '(') {
      ++i_;
      auto n = parse_or(depth + 1);
      skip_space();
      if (!n) return nullptr;
      if (i_ >= s_.size() || s_[i_] != ')') {
        fail("expected )");
        return nullptr;
      }
      ++i_;
      return n;
    }
    if (s_[i_] == '"') {
      const size_t close = s_.find('"', i_ + 1);
      if (close == std::string_view::npos) {
        fail("unclosed quote");
        return nullptr;
      }
      auto n = words_node(s_.substr(i_ + 1, close - i_ - 1));
      i_ = close + 1;
      return n;
    }
    size_t e = i_;
    while (e < s_.size() && s_[e] != ' ' && s_[e] != '\t' && s_[e] != '(' && s_[e] != ')' &&
           s_[e] != '"')
      ++e;
    auto n = words_node(s_.substr(i_, e - i_));
    i_ = e;
    return n;
  }

  std::string_view s_;
  const ref_vocab& vocab_;
  size_t i_ = 0;
  std::string error_;
};

}  // namespace

ref_query::ref_query() = default;
ref_query::~ref_query() = default;

std::unique_ptr<ref_query> ref_query::parse(std::string_view q, const ref_vocab& v,
                                            std::string* error) {
  parser p(q, v);
  auto root = p.parse(error);
  if (!root) return nullptr;
  auto r = std::make_unique<ref_query>();
  r->root_ = std::move(root);
  return r;
}

bool ref_query::matches(const ref_doc& d) const { return eval(*root_, d, false); }

namespace {

// cover() of one node: words of which every article the node matches has one (see
// reference.h); false when none exists. A title: restriction only narrows a node's
// matches, so the unrestricted words still cover it.
bool cover_of(const node& n, std::vector<uint32_t>* out,
              const std::function<size_t(uint32_t)>& cost) {
  out->clear();
  switch (n.kind) {
    case node::word:
      if (n.words[0] != ref_vocab::absent) out->push_back(n.words[0]);
      return true;
    case node::phrase: {
      // Every word of a phrase is in an article it matches: keep the cheapest one.
      uint32_t best = ref_vocab::absent;
      for (uint32_t w : n.words) {
        if (w == ref_vocab::absent) return true;  // never matches: the empty set
        if (best == ref_vocab::absent || cost(w) < cost(best)) best = w;
      }
      if (best != ref_vocab::absent) out->push_back(best);
      return true;
    }
    case node::all: {
      // Any one conjunct's cover covers the conjunction: keep the cheapest.
      bool found = false;
      size_t best_cost = 0;
      std::vector<uint32_t> kid;
      for (const auto& k : n.kids) {
        if (!cover_of(*k, &kid, cost)) continue;
        size_t c = 0;
        for (uint32_t w : kid) c += cost(w);
        if (!found || c < best_cost) {
          found = true;
          best_cost = c;
          *out = kid;
        }
      }
      return found;
    }
    case node::any: {
      std::vector<uint32_t> kid;
      for (const auto& k : n.kids) {
        if (!cover_of(*k, &kid, cost)) return false;
        out->insert(out->end(), kid.begin(), kid.end());
      }
      return true;
    }
    case node::negate:
      return false;
  }
  return false;
}

}  // namespace

bool ref_query::cover(std::vector<uint32_t>* out,
                      const std::function<size_t(uint32_t)>& cost) const {
  return cover_of(*root_, out, cost);
}

}  // namespace feedplane::load
