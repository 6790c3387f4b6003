#include "feedplane/dataplane/config.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include "feedplane/store/store.h"

#include <cstdio>
#include <fstream>
#include <string>

using namespace feedplane::dataplane;

TEST(Config, DefaultsWhenEmpty) {
  config c;
  EXPECT_EQ(load_config_text("", "t.toml", c), "");
  EXPECT_EQ(c.server.listen, "127.0.0.1:8080");
  EXPECT_EQ(c.client.total_timeout_ms, 5000u);
  EXPECT_EQ(c.reflector.k, 10u);
}

// An option whose default is a lower layer's own keeps it (the configuration cannot include
// the store's header: it is built below it).
TEST(Config, StoreDefaultsAreTheStoresOwn) {
  EXPECT_EQ(uint64_t{config{}.server.memtable_mb} << 20,
            feedplane::store::store_options{}.memtable_bytes);
}

TEST(Config, ReadsValues) {
  config c;
  EXPECT_EQ(load_config_text("[server]\nlisten = \"[::1]:9000\"\nshards = 3\ngzip = false\n"
                             "[client]\nmax_body = 2048\n[reflector]\nk = 25\n",
                             "t.toml", c),
            "");
  EXPECT_EQ(c.server.listen, "[::1]:9000");
  EXPECT_EQ(c.server.shards, 3u);
  EXPECT_FALSE(c.server.gzip);
  EXPECT_EQ(c.client.max_body, 2048u);
  EXPECT_EQ(c.reflector.k, 25u);
}

TEST(Config, UnknownKeyIsNamed) {
  config c;
  auto err = load_config_text("[server]\nlisten_addr = \"x:1\"\n", "t.toml", c);
  EXPECT_NE(err.find("unknown key 'server.listen_addr'"), std::string::npos) << err;
  EXPECT_NE(err.find("t.toml:2"), std::string::npos) << err;
  err = load_config_text("[serverz]\nlisten = \"x:1\"\n", "t.toml", c);
  EXPECT_NE(err.find("unknown key 'serverz.listen'"), std::string::npos) << err;
  err = load_config_text("k = 3\n", "t.toml", c);
  EXPECT_NE(err.find("unknown key 'k'"), std::string::npos) << err;
}

TEST(Config, BadValueIsNamedAndNothingChanges) {
  config c;
  auto err = load_config_text("[reflector]\nk = 0\n", "t.toml", c);
  EXPECT_NE(err.find("bad value for 'reflector.k'"), std::string::npos) << err;
  err = load_config_text("[server]\nshards = 2\nlisten = \"nohost\"\n", "t.toml", c);
  EXPECT_NE(err.find("'server.listen'"), std::string::npos) << err;
  EXPECT_EQ(c.server.shards, 0u);  // a rejected file changes nothing
  err = load_config_text("[server]\ngzip = \"yes\"\n", "t.toml", c);
  EXPECT_NE(err.find("expected true or false"), std::string::npos) << err;
  err = load_config_text("[server]\nshards = -1\n", "t.toml", c);
  EXPECT_NE(err.find("'server.shards'"), std::string::npos) << err;
}

// Every problem is reported with its code, key and line, in file order (toml++ walks tables
// in key order), and a rejected file changes nothing.
TEST(Config, EveryProblemByLine) {
  config c;
  const auto errs = read_config_text(
      "[server]\nshards = -1\nlisten = \"nohost\"\ngzip = \"yes\"\n"
      "[client]\nmax_redirects = 99\nuser_agnt = \"x\"\nuser_agent = \"ok\"\n",
      "t.toml", c);
  ASSERT_EQ(errs.size(), 5u);
  const std::pair<uint32_t, std::string_view> want[] = {{2, "server.shards"},
                                                        {3, "server.listen"},
                                                        {4, "server.gzip"},
                                                        {6, "client.max_redirects"},
                                                        {7, "client.user_agnt"}};
  for (size_t i = 0; i < errs.size(); ++i) {
    EXPECT_EQ(errs[i].line, want[i].first) << i;
    EXPECT_EQ(errs[i].key, want[i].second) << i;
    EXPECT_EQ(errs[i].code, i == 4 ? config_errc::unknown_key : config_errc::bad_value) << i;
    EXPECT_EQ(errs[i].source, "t.toml");
  }
  EXPECT_EQ(errs[1].to_string(), "t.toml:3: bad value for 'server.listen': expected ADDR:PORT");
  EXPECT_EQ(errs[4].to_string(), "t.toml:7: unknown key 'client.user_agnt'");
  EXPECT_EQ(c.client.user_agent, config().client.user_agent);  // nothing applied
  // The text form is every problem, one a line.
  const std::string text =
      load_config_text("[server]\nshards = -1\n[reflector]\nk = 0\n", "t.toml", c);
  EXPECT_EQ(text,
            "t.toml:2: bad value for 'server.shards': must be between 0 and 1024\n"
            "t.toml:4: bad value for 'reflector.k': must be between 1 and 10000");
}

