// The provisioner's inputs (issue 14): the shipped models load, and every malformed or
// contradictory input is refused with its file, line and key.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "feedplane/provisioner/inputs.h"

namespace fp = feedplane::provisioner;

namespace {

std::string source_dir() {
  const char* d = std::getenv("FEEDPLANE_SOURCE_DIR");
  return d != nullptr ? d : ".";
}

std::string joined(const std::vector<fp::input_error>& errors) {
  std::string s;
  for (const auto& e : errors) s += e.to_string() + "\n";
  return s;
}

TEST(provisioner_inputs, shipped_models_load) {
  const auto models = std::filesystem::path(source_dir()) / "provisioner" / "models";
  int files = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(models)) {
    if (entry.path().extension() != ".toml") continue;
    ++files;
    const std::string path = entry.path().string();
    const std::string dir = entry.path().parent_path().filename().string();
    std::vector<fp::input_error> errors;
    if (dir == "workloads") {
      fp::workload w;
      errors = fp::load_workload(path, w);
    } else if (dir == "nodes") {
      std::vector<fp::node_class> c;
      errors = fp::load_node_classes(path, c);
    } else {
      fp::cost_model m;
      errors = fp::load_cost_model(path, m);
    }
    EXPECT_TRUE(errors.empty()) << joined(errors);
  }
  EXPECT_GE(files, 8);
}

TEST(provisioner_inputs, workload_values_and_errors) {
  fp::workload w;
  auto e = fp::read_workload("[workload]\nname = \"w\"\nfeeds = 1000\nsubscriptions = 2e6\n",
                             "w.toml", w);
  ASSERT_TRUE(e.empty()) << joined(e);
  EXPECT_EQ(w.feeds, 1000);
  EXPECT_EQ(w.subscriptions, 2e6);
  EXPECT_EQ(w.k, 10U);

  e = fp::read_workload(
      "[workload]\nname = \"w\"\nfeeds = -1\nsubscriptions = \"many\"\nk = 1.5\nfeeds_per_host = "
      "3\n",
      "w.toml", w);
  ASSERT_EQ(e.size(), 4U) << joined(e);
  EXPECT_EQ(e[0].to_string(), "w.toml:3: 'workload.feeds': must be between 1 and 1e+15, not -1");
  EXPECT_EQ(e[1].to_string(), "w.toml:4: 'workload.subscriptions': expected a number");
  EXPECT_EQ(e[2].to_string(), "w.toml:5: 'workload.k': expected an integer");
  EXPECT_EQ(e[3].to_string(), "w.toml:6: 'workload.feeds_per_host': unknown key");
  EXPECT_EQ(w.feeds, 1000) << "a failed read leaves the output alone";

  e = fp::read_workload("[workload]\nname = \"w\"\n", "w.toml", w);
  ASSERT_EQ(e.size(), 2U) << joined(e);
  EXPECT_EQ(e[0].to_string(), "w.toml:1: 'workload.feeds': missing (required)");

  e = fp::read_workload(
      "[workload]\nname = \"w\"\nfeeds = 10\nsubscriptions = 100\npartitions = 1024\n", "w.toml",
      w);
  ASSERT_EQ(e.size(), 1U) << joined(e);
  EXPECT_EQ(e[0].to_string(),
            "w.toml:5: 'workload.partitions': 1024 partitions for 100 subscriptions: a partition "
            "would be empty");

  e = fp::read_workload("[workload\n", "w.toml", w);
  ASSERT_EQ(e.size(), 1U);
  EXPECT_EQ(e[0].line, 1U);
  EXPECT_NE(e[0].message.find("column"), std::string::npos) << e[0].message;
}

TEST(provisioner_inputs, node_classes) {
  std::vector<fp::node_class> c;
  const char* ok =
      "[[class]]\nname = \"a\"\ncores = 4\nmemory_mib = 1024\nin_mbps = 100\nout_mbps = 50\n"
      "[[class]]\nname = \"b\"\ncores = 64\nmemory_mib = 262144\nin_mbps = 10000\n"
      "out_mbps = 10000\nprice = 8\nusable_cpu = 0.5\n";
  auto e = fp::read_node_classes(ok, "n.toml", c);
  ASSERT_TRUE(e.empty()) << joined(e);
  ASSERT_EQ(c.size(), 2U);
  EXPECT_EQ(c[0].name, "a");
  EXPECT_EQ(c[0].memory_bytes, 1024.0 * 1048576);
  EXPECT_EQ(c[0].out_bps, 50e6);
  EXPECT_EQ(c[0].usable_cpu, 0.7) << "default usable CPU share";
  EXPECT_EQ(c[0].usable_network, 0.8) << "default usable share of the rest";
  EXPECT_EQ(c[1].usable_cpu, 0.5);
  EXPECT_EQ(c[1].line, 7U);

  e = fp::read_node_classes(
      "[[class]]\nname = \"a\"\ncores = 4\nmemory_mib = 1024\nin_mbps = 100\nout_mbps = 50\n"
      "[[class]]\nname = \"a\"\ncores = 4\nmemory_mib = 1024\nin_mbps = 100\nout_mbps = 50\n"
      "usable_cpu = 1.5\n",
      "n.toml", c);
  ASSERT_EQ(e.size(), 2U) << joined(e);
  EXPECT_EQ(e[0].to_string(), "n.toml:8: 'class[1].name': a second class named 'a'");
  EXPECT_EQ(e[1].to_string(),
            "n.toml:13: 'class[1].usable_cpu': must be between 0.01 and 1, not 1.5");

  e = fp::read_node_classes("class = 3\n", "n.toml", c);
  ASSERT_EQ(e.size(), 1U) << joined(e);
  EXPECT_EQ(e[0].to_string(), "n.toml:1: 'class': expected [[class]] tables");
}

