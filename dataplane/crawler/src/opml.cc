#include "feedplane/crawler/opml.h"

#include <pugixml.hpp>

#include <sstream>
#include <unordered_set>
#include <vector>

#include "feedplane/base/ascii.h"
#include "feedplane/net/url.h"

namespace feedplane::crawler {

namespace {
// Attribute by name, ignoring ASCII case (xmlUrl, xmlurl and XMLURL are all seen in the
// wild).
pugi::xml_attribute attr(const pugi::xml_node& n, std::string_view name) {
  for (pugi::xml_attribute a : n.attributes()) {
    const std::string_view an = a.name();
    if (base::ascii_iequals(an, name)) return a;
  }
  return {};
}
}  // namespace

bool parse_opml(std::string_view text, opml_import& out, std::string* error) {
  out = opml_import{};
  pugi::xml_document doc;
  const pugi::xml_parse_result r =
      doc.load_buffer(text.data(), text.size(), pugi::parse_default, pugi::encoding_auto);
  if (!r) {
    if (error != nullptr) *error = std::string("not XML: ") + r.description();
    return false;
  }
  pugi::xml_node root = doc.document_element();
  if (std::string_view(root.name()) != "opml") {
    if (error != nullptr) *error = "the root element is not <opml>";
    return false;
  }
  std::unordered_set<std::string> seen;
  // Every outline at any depth, in document order (depth-first, pre-order).
  std::vector<pugi::xml_node> outlines;
  struct walker : pugi::xml_tree_walker {
    std::vector<pugi::xml_node>* out;
    bool for_each(pugi::xml_node& n) override {
      if (n.type() == pugi::node_element && std::string_view(n.name()) == "outline")
        out->push_back(n);
      return true;
    }
  } w;
  w.out = &outlines;
  root.traverse(w);
  for (const pugi::xml_node& o : outlines) {
    const pugi::xml_attribute xml_url = attr(o, "xmlurl");
    if (!xml_url) continue;  // a folder, or a plain link
    const std::string_view raw = base::ascii_trim(xml_url.value());
    net::url u;
    if (!net::parse_url(raw, u)) {
      out.invalid.emplace_back(raw);
      continue;
    }
    std::string canon = u.str();
    if (!seen.insert(canon).second) {
      ++out.duplicates;
      continue;
    }
    opml_feed f;
    f.url = std::move(canon);
    pugi::xml_attribute t = attr(o, "title");
    if (!t || *t.value() == 0) t = attr(o, "text");
    if (t) f.title = t.value();
    out.feeds.push_back(std::move(f));
  }
  return true;
}

std::string render_opml(const std::vector<opml_feed>& feeds, std::string_view title) {
  pugi::xml_document doc;
  pugi::xml_node decl = doc.append_child(pugi::node_declaration);
  decl.append_attribute("version") = "1.0";
  decl.append_attribute("encoding") = "UTF-8";
  pugi::xml_node opml = doc.append_child("opml");
  opml.append_attribute("version") = "2.0";
  opml.append_child("head").append_child("title").text().set(std::string(title).c_str());
  pugi::xml_node body = opml.append_child("body");
  for (const opml_feed& f : feeds) {
    pugi::xml_node o = body.append_child("outline");
    const std::string& label = f.title.empty() ? f.url : f.title;
    o.append_attribute("type") = "rss";
    o.append_attribute("text") = label.c_str();
    o.append_attribute("title") = label.c_str();
    o.append_attribute("xmlUrl") = f.url.c_str();
  }
  std::ostringstream os;
  doc.save(os, "  ", pugi::format_default, pugi::encoding_utf8);
  return os.str();
}

}  // namespace feedplane::crawler
