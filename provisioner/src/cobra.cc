#include "feedplane/provisioner/cobra.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace feedplane::provisioner {

std::string_view cobra_role_name(cobra_role r) {
  switch (r) {
    case cobra_role::crawler:
      return "crawler";
    case cobra_role::filter:
      return "filter";
    case cobra_role::reflector:
      return "reflector";
  }
  return "?";
}

std::string_view decomposition_name(decomposition d) {
  switch (d) {
    case decomposition::in:
      return "in";
    case decomposition::out:
      return "out";
    case decomposition::unresolvable:
      return "none (unresolvable)";
    case decomposition::not_modeled:
      return "none (not modeled)";
  }
  return "?";
}

decomposition figure3(cobra_role role, resource violated) {
  if (violated == resource::disk) return decomposition::not_modeled;  // Cobra has no disk
  switch (role) {
    case cobra_role::crawler:
      // In-bw: fewer feeds crawled; out-bw: updates found at a lower rate. CPU and memory
      // are not modeled.
      return violated == resource::in_bw || violated == resource::out_bw
                 ? decomposition::in
                 : decomposition::not_modeled;
    case cobra_role::filter:
      // Bandwidth: fewer crawlers send to each filter; CPU and memory: fewer subscriptions.
      return violated == resource::in_bw || violated == resource::out_bw ? decomposition::in
                                                                         : decomposition::out;
    case cobra_role::reflector:
      // In-bw: a reflector must hear every feed; the rest: fewer subscriptions.
      return violated == resource::in_bw ? decomposition::unresolvable : decomposition::out;
  }
  return decomposition::not_modeled;
}

