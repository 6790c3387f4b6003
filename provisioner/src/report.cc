#include "feedplane/provisioner/report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "feedplane/base/json.h"

namespace feedplane::provisioner {

uint64_t report::bound() const {
  uint64_t n = 0;
  for (const uint64_t h : bound_hosts) n += h;
  return n;
}

namespace {

std::string number(double v) {
  // Whole numbers print without a fraction; the rest with 4 significant decimals.
  if (std::fabs(v - std::round(v)) < 1e-9 && std::fabs(v) < 1e15)
    return fmt::format("{}", static_cast<int64_t>(std::round(v)));
  std::string s = fmt::format("{:.4f}", v);
  while (s.back() == '0') s.pop_back();
  if (s.back() == '.') s.pop_back();
  return s;
}

std::string json_string(std::string_view s) {
  std::string out;
  base::append_json_string(s, out);
  return out;
}

void text_plan(const plan& p, std::string& out) {
  if (!p.feasible) {
    out += fmt::format("{} plan: none: {}\n", p.method, p.reason);
    return;
  }
  out += fmt::format("{} plan: {} hosts, price {}{}\n", p.method, p.hosts(), number(p.price),
                     p.layout.empty() ? "" : fmt::format(" (layout {})", p.layout));
  size_t per_host_width = 8, shape_width = 8;
  for (const auto& r : p.roles) {
    per_host_width = std::max(per_host_width, r.per_host.size());
    shape_width = std::max(shape_width, r.shape.size());
  }
  out += fmt::format("  {:<11} {:>6}  {:<{}} {:<{}}", "role", "hosts", "shape", shape_width,
                     "per host", per_host_width);
  for (size_t k = 0; k < resource_count; ++k)
    out += fmt::format("  {:>7}", resource_name(static_cast<resource>(k)));
  out += '\n';
  for (const auto& r : p.roles) {
    out += fmt::format("  {:<11} {:>6}  {:<{}} {:<{}}", r.role, r.hosts, r.shape, shape_width,
                       r.per_host, per_host_width);
    for (size_t k = 0; k < resource_count; ++k)
      out +=
          r.modeled[k] ? fmt::format("  {:>7.2f}", r.utilisation[k]) : fmt::format("  {:>7}", "-");
    out += '\n';
  }
  for (const auto& r : p.roles) {
    const auto b = static_cast<size_t>(r.binding());
    out += fmt::format("  {} hosts {}: {} {:.2f} of {:.2f}\n", r.role, r.hosts,
                       resource_name(r.binding()), r.utilisation[b], r.usable[b]);
  }
}

}  // namespace

std::string render_text(const report& r) {
  std::string out;
  const workload& w = r.work;
  out += fmt::format("workload   {}: {} feeds, {} subscriptions, {} articles/s at peak\n", w.name,
                     number(w.feeds), number(w.subscriptions), number(w.articles_per_s()));
  out += fmt::format("costs      {}", r.costs_name);
  if (!r.fitted.empty()) {
    out += " (fitted:";
    for (const auto& f : r.fitted) out += " " + f;
    out += ")";
  }
  out += '\n';
  out += fmt::format("topology   {}, hosts of class {}\n", r.topology, r.node_class);
  for (const auto& o : r.other_classes) out += fmt::format("           other class {}\n", o);
  const auto hosts = [](const plan& p) { return p.feasible ? number(double(p.hosts())) : "none"; };
  out += fmt::format("hosts      bound {}   exact {}   greedy {}\n",
                     r.bound_feasible ? number(double(r.bound())) : "none", hosts(r.exact),
                     hosts(r.greedy));
  if (r.topology != "cobra") {
    const auto price = [](const plan& p) { return p.feasible ? number(p.price) : "none"; };
    out += fmt::format("price      bound {}   exact {}   greedy {}\n",
                       r.bound_feasible ? number(r.bound_price) : "none", price(r.exact),
                       price(r.greedy));
  }
  out += "bound      ";
  for (size_t i = 0; i < r.bound_roles.size(); ++i)
    out += fmt::format("{}{} {}", i == 0 ? "" : ", ", r.bound_roles[i], r.bound_hosts[i]);
  out += "\n\n";
  text_plan(r.exact, out);
  out += '\n';
  if (r.greedy.feasible && r.exact.feasible && r.greedy.hosts() == r.exact.hosts() &&
      r.greedy.roles.size() == r.exact.roles.size() &&
      std::equal(r.greedy.roles.begin(), r.greedy.roles.end(), r.exact.roles.begin(),
                 [](const role_plan& a, const role_plan& b) {
                   return a.hosts == b.hosts && a.shape == b.shape;
                 })) {
    out += "greedy plan: the exact plan's shape\n";
  } else {
    text_plan(r.greedy, out);
  }
  if (!r.greedy.steps.empty()) {
    out += "  greedy steps:\n";
    for (size_t i = 0; i < r.greedy.steps.size(); ++i)
      out += fmt::format("  {:>3}. {}\n", i + 1, r.greedy.steps[i]);
  }
  out += '\n';
  if (r.exact.feasible) {
    out += fmt::format(
        "growth     the exact plan carries up to {} feeds (+{}) or {} subscriptions (+{})\n",
        number(r.max_feeds), number(r.max_feeds - w.feeds), number(r.max_subscriptions),
        number(r.max_subscriptions - w.subscriptions));
  }
  if (r.has_previous) {
    out += fmt::format("moves      from the previous plan{}\n",
                       r.kept_previous ? ": it still fits and is no dearer, so it is kept" : "");
    for (const auto& mv : r.moves) {
      out += fmt::format("  {:<11} {} {} -> {} {} (+{} -{})", mv.role,
                         mv.class_before.empty() ? "-" : mv.class_before, mv.hosts_before,
                         mv.class_after.empty() ? "-" : mv.class_after, mv.hosts_after, mv.added,
                         mv.removed);
      if (mv.partitions_moved > 0)
        out +=
            fmt::format(", {} partitions move ({} subscriptions, {:.1f} MB)", mv.partitions_moved,
                        number(std::round(mv.subscriptions_moved)), mv.bytes_moved / 1e6);
      out += '\n';
    }
  }
  out += fmt::format(
      "polls      a subscription matching {:.2f}% of articles gets k = {} new items every {} s; "
      "the workload polls every {} s\n",
      w.match_share * 100, w.k, number(std::round(r.poll_interval_needed_s * 10) / 10),
      number(w.poll_interval_s));
  return out;
}

namespace {

void json_plan(const plan& p, std::string& out) {
  out += fmt::format(
      "{{\"method\":{},\"layout\":{},\"feasible\":{},\"reason\":{},\"hosts\":{},\"price\":{},"
      "\"roles\":[",
      json_string(p.method), json_string(p.layout), p.feasible ? "true" : "false",
      json_string(p.reason), p.feasible ? p.hosts() : 0, number(p.price));
  for (size_t i = 0; i < p.roles.size(); ++i) {
    const auto& r = p.roles[i];
    out += fmt::format("{}{{\"role\":{},\"class\":{},\"hosts\":{},\"shape\":{},\"per_host\":{},",
                       i == 0 ? "" : ",", json_string(r.role), json_string(r.node_class), r.hosts,
                       json_string(r.shape), json_string(r.per_host));
    out += "\"utilisation\":{";
    for (size_t k = 0; k < resource_count; ++k)
      out += fmt::format("{}\"{}\":{}", k == 0 ? "" : ",", resource_name(static_cast<resource>(k)),
                         r.modeled[k] ? fmt::format("{:.4f}", r.utilisation[k]) : "null");
    out += "},\"usable\":{";
    for (size_t k = 0; k < resource_count; ++k)
      out += fmt::format("{}\"{}\":{:.4f}", k == 0 ? "" : ",",
                         resource_name(static_cast<resource>(k)), r.usable[k]);
    out += "},\"assignment\":[";
    for (size_t k = 0; k < r.assignment.size(); ++k)
      out += (k == 0 ? "" : ",") + json_string(r.assignment[k]);
    out += fmt::format("],\"binding\":\"{}\"}}", resource_name(r.binding()));
  }
  out += "],\"steps\":[";
  for (size_t i = 0; i < p.steps.size(); ++i) out += (i == 0 ? "" : ",") + json_string(p.steps[i]);
  out += "]}";
}

}  // namespace

std::string render_json(const report& r) {
  const workload& w = r.work;
  std::string out = "{";
  out += fmt::format("\"topology\":{},", json_string(r.topology));
  out += fmt::format(
      "\"workload\":{{\"name\":{},\"feeds\":{},\"subscriptions\":{},\"articles_per_s\":{},"
      "\"poll_interval_s\":{}}},",
      json_string(w.name), number(w.feeds), number(w.subscriptions), number(w.articles_per_s()),
      number(w.poll_interval_s));
  out += fmt::format("\"costs\":{{\"name\":{},\"fitted\":[", json_string(r.costs_name));
  for (size_t i = 0; i < r.fitted.size(); ++i)
    out += (i == 0 ? "" : ",") + json_string(r.fitted[i]);
  out += fmt::format("]}},\"node_class\":{},\"other_classes\":[", json_string(r.node_class));
  for (size_t i = 0; i < r.other_classes.size(); ++i)
    out += (i == 0 ? "" : ",") + json_string(r.other_classes[i]);
  out += fmt::format("],\"bound\":{{\"feasible\":{},\"hosts\":{},\"price\":{},\"roles\":{{",
                     r.bound_feasible ? "true" : "false", r.bound_feasible ? r.bound() : 0,
                     number(r.topology == "cobra" ? double(r.bound()) : r.bound_price));
  for (size_t i = 0; i < r.bound_roles.size(); ++i)
    out +=
        fmt::format("{}{}:{}", i == 0 ? "" : ",", json_string(r.bound_roles[i]), r.bound_hosts[i]);
  out += "}},\"exact\":";
  json_plan(r.exact, out);
  out += ",\"greedy\":";
  json_plan(r.greedy, out);
  out += fmt::format(",\"growth\":{{\"max_feeds\":{},\"max_subscriptions\":{}}}",
                     number(r.max_feeds), number(r.max_subscriptions));
  if (r.has_previous) {
    out += fmt::format(",\"moves\":{{\"kept_previous\":{},\"roles\":[",
                       r.kept_previous ? "true" : "false");
    for (size_t i = 0; i < r.moves.size(); ++i) {
      const auto& mv = r.moves[i];
      out += fmt::format(
          "{}{{\"role\":{},\"class_before\":{},\"class_after\":{},\"hosts_before\":{},"
          "\"hosts_after\":{},\"added\":{},\"removed\":{},\"partitions_moved\":{},"
          "\"subscriptions_moved\":{},\"bytes_moved\":{}}}",
          i == 0 ? "" : ",", json_string(mv.role), json_string(mv.class_before),
          json_string(mv.class_after), mv.hosts_before, mv.hosts_after, mv.added, mv.removed,
          mv.partitions_moved, number(std::round(mv.subscriptions_moved)),
          number(std::round(mv.bytes_moved)));
    }
    out += "]}";
  } else {
    out += ",\"moves\":null";
  }
  out += fmt::format(",\"poll_interval_needed_s\":{}",
                     number(std::round(r.poll_interval_needed_s * 10) / 10));
  out += "}\n";
  return out;
}

}  // namespace feedplane::provisioner
