// TLS client session against an in-process OpenSSL server over memory: a real handshake
// with certificates made for each case (good, expired, not yet valid, unknown CA, wrong
// name), application data both ways after it, and session resumption from the context's
// ticket cache (a second handshake to the same host resumes, another host or a server
// that cannot decrypt the ticket gets a full handshake).
#include "feedplane/net/tls_client.h"

#include <gtest/gtest.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <unistd.h>

#include <filesystem>

#include "net_test_certs.h"

using feedplane::net::fetch_error;
using feedplane::net::tls_context;
using feedplane::net::tls_session;
using feedplane::test::key_and_cert;
using feedplane::test::make_cert;
using res = tls_session::result;

namespace {

constexpr long k_day = 86400;

struct server {
  SSL_CTX* ctx = nullptr;
  SSL* ssl = nullptr;
  BIO* in = nullptr;
  BIO* out = nullptr;
  // shared: another server's context (its ticket keys), or null for a new one.
  server(const key_and_cert& leaf, const key_and_cert* chain, SSL_CTX* shared = nullptr) {
    if (shared != nullptr) {
      SSL_CTX_up_ref(shared);
      ctx = shared;
    } else {
      ctx = SSL_CTX_new(TLS_server_method());
      SSL_CTX_use_certificate(ctx, leaf.cert);
      SSL_CTX_use_PrivateKey(ctx, leaf.key);
      if (chain) SSL_CTX_add1_chain_cert(ctx, chain->cert);
    }
    ssl = SSL_new(ctx);
    in = BIO_new(BIO_s_mem());
    out = BIO_new(BIO_s_mem());
    BIO_set_mem_eof_return(in, -1);
    SSL_set_bio(ssl, in, out);
    SSL_set_accept_state(ssl);
  }
  ~server() {
    SSL_free(ssl);
    SSL_CTX_free(ctx);
  }
};

// Moves bytes both ways until the client's handshake finishes or fails.
res pump_handshake(tls_session& c, server& s) {
  for (int i = 0; i < 50; ++i) {
    auto r = c.handshake();
    std::string wire;
    c.take_output(wire);
    if (!wire.empty()) BIO_write(s.in, wire.data(), static_cast<int>(wire.size()));
    SSL_do_handshake(s.ssl);
    ERR_clear_error();
    char buf[16384];
    int n;
    while ((n = BIO_read(s.out, buf, sizeof buf)) > 0) {
      c.feed(buf, static_cast<size_t>(n));  // read in place...
      c.release_input();                    // ... so kept before buf is reused
    }
    if (r != res::want_io) return r;
  }
  return res::want_io;
}

class Tls : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ =
        std::filesystem::temp_directory_path() / ("feedplane_tls_test_" + std::to_string(getpid()));
    std::filesystem::create_directories(dir_);
    ca_ = make_cert("feedplane test CA", nullptr, "", -k_day, 30 * k_day, true);
    ca_file_ = (dir_ / "ca.pem").string();
    feedplane::test::write_file(ca_file_, ca_.cert_pem());
    std::string err;
    ctx_ = tls_context::create(ca_file_, &err);
    ASSERT_TRUE(ctx_) << err;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  fetch_error handshake_with(const key_and_cert& leaf, const std::string& host,
                             bool verify = true) {
    server s(leaf, nullptr);
    tls_session c;
    EXPECT_TRUE(c.start(*ctx_, host, verify));
    auto r = pump_handshake(c, s);
    if (r == res::ok) return fetch_error::ok;
    EXPECT_EQ(r, res::error);
    EXPECT_FALSE(c.detail().empty());
    return c.error();
  }

  std::filesystem::path dir_;
  key_and_cert ca_;
  std::string ca_file_;
  std::unique_ptr<tls_context> ctx_;
};

}  // namespace

