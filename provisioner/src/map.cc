#include "feedplane/provisioner/map.h"

#include <fmt/format.h>

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

namespace {

// A min-heap of (reduced key, group) with lazy deletion: an entry is stale once its group
// holds nothing on the heap's crawler; the caller pops stale tops.
struct move_heap {
  std::vector<std::pair<int32_t, uint32_t>> v;
  void push(int32_t key, uint32_t g) {
    v.emplace_back(key, g);
    std::push_heap(v.begin(), v.end(), std::greater<>());
  }
};

// The group's share on crawler c (0 if none); groups hold one to a few crawlers.
uint64_t& share(std::vector<std::pair<uint32_t, uint64_t>>& p, uint32_t c) {
  for (auto& [pc, n] : p)
    if (pc == c) return n;
  return p.emplace_back(c, 0).second;
}

// Makes the split groups a forest (at most C - 1 of them split): while the graph of split
// groups and the crawlers they use has a cycle, shifts feeds around it until one share is
// empty. At an optimum every used arc has reduced cost 0, so a cycle costs nothing to turn.
// Returns the cycles cancelled.
uint64_t cancel_split_cycles(std::vector<std::vector<std::pair<uint32_t, uint64_t>>>& placed,
                             uint32_t crawlers) {
  uint64_t cancelled = 0;
  for (;;) {
    std::vector<uint32_t> split;  // node i < split.size() is a group, then the crawlers
    for (size_t g = 0; g < placed.size(); ++g)
      if (placed[g].size() > 1) split.push_back(static_cast<uint32_t>(g));
    const size_t n = split.size() + crawlers;
    std::vector<uint32_t> root(n);
    std::iota(root.begin(), root.end(), 0U);
    const auto find = [&](uint32_t x) {
      while (root[x] != x) x = root[x] = root[root[x]];
      return x;
    };
    std::vector<std::vector<uint32_t>> forest(n);
    uint32_t ga = 0, ca = 0;
    bool cycle = false;
    for (uint32_t i = 0; i < split.size() && !cycle; ++i) {
      for (const auto& [c, amount] : placed[split[i]]) {
        const auto cn = static_cast<uint32_t>(split.size() + c);
        const uint32_t a = find(i), b = find(cn);
        if (a == b) {
          ga = i;
          ca = cn;
          cycle = true;
          break;
        }
        root[a] = b;
        forest[i].push_back(cn);
        forest[cn].push_back(i);
      }
    }
    if (!cycle) return cancelled;
    // The forest path from the crawler back to the group closes the cycle.
    std::vector<uint32_t> from(n, UINT32_MAX), queue{ca};
    from[ca] = ca;
    for (size_t q = 0; q < queue.size() && from[ga] == UINT32_MAX; ++q)
      for (const uint32_t y : forest[queue[q]])
        if (from[y] == UINT32_MAX) {
          from[y] = queue[q];
          queue.push_back(y);
        }
    std::vector<uint32_t> nodes{ga};  // ga, along the forest to ca (which is next to ga)
    for (uint32_t x = ga; x != ca;) nodes.push_back(x = from[x]);
    // Edge e joins nodes[e] and nodes[e + 1] (the last, ca, joins back to ga): even edges give,
    // odd edges take, so every group and crawler keeps its total.
    const auto edge_share = [&](size_t e) -> uint64_t& {
      const uint32_t a = nodes[e], b = nodes[(e + 1) % nodes.size()];
      const uint32_t g = a < split.size() ? a : b, c = a < split.size() ? b : a;
      return share(placed[split[g]], static_cast<uint32_t>(c - split.size()));
    };
    uint64_t eps = UINT64_MAX;
    for (size_t e = 0; e < nodes.size(); e += 2) eps = std::min(eps, edge_share(e));
    for (size_t e = 0; e < nodes.size(); ++e) {
      if (e % 2 == 0) {
        edge_share(e) -= eps;
      } else {
        edge_share(e) += eps;
      }
    }
    for (const uint32_t g : split)
      std::erase_if(placed[g], [](const auto& x) { return x.second == 0; });
    ++cancelled;
  }
}

}  // namespace

