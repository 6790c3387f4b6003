// A named error vocabulary: each folder's errc enum has a table of {name, message} indexed
// by the enum's value (a static_assert beside each table keeps it in step with the enum),
// and errc_lookup is the one way to read it. net's fetch_error, matcher's errc, config's
// config_errc and the store's store_errc all use it.
#pragma once

#include <cstddef>
#include <string_view>

namespace feedplane::base {

struct errc_entry {
  std::string_view name;     // stable, for programs: "too_deep"
  std::string_view message;  // for people
};

inline constexpr errc_entry k_unknown_errc{"unknown", "unknown error"};

// table[e], or `fallback` for a value outside the table (a cast from a wider integer).
template <size_t N, class E>
constexpr const errc_entry& errc_lookup(const errc_entry (&table)[N], E e,
                                        const errc_entry& fallback = k_unknown_errc) {
  const auto i = static_cast<size_t>(e);
  return i < N ? table[i] : fallback;
}

}  // namespace feedplane::base