TEST_F(Tls, HandshakeAndDataBothWays) {
  auto leaf = make_cert("localhost", &ca_, "DNS:localhost,IP:127.0.0.1", -k_day, k_day, false);
  server s(leaf, nullptr);
  tls_session c;
  ASSERT_TRUE(c.start(*ctx_, "localhost", true));
  ASSERT_EQ(pump_handshake(c, s), res::ok);
  EXPECT_TRUE(c.handshake_done());

  std::string req = "GET / HTTP/1.1\r\nHost: localhost\r\n\r\n";
  ASSERT_EQ(c.write(req.data(), req.size()), res::ok);
  std::string wire;
  c.take_output(wire);
  BIO_write(s.in, wire.data(), static_cast<int>(wire.size()));
  char buf[4096];
  size_t n = 0;
  std::string got;
  while (SSL_read_ex(s.ssl, buf, sizeof buf, &n) == 1) got.append(buf, n);
  EXPECT_EQ(got, req);

  std::string big(100000, 'x');
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>('a' + i % 26);
  size_t w = 0;
  ASSERT_EQ(SSL_write_ex(s.ssl, big.data(), big.size(), &w), 1);
  std::string back;
  int k;
  std::string plain;
  // Deliver in small pieces: records split across feeds must reassemble (in place: each
  // piece is read up to want_io before the next overwrites the buffer).
  char wire_in[777];
  // The output kept for take_output, and the handshake's unread tail copied by
  // release_input (freed once read).
  const size_t held = c.buffered_bytes();
  while ((k = BIO_read(s.out, wire_in, sizeof wire_in)) > 0) {
    c.feed(wire_in, static_cast<size_t>(k));
    while (true) {
      auto r = c.read(buf, sizeof buf, &n);
      if (r != res::ok) {
        ASSERT_EQ(r, res::want_io);
        break;
      }
      plain.append(buf, n);
    }
    c.release_input();
    EXPECT_LE(c.buffered_bytes(), held);  // want_io: every fed byte was read, nothing copied
  }
  EXPECT_EQ(plain, big);

  SSL_shutdown(s.ssl);
  while ((k = BIO_read(s.out, wire_in, sizeof wire_in)) > 0) {
    c.feed(wire_in, static_cast<size_t>(k));
    c.release_input();
  }
  EXPECT_EQ(c.read(buf, sizeof buf, &n), res::closed);
}

// Moves the server's post-handshake messages (TLS 1.3 tickets) to the client and lets it
// read them, as the first response read would.
void deliver_tickets(tls_session& c, server& s) {
  char buf[16384];
  size_t n = 0;
  SSL_read_ex(s.ssl, buf, sizeof buf, &n);  // the server sends its tickets after Finished
  ERR_clear_error();
  int k;
  while ((k = BIO_read(s.out, buf, sizeof buf)) > 0) {
    c.feed(buf, static_cast<size_t>(k));
    c.release_input();
  }
  EXPECT_EQ(c.read(buf, sizeof buf, &n), res::want_io);
}

TEST_F(Tls, SecondHandshakeToTheSameHostResumes) {
  auto leaf = make_cert("localhost", &ca_, "DNS:localhost,DNS:other", -k_day, k_day, false);
  server first(leaf, nullptr);
  {
    tls_session c;
    ASSERT_TRUE(c.start(*ctx_, "localhost", true, 443));
    ASSERT_EQ(pump_handshake(c, first), res::ok);
    EXPECT_FALSE(c.resumed());
    deliver_tickets(c, first);
  }
  auto st = ctx_->session_stats();
  EXPECT_EQ(st.hosts, 1u);
  EXPECT_GE(st.tickets, 1u);
  EXPECT_LE(st.tickets, 2u);  // OpenSSL sends two; at most two are kept per host
  const size_t before = st.tickets;

  // Same host, port and verification: resumes, and the ticket is used up (TLS 1.3).
  server second(leaf, nullptr, first.ctx);
  tls_session c2;
  ASSERT_TRUE(c2.start(*ctx_, "localhost", true, 443));
  EXPECT_EQ(ctx_->session_stats().tickets, before - 1);
  ASSERT_EQ(pump_handshake(c2, second), res::ok);
  EXPECT_TRUE(c2.resumed());
  EXPECT_TRUE(SSL_session_reused(second.ssl));

  // Another host name (same server, same certificate): no ticket offered, full handshake.
  server third(leaf, nullptr, first.ctx);
  tls_session c3;
  ASSERT_TRUE(c3.start(*ctx_, "other", true, 443));
  ASSERT_EQ(pump_handshake(c3, third), res::ok);
  EXPECT_FALSE(c3.resumed());

  // The same host on another port, or unverified, is another cache entry too.
  server fourth(leaf, nullptr, first.ctx);
  tls_session c4;
  ASSERT_TRUE(c4.start(*ctx_, "localhost", false, 443));
  ASSERT_EQ(pump_handshake(c4, fourth), res::ok);
  EXPECT_FALSE(c4.resumed());
}

TEST_F(Tls, TicketTheServerCannotDecryptFallsBackToAFullHandshake) {
  auto leaf = make_cert("localhost", &ca_, "DNS:localhost", -k_day, k_day, false);
  {
    server first(leaf, nullptr);
    tls_session c;
    ASSERT_TRUE(c.start(*ctx_, "localhost", true, 8443));
    ASSERT_EQ(pump_handshake(c, first), res::ok);
    deliver_tickets(c, first);
  }
  ASSERT_GE(ctx_->session_stats().tickets, 1u);
  // A restarted server: new ticket keys, the offered ticket is rejected.
  server restarted(leaf, nullptr);
  tls_session c;
  ASSERT_TRUE(c.start(*ctx_, "localhost", true, 8443));
  EXPECT_EQ(ctx_->session_stats().offered, 1u);
  ASSERT_EQ(pump_handshake(c, restarted), res::ok) << c.detail();
  EXPECT_FALSE(c.resumed());
  std::string req = "ping";
  ASSERT_EQ(c.write(req.data(), req.size()), res::ok);
}