constexpr const char* model_head =
    "[model]\nname = \"m\"\n"
    "[match]\nkind = \"stated\"\nsource = \"paper\"\n"
    "points = [{ subscriptions = 1000000, words = 61, seconds = 0.002 },\n"
    "          { subscriptions = 100000, words = 61, seconds = 0.0004 },\n"
    "          { subscriptions = 1000000, words = 2000, seconds = 0.02 }]\n";

TEST(provisioner_inputs, cost_model_provenance) {
  fp::cost_model m;
  std::string text =
      std::string(model_head) +
      "[coefficients.a]\nvalue = 160\nunit = \"B\"\nkind = \"stated\"\nsource = \"s\"\n"
      "[coefficients.b]\nvalue = 2\nunit = \"us\"\nkind = \"measured\"\n"
      "command = \"scripts/cost-model\"\ncommit = \"abc\"\ndate = \"2026-11-23\"\n"
      "cpu = \"x\"\n";
  auto e = fp::read_cost_model(text, "c.toml", m);
  ASSERT_TRUE(e.empty()) << joined(e);
  ASSERT_NE(m.find("a"), nullptr);
  EXPECT_EQ(m.find("a")->value, 160);
  EXPECT_EQ(m.find("b")->kind, fp::provenance_kind::measured);
  EXPECT_EQ(m.find("b")->line, 14U);
  EXPECT_EQ(m.find("c"), nullptr);

  // A fitted coefficient without what it was fitted to, a measured one without its command,
  // an unknown kind: each named with its line.
  text = std::string(model_head) +
         "[coefficients.a]\nvalue = 160\nunit = \"B\"\nkind = \"fitted\"\n"
         "[coefficients.b]\nvalue = 2\nunit = \"us\"\nkind = \"measured\"\ncommit = \"abc\"\n"
         "date = \"d\"\ncpu = \"x\"\n"
         "[coefficients.c]\nvalue = 2\nunit = \"us\"\nkind = \"guessed\"\nsource = \"s\"\n";
  e = fp::read_cost_model(text, "c.toml", m);
  ASSERT_EQ(e.size(), 3U) << joined(e);
  EXPECT_EQ(e[0].to_string(), "c.toml:9: 'coefficients.a.source': missing (required)");
  EXPECT_EQ(e[1].to_string(), "c.toml:13: 'coefficients.b.command': missing (required)");
  EXPECT_EQ(e[2].to_string(),
            "c.toml:23: 'coefficients.c.kind': expected stated, derived, fitted or measured");

  // Two points for the same cell of the match table contradict each other.
  text =
      "[model]\nname = \"m\"\n[coefficients]\n[match]\nkind = \"stated\"\nsource = \"s\"\n"
      "points = [{ subscriptions = 10, words = 1, seconds = 1 },\n"
      "          { subscriptions = 10, words = 1, seconds = 2 }]\n";
  e = fp::read_cost_model(text, "c.toml", m);
  ASSERT_EQ(e.size(), 1U) << joined(e);
  EXPECT_EQ(e[0].key, "match.points[1]");
  EXPECT_EQ(e[0].line, 8U);
}

TEST(provisioner_inputs, match_table_interpolation) {
  fp::cost_model m;
  auto e = fp::read_cost_model(std::string(model_head) + "[coefficients]\n", "c.toml", m);
  ASSERT_TRUE(e.empty()) << joined(e);
  // On the points.
  EXPECT_DOUBLE_EQ(m.match_seconds(1e6, 61), 0.002);
  EXPECT_DOUBLE_EQ(m.match_seconds(1e5, 61), 0.0004);
  EXPECT_DOUBLE_EQ(m.match_seconds(1e6, 2000), 0.02);
  // Log-log between 100k and 1M: the geometric mean at the geometric mean.
  EXPECT_NEAR(m.match_seconds(std::sqrt(1e5 * 1e6), 61), std::sqrt(0.002 * 0.0004), 1e-12);
  // Proportional beyond the table, in subscriptions and in words.
  EXPECT_DOUBLE_EQ(m.match_seconds(1e7, 61), 0.02);
  EXPECT_DOUBLE_EQ(m.match_seconds(1e4, 61), 0.00004);
  EXPECT_DOUBLE_EQ(m.match_seconds(1e6, 4000), 0.04);
  // Linear in words between the two word counts (2000 words has one point: proportional).
  const double mid_words = (61 + 2000) / 2.0;
  EXPECT_NEAR(m.match_seconds(1e6, mid_words), (0.002 + 0.02) / 2, 1e-12);
  EXPECT_EQ(m.match_seconds(0, 61), 0);
}

}  // namespace