mapping map_min_cost(const latency_matrix& m, uint64_t capacity) {
  mapping r;
  if (!check_capacity(m, capacity, r)) return r;
  const size_t groups = m.groups.size();
  const uint32_t nc = m.crawlers;  // crawlers
  // Successive shortest paths on the crawlers alone (nc nodes, not groups x nc arcs): every
  // group starts on its nearest crawler, which is optimal without capacities; then each
  // crawler over capacity pushes feeds along the cheapest path of moves to a crawler with
  // room. A move i -> j shifts feeds of one group from i to j at c(g, j) - c(g, i); the
  // edge i -> j is the cheapest such move over the groups on i, kept in a lazy heap per
  // (i, j). Dijkstra on reduced costs (key + pi(i) - pi(j) >= 0, the potentials' invariant)
  // is O(nc^2) per path, so the time goes with the number of paths, not with groups x nc.
  std::vector<std::vector<std::pair<uint32_t, uint64_t>>> placed(groups);
  std::vector<uint64_t> load(nc, 0);
  std::vector<move_heap> heap(static_cast<size_t>(nc) * nc);
  for (size_t g = 0; g < groups; ++g) {
    const int32_t* row = &m.rtt[g * nc];
    const auto i = static_cast<uint32_t>(std::min_element(row, row + nc) - row);
    placed[g].emplace_back(i, m.feeds[g]);
    load[i] += m.feeds[g];
    for (uint32_t j = 0; j < nc; ++j)
      if (j != i)
        heap[size_t{i} * nc + j].v.emplace_back(row[j] - row[i], static_cast<uint32_t>(g));
  }
  for (auto& h : heap) std::make_heap(h.v.begin(), h.v.end(), std::greater<>());
  constexpr int64_t inf = std::numeric_limits<int64_t>::max() / 4;
  // The cheapest live move per (i, j): its key and group, or inf.
  std::vector<int64_t> w(static_cast<size_t>(nc) * nc, inf);
  std::vector<uint32_t> wg(static_cast<size_t>(nc) * nc, 0);
  const auto holds = [&](uint32_t g, uint32_t c) {
    for (const auto& [pc, n] : placed[g])
      if (pc == c) return n > 0;
    return false;
  };
  const auto refresh = [&](uint32_t i, uint32_t j) {
    auto& h = heap[size_t{i} * nc + j].v;
    while (!h.empty() && !holds(h.front().second, i)) {
      std::pop_heap(h.begin(), h.end(), std::greater<>());
      h.pop_back();
    }
    w[size_t{i} * nc + j] = h.empty() ? inf : h.front().first;
    wg[size_t{i} * nc + j] = h.empty() ? 0 : h.front().second;
  };
  for (uint32_t i = 0; i < nc; ++i)
    for (uint32_t j = 0; j < nc; ++j)
      if (i != j) refresh(i, j);
  // Potentials of the crawlers and of the sink: a crawler with room keeps pi = pi(sink).
  std::vector<int64_t> pi(nc, 0), d(nc);
  int64_t pi_sink = 0;
  std::vector<uint32_t> prev(nc);
  std::vector<uint8_t> done(nc);
  for (uint32_t s = 0; s < nc; ++s) {
    while (load[s] > capacity) {
      std::fill(d.begin(), d.end(), inf);
      std::fill(done.begin(), done.end(), 0);
      d[s] = 0;
      uint32_t t = nc;
      for (;;) {
        uint32_t u = nc;
        for (uint32_t v = 0; v < nc; ++v)
          if (done[v] == 0 && d[v] < inf && (u == nc || d[v] < d[u])) u = v;
        if (u == nc) break;
        done[u] = 1;
        if (load[u] < capacity) {
          t = u;
          break;
        }
        for (uint32_t v = 0; v < nc; ++v) {
          const int64_t wu = w[size_t{u} * nc + v];
          if (done[v] != 0 || wu >= inf) continue;
          const int64_t nd = d[u] + wu + pi[u] - pi[v];
          if (nd < d[v]) {
            d[v] = nd;
            prev[v] = u;
          }
        }
      }
      if (t == nc) {  // cannot happen while capacity x crawlers covers the feeds
        r.reason = "no crawler with room is reachable";
        return r;
      }
      const int64_t dt = d[t];
      for (uint32_t v = 0; v < nc; ++v) pi[v] += done[v] != 0 ? d[v] : dt;
      pi_sink += dt;
      // How much the path carries: the excess, the room, and each move's group share.
      uint64_t amount = std::min(load[s] - capacity, capacity - load[t]);
      for (uint32_t v = t; v != s; v = prev[v]) {
        const uint32_t u = prev[v], g = wg[size_t{u} * nc + v];
        amount = std::min(amount, share(placed[g], u));
      }
      for (uint32_t v = t; v != s; v = prev[v]) {
        const uint32_t u = prev[v], g = wg[size_t{u} * nc + v];
        uint64_t& to = share(placed[g], v);  // first: it may grow the vector
        const bool arrived = to == 0;
        to += amount;
        uint64_t& from = share(placed[g], u);
        from -= amount;
        if (arrived) {  // g's moves out of v are new edges
          const int32_t* row = &m.rtt[size_t{g} * nc];
          for (uint32_t k = 0; k < nc; ++k) {
            if (k == v) continue;
            const int32_t key = row[k] - row[v];
            heap[size_t{v} * nc + k].push(key, g);
            if (key < w[size_t{v} * nc + k]) {
              w[size_t{v} * nc + k] = key;
              wg[size_t{v} * nc + k] = g;
            }
          }
        }
        if (from == 0) {
          std::erase_if(placed[g], [](const auto& x) { return x.second == 0; });
          for (uint32_t k = 0; k < nc; ++k)
            if (k != u && wg[size_t{u} * nc + k] == g) refresh(u, k);
        }
      }
      load[s] -= amount;
      load[t] += amount;
      ++r.paths;
    }
  }
  // Optimality over every arc, group by group: with crawler prices p = pi(sink) - pi >= 0,
  // zero where a crawler has room, every crawler a group uses is one of its cheapest by
  // RTT + price (complementary slackness of the transportation LP).
  for (uint32_t c = 0; c < nc; ++c) {
    const int64_t price = pi_sink - pi[c];
    if (price < 0 || (load[c] < capacity && price != 0)) {
      r.reason = fmt::format("internal: the prices fail optimality at crawler {}", c + 1);
      return r;
    }
  }
  for (size_t g = 0; g < groups; ++g) {
    int64_t best = inf;
    for (uint32_t c = 0; c < nc; ++c) best = std::min(best, m.at(g, c) + pi_sink - pi[c]);
    for (const auto& [c, n] : placed[g]) {
      if (m.at(g, c) + pi_sink - pi[c] != best) {
        r.reason = fmt::format("internal: group {} is not on a cheapest crawler", m.groups[g]);
        return r;
      }
    }
  }
  r.cycles = cancel_split_cycles(placed, nc);
  r.placed = std::move(placed);
  for (auto& p : r.placed) std::sort(p.begin(), p.end());
  r.feasible = true;
  summarise(m, r);
  return r;
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