TEST_F(Tls, CacheIsBoundedPerHostAndInHosts) {
  std::string err;
  auto small = tls_context::create(ca_file_, &err, /*session_hosts=*/2);
  ASSERT_TRUE(small) << err;
  auto leaf = make_cert("localhost", &ca_, "DNS:localhost", -k_day, k_day, false);
  server srv(leaf, nullptr);
  for (uint16_t port : {1, 2, 3}) {
    for (int rep = 0; rep < 3; ++rep) {
      server s(leaf, nullptr, srv.ctx);
      tls_session c;
      ASSERT_TRUE(c.start(*small, "localhost", true, port));
      ASSERT_EQ(pump_handshake(c, s), res::ok);
      deliver_tickets(c, s);
    }
  }
  auto st = small->session_stats();
  EXPECT_EQ(st.hosts, 2u);    // the least recently used host (port 1) was dropped
  EXPECT_LE(st.tickets, 4u);  // two per host
  EXPECT_GT(st.evicted, 0u);
  // Port 1's ticket is gone: full handshake; port 3's is there: resumed.
  for (auto [port, resumes] : {std::pair<uint16_t, bool>{1, false}, {3, true}}) {
    server s(leaf, nullptr, srv.ctx);
    tls_session c;
    ASSERT_TRUE(c.start(*small, "localhost", true, port));
    ASSERT_EQ(pump_handshake(c, s), res::ok);
    EXPECT_EQ(c.resumed(), resumes) << port;
  }
  // No resumption at all with session_hosts = 0.
  auto none = tls_context::create(ca_file_, &err, 0);
  ASSERT_TRUE(none) << err;
  for (int i = 0; i < 2; ++i) {
    server s(leaf, nullptr, srv.ctx);
    tls_session c;
    ASSERT_TRUE(c.start(*none, "localhost", true, 443));
    ASSERT_EQ(pump_handshake(c, s), res::ok);
    deliver_tickets(c, s);
    EXPECT_FALSE(c.resumed());
  }
  EXPECT_EQ(none->session_stats().tickets, 0u);
}

TEST_F(Tls, IpLiteralHost) {
  auto leaf = make_cert("ip", &ca_, "IP:127.0.0.1", -k_day, k_day, false);
  EXPECT_EQ(handshake_with(leaf, "127.0.0.1"), fetch_error::ok);
  EXPECT_EQ(handshake_with(leaf, "127.0.0.2"), fetch_error::tls_name_mismatch);
}

TEST_F(Tls, DistinctErrors) {
  auto expired = make_cert("localhost", &ca_, "DNS:localhost", -10 * k_day, -k_day, false);
  EXPECT_EQ(handshake_with(expired, "localhost"), fetch_error::tls_cert_expired);

  auto future = make_cert("localhost", &ca_, "DNS:localhost", k_day, 10 * k_day, false);
  EXPECT_EQ(handshake_with(future, "localhost"), fetch_error::tls_cert_not_yet_valid);

  auto other_ca = make_cert("other CA", nullptr, "", -k_day, k_day, true);
  auto unknown = make_cert("localhost", &other_ca, "DNS:localhost", -k_day, k_day, false);
  EXPECT_EQ(handshake_with(unknown, "localhost"), fetch_error::tls_unknown_ca);

  auto self_signed = make_cert("localhost", nullptr, "DNS:localhost", -k_day, k_day, false);
  EXPECT_EQ(handshake_with(self_signed, "localhost"), fetch_error::tls_unknown_ca);

  auto good = make_cert("localhost", &ca_, "DNS:localhost", -k_day, k_day, false);
  EXPECT_EQ(handshake_with(good, "example.org"), fetch_error::tls_name_mismatch);
}

TEST_F(Tls, OptOutAcceptsSelfSigned) {
  auto self_signed = make_cert("whatever", nullptr, "DNS:whatever", -k_day, k_day, false);
  EXPECT_EQ(handshake_with(self_signed, "localhost", /*verify=*/false), fetch_error::ok);
}

TEST_F(Tls, GarbageFromServerIsAHandshakeError) {
  tls_session c;
  ASSERT_TRUE(c.start(*ctx_, "localhost", true));
  ASSERT_EQ(c.handshake(), res::want_io);
  std::string out;
  EXPECT_GT(c.take_output(out), 0u);  // the ClientHello
  std::string junk = "HTTP/1.1 400 Bad Request\r\n\r\n";
  c.feed(junk.data(), junk.size());
  EXPECT_EQ(c.handshake(), res::error);
  EXPECT_EQ(c.error(), fetch_error::tls_handshake_failed);
}

TEST(TlsContext, BadCaFileIsAnError) {
  std::string err;
  EXPECT_FALSE(tls_context::create("/nonexistent/ca.pem", &err));
  EXPECT_NE(err.find("/nonexistent/ca.pem"), std::string::npos);
  EXPECT_TRUE(tls_context::create("", &err)) << err;  // the system store
}
