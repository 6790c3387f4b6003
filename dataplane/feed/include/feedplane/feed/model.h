// The format-independent feed model that ingestion hands to dedup and the matcher.
// Every string is valid UTF-8. Dates are seconds since the Unix epoch, UTC; a date that
// could not be read is absent (has_* false), never guessed.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace feedplane::feed {

enum class feed_format : uint8_t { unknown, rss, atom, json };

// Named recoveries: each bit says the parser repaired something the document got wrong
// (feedparser calls a document needing any of these "bozo").
enum class recovery : uint32_t {
  control_chars_stripped = 1u << 0,  // C0 controls illegal in XML 1.0 removed before parsing
  bare_ampersand = 1u << 1,          // '&' that starts no entity kept as a literal '&'
  html_entity = 1u << 2,             // HTML named entity (&nbsp; ...) decoded where XML has none
  undefined_entity = 1u << 3,        // &name; known to neither XML nor HTML kept literally
  encoding_fallback = 1u << 4,       // declared encoding wrong or unknown: decoded as windows-1252
  invalid_bytes_replaced = 1u << 5,  // bytes invalid in the document's encoding -> U+FFFD
  malformed_xml = 1u << 6,           // not well-formed (mismatched or stray end tags, '<' in
                                     // text, unquoted attributes...): repaired, then reparsed
  truncated = 1u << 7,               // document ended inside an element: kept what was complete
  leading_garbage = 1u << 8,         // bytes before the first '<' or '{' skipped
  unparsed_date = 1u << 9,           // a date element that no known form matched: left absent
  bad_base64 = 1u << 10,             // base64 content that did not decode: kept as sent
  entries_dropped = 1u << 11,        // more entries than parse_options::max_entries: the first
                                     // ones kept, feed::entries_dropped counts the rest
};
inline constexpr int recovery_count = 12;

// Name of recovery bit i (0 <= i < recovery_count), as printed in `recovered: [...]`.
std::string_view recovery_name(int bit);

struct person {
  std::string name;
  std::string email;
  std::string uri;
};

struct enclosure {
  std::string url;
  std::string type;
  int64_t length = 0;
};

struct entry {
  std::string id;       // guid / atom:id / JSON id as sent (may be empty)
  std::string title;    // markup kept (titles with HTML are HTML)
  std::string link;     // absolute when a base was known (xml:base, then the feed URL)
  std::string summary;  // RSS description / Atom summary / JSON summary; markup kept
  std::string content;  // content:encoded / Atom content / JSON content_html|text; markup kept
  int64_t published = 0;
  int64_t updated = 0;
  bool has_published = false;
  bool has_updated = false;
  bool id_is_permalink = false;  // RSS guid isPermaLink (default true when a guid is present)
  // link is the permalink guid (the item had no <link>): dedup reads the entry as sent, so
  // its identity and content hash are those of an entry without a link.
  bool link_from_guid = false;
  std::vector<person> authors;
  std::vector<std::string> categories;
  std::vector<enclosure> enclosures;

  // Empties every field, keeping string capacity for the next document.
  void clear();
};

// What a publisher says about how often to fetch its feed: RSS 2.0's <ttl>, <skipHours> and
// <skipDays>, and the RSS 1.0 syndication module's sy:updatePeriod / sy:updateFrequency
// (also found in RSS 2.0 and Atom). Zero fields were not said (or said unreadably). The
// crawler bounds its schedule with them (crawler/schedule.h, bound_by_feed_hints).
struct fetch_hints {
  uint32_t ttl_s = 0;       // <ttl>, given in minutes: how long the channel may be cached
  uint32_t update_s = 0;    // the period over the frequency: how often the feed is updated
  uint32_t skip_hours = 0;  // bit h (0-23): not to be read during UTC hour h
  uint8_t skip_days = 0;    // bit d (0 = Sunday ... 6 = Saturday): not on that UTC day

  bool empty() const { return ttl_s == 0 && update_s == 0 && skip_hours == 0 && skip_days == 0; }
  friend bool operator==(const fetch_hints&, const fetch_hints&) = default;
};

struct feed {
  feed_format format = feed_format::unknown;
  std::string version;  // "2.0", "0.91", "1.0" (RDF), "0.3", "1.0" (Atom), "1.1" (JSON)...
  std::string title;
  std::string link;       // the site (alternate) link
  std::string self_link;  // atom:link rel=self / JSON feed_url
  std::vector<std::string> hub_links;
  std::string description;
  std::string language;
  int64_t published = 0;
  int64_t updated = 0;
  bool has_published = false;
  bool has_updated = false;
  std::vector<person> authors;
  std::vector<std::string> categories;
  std::vector<entry> entries;
  fetch_hints hints;
  uint32_t recovered = 0;        // bits of `recovery`
  uint32_t recovery_events = 0;  // how many individual repairs were made
  uint32_t entries_dropped = 0;  // entries past parse_options::max_entries, not in `entries`

  bool was_recovered(recovery r) const { return (recovered & static_cast<uint32_t>(r)) != 0; }
};

}  // namespace feedplane::feed