TEST(Config, ErrcNamesAndMessages) {
  EXPECT_EQ(config_errc_name(config_errc::ok), "ok");
  EXPECT_EQ(config_errc_name(config_errc::cannot_read), "cannot_read");
  EXPECT_EQ(config_errc_name(config_errc::syntax_error), "syntax_error");
  EXPECT_EQ(config_errc_name(config_errc::unknown_key), "unknown_key");
  EXPECT_EQ(config_errc_name(config_errc::bad_value), "bad_value");
  EXPECT_FALSE(config_errc_message(config_errc::bad_value).empty());
}

// A directory, a missing file and an oversized file are cannot_read, never an empty file
// read as all defaults.
TEST(Config, UnreadableFiles) {
  char dir[] = "/tmp/config_test.XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  config c;
  auto errs = read_config_file(dir, c);
  ASSERT_EQ(errs.size(), 1u);
  EXPECT_EQ(errs[0].code, config_errc::cannot_read);
  EXPECT_EQ(errs[0].to_string(), std::string(dir) + ": cannot open config file: it is a directory");
  const std::string missing = std::string(dir) + "/missing.toml";
  errs = read_config_file(missing, c);
  ASSERT_EQ(errs.size(), 1u);
  EXPECT_EQ(errs[0].code, config_errc::cannot_read);
  const std::string big = std::string(dir) + "/big.toml";
  {
    std::ofstream f(big);
    f << "# " << std::string(max_config_bytes, 'x') << "\n";
  }
  errs = read_config_file(big, c);
  ASSERT_EQ(errs.size(), 1u);
  EXPECT_EQ(errs[0].code, config_errc::cannot_read);
  EXPECT_NE(errs[0].detail.find("larger than"), std::string::npos) << errs[0].detail;
  const std::string ok = std::string(dir) + "/ok.toml";
  {
    std::ofstream f(ok);
    f << "[client]\nuser_agent = \"from-file\"\n";
  }
  EXPECT_TRUE(read_config_file(ok, c).empty());
  EXPECT_EQ(c.client.user_agent, "from-file");
  std::remove(big.c_str());
  std::remove(ok.c_str());
  rmdir(dir);
}

// One function per section: every field of the section reaches the options.
TEST(Config, SectionsToOptions) {
  config c;
  ASSERT_EQ(load_config_text("[client]\nconnect_timeout_ms = 11\ntotal_timeout_ms = 12\n"
                             "max_body = 4096\nmax_redirects = 3\nper_host_connections = 4\n"
                             "user_agent = \"ua/1\"\nca_file = \"/ca.pem\"\n"
                             "[server]\nmax_request_line = 100\nmax_header_bytes = 300\n"
                             "max_headers = 7\nmax_body = 9\nheader_timeout_ms = 21\n"
                             "idle_timeout_ms = 22\ngzip = false\n",
                             "t.toml", c),
            "");
  const auto co = client_options_from(c.client);
  EXPECT_EQ(co.connect_timeout_ms, 11u);
  EXPECT_EQ(co.total_timeout_ms, 12u);
  EXPECT_EQ(co.max_body, 4096u);
  EXPECT_EQ(co.max_redirects, 3u);
  EXPECT_EQ(co.per_host_connections, 4u);
  EXPECT_EQ(co.user_agent, "ua/1");
  EXPECT_EQ(co.ca_file, "/ca.pem");
  const auto so = server_options_from(c.server);
  EXPECT_EQ(so.limits.max_request_line, 100u);
  EXPECT_EQ(so.limits.max_header_bytes, 300u);
  EXPECT_EQ(so.limits.max_headers, 7u);
  EXPECT_EQ(so.limits.max_body, 9u);
  EXPECT_EQ(so.header_timeout_ms, 21u);
  EXPECT_EQ(so.idle_timeout_ms, 22u);
  EXPECT_FALSE(so.gzip);
  // The defaults agree too: a command with no file sends the configured default User-Agent.
  EXPECT_EQ(client_options_from(config().client).user_agent, config().client.user_agent);
}

TEST(Config, SyntaxErrorHasLine) {
  config c;
  auto err = load_config_text("[server]\nlisten = \n", "t.toml", c);
  EXPECT_NE(err.find("t.toml:2"), std::string::npos) << err;
}

TEST(Config, RenderRoundTrips) {
  config c;
  c.server.listen = "0.0.0.0:1234";
  c.client.user_agent = "quote\" and \\ slash";
  c.reflector.k = 7;
  config d;
  ASSERT_EQ(load_config_text(render_config(c), "rendered", d), "");
  EXPECT_EQ(d.server.listen, c.server.listen);
  EXPECT_EQ(d.client.user_agent, c.client.user_agent);
  EXPECT_EQ(d.reflector.k, 7u);
  EXPECT_GE(option_docs().size(), 15u);
  for (const auto& o : option_docs()) EXPECT_FALSE(o.doc.empty()) << o.key;
}
