#include "feedplane/provisioner/map.h"

#include <fmt/format.h>
#include <lemon/network_simplex.h>
#include <lemon/smart_graph.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <limits>
#include <numbers>
#include <numeric>
#include <random>
#include <sstream>

namespace feedplane::provisioner {

namespace {

std::string_view next_field(std::string_view& line) {
  const size_t comma = line.find(',');
  std::string_view f = line.substr(0, comma);
  line = comma == std::string_view::npos ? std::string_view{} : line.substr(comma + 1);
  return f;
}

}  // namespace

std::vector<input_error> read_latency_csv(std::string_view text, std::string_view file,
                                          latency_matrix& out) {
  std::vector<input_error> errors;
  latency_matrix m;
  const std::string f(file);
  uint32_t line_no = 0;
  size_t pos = 0;
  constexpr size_t max_errors = 20;
  while (pos < text.size() && errors.size() < max_errors) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line_no == 1) {
      if (next_field(line) != "group" || next_field(line) != "feeds") {
        errors.push_back({f, 1, {}, "the header must start with group,feeds"});
        break;
      }
      while (!line.empty() || m.crawlers == 0) {
        const std::string_view h = next_field(line);
        if (h != fmt::format("rtt_ms_{}", m.crawlers + 1)) {
          errors.push_back(
              {f, 1, std::string(h), fmt::format("expected rtt_ms_{}", m.crawlers + 1)});
          break;
        }
        ++m.crawlers;
        if (line.empty()) break;
      }
      if (!errors.empty()) break;
      continue;
    }
    if (line.empty()) continue;
    m.groups.emplace_back(next_field(line));
    const std::string_view feeds = next_field(line);
    uint64_t n = 0;
    auto [p, ec] = std::from_chars(feeds.data(), feeds.data() + feeds.size(), n);
    if (ec != std::errc() || p != feeds.data() + feeds.size() || n == 0) {
      errors.push_back(
          {f, line_no, "feeds", fmt::format("expected a positive integer, not '{}'", feeds)});
      continue;
    }
    m.feeds.push_back(n);
    m.total_feeds += n;
    for (uint32_t c = 0; c < m.crawlers; ++c) {
      const std::string_view cell = next_field(line);
      double v = -1;
      auto [q, ec2] = std::from_chars(cell.data(), cell.data() + cell.size(), v);
      if (ec2 != std::errc() || q != cell.data() + cell.size() || !(v >= 0) || v > 1e6) {
        errors.push_back(
            {f, line_no, fmt::format("rtt_ms_{}", c + 1),
             cell.empty() ? "missing" : fmt::format("expected milliseconds, not '{}'", cell)});
        break;
      }
      m.rtt.push_back(static_cast<int32_t>(std::lround(v * 10)));
    }
    if (m.rtt.size() != m.groups.size() * m.crawlers) {
      m.rtt.resize(m.groups.size() * m.crawlers);  // keep rows aligned after an error
    } else if (!line.empty()) {
      errors.push_back({f, line_no, {}, fmt::format("more than {} RTT columns", m.crawlers)});
    }
  }
  if (errors.empty() && m.groups.empty()) errors.push_back({f, 0, {}, "no groups"});
  if (errors.empty()) out = std::move(m);
  return errors;
}

std::vector<input_error> load_latency_csv(const std::string& path, latency_matrix& out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {{path, 0, {}, "cannot open"}};
  std::ostringstream ss;
  ss << in.rdbuf();
  return read_latency_csv(ss.str(), path, out);
}

