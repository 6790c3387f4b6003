#include "feedplane/dataplane/config.h"

#include <gtest/gtest.h>

using namespace feedplane::dataplane;

TEST(Config, DefaultsWhenEmpty) {
  config c;
  EXPECT_EQ(load_config_text("", "t.toml", c), "");
  EXPECT_EQ(c.server.listen, "127.0.0.1:8080");
  EXPECT_EQ(c.client.total_timeout_ms, 5000u);
  EXPECT_EQ(c.reflector.k, 10u);
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
