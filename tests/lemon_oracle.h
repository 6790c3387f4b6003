// The dense optimum of the feed-to-crawler mapping by a textbook solver, for the tests and
// bench/provision_map_bench: LEMON's NetworkSimplex on every group-to-crawler arc, each
// crawler's capacity on its arc to the sink. -1 when LEMON finds no optimum.
#pragma once

#include <lemon/network_simplex.h>
#include <lemon/smart_graph.h>

#include <cstdint>
#include <vector>

#include "feedplane/provisioner/map.h"

namespace feedplane::test {

inline int64_t lemon_dense_optimum(const provisioner::latency_matrix& m, uint64_t capacity) {
  using graph = lemon::SmartDigraph;
  graph net;
  net.reserveNode(int(m.groups.size() + m.crawlers + 1));
  net.reserveArc(int(m.groups.size() * m.crawlers + m.crawlers));
  std::vector<graph::Node> gn, cn;
  for (size_t g = 0; g < m.groups.size(); ++g) gn.push_back(net.addNode());
  for (uint32_t c = 0; c < m.crawlers; ++c) cn.push_back(net.addNode());
  const graph::Node sink = net.addNode();
  graph::ArcMap<int64_t> cost(net), cap(net);
  graph::NodeMap<int64_t> supply(net, 0);
  for (size_t g = 0; g < m.groups.size(); ++g) {
    supply[gn[g]] = int64_t(m.feeds[g]);
    for (uint32_t c = 0; c < m.crawlers; ++c) {
      const graph::Arc a = net.addArc(gn[g], cn[c]);
      cost[a] = m.at(g, c);
      cap[a] = int64_t(m.feeds[g]);
    }
  }
  for (uint32_t c = 0; c < m.crawlers; ++c) {
    const graph::Arc a = net.addArc(cn[c], sink);
    cost[a] = 0;
    cap[a] = int64_t(capacity);
  }
  supply[sink] = -int64_t(m.total_feeds);
  using simplex = lemon::NetworkSimplex<graph, int64_t, int64_t>;
  simplex ns(net);
  ns.upperMap(cap).costMap(cost).supplyMap(supply);
  if (ns.run() != simplex::OPTIMAL) return -1;
  return ns.totalCost();
}

}  // namespace feedplane::test