namespace {

// Fills the per-crawler counts, splits and RTT figures from `placed`.
void summarise(const latency_matrix& m, mapping& r) {
  r.per_crawler.assign(m.crawlers, 0);
  r.split_groups = 0;
  r.total_cost = 0;
  std::vector<std::pair<int32_t, uint64_t>> by_rtt;
  for (size_t g = 0; g < r.placed.size(); ++g) {
    r.split_groups += r.placed[g].size() > 1;
    for (const auto& [c, n] : r.placed[g]) {
      r.per_crawler[c] += n;
      r.total_cost += static_cast<int64_t>(n) * m.at(g, c);
      by_rtt.emplace_back(m.at(g, c), n);
    }
  }
  std::sort(by_rtt.begin(), by_rtt.end());
  uint64_t total = 0;
  for (const auto& [rtt, n] : by_rtt) total += n;
  if (total == 0) return;
  r.mean_ms = static_cast<double>(r.total_cost) / 10.0 / static_cast<double>(total);
  const auto quantile = [&](double q) {
    // The RTT of the feed at rank ceil(q x total) (1-based).
    const auto rank =
        static_cast<uint64_t>(std::max(1.0, std::ceil(q * static_cast<double>(total))));
    uint64_t seen = 0;
    for (const auto& [rtt, n] : by_rtt) {
      seen += n;
      if (seen >= rank) return rtt / 10.0;
    }
    return by_rtt.back().first / 10.0;
  };
  r.median_ms = quantile(0.5);
  r.p90_ms = quantile(0.9);
}

bool check_capacity(const latency_matrix& m, uint64_t capacity, mapping& r) {
  if (capacity * m.crawlers >= m.total_feeds) return true;
  r.reason = fmt::format("{} crawlers x {} feeds each hold fewer than the {} feeds", m.crawlers,
                         capacity, m.total_feeds);
  return false;
}

}  // namespace

mapping map_first_fit(const latency_matrix& m, uint64_t capacity) {
  mapping r;
  if (!check_capacity(m, capacity, r)) return r;
  const size_t groups = m.groups.size();
  // Each crawler's groups, nearest first (ties: file order), and how far it has looked.
  std::vector<std::vector<uint32_t>> order(m.crawlers);
  for (uint32_t c = 0; c < m.crawlers; ++c) {
    order[c].resize(groups);
    std::iota(order[c].begin(), order[c].end(), 0U);
    std::stable_sort(order[c].begin(), order[c].end(),
                     [&](uint32_t a, uint32_t b) { return m.at(a, c) < m.at(b, c); });
  }
  std::vector<size_t> next(m.crawlers, 0);
  std::vector<uint64_t> left = m.feeds, held(m.crawlers, 0);
  r.placed.assign(groups, {});
  uint64_t unplaced = m.total_feeds;
  while (unplaced > 0) {
    bool any = false;
    for (uint32_t c = 0; c < m.crawlers && unplaced > 0; ++c) {
      if (held[c] == capacity) continue;
      while (left[order[c][next[c]]] == 0) ++next[c];
      const uint32_t g = order[c][next[c]];
      --left[g];
      --unplaced;
      ++held[c];
      any = true;
      auto& p = r.placed[g];
      auto it = std::find_if(p.begin(), p.end(), [&](const auto& x) { return x.first == c; });
      if (it == p.end()) {
        p.emplace_back(c, 1);
      } else {
        ++it->second;
      }
    }
    if (!any) break;
  }
  for (auto& p : r.placed) std::sort(p.begin(), p.end());
  r.feasible = unplaced == 0;
  summarise(m, r);
  return r;
}