namespace {

uint64_t ceil_div(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

const char* const needed[] = {"stream_bytes_per_article", "poll_bytes_per_item",
                              "filter_bytes_base",        "filter_bytes_per_subscription",
                              "reflector_bytes_base",     "reflector_bytes_per_subscription",
                              "reflector_match_factor"};

}  // namespace

std::vector<input_error> cobra_model::make(const workload& w, const cost_model& costs,
                                           const node_class& node, cobra_model& out) {
  std::vector<input_error> errors;
  double v[std::size(needed)] = {};
  for (size_t i = 0; i < std::size(needed); ++i) {
    const coefficient* c = costs.find(needed[i]);
    if (c == nullptr) {
      errors.push_back({costs.file, 0, fmt::format("coefficients.{}", needed[i]),
                        "missing: the cobra topology needs it"});
    } else {
      v[i] = c->value;
    }
  }
  if (!errors.empty()) return errors;
  out.w_ = w;
  out.node_ = node;
  out.costs_ = &costs;
  out.stream_bytes_ = v[0];
  out.poll_bytes_per_item_ = v[1];
  out.filter_base_ = v[2];
  out.filter_per_sub_ = v[3];
  out.reflector_base_ = v[4];
  out.reflector_per_sub_ = v[5];
  out.reflector_match_factor_ = v[6];
  return errors;
}

double cobra_model::usable(resource r) const {
  switch (r) {
    case resource::cpu:
      return node_.usable_cpu;
    case resource::memory:
      return node_.usable_memory;
    case resource::in_bw:
    case resource::out_bw:
      return node_.usable_network;
    case resource::disk:
      return node_.usable_disk;
  }
  return 0;
}

double cobra_model::load(cobra_role role, resource r, double feeds, double subs,
                         double fanout) const {
  const double rate = w_.articles_per_s() * feeds / w_.feeds;  // articles/s from those feeds
  const double article_bits = stream_bytes_ * 8;
  const double h = node_.headroom;
  const double cpu = node_.cores * node_.cpu_speed;
  switch (role) {
    case cobra_role::crawler:
      if (r == resource::in_bw)
        return feeds * w_.feed_bytes * (1 - w_.not_modified_share) * 8 / w_.crawl_interval_s * h /
               node_.in_bps;
      if (r == resource::out_bw) return rate * article_bits * fanout * h / node_.out_bps;
      return 0;  // Figure 3: crawler CPU and memory are not modeled
    case cobra_role::filter:
      switch (r) {
        case resource::cpu:
          return rate * costs_->match_seconds(subs, w_.article_words) * h / cpu;
        case resource::memory:
          return (filter_base_ + filter_per_sub_ * subs) / node_.memory_bytes;
        case resource::in_bw:
          return rate * article_bits * h / node_.in_bps;
        case resource::out_bw:
          return rate * article_bits * fanout * h / node_.out_bps;
        case resource::disk:
          return 0;  // Cobra keeps everything in memory
      }
      return 0;
    case cobra_role::reflector:
      switch (r) {
        case resource::cpu:
          return rate * costs_->match_seconds(subs, w_.article_words) * reflector_match_factor_ *
                 h / cpu;
        case resource::memory:
          return (reflector_base_ + reflector_per_sub_ * subs) / node_.memory_bytes;
        case resource::in_bw:
          return rate * article_bits * h / node_.in_bps;
        case resource::out_bw:
          return subs / w_.poll_interval_s * w_.peak_to_mean * w_.k * poll_bytes_per_item_ * 8 * h /
                 node_.out_bps;
        case resource::disk:
          return 0;
      }
      return 0;
  }
  return 0;
}

double cobra_model::utilisation(const cobra_shape& s, cobra_role role, resource r) const {
  const auto feeds = static_cast<uint64_t>(std::ceil(w_.feeds));
  const auto subs = static_cast<uint64_t>(std::ceil(w_.subscriptions));
  const uint64_t f = ceil_div(feeds, s.crawlers);  // feeds on the most loaded crawler
  switch (role) {
    case cobra_role::crawler:
      return load(role, r, static_cast<double>(f), 0, static_cast<double>(s.filter_out));
    case cobra_role::filter: {
      const uint64_t heard = std::min(feeds, ceil_div(s.crawlers, s.filter_in) * f);
      return load(role, r, static_cast<double>(heard),
                  static_cast<double>(ceil_div(subs, s.filter_out)),
                  static_cast<double>(ceil_div(s.reflectors, s.filter_out)));
    }
    case cobra_role::reflector:
      return load(role, r, static_cast<double>(feeds),
                  static_cast<double>(ceil_div(subs, s.reflectors)), 1);
  }
  return 0;
}

bool cobra_model::feasible(const cobra_shape& s) const {
  for (size_t role = 0; role < cobra_role_count; ++role) {
    for (size_t r = 0; r < resource_count; ++r) {
      if (violated(s, static_cast<cobra_role>(role), static_cast<resource>(r))) return false;
    }
  }
  return true;
}

double cobra_model::worst(const cobra_shape& s) const {
  double w = 0;
  for (size_t role = 0; role < cobra_role_count; ++role) {
    for (size_t r = 0; r < resource_count; ++r) {
      const auto res = static_cast<resource>(r);
      w = std::max(w, utilisation(s, static_cast<cobra_role>(role), res) / usable(res));
    }
  }
  return w;
}

namespace {

// The count a decomposition changes, and how far it can go.
uint64_t* field(cobra_shape& s, cobra_role role, decomposition d) {
  if (role == cobra_role::crawler) return &s.crawlers;
  if (role == cobra_role::reflector) return &s.reflectors;
  return d == decomposition::in ? &s.filter_in : &s.filter_out;
}

uint64_t field_max(const cobra_model& m, const cobra_shape& s, cobra_role role, decomposition d) {
  const auto feeds = static_cast<uint64_t>(std::ceil(m.work().feeds));
  const auto subs = static_cast<uint64_t>(std::ceil(m.work().subscriptions));
  if (role == cobra_role::crawler) return feeds;
  if (role == cobra_role::filter && d == decomposition::in) return s.crawlers;
  return subs;
}

// The smallest value of the field in [lo, hi] that clears (role, what), or 0 when none
// does. The demand is non-increasing in the field, so a binary search finds it.
uint64_t fewest(const cobra_model& m, cobra_shape s, cobra_role role, resource what,
                decomposition d, uint64_t lo, uint64_t hi) {
  uint64_t* f = field(s, role, d);
  *f = hi;
  if (m.violated(s, role, what)) return 0;
  while (lo < hi) {
    const uint64_t mid = lo + (hi - lo) / 2;
    *f = mid;
    if (m.violated(s, role, what)) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo;
}

std::string describe_capacity(const cobra_model& m, resource r, double share) {
  const node_class& n = m.node();
  switch (r) {
    case resource::cpu:
      return fmt::format("cores x cpu_speed >= {:.2f}", n.cores * n.cpu_speed * share);
    case resource::memory:
      return fmt::format("memory_mib >= {:.0f}", n.memory_bytes * share / 1048576);
    case resource::in_bw:
      return fmt::format("in_mbps >= {:.1f}", n.in_bps * share / 1e6);
    case resource::out_bw:
      return fmt::format("out_mbps >= {:.1f}", n.out_bps * share / 1e6);
    case resource::disk:
      return fmt::format("disk_gib >= {:.1f}", n.disk_bytes * share / 1073741824);
  }
  return {};
}

// Why a violation cannot be cleared, and the node that would clear it at this shape.
std::string unresolvable(const cobra_model& m, const cobra_shape& s, cobra_role role, resource r,
                         std::string_view why) {
  const double u = m.utilisation(s, role, r);
  return fmt::format("{} {} {:.2f} of {:.2f} cannot be resolved: {}; a node with {} would do",
                     cobra_role_name(role), resource_name(r), u, m.usable(r), why,
                     describe_capacity(m, r, u / m.usable(r)));
}

constexpr uint64_t max_steps = 10000;

}  // namespace

cobra_result cobra_greedy(const cobra_model& m) {
  cobra_result res;
  cobra_shape& s = res.shape;
  for (uint64_t step = 0; step < max_steps; ++step) {
    const violation_ref* v = nullptr;
    for (const auto& cand : greedy_order) {
      if (m.violated(s, cand.role, cand.what)) {
        v = &cand;
        break;
      }
    }
    if (v == nullptr) {
      res.feasible = true;
      return res;
    }
    const decomposition d = figure3(v->role, v->what);
    if (d == decomposition::unresolvable || d == decomposition::not_modeled) {
      res.reason =
          unresolvable(m, s, v->role, v->what,
                       "Figure 3 has no decomposition for it (a reflector hears every feed)");
      return res;
    }
    uint64_t* f = field(s, v->role, d);
    const uint64_t hi = field_max(m, s, v->role, d);
    const uint64_t n = *f < hi ? fewest(m, s, v->role, v->what, d, *f + 1, hi) : 0;
    if (n == 0) {
      cobra_shape most = s;
      *field(most, v->role, d) = hi;
      res.reason = unresolvable(m, most, v->role, v->what,
                                fmt::format("even {} {}-decomposition replicas leave it violated",
                                            hi, decomposition_name(d)));
      return res;
    }
    const double u = m.utilisation(s, v->role, v->what);
    const uint64_t before = *f;
    *f = n;
    res.steps.push_back(fmt::format(
        "{} {} {:.2f} of {:.2f}: {}-decomposition, {} -> {} ({} crawlers, {} x {} filters, {} "
        "reflectors)",
        cobra_role_name(v->role), resource_name(v->what), u, m.usable(v->what),
        decomposition_name(d), before, n, s.crawlers, s.filter_in, s.filter_out, s.reflectors));
  }
  res.reason = "the greedy loop did not settle";
  return res;
}

namespace {

bool role_ok(const cobra_model& m, const cobra_shape& s, cobra_role role) {
  for (size_t r = 0; r < resource_count; ++r)
    if (m.violated(s, role, static_cast<resource>(r))) return false;
  return true;
}

// Smallest value in [lo, hi] for which pred holds, pred monotone (false then true); 0 if none.
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

bool better(const cobra_model& m, const cobra_shape& a, const cobra_shape& b, bool have_b) {
  if (!have_b) return true;
  if (a.hosts() != b.hosts()) return a.hosts() < b.hosts();
  return m.worst(a) < m.worst(b) - 1e-12;
}

}  // namespace

cobra_result cobra_exact(const cobra_model& m) {
  cobra_result res;
  const auto feeds = static_cast<uint64_t>(std::ceil(m.work().feeds));
  const auto subs = static_cast<uint64_t>(std::ceil(m.work().subscriptions));
  // Reflectors depend on nothing else, and more of them only load the filters: the fewest.
  cobra_shape probe;
  const uint64_t r_min = first_true(1, subs, [&](uint64_t r) {
    probe.reflectors = r;
    return role_ok(m, probe, cobra_role::reflector);
  });
  if (r_min == 0) {
    probe.reflectors = subs;
    for (size_t r = 0; r < resource_count; ++r) {
      if (m.violated(probe, cobra_role::reflector, static_cast<resource>(r))) {
        res.reason = unresolvable(m, probe, cobra_role::reflector, static_cast<resource>(r),
                                  "no number of reflectors clears it");
        break;
      }
    }
    return res;
  }
  // Crawler in-bw depends on the crawler count alone.
  const uint64_t c_min = first_true(1, feeds, [&](uint64_t c) {
    cobra_shape t;
    t.crawlers = c;
    return !m.violated(t, cobra_role::crawler, resource::in_bw);
  });
  if (c_min == 0) {
    cobra_shape t;
    t.crawlers = feeds;
    res.reason = unresolvable(m, t, cobra_role::crawler, resource::in_bw, "one feed per crawler");
    return res;
  }
  const cobra_bound bound = cobra_lower_bound(m);
  const uint64_t filters_lb = std::max<uint64_t>(1, bound.role[1]);
  // The incumbent: greedy's plan when it has one; otherwise the search is capped.
  const cobra_result greedy = cobra_greedy(m);
  bool have = greedy.feasible;
  cobra_shape best = greedy.shape;
  const uint64_t c_cap = have ? feeds : std::min(feeds, c_min + 4096);
  for (uint64_t c = c_min; c <= c_cap; ++c) {
    if (have && c + filters_lb + r_min > best.hosts()) break;
    cobra_shape s;
    s.crawlers = c;
    s.reflectors = r_min;
    // Fewest subscription parts with `a` crawler parts: filter demands fall with b.
    const auto b_min = [&](uint64_t a) {
      s.filter_in = a;
      return first_true(1, subs, [&](uint64_t b) {
        s.filter_out = b;
        return role_ok(m, s, cobra_role::filter);
      });
    };
    const uint64_t b_inf = b_min(c);  // one crawler per filter part: the fewest b can be
    if (b_inf == 0) continue;
    for (uint64_t a = 1; a <= c; ++a) {
      if (have && c + a * b_inf + r_min > best.hosts()) break;
      const uint64_t b = b_min(a);
      if (b == 0) continue;
      s.filter_in = a;
      s.filter_out = b;
      // Crawler out-bw grows with b, so the fewest b is the only one worth trying.
      if (role_ok(m, s, cobra_role::crawler) && better(m, s, best, have)) {
        best = s;
        have = true;
      }
      if (b == b_inf) break;  // more crawler parts cannot lower b further
    }
  }
  res.feasible = have;
  res.shape = best;
  if (!have) res.reason = fmt::format("no shape with up to {} crawlers meets every limit", c_cap);
  return res;
}

cobra_result cobra_brute_force(const cobra_model& m, uint64_t max_hosts) {
  cobra_result res;
  bool have = false;
  cobra_shape s;
  for (s.crawlers = 1; s.crawlers + 2 <= max_hosts; ++s.crawlers) {
    for (s.filter_in = 1; s.filter_in <= s.crawlers; ++s.filter_in) {
      for (s.filter_out = 1; s.crawlers + s.filters() + 1 <= max_hosts; ++s.filter_out) {
        for (s.reflectors = 1; s.hosts() <= max_hosts; ++s.reflectors) {
          if (m.feasible(s) && better(m, s, res.shape, have)) {
            res.shape = s;
            have = true;
          }
        }
      }
    }
  }
  res.feasible = have;
  return res;
}

cobra_bound cobra_lower_bound(const cobra_model& m) {
  // Loads here are fractional (F/H feeds, S/H subscriptions per host), where plans round
  // up; and fan-outs are the least any shape has. So no shape does better.
  cobra_bound b;
  const double feeds = m.work().feeds, subs = m.work().subscriptions;
  const auto share = [&](cobra_role role, resource r, double f, double s, double fanout) {
    return m.load(role, r, f, s, fanout) / m.usable(r);
  };
  const auto hosts = [](double total_share) {
    return static_cast<uint64_t>(std::max(1.0, std::ceil(total_share - 1e-9)));
  };
  constexpr uint64_t none = std::numeric_limits<uint32_t>::max();
  // Reflectors: each hears every article (a per-host floor); the rest splits with S/R.
  if (share(cobra_role::reflector, resource::in_bw, feeds, 0, 1) > 1 + 1e-12) {
    b.role[2] = none;
  } else {
    const auto fits = [&](uint64_t r) {
      const double held = subs / static_cast<double>(r);
      for (const resource x : {resource::cpu, resource::memory, resource::out_bw})
        if (share(cobra_role::reflector, x, feeds, held, 1) > 1 + 1e-12) return false;
      return true;
    };
    const uint64_t r = first_true(1, static_cast<uint64_t>(std::ceil(subs)), fits);
    b.role[2] = r == 0 ? none : r;
  }
  // Crawlers: every fetched byte once; every article to at least one filter.
  b.role[0] = std::max(hosts(share(cobra_role::crawler, resource::in_bw, feeds, 0, 1)),
                       hosts(share(cobra_role::crawler, resource::out_bw, feeds, 0, 1)));
  // Filters, with b subscription parts: at least b hosts; memory needs S/b to fit one host;
  // matching costs b x rate x t(S/b) in all; every article enters each part once, and
  // leaves towards every reflector once.
  const auto b_mem = first_true(1, static_cast<uint64_t>(std::ceil(subs)), [&](uint64_t parts) {
    return share(cobra_role::filter, resource::memory, feeds, subs / static_cast<double>(parts),
                 1) <= 1 + 1e-12;
  });
  const double reflectors = b.role[2] == none ? 1 : static_cast<double>(b.role[2]);
  uint64_t best = none;
  for (uint64_t parts = std::max<uint64_t>(b_mem, 1); b_mem != 0 && parts < best; ++parts) {
    const auto p = static_cast<double>(parts);
    const uint64_t h =
        std::max({parts, hosts(p * share(cobra_role::filter, resource::cpu, feeds, subs / p, 1)),
                  hosts(p * share(cobra_role::filter, resource::in_bw, feeds, subs / p, 1)),
                  hosts(share(cobra_role::filter, resource::out_bw, feeds, subs / p, reflectors))});
    best = std::min(best, h);
  }
  b.role[1] = best;
  return b;
}

plan cobra_plan(const cobra_model& m, const cobra_result& r, std::string method) {
  plan p;
  p.method = std::move(method);
  p.feasible = r.feasible;
  p.reason = r.reason;
  p.steps = r.steps;
  const cobra_shape& s = r.shape;
  const auto feeds = static_cast<uint64_t>(std::ceil(m.work().feeds));
  const auto subs = static_cast<uint64_t>(std::ceil(m.work().subscriptions));
  for (size_t i = 0; i < cobra_role_count; ++i) {
    const auto role = static_cast<cobra_role>(i);
    role_plan rp;
    rp.role = cobra_role_name(role);
    rp.node_class = m.node().name;
    switch (role) {
      case cobra_role::crawler:
        rp.hosts = s.crawlers;
        rp.per_host = fmt::format("{} feeds", ceil_div(feeds, s.crawlers));
        break;
      case cobra_role::filter:
        rp.hosts = s.filters();
        rp.shape = fmt::format("{} x {}", s.filter_in, s.filter_out);
        rp.per_host = fmt::format("{} subscriptions, articles of {} crawlers",
                                  ceil_div(subs, s.filter_out), ceil_div(s.crawlers, s.filter_in));
        break;
      case cobra_role::reflector:
        rp.hosts = s.reflectors;
        rp.per_host = fmt::format("{} subscriptions", ceil_div(subs, s.reflectors));
        break;
    }
    for (size_t k = 0; k < resource_count; ++k) {
      const auto res = static_cast<resource>(k);
      rp.utilisation[k] = m.utilisation(s, role, res);
      rp.usable[k] = m.usable(res);
      rp.modeled[k] = res != resource::disk && !(role == cobra_role::crawler &&
                                                 (res == resource::cpu || res == resource::memory));
    }
    p.roles.push_back(std::move(rp));
  }
  p.price = static_cast<double>(s.hosts()) * m.node().price;
  return p;
}

namespace {

// The largest value of one workload field in [now, 1e15] the shape still carries.
double max_carried(const cobra_model& m, const cobra_shape& s, double workload::*field) {
  cobra_model t = m;
  workload w = m.work();
  return largest_fitting(m.work().*field, [&](double v) {
    w.*field = v;
    t.set_work(w);
    return t.feasible(s);
  });
}

}  // namespace

double cobra_max_feeds(const cobra_model& m, const cobra_shape& s) {
  return max_carried(m, s, &workload::feeds);
}

double cobra_max_subscriptions(const cobra_model& m, const cobra_shape& s) {
  return max_carried(m, s, &workload::subscriptions);
}

std::vector<input_error> cobra_report(const workload& w, const std::vector<node_class>& classes,
                                      const cost_model& costs, report& out) {
  std::vector<cobra_model> models(classes.size());
  for (size_t i = 0; i < classes.size(); ++i) {
    if (auto e = cobra_model::make(w, costs, classes[i], models[i]); !e.empty()) return e;
  }
  if (models.empty()) return {{costs.file, 0, {}, "no node class"}};
  std::vector<cobra_result> exact(models.size());
  size_t chosen = models.size();
  for (size_t i = 0; i < models.size(); ++i) {
    exact[i] = cobra_exact(models[i]);
    if (!exact[i].feasible) continue;
    const double price = static_cast<double>(exact[i].shape.hosts()) * classes[i].price;
    if (chosen == models.size() ||
        price < static_cast<double>(exact[chosen].shape.hosts()) * classes[chosen].price)
      chosen = i;
  }
  if (chosen == models.size()) chosen = 0;
  report r;
  r.topology = "cobra";
  r.work = w;
  r.costs_name = costs.name;
  if (costs.match_provenance.kind == provenance_kind::fitted) r.fitted.emplace_back("match");
  for (const auto& [name, c] : costs.coefficients) {
    if (c.kind == provenance_kind::fitted) r.fitted.push_back(name);
  }
  r.node_class = classes[chosen].name;
  for (size_t i = 0; i < models.size(); ++i) {
    if (i == chosen) continue;
    r.other_classes.push_back(
        exact[i].feasible
            ? fmt::format("{}: {} hosts, price {}", classes[i].name, exact[i].shape.hosts(),
                          static_cast<double>(exact[i].shape.hosts()) * classes[i].price)
            : fmt::format("{}: no plan ({})", classes[i].name, exact[i].reason));
  }
  const cobra_model& m = models[chosen];
  r.exact = cobra_plan(m, exact[chosen], "exact");
  r.greedy = cobra_plan(m, cobra_greedy(m), "greedy");
  const cobra_bound b = cobra_lower_bound(m);
  for (size_t i = 0; i < cobra_role_count; ++i) {
    r.bound_roles.emplace_back(cobra_role_name(static_cast<cobra_role>(i)));
    r.bound_hosts.push_back(b.role[i]);
    r.bound_feasible = r.bound_feasible && b.role[i] != std::numeric_limits<uint32_t>::max();
  }
  if (exact[chosen].feasible) {
    r.max_feeds = cobra_max_feeds(m, exact[chosen].shape);
    r.max_subscriptions = cobra_max_subscriptions(m, exact[chosen].shape);
  }
  const double matches_per_s = w.articles_per_s() * w.match_share;
  r.poll_interval_needed_s = matches_per_s > 0 ? w.k / matches_per_s : 0;
  out = std::move(r);
  return {};
}

}  // namespace feedplane::provisioner
