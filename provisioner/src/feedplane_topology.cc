#include "feedplane/provisioner/feedplane_topology.h"

#include <fmt/format.h>
#include <simdjson.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <limits>
#include <numeric>
#include <sstream>

namespace feedplane::provisioner {

std::string_view fp_layout_id(fp_layout l) {
  switch (l) {
    case fp_layout::single:
      return "single";
    case fp_layout::split:
      return "split";
    case fp_layout::combined:
      return "combined";
  }
  return "?";
}

std::string_view fp_layout_name(fp_layout l) {
  switch (l) {
    case fp_layout::single:
      return "one host";
    case fp_layout::split:
      return "crawl, match and nats hosts";
    case fp_layout::combined:
      return "hosts that crawl and match, nats hosts";
  }
  return "?";
}

std::string_view fp_role_name(fp_role r, fp_layout l) {
  switch (r) {
    case fp_role::crawl:
      return "crawl";
    case fp_role::match:
      return l == fp_layout::split ? "match" : "crawl+match";
    case fp_role::nats:
      return "nats";
  }
  return "?";
}

std::vector<input_error> fp_model::make(const workload& w, const cost_model& costs,
                                        const std::vector<node_class>& classes, fp_model& out) {
  using co = coefficients;
  static constexpr std::pair<const char*, double co::*> needed[] = {
      {"cpu_per_fetch_200", &co::cpu_200},
      {"cpu_per_fetch_304", &co::cpu_304},
      {"cpu_per_fetch_tls_extra", &co::cpu_tls},
      {"cpu_per_tls_handshake", &co::cpu_handshake},
      {"cpu_per_tls_resumed_handshake", &co::cpu_resumed},
      {"cpu_per_parse_8kb", &co::cpu_parse_8kb},
      {"fetch_request_bytes", &co::fetch_request},
      {"fetch_304_bytes", &co::fetch_304},
      {"bytes_per_feed", &co::per_feed},
      {"disk_bytes_per_feed", &co::disk_per_feed},
      {"stream_bytes_per_article", &co::stream_bytes},
      {"disk_bytes_per_article", &co::disk_per_article},
      {"nats_cpu_per_message", &co::nats_cpu},
      {"nats_replicas", &co::nats_replicas},
      {"nats_base_bytes", &co::nats_base},
      {"cpu_per_article_prepare", &co::prepare},
      {"cpu_per_article_per_shard", &co::per_shard},
      {"cpu_per_match_insert", &co::insert},
      {"cpu_per_poll", &co::poll_cpu},
      {"cpu_per_poll_tls_extra", &co::poll_tls},
      {"poll_request_bytes", &co::poll_request},
      {"poll_304_bytes", &co::poll_304},
      {"poll_bytes_per_item", &co::poll_item},
      {"bytes_per_subscription", &co::per_sub},
      {"disk_bytes_per_subscription", &co::disk_per_sub},
      {"bytes_per_cached_article", &co::cached_article},
      {"article_cache_seconds", &co::cache_s},
      {"host_base_bytes", &co::host_base},
  };
  std::vector<input_error> errors;
  co c{};
  for (const auto& [name, field] : needed) {
    const coefficient* k = costs.find(name);
    if (k == nullptr) {
      errors.push_back({costs.file, 0, fmt::format("coefficients.{}", name),
                        "missing: the feedplane topology needs it"});
    } else {
      c.*field = k->value;
    }
  }
  if (c.nats_replicas < 1 && errors.empty())
    errors.push_back({costs.file, costs.find("nats_replicas")->line, "coefficients.nats_replicas",
                      "must be at least 1"});
  if (classes.empty()) errors.push_back({costs.file, 0, {}, "no node class"});
  if (!errors.empty()) return errors;
  out.w_ = w;
  out.classes_ = classes;
  out.costs_ = &costs;
  out.c_ = c;
  return errors;
}

void fp_model::crawl_demand(double feeds, double out[resource_count]) const {
  const double fetches = feeds / w_.crawl_interval_s;
  const double nm = w_.not_modified_share;
  const double articles = w_.articles_per_s() * feeds / w_.feeds;
  out[size_t(resource::cpu)] +=
      fetches *
          (nm * c_.cpu_304 + (1 - nm) * (c_.cpu_200 + c_.cpu_parse_8kb * w_.feed_bytes / 8192) +
           w_.https_share * (c_.cpu_tls + w_.tls_handshake_share *
                                              ((1 - w_.tls_resumed_share) * c_.cpu_handshake +
                                               w_.tls_resumed_share * c_.cpu_resumed))) +
      articles * c_.nats_cpu;
  out[size_t(resource::memory)] += feeds * c_.per_feed;
  out[size_t(resource::in_bw)] += fetches * ((1 - nm) * w_.feed_bytes + nm * c_.fetch_304) * 8;
  out[size_t(resource::out_bw)] += (fetches * c_.fetch_request + articles * c_.stream_bytes) * 8;
  out[size_t(resource::disk)] += feeds * c_.disk_per_feed;
}

void fp_model::match_demand(double subs, double shards, double out[resource_count]) const {
  const double rate = w_.articles_per_s();
  const double polls = subs / w_.poll_interval_s * w_.peak_to_mean;
  // Chance that a subscription's feed changed between two polls (Poisson matches at the
  // daily mean rate): a 200 with k items, otherwise a 304.
  const double changed =
      1 - std::exp(-rate / w_.peak_to_mean * w_.match_share * w_.poll_interval_s);
  out[size_t(resource::cpu)] +=
      rate * (c_.prepare + c_.nats_cpu +
              shards * (c_.per_shard + costs_->match_seconds(subs / shards, w_.article_words))) +
      rate * w_.match_share * subs * c_.insert +
      polls * (c_.poll_cpu + w_.poll_tls_share * c_.poll_tls);
  out[size_t(resource::memory)] +=
      c_.host_base + subs * c_.per_sub + rate * c_.cache_s * c_.cached_article;
  out[size_t(resource::in_bw)] += (rate * c_.stream_bytes + polls * c_.poll_request) * 8;
  out[size_t(resource::out_bw)] += polls * (changed * w_.k * c_.poll_item + c_.poll_304) * 8;
  out[size_t(resource::disk)] += subs * c_.disk_per_sub;
}

void fp_model::nats_demand(double servers, double consumers, double out[resource_count]) const {
  const double rate = w_.articles_per_s();
  const double replicas = std::min(c_.nats_replicas, servers);
  out[size_t(resource::cpu)] += rate * (replicas + consumers) * c_.nats_cpu / servers;
  out[size_t(resource::memory)] += c_.nats_base;
  out[size_t(resource::in_bw)] += rate * c_.stream_bytes * 8 * replicas / servers;
  out[size_t(resource::out_bw)] +=
      rate * c_.stream_bytes * 8 * (consumers + replicas - 1) / servers;
  out[size_t(resource::disk)] +=
      rate / w_.peak_to_mean * w_.retention_days * 86400 * c_.disk_per_article * replicas / servers;
}

double fp_model::usable(size_t cls, resource r) const {
  const node_class& n = classes_[cls];
  switch (r) {
    case resource::cpu:
      return n.usable_cpu;
    case resource::memory:
      return n.usable_memory;
    case resource::in_bw:
    case resource::out_bw:
      return n.usable_network;
    case resource::disk:
      return n.usable_disk;
  }
  return 0;
}

namespace {

double capacity(const node_class& n, resource r) {
  switch (r) {
    case resource::cpu:
      return n.cores * n.cpu_speed;
    case resource::memory:
      return n.memory_bytes;
    case resource::in_bw:
      return n.in_bps;
    case resource::out_bw:
      return n.out_bps;
    case resource::disk:
      return n.disk_bytes;
  }
  return 0;
}

bool is_rate(resource r) { return r != resource::memory && r != resource::disk; }

double shards_of(const node_class& n) { return std::max(1.0, std::floor(n.cores)); }

}  // namespace

double fp_model::utilisation(const fp_shape& s, fp_role role, resource r, bool fractional) const {
  const auto i = static_cast<size_t>(role);
  if (s.hosts[i] == 0) return 0;
  const node_class& n = classes_[s.cls[i]];
  const auto hosts = static_cast<double>(s.hosts[i]);
  const double parts = w_.partitions;
  double d[resource_count] = {};
  const auto feeds_per = [&] {
    return fractional ? w_.feeds / hosts : std::ceil(w_.feeds / hosts);
  };
  const auto subs_per = [&] {
    return (fractional ? parts / hosts : std::ceil(parts / hosts)) * w_.subscriptions / parts;
  };
  switch (role) {
    case fp_role::crawl:
      crawl_demand(feeds_per(), d);
      break;
    case fp_role::match:
      match_demand(subs_per(), shards_of(n), d);
      if (s.layout != fp_layout::split) crawl_demand(feeds_per(), d);
      if (s.layout == fp_layout::single)  // the article log is local: the store keeps it
        d[size_t(resource::disk)] +=
            w_.articles_per_s() / w_.peak_to_mean * w_.retention_days * 86400 * c_.disk_per_article;
      break;
    case fp_role::nats:
      nats_demand(hosts, static_cast<double>(s.hosts[size_t(fp_role::match)]), d);
      break;
  }
  const auto k = static_cast<size_t>(r);
  const double cap = capacity(n, r);
  const double demand = d[k] * (is_rate(r) ? n.headroom : 1);
  if (cap <= 0) return demand > 0 ? 1e9 : 0;
  return demand / cap;
}

double fp_model::stream_floor(const fp_shape& s, resource r) const {
  const auto i = static_cast<size_t>(fp_role::match);
  if (s.layout == fp_layout::single || s.hosts[i] == 0) return 0;
  const node_class& n = classes_[s.cls[i]];
  const double rate = w_.articles_per_s();
  if (r == resource::in_bw) return rate * c_.stream_bytes * 8 * n.headroom / n.in_bps;
  if (r == resource::cpu)
    return rate * (c_.prepare + c_.nats_cpu + shards_of(n) * c_.per_shard) * n.headroom /
           capacity(n, r);
  return 0;
}

bool fp_model::role_ok(const fp_shape& s, fp_role role, bool fractional) const {
  const auto i = static_cast<size_t>(role);
  if (s.hosts[i] == 0) return true;
  for (size_t k = 0; k < resource_count; ++k) {
    const auto r = static_cast<resource>(k);
    if (utilisation(s, role, r, fractional) > usable(s.cls[i], r) * (1 + 1e-12)) return false;
  }
  return true;
}

bool fp_model::feasible(const fp_shape& s, bool fractional) const {
  for (size_t i = 0; i < fp_role_count; ++i)
    if (!role_ok(s, static_cast<fp_role>(i), fractional)) return false;
  return true;
}

double fp_model::price(const fp_shape& s) const {
  double p = 0;
  for (size_t i = 0; i < fp_role_count; ++i)
    p += static_cast<double>(s.hosts[i]) * classes_[s.cls[i]].price;
  return p;
}

double fp_model::worst(const fp_shape& s) const {
  double w = 0;
  for (size_t i = 0; i < fp_role_count; ++i) {
    if (s.hosts[i] == 0) continue;
    for (size_t k = 0; k < resource_count; ++k) {
      const auto r = static_cast<resource>(k);
      w = std::max(w, utilisation(s, static_cast<fp_role>(i), r) / usable(s.cls[i], r));
    }
  }
  return w;
}

namespace {

// Smallest value in [lo, hi] for which pred holds (pred false then true), or 0 if none.
template <class Pred>
uint64_t first_true(uint64_t lo, uint64_t hi, Pred pred) {
  if (lo > hi || !pred(hi)) return 0;
  while (lo < hi) {
    const uint64_t mid = lo + (hi - lo) / 2;
    if (pred(mid)) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  return lo;
}

constexpr uint64_t max_nats = 100000;

bool better(const fp_model& m, const fp_shape& a, const fp_shape& b, bool have_b) {
  if (!have_b) return true;
  const double pa = m.price(a), pb = m.price(b);
  if (std::fabs(pa - pb) > 1e-9 * std::max(1.0, pb)) return pa < pb;
  if (a.total() != b.total()) return a.total() < b.total();
  return m.worst(a) < m.worst(b) - 1e-12;
}

// The fewest hosts of class `cls` for `role` in shape s (the other roles as they are), or 0.
uint64_t fewest(const fp_model& m, fp_shape s, fp_role role, size_t cls, uint64_t lo, uint64_t hi,
                bool fractional) {
  const auto i = static_cast<size_t>(role);
  s.cls[i] = cls;
  return first_true(lo, hi, [&](uint64_t h) {
    s.hosts[i] = h;
    return m.role_ok(s, role, fractional);
  });
}

uint64_t match_limit(const fp_model& m) {
  // A matching host owns at least one whole partition.
  return std::max<uint64_t>(1, m.work().partitions);
}

// At least as many NATS servers as the stream has replicas.
uint64_t nats_min(const fp_model& m) {
  return std::max<uint64_t>(1, static_cast<uint64_t>(std::ceil(m.nats_replicas())));
}

// The search both fp_exact and fp_lower_bound run; fractional loads for the bound.
fp_result search(const fp_model& m, bool fractional) {
  fp_result res;
  const size_t classes = m.classes().size();
  const auto feeds = static_cast<uint64_t>(std::ceil(m.work().feeds));
  bool have = false;
  fp_shape best;
  const auto consider = [&](const fp_shape& s) {
    if (better(m, s, best, have)) {
      best = s;
      have = true;
    }
  };
  // Adds the cheapest NATS servers for the shape's matching hosts and considers it.
  const auto with_nats = [&](fp_shape s) {
    bool found = false;
    fp_shape pick;
    for (size_t c = 0; c < classes; ++c) {
      const uint64_t n = fewest(m, s, fp_role::nats, c, nats_min(m), max_nats, fractional);
      if (n == 0) continue;
      fp_shape t = s;
      t.cls[size_t(fp_role::nats)] = c;
      t.hosts[size_t(fp_role::nats)] = n;
      if (better(m, t, pick, found)) {
        pick = t;
        found = true;
      }
    }
    if (found) consider(pick);
  };
  for (size_t c = 0; c < classes; ++c) {
    fp_shape s;
    s.layout = fp_layout::single;
    s.cls[size_t(fp_role::match)] = c;
    s.hosts[size_t(fp_role::match)] = 1;
    if (m.feasible(s, fractional)) consider(s);
  }
  // Split: the crawl class and count do not depend on the others.
  fp_shape crawl_pick;
  bool crawl_found = false;
  for (size_t c = 0; c < classes; ++c) {
    fp_shape s;
    s.layout = fp_layout::split;
    const uint64_t h = fewest(m, s, fp_role::crawl, c, 1, feeds, fractional);
    if (h == 0) continue;
    s.cls[0] = c;
    s.hosts[0] = h;
    if (better(m, s, crawl_pick, crawl_found)) {
      crawl_pick = s;
      crawl_found = true;
    }
  }
  for (size_t c = 0; c < classes && crawl_found; ++c) {
    fp_shape s = crawl_pick;
    const uint64_t h = fewest(m, s, fp_role::match, c, 1, match_limit(m), fractional);
    if (h == 0) continue;
    s.cls[size_t(fp_role::match)] = c;
    s.hosts[size_t(fp_role::match)] = h;
    with_nats(s);
  }
  for (size_t c = 0; c < classes; ++c) {
    fp_shape s;
    s.layout = fp_layout::combined;
    const uint64_t h =
        fewest(m, s, fp_role::match, c, 1, std::min(match_limit(m), feeds), fractional);
    if (h == 0) continue;
    s.cls[size_t(fp_role::match)] = c;
    s.hosts[size_t(fp_role::match)] = h;
    with_nats(s);
  }
  res.feasible = have;
  res.shape = best;
  return res;
}

std::string describe_capacity(const node_class& n, resource r, double share) {
  switch (r) {
    case resource::cpu:
      return fmt::format("cores x cpu_speed >= {:.1f}", n.cores * n.cpu_speed * share);
    case resource::memory:
      return fmt::format("memory_mib >= {:.0f}", n.memory_bytes * share / 1048576);
    case resource::in_bw:
      return fmt::format("in_mbps >= {:.0f}", n.in_bps * share / 1e6);
    case resource::out_bw:
      return fmt::format("out_mbps >= {:.0f}", n.out_bps * share / 1e6);
    case resource::disk:
      return fmt::format("disk_gib >= {:.0f}", n.disk_bytes * share / 1073741824);
  }
  return {};
}

// Why no shape exists: the first role of the split layout that no count of the first class
// fits, at its largest count, with the node that would fit it.
std::string why_not(const fp_model& m) {
  fp_shape s;
  s.layout = fp_layout::split;
  s.hosts[0] = static_cast<uint64_t>(std::ceil(m.work().feeds));
  s.hosts[1] = match_limit(m);
  s.hosts[2] = max_nats;
  for (size_t i = 0; i < fp_role_count; ++i) {
    const auto role = static_cast<fp_role>(i);
    for (size_t k = 0; k < resource_count; ++k) {
      const auto r = static_cast<resource>(k);
      const double u = m.utilisation(s, role, r);
      const double limit = m.usable(0, r);
      if (u <= limit * (1 + 1e-12)) continue;
      std::string why =
          fmt::format("{} {} {:.2f} of {:.2f} with {} {} hosts", fp_role_name(role, s.layout),
                      resource_name(r), u, limit, s.hosts[i], fp_role_name(role, s.layout));
      if (role == fp_role::match)
        why += fmt::format(" (one of the {} partitions each)", m.work().partitions);
      const double floor = m.stream_floor(s, r);
      if (floor > 0) why += fmt::format("; the article stream alone is {:.2f}", floor);
      return why + fmt::format("; a node with {} would do",
                               describe_capacity(m.classes()[0], r, u / limit));
    }
  }
  return "no layout fits";
}

}  // namespace

fp_result fp_exact(const fp_model& m) {
  fp_result r = search(m, false);
  if (!r.feasible) r.reason = why_not(m);
  return r;
}

fp_result fp_lower_bound(const fp_model& m) { return search(m, true); }

fp_result fp_brute_force(const fp_model& m, uint64_t max_hosts) {
  fp_result res;
  bool have = false;
  const size_t classes = m.classes().size();
  const auto consider = [&](const fp_shape& s) {
    if (m.feasible(s) && better(m, s, res.shape, have)) {
      res.shape = s;
      have = true;
    }
  };
  for (size_t c = 0; c < classes; ++c) {
    fp_shape s;
    s.cls[1] = c;
    s.hosts[1] = 1;
    consider(s);
  }
  const uint64_t match_max = std::min(max_hosts, match_limit(m));
  for (size_t cc = 0; cc < classes; ++cc)
    for (size_t cm = 0; cm < classes; ++cm)
      for (size_t cn = 0; cn < classes; ++cn)
        for (uint64_t hm = 1; hm <= match_max; ++hm)
          for (uint64_t hn = nats_min(m); hn <= max_hosts; ++hn) {
            fp_shape s;
            s.layout = fp_layout::combined;
            s.cls[1] = cm;
            s.cls[2] = cn;
            s.hosts[1] = hm;
            s.hosts[2] = hn;
            if (cc == 0 && hm <= static_cast<uint64_t>(std::ceil(m.work().feeds))) consider(s);
            s.layout = fp_layout::split;
            s.cls[0] = cc;
            for (uint64_t hc = 1; hc <= max_hosts; ++hc) {
              s.hosts[0] = hc;
              consider(s);
            }
          }
  res.feasible = have;
  return res;
}

fp_result fp_greedy(const fp_model& m) {
  fp_result res;
  fp_shape& s = res.shape;
  s.hosts[size_t(fp_role::match)] = 1;
  if (m.feasible(s)) {
    res.feasible = true;
    return res;
  }
  res.steps.push_back(
      fmt::format("one {} host does not fit (worst {:.2f} of its usable share): "
                  "crawl, match and nats hosts apart",
                  m.classes()[0].name, m.worst(s)));
  s.layout = fp_layout::split;
  s.hosts[0] = 1;
  s.hosts[2] = nats_min(m);
  const uint64_t limits[fp_role_count] = {static_cast<uint64_t>(std::ceil(m.work().feeds)),
                                          match_limit(m), max_nats};
  for (int step = 0; step < 1000; ++step) {
    // The role and resource furthest over its usable share.
    double over = 1 + 1e-12;
    size_t role = fp_role_count;
    resource what = resource::cpu;
    for (size_t i = 0; i < fp_role_count; ++i) {
      for (size_t k = 0; k < resource_count; ++k) {
        const auto r = static_cast<resource>(k);
        const double share = m.utilisation(s, static_cast<fp_role>(i), r) / m.usable(0, r);
        if (share > over) {
          over = share;
          role = i;
          what = r;
        }
      }
    }
    if (role == fp_role_count) {
      res.feasible = true;
      return res;
    }
    fp_shape t = s;
    const uint64_t n = first_true(s.hosts[role] + 1, limits[role], [&](uint64_t h) {
      t.hosts[role] = h;
      return m.utilisation(t, static_cast<fp_role>(role), what) <= m.usable(0, what) * (1 + 1e-12);
    });
    if (n == 0) {
      res.reason = why_not(m);
      return res;
    }
    res.steps.push_back(fmt::format("{} {} {:.2f} of {:.2f}: {} -> {} {} hosts",
                                    fp_role_name(static_cast<fp_role>(role), s.layout),
                                    resource_name(what), over * m.usable(0, what),
                                    m.usable(0, what), s.hosts[role], n,
                                    fp_role_name(static_cast<fp_role>(role), s.layout)));
    s.hosts[role] = n;
  }
  res.reason = "the greedy loop did not settle";
  return res;
}

plan fp_plan(const fp_model& m, const fp_result& r, std::string method,
             const std::vector<std::vector<uint32_t>>* assignment) {
  plan p;
  p.method = std::move(method);
  p.feasible = r.feasible;
  p.reason = r.reason;
  p.steps = r.steps;
  p.layout = std::string(fp_layout_id(r.shape.layout));
  const fp_shape& s = r.shape;
  const workload& w = m.work();
  for (size_t i = 0; i < fp_role_count; ++i) {
    if (s.hosts[i] == 0) continue;
    const auto role = static_cast<fp_role>(i);
    const node_class& n = m.classes()[s.cls[i]];
    role_plan rp;
    rp.role = fp_role_name(role, s.layout);
    rp.node_class = n.name;
    rp.hosts = s.hosts[i];
    const auto hosts = static_cast<double>(s.hosts[i]);
    const double feeds = std::ceil(w.feeds / hosts);
    const double parts = std::ceil(w.partitions / hosts);
    const double subs = parts * w.subscriptions / w.partitions;
    switch (role) {
      case fp_role::crawl:
        rp.per_host = fmt::format("{:.0f} feeds", feeds);
        break;
      case fp_role::match:
        rp.shape = fmt::format("{:.0f} shards", shards_of(n));
        rp.per_host = fmt::format("{:.0f} partitions ({:.0f} subscriptions)", parts, subs);
        if (s.layout != fp_layout::split) rp.per_host += fmt::format(", {:.0f} feeds", feeds);
        if (s.layout != fp_layout::single)
          rp.per_host +=
              fmt::format("; stream floor cpu {:.2f}, in-bw {:.2f}",
                          m.stream_floor(s, resource::cpu), m.stream_floor(s, resource::in_bw));
        if (r.feasible) {
          const auto parts_of = assignment != nullptr
                                    ? *assignment
                                    : assign_partitions(w.partitions, s.hosts[i], nullptr);
          for (const auto& h : parts_of) rp.assignment.push_back(partition_ranges(h));
        }
        break;
      case fp_role::nats:
        rp.per_host = fmt::format("the stream to {} consumers", s.hosts[size_t(fp_role::match)]);
        break;
    }
    for (size_t k = 0; k < resource_count; ++k) {
      const auto res = static_cast<resource>(k);
      rp.utilisation[k] = m.utilisation(s, role, res);
      rp.usable[k] = m.usable(s.cls[i], res);
      rp.modeled[k] = true;
    }
    p.roles.push_back(std::move(rp));
  }
  p.price = m.price(s);
  return p;
}

namespace {

double max_carried(const fp_model& m, const fp_shape& s, double workload::*field) {
  fp_model t = m;
  workload w = m.work();
  return largest_fitting(m.work().*field, [&](double v) {
    w.*field = v;
    t.set_work(w);
    return t.feasible(s);
  });
}

}  // namespace

std::vector<std::vector<uint32_t>> assign_partitions(
    uint32_t partitions, uint64_t hosts, const std::vector<std::vector<uint32_t>>* previous) {
  std::vector<std::vector<uint32_t>> out(hosts);
  if (hosts == 0) return out;
  const uint64_t base = partitions / hosts, extra = partitions % hosts;
  std::vector<uint64_t> quota(hosts, base);
  if (previous == nullptr) {
    uint32_t next = 0;
    for (uint64_t i = 0; i < hosts; ++i) {
      const uint64_t q = base + (i < extra ? 1 : 0);
      for (uint64_t k = 0; k < q; ++k) out[i].push_back(next++);
    }
    return out;
  }
  // Kept hosts are the first min(hosts, previous) ones; the larger quotas go to those that
  // hold most already, so the fewest partitions move.
  const uint64_t kept = std::min<uint64_t>(hosts, previous->size());
  std::vector<uint64_t> order(hosts);
  std::iota(order.begin(), order.end(), uint64_t{0});
  std::stable_sort(
      order.begin(), order.begin() + static_cast<std::ptrdiff_t>(kept),
      [&](uint64_t a, uint64_t b) { return (*previous)[a].size() > (*previous)[b].size(); });
  for (uint64_t k = 0; k < extra; ++k) ++quota[order[k]];
  std::vector<uint8_t> placed(partitions, 0);
  for (uint64_t i = 0; i < kept; ++i) {
    for (const uint32_t p : (*previous)[i]) {
      if (p >= partitions || placed[p] != 0 || out[i].size() >= quota[i]) continue;
      out[i].push_back(p);
      placed[p] = 1;
    }
  }
  // Partitions of removed hosts, those over a quota, and any the previous plan missed.
  std::vector<uint32_t> freed;
  for (uint32_t p = 0; p < partitions; ++p)
    if (placed[p] == 0) freed.push_back(p);
  size_t next = 0;
  for (uint64_t i = 0; i < hosts; ++i)
    while (out[i].size() < quota[i] && next < freed.size()) out[i].push_back(freed[next++]);
  for (auto& h : out) std::sort(h.begin(), h.end());
  return out;
}

std::string partition_ranges(const std::vector<uint32_t>& parts) {
  std::string s;
  for (size_t i = 0; i < parts.size();) {
    size_t j = i;
    while (j + 1 < parts.size() && parts[j + 1] == parts[j] + 1) ++j;
    if (!s.empty()) s += ',';
    s += i == j ? fmt::format("{}", parts[i]) : fmt::format("{}-{}", parts[i], parts[j]);
    i = j + 1;
  }
  return s;
}

bool parse_partition_ranges(std::string_view text, uint32_t partitions,
                            std::vector<uint32_t>& out) {
  out.clear();
  const auto num = [](std::string_view t, uint32_t& v) {
    auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
    return ec == std::errc() && p == t.data() + t.size() && !t.empty();
  };
  while (!text.empty()) {
    const size_t comma = text.find(',');
    const std::string_view r = text.substr(0, comma);
    text = comma == std::string_view::npos ? std::string_view{} : text.substr(comma + 1);
    const size_t dash = r.find('-');
    uint32_t lo = 0, hi = 0;
    if (!num(r.substr(0, dash), lo)) return false;
    hi = lo;
    if (dash != std::string_view::npos && !num(r.substr(dash + 1), hi)) return false;
    if (hi < lo || hi >= partitions) return false;
    for (uint32_t p = lo; p <= hi; ++p) out.push_back(p);
  }
  return true;
}

std::vector<input_error> read_previous_plan(std::string_view json, std::string_view file,
                                            const std::vector<node_class>& classes,
                                            uint32_t partitions, fp_previous& out) {
  const std::string f(file);
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  const simdjson::padded_string padded(json);
  if (parser.parse(padded).get(doc) != simdjson::SUCCESS)
    return {{f, 0, {}, "not JSON: expected a plan printed by feedplane provision --json"}};
  std::string_view topology;
  if (doc["topology"].get(topology) != simdjson::SUCCESS || topology != "feedplane")
    return {{f, 0, "topology", "expected a plan of the feedplane topology"}};
  simdjson::dom::element exact;
  bool feasible = false;
  std::string_view layout;
  simdjson::dom::array roles;
  if (doc["exact"].get(exact) != simdjson::SUCCESS ||
      exact["feasible"].get(feasible) != simdjson::SUCCESS || !feasible ||
      exact["layout"].get(layout) != simdjson::SUCCESS ||
      exact["roles"].get(roles) != simdjson::SUCCESS)
    return {{f, 0, "exact", "expected a feasible exact plan with layout and roles"}};
  fp_previous p;
  p.class_names.assign(fp_role_count, "");
  bool layout_ok = false;
  for (size_t l = 0; l < fp_layout_count; ++l) {
    if (fp_layout_id(static_cast<fp_layout>(l)) == layout) {
      p.shape.layout = static_cast<fp_layout>(l);
      layout_ok = true;
    }
  }
  if (!layout_ok) return {{f, 0, "exact.layout", fmt::format("unknown layout '{}'", layout)}};
  for (simdjson::dom::element role : roles) {
    std::string_view name, cls;
    uint64_t hosts = 0;
    if (role["role"].get(name) != simdjson::SUCCESS ||
        role["class"].get(cls) != simdjson::SUCCESS ||
        role["hosts"].get(hosts) != simdjson::SUCCESS)
      return {{f, 0, "exact.roles", "each role needs role, class and hosts"}};
    size_t i = fp_role_count;
    for (size_t k = 0; k < fp_role_count; ++k)
      if (fp_role_name(static_cast<fp_role>(k), p.shape.layout) == name) i = k;
    if (i == fp_role_count) return {{f, 0, "exact.roles", fmt::format("unknown role '{}'", name)}};
    p.shape.hosts[i] = hosts;
    p.class_names[i] = std::string(cls);
    const auto it = std::find_if(classes.begin(), classes.end(),
                                 [&](const node_class& c) { return c.name == cls; });
    if (it == classes.end()) {
      p.known_classes = false;
    } else {
      p.shape.cls[i] = static_cast<size_t>(it - classes.begin());
    }
    if (i != size_t(fp_role::match)) continue;
    simdjson::dom::array assignment;
    if (role["assignment"].get(assignment) != simdjson::SUCCESS)
      return {{f, 0, "exact.roles.assignment", "the matching role lists no partitions"}};
    for (simdjson::dom::element a : assignment) {
      std::string_view text;
      std::vector<uint32_t> parts;
      if (a.get(text) != simdjson::SUCCESS || !parse_partition_ranges(text, partitions, parts))
        return {{f, 0, "exact.roles.assignment",
                 fmt::format("expected ranges of partitions below {} (a plan for another P?)",
                             partitions)}};
      p.partitions.push_back(std::move(parts));
    }
  }
  out = std::move(p);
  return {};
}

std::vector<input_error> load_previous_plan(const std::string& path,
                                            const std::vector<node_class>& classes,
                                            uint32_t partitions, fp_previous& out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {{path, 0, {}, "cannot open"}};
  std::ostringstream ss;
  ss << in.rdbuf();
  return read_previous_plan(ss.str(), path, classes, partitions, out);
}

std::vector<input_error> fp_report(const workload& w, const std::vector<node_class>& classes,
                                   const cost_model& costs, report& out,
                                   const fp_previous* previous) {
  fp_model m;
  if (auto e = fp_model::make(w, costs, classes, m); !e.empty()) return e;
  report r;
  r.topology = "feedplane";
  r.work = w;
  r.costs_name = costs.name;
  if (costs.match_provenance.kind == provenance_kind::fitted) r.fitted.emplace_back("match");
  for (const auto& [name, c] : costs.coefficients)
    if (c.kind == provenance_kind::fitted) r.fitted.push_back(name);
  fp_result exact = fp_exact(m);
  std::vector<std::vector<uint32_t>> assignment;
  const std::vector<std::vector<uint32_t>>* assigned = nullptr;
  if (previous != nullptr) {
    r.has_previous = true;
    const fp_shape& before = previous->shape;
    if (previous->known_classes && m.feasible(before) &&
        (!exact.feasible || m.price(before) <= m.price(exact.shape) + 1e-9)) {
      exact.shape = before;
      exact.feasible = true;
      exact.reason.clear();
      r.kept_previous = true;
    }
    const size_t mi = size_t(fp_role::match);
    const bool same = previous->known_classes && exact.shape.cls[mi] == before.cls[mi];
    if (exact.feasible) {
      assignment = assign_partitions(w.partitions, exact.shape.hosts[mi],
                                     same ? &previous->partitions : nullptr);
      assigned = &assignment;
    }
    for (size_t i = 0; i < fp_role_count; ++i) {
      report::move mv;
      mv.role = fp_role_name(static_cast<fp_role>(i), exact.shape.layout);
      mv.class_before = previous->class_names[i];
      mv.hosts_before = before.hosts[i];
      mv.hosts_after = exact.feasible ? exact.shape.hosts[i] : 0;
      mv.class_after = mv.hosts_after > 0 ? classes[exact.shape.cls[i]].name : "";
      if (mv.hosts_before == 0 && mv.hosts_after == 0) continue;
      const bool kept_class = mv.class_before == mv.class_after;
      mv.added = !kept_class                        ? mv.hosts_after
                 : mv.hosts_after > mv.hosts_before ? mv.hosts_after - mv.hosts_before
                                                    : 0;
      mv.removed = !kept_class                        ? mv.hosts_before
                   : mv.hosts_before > mv.hosts_after ? mv.hosts_before - mv.hosts_after
                                                      : 0;
      if (i == mi && assigned != nullptr) {
        // A partition moves when its host changes (every one, when the class changed).
        std::vector<int64_t> host_before(w.partitions, -1);
        if (same) {
          for (size_t h = 0; h < previous->partitions.size(); ++h)
            for (const uint32_t p : previous->partitions[h])
              host_before[p] = static_cast<int64_t>(h);
        }
        for (size_t h = 0; h < assignment.size(); ++h)
          for (const uint32_t p : assignment[h])
            mv.partitions_moved += host_before[p] != static_cast<int64_t>(h) ? 1 : 0;
        mv.subscriptions_moved =
            static_cast<double>(mv.partitions_moved) * w.subscriptions / w.partitions;
        mv.bytes_moved = mv.subscriptions_moved * m.state_bytes_per_subscription();
      }
      r.moves.push_back(std::move(mv));
    }
  }
  r.exact = fp_plan(m, exact, "exact", assigned);

  r.greedy = fp_plan(m, fp_greedy(m), "greedy");
  std::string used;
  for (const auto& rp : r.exact.roles)
    used += fmt::format("{}{} {}", used.empty() ? "" : ", ", rp.role, rp.node_class);
  r.node_class = exact.feasible ? used : classes[0].name;
  const fp_result bound = fp_lower_bound(m);
  r.bound_feasible = bound.feasible;
  for (size_t i = 0; i < fp_role_count; ++i) {
    if (bound.shape.hosts[i] == 0) continue;
    r.bound_roles.emplace_back(fp_role_name(static_cast<fp_role>(i), bound.shape.layout));
    r.bound_hosts.push_back(bound.shape.hosts[i]);
  }
  r.bound_price = bound.feasible ? m.price(bound.shape) : 0;
  if (exact.feasible) {
    r.max_feeds = max_carried(m, exact.shape, &workload::feeds);
    r.max_subscriptions = max_carried(m, exact.shape, &workload::subscriptions);
  }
  const double matches_per_s = w.articles_per_s() / w.peak_to_mean * w.match_share;
  r.poll_interval_needed_s = matches_per_s > 0 ? w.k / matches_per_s : 0;
  out = std::move(r);
  return {};
}

}  // namespace feedplane::provisioner