mapping map_min_cost(const latency_matrix& m, uint64_t capacity, uint32_t nearest) {
  using graph = lemon::SmartDigraph;
  mapping r;
  if (!check_capacity(m, capacity, r)) return r;
  const size_t groups = m.groups.size();
  const uint32_t crawlers = m.crawlers;
  const int32_t max_rtt = *std::max_element(m.rtt.begin(), m.rtt.end());
  // Big-M for the artificial arcs that keep every sparse graph feasible: dearer than moving
  // a feed along any path of real arcs (at most 2 x crawlers of them).
  const int64_t big = (static_cast<int64_t>(crawlers) * 2 + 2) * (max_rtt + 1);
  // Which group-to-crawler arcs are in the graph.
  std::vector<uint8_t> present(groups * crawlers, 0);
  for (size_t g = 0; g < groups; ++g) {
    std::vector<uint32_t> cs(crawlers);
    std::iota(cs.begin(), cs.end(), 0U);
    const uint32_t k = std::min(nearest, crawlers);
    std::partial_sort(cs.begin(), cs.begin() + k, cs.end(), [&](uint32_t a, uint32_t b) {
      return m.at(g, a) != m.at(g, b) ? m.at(g, a) < m.at(g, b) : a < b;
    });
    for (uint32_t i = 0; i < k; ++i) present[g * crawlers + cs[i]] = 1;
  }
  for (;;) {
    ++r.rounds;
    graph net;
    net.reserveNode(static_cast<int>(groups + crawlers + 1));
    net.reserveArc(static_cast<int>(groups * (nearest + 1) + crawlers));
    std::vector<graph::Node> gn(groups), cn(crawlers);
    for (auto& n : gn) n = net.addNode();
    for (auto& n : cn) n = net.addNode();
    const graph::Node sink = net.addNode();
    graph::ArcMap<int64_t> cost(net), cap(net);
    graph::NodeMap<int64_t> supply(net, 0);
    std::vector<std::pair<graph::Arc, std::pair<uint32_t, uint32_t>>> real;
    for (size_t g = 0; g < groups; ++g) {
      supply[gn[g]] = static_cast<int64_t>(m.feeds[g]);
      const graph::Arc a = net.addArc(gn[g], sink);  // artificial
      cost[a] = big;
      cap[a] = static_cast<int64_t>(m.feeds[g]);
      for (uint32_t c = 0; c < crawlers; ++c) {
        if (present[g * crawlers + c] == 0) continue;
        const graph::Arc b = net.addArc(gn[g], cn[c]);
        cost[b] = m.at(g, c);
        cap[b] = static_cast<int64_t>(m.feeds[g]);
        real.push_back({b, {static_cast<uint32_t>(g), c}});
      }
    }
    for (uint32_t c = 0; c < crawlers; ++c) {
      const graph::Arc a = net.addArc(cn[c], sink);
      cost[a] = 0;
      cap[a] = static_cast<int64_t>(capacity);
    }
    supply[sink] = -static_cast<int64_t>(m.total_feeds);
    r.arcs = real.size();
    lemon::NetworkSimplex<graph, int64_t, int64_t> ns(net);
    ns.upperMap(cap).costMap(cost).supplyMap(supply);
    if (ns.run() != lemon::NetworkSimplex<graph, int64_t, int64_t>::OPTIMAL) {
      r.reason = "the flow problem has no optimum";
      return r;
    }
    // Optimal on this graph; optimal on the dense one if no missing arc has a negative
    // reduced cost (cost + potential(group) - potential(crawler)). Add every one that has.
    uint64_t added = 0;
    for (size_t g = 0; g < groups; ++g) {
      const int64_t pg = ns.potential(gn[g]);
      for (uint32_t c = 0; c < crawlers; ++c) {
        if (present[g * crawlers + c] != 0) continue;
        if (m.at(g, c) + pg - ns.potential(cn[c]) < 0) {
          present[g * crawlers + c] = 1;
          ++added;
        }
      }
    }
    if (added > 0) continue;
    r.placed.assign(groups, {});
    for (const auto& [arc, gc] : real) {
      const int64_t f = ns.flow(arc);
      if (f > 0) r.placed[gc.first].emplace_back(gc.second, static_cast<uint64_t>(f));
    }
    uint64_t placed = 0;
    for (const auto& p : r.placed)
      for (const auto& [c, n] : p) placed += n;
    r.feasible = placed == m.total_feeds;
    if (!r.feasible) r.reason = "feeds left on the artificial arcs";
    summarise(m, r);
    return r;
  }
}

mapping map_brute_force(const latency_matrix& m, uint64_t capacity) {
  mapping best;
  if (!check_capacity(m, capacity, best)) return best;
  std::vector<uint32_t> owner;  // group of each feed
  for (size_t g = 0; g < m.groups.size(); ++g)
    for (uint64_t i = 0; i < m.feeds[g]; ++i) owner.push_back(static_cast<uint32_t>(g));
  std::vector<uint32_t> pick(owner.size(), 0);
  int64_t best_cost = std::numeric_limits<int64_t>::max();
  std::vector<uint32_t> best_pick;
  for (;;) {
    std::vector<uint64_t> held(m.crawlers, 0);
    int64_t cost = 0;
    bool ok = true;
    for (size_t i = 0; i < owner.size() && ok; ++i) {
      ok = ++held[pick[i]] <= capacity;
      cost += m.at(owner[i], pick[i]);
    }
    if (ok && cost < best_cost) {
      best_cost = cost;
      best_pick = pick;
    }
    size_t i = 0;
    while (i < pick.size() && ++pick[i] == m.crawlers) pick[i++] = 0;
    if (i == pick.size()) break;
  }
  best.placed.assign(m.groups.size(), {});
  for (size_t i = 0; i < owner.size(); ++i) {
    auto& p = best.placed[owner[i]];
    auto it =
        std::find_if(p.begin(), p.end(), [&](const auto& x) { return x.first == best_pick[i]; });
    if (it == p.end()) {
      p.emplace_back(best_pick[i], 1);
    } else {
      ++it->second;
    }
  }
  best.feasible = true;
  summarise(m, best);
  return best;
}

