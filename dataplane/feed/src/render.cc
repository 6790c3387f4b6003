#include "feedplane/feed/render.h"

#include "feedplane/base/json.h"
#include "feedplane/feed/text.h"

namespace feedplane::feed {
namespace {

void key(const char* k, std::string& out) {
  out.push_back('"');
  out.append(k);
  out.append("\":");
}

void str_field(const char* k, std::string_view v, std::string& out) {
  key(k, out);
  base::append_json_string(v, out);
  out.push_back(',');
}

void date_field(const char* k, bool has, int64_t t, std::string& out) {
  key(k, out);
  if (has) {
    char buf[32];
    const int n = format_rfc3339(t, buf);
    out.push_back('"');
    out.append(buf, static_cast<size_t>(n));
    out.push_back('"');
  } else {
    out.append("null");
  }
  out.push_back(',');
}

void persons(const char* k, const std::vector<person>& v, std::string& out) {
  key(k, out);
  out.push_back('[');
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) out.push_back(',');
    out.push_back('{');
    str_field("name", v[i].name, out);
    str_field("email", v[i].email, out);
    key("uri", out);
    base::append_json_string(v[i].uri, out);
    out.push_back('}');
  }
  out.append("],");
}

void strings(const char* k, const std::vector<std::string>& v, std::string& out) {
  key(k, out);
  out.push_back('[');
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) out.push_back(',');
    base::append_json_string(v[i], out);
  }
  out.append("],");
}

void close_object(std::string& out) {
  if (out.back() == ',') out.pop_back();
  out.push_back('}');
}

const char* format_name(feed_format f) {
  switch (f) {
    case feed_format::rss:
      return "rss";
    case feed_format::atom:
      return "atom";
    case feed_format::json:
      return "json";
    case feed_format::unknown:
      break;
  }
  return "unknown";
}

}  // namespace

void render_json(const feed& f, std::string& out) {
  out.push_back('{');
  str_field("format", format_name(f.format), out);
  str_field("version", f.version, out);
  key("feed", out);
  out.push_back('{');
  str_field("title", f.title, out);
  str_field("link", f.link, out);
  str_field("self_link", f.self_link, out);
  strings("hub_links", f.hub_links, out);
  str_field("description", f.description, out);
  str_field("language", f.language, out);
  date_field("published", f.has_published, f.published, out);
  date_field("updated", f.has_updated, f.updated, out);
  persons("authors", f.authors, out);
  strings("categories", f.categories, out);
  // Publishers' hints: seconds (0: not said), skipped UTC hours and days (0 = Sunday).
  out.append("\"hints\":{\"ttl_s\":");
  out.append(std::to_string(f.hints.ttl_s));
  out.append(",\"update_s\":");
  out.append(std::to_string(f.hints.update_s));
  out.append(",\"skip_hours\":[");
  for (int h = 0, n = 0; h < 24; ++h) {
    if ((f.hints.skip_hours >> h & 1u) == 0) continue;
    if (n++ != 0) out.push_back(',');
    out.append(std::to_string(h));
  }
  out.append("],\"skip_days\":[");
  for (int d = 0, n = 0; d < 7; ++d) {
    if ((f.hints.skip_days >> d & 1u) == 0) continue;
    if (n++ != 0) out.push_back(',');
    out.append(std::to_string(d));
  }
  out.append("]},");
  close_object(out);
  out.append(",\"entries\":[");
  for (size_t i = 0; i < f.entries.size(); ++i) {
    const entry& e = f.entries[i];
    if (i) out.push_back(',');
    out.push_back('{');
    str_field("id", e.id, out);
    str_field("title", e.title, out);
    str_field("link", e.link, out);
    date_field("published", e.has_published, e.published, out);
    date_field("updated", e.has_updated, e.updated, out);
    str_field("summary", e.summary, out);
    str_field("content", e.content, out);
    persons("authors", e.authors, out);
    strings("categories", e.categories, out);
    key("enclosures", out);
    out.push_back('[');
    for (size_t k = 0; k < e.enclosures.size(); ++k) {
      if (k) out.push_back(',');
      out.push_back('{');
      str_field("url", e.enclosures[k].url, out);
      str_field("type", e.enclosures[k].type, out);
      key("length", out);
      out.append(std::to_string(e.enclosures[k].length));
      out.push_back('}');
    }
    out.push_back(']');
    out.push_back('}');
  }
  out.append("],\"recovered\":[");
  bool first = true;
  for (int b = 0; b < recovery_count; ++b) {
    if ((f.recovered & (1u << b)) == 0) continue;
    if (!first) out.push_back(',');
    first = false;
    base::append_json_string(recovery_name(b), out);
  }
  out.append("],\"recovery_events\":");
  out.append(std::to_string(f.recovery_events));
  out.append(",\"entries_dropped\":");
  out.append(std::to_string(f.entries_dropped));
  out.push_back('}');
}

}  // namespace feedplane::feed