namespace {

// Uniform in [0, 1) from the top 53 bits: the same numbers on every platform (std's
// distributions are implementation-defined).
double unit(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }
double normal(std::mt19937_64& rng) {
  const double u = std::max(unit(rng), 1e-300), v = unit(rng);
  return std::sqrt(-2 * std::log(u)) * std::cos(2 * std::numbers::pi * v);
}

struct site {
  double x, y, height;  // ms on a plane; access delay (Vivaldi's height)
};

}  // namespace

std::string generate_latency_csv(uint64_t groups, uint32_t crawlers, uint64_t feeds,
                                 uint64_t seed) {
  std::mt19937_64 rng(seed);
  // Regions (continents) as centres on a plane, in ms of RTT: two far apart clusters of
  // three and one isolated, roughly the US, Europe, Asia and Oceania.
  constexpr double centres[][2] = {{0, 0},    {35, 10},  {70, -5},  {160, 20},
                                   {190, 60}, {230, 40}, {260, 260}};
  constexpr size_t regions = std::size(centres);
  // Where hosts are: most feeds in the first regions.
  constexpr double weight[regions] = {0.30, 0.15, 0.10, 0.20, 0.10, 0.10, 0.05};
  const auto pick_region = [&] {
    double u = unit(rng);
    for (size_t i = 0; i < regions; ++i) {
      if (u < weight[i]) return i;
      u -= weight[i];
    }
    return regions - 1;
  };
  const auto make_site = [&](double spread, double height_mean) {
    const size_t r = pick_region();
    return site{centres[r][0] + spread * normal(rng), centres[r][1] + spread * normal(rng),
                -height_mean * std::log(std::max(unit(rng), 1e-12))};
  };
  std::vector<site> crawler_sites(crawlers), group_sites(groups);
  for (auto& s : crawler_sites) s = make_site(8, 0.3);  // data centres: short access
  for (auto& s : group_sites) s = make_site(12, 4);     // hosting: longer, heavy-tailed
  // Feeds per group: 35% on the first, 15% on the second (half on two), the rest Zipf
  // (exponent 1) over the others, at least one each.
  std::vector<uint64_t> per(groups, 1);
  if (groups >= 1 && feeds >= groups) {
    uint64_t left = feeds - groups;
    const auto first = static_cast<uint64_t>(0.35 * static_cast<double>(feeds));
    const auto second = groups >= 2 ? static_cast<uint64_t>(0.15 * static_cast<double>(feeds)) : 0;
    const uint64_t a = std::min(left, first > 0 ? first - 1 : 0);
    per[0] += a;
    left -= a;
    if (groups >= 2) {
      const uint64_t b = std::min(left, second > 0 ? second - 1 : 0);
      per[1] += b;
      left -= b;
    }
    if (groups > 2) {
      double h = 0;
      for (uint64_t i = 3; i <= groups; ++i) h += 1.0 / static_cast<double>(i - 2);
      uint64_t given = 0;
      for (uint64_t i = 2; i < groups; ++i) {
        const auto n =
            static_cast<uint64_t>(static_cast<double>(left) / static_cast<double>(i - 1) / h);
        per[i] += n;
        given += n;
      }
      per[2] += left - given;
    } else {
      per[0] += left;
    }
  }
  std::string out = "group,feeds";
  for (uint32_t c = 1; c <= crawlers; ++c) out += fmt::format(",rtt_ms_{}", c);
  out += '\n';
  for (uint64_t g = 0; g < groups; ++g) {
    out += fmt::format("g{},{}", g, per[g]);
    for (uint32_t c = 0; c < crawlers; ++c) {
      const site& a = group_sites[g];
      const site& b = crawler_sites[c];
      double rtt = std::hypot(a.x - b.x, a.y - b.y) + a.height + b.height + 0.2;
      // Detours: 1 pair in 20 takes a path 1.5-3x longer than the direct one, which breaks
      // the triangle inequality as measured Internet RTTs do.
      if (unit(rng) < 0.05) rtt *= 1.5 + 1.5 * unit(rng);
      rtt = std::clamp(rtt, 0.3, 800.0);
      out += fmt::format(",{:.1f}", rtt);
    }
    out += '\n';
  }
  return out;
}

}  // namespace feedplane::provisioner
