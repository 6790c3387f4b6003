// The synthetic feed farm's generator (bench/farm): determinism from the seed, the shapes
// issue 12 asks for (document size, entries, posting rates, daily and weekly cycles), the
// validators, the request dispatch, the truth log against the served documents, the share
// of HTTPS hosts and the farm CA's certificates (checked by OpenSSL's verifier).
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <simdjson.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <openssl/pem.h>
#include <openssl/x509_vfy.h>
#include <openssl/x509v3.h>

#include "feedplane/farm/farm.h"
#include "feedplane/farm/farm_ca.h"
#include "feedplane/net/tls_server.h"

namespace fm = feedplane::farm;
using feedplane::workload::vocabulary;

namespace {

constexpr double now = 1'780'000'000;  // a fixed "start" (2026-05-28), for determinism

std::string smallweb() {
  const char* c = std::getenv("FEEDPLANE_CORPUS_DIR");
  return c == nullptr ? std::string() : std::string(c) + "/smallweb/smallweb.txt";
}

fm::options opts(uint32_t feeds, uint64_t seed = 7) {
  fm::options o;
  o.feeds = feeds;
  o.seed = seed;
  o.hosts_file = smallweb();
  o.port = 8080;
  return o;
}

double quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v[static_cast<size_t>(q * static_cast<double>(v.size() - 1))];
}

}  // namespace

TEST(Farm, SameSeedSameFarm) {
  const vocabulary& v = vocabulary::english();
  fm::farm a(opts(500), v, now), b(opts(500), v, now), c(opts(500, 8), v, now);
  ASSERT_EQ(a.hosts(), b.hosts());
  std::string da, db, dc;
  size_t differ = 0;
  for (uint32_t i = 0; i < 500; ++i) {
    EXPECT_EQ(a.url(i), b.url(i));
    a.render(i, da);
    b.render(i, db);
    c.render(i, dc);
    ASSERT_EQ(da, db) << i;
    differ += da != dc;
  }
  EXPECT_GT(differ, 490u);  // another seed, other feeds

  // Posting from the same start gives the same posts.
  a.start(now, 600);
  b.start(now, 600);
  std::vector<std::string> pa, pb;
  a.publish_due(now + 3600, [&](const fm::entry& e) { pa.push_back(e.guid + e.text); });
  b.publish_due(now + 3600, [&](const fm::entry& e) { pb.push_back(e.guid + e.text); });
  EXPECT_FALSE(pa.empty());
  EXPECT_EQ(pa, pb);
}

TEST(Farm, HostsLikeTheSmallWeb) {
  fm::farm f(opts(10'000), vocabulary::english(), now);
  const std::string corpus = smallweb();
  EXPECT_EQ(f.hosts_from_corpus(), !corpus.empty() && access(corpus.c_str(), R_OK) == 0);
  const std::set<std::string> distinct(f.hosts().begin(), f.hosts().end());
  EXPECT_EQ(distinct.size(), f.hosts().size());
  // About 5% of feeds share a host with another.
  EXPECT_GT(f.hosts().size(), 9'300u);
  EXPECT_LT(f.hosts().size(), 9'700u);
  size_t platform = 0;
  for (const std::string& h : f.hosts()) {
    for (const char* p :
         {".bearblog.dev", ".github.io", ".wordpress.com", ".blogspot.com", ".tumblr.com"}) {
      platform += h.ends_with(p);
    }
  }
  // The corpus has ~15% of its hosts on these five platforms; generated names 17% on all.
  EXPECT_GT(platform, 800u);
  EXPECT_LT(platform, 2'200u);

  // More feeds than the corpus has hosts: generated names, still distinct and plain DNS.
  fm::farm big(opts(50'000), vocabulary::english(), now);
  const std::set<std::string> all(big.hosts().begin(), big.hosts().end());
  EXPECT_EQ(all.size(), big.hosts().size());
  for (const std::string& h : big.hosts()) {
    ASSERT_TRUE(std::all_of(h.begin(), h.end(), [](char c) {
      return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.';
    })) << h;
  }
}

TEST(Farm, DocumentShape) {
  fm::farm f(opts(10'000), vocabulary::english(), now);
  std::vector<double> sizes;
  size_t typical = 0, formats[3] = {}, valid[3] = {};
  std::string doc;
  for (uint32_t i = 0; i < f.size(); ++i) {
    f.render(i, doc);
    sizes.push_back(static_cast<double>(doc.size()));
    const fm::feed_info& info = f.info(i);
    typical += info.keep >= 10 && info.keep <= 17;
    ++formats[size_t(info.format)];
    ++valid[size_t(info.valid)];
    EXPECT_EQ(f.next_seq(i) - f.first_seq(i), info.keep);
  }
  // Log-normal, median 7.6 KB, p90 23 KB.
  EXPECT_NEAR(quantile(sizes, 0.5), 7600, 7600 * 0.10);
  EXPECT_NEAR(quantile(sizes, 0.9), 23000, 23000 * 0.12);
  EXPECT_GT(quantile(sizes, 0.999), 80'000);  // the heavy tail
  EXPECT_NEAR(static_cast<double>(typical) / 10'000, 0.75, 0.03);
  EXPECT_NEAR(formats[size_t(fm::feed_format::atom)] / 10'000.0, 0.20, 0.02);
  EXPECT_NEAR(formats[size_t(fm::feed_format::json)] / 10'000.0, 0.10, 0.02);
  EXPECT_NEAR(valid[size_t(fm::validators::etag_and_last_modified)] / 10'000.0, 0.80, 0.02);
  EXPECT_NEAR(valid[size_t(fm::validators::none)] / 10'000.0, 0.08, 0.015);
}

TEST(Farm, PostingRatesFollowSiaAndCho) {
  fm::farm f(opts(10'000), vocabulary::english(), now);
  size_t silent = 0, daily = 0;
  for (uint32_t i = 0; i < f.size(); ++i) {
    const double r = f.info(i).rate_per_day;
    EXPECT_GT(r, 0);
    EXPECT_LE(r, 96);
    if (r < 1.0 / 91) ++silent;  // not one post in three months, on average
    if (r >= 1) ++daily;
  }
  EXPECT_NEAR(silent / 10'000.0, 0.20, 0.015);
  EXPECT_NEAR(daily / 8'000.0, 0.32, 0.03);  // of the active feeds
}

TEST(Farm, PostingProcessCycles) {
  fm::farm f(opts(3'000), vocabulary::english(), now);
  double expected_per_day = 0;
  for (uint32_t i = 0; i < f.size(); ++i) expected_per_day += f.info(i).rate_per_day;
  // 28 simulated days in 28 "real" seconds; the clock is passed in, nothing sleeps.
  f.start(now, 86'400);
  EXPECT_TRUE(std::isinf(fm::farm(opts(10), vocabulary::english(), now).next_due()));
  size_t posts = 0, near_peak = 0, weekend = 0;
  double last_real = 0;
  for (int step = 1; step <= 28 * 24; ++step) {
    const double real = now + step / 24.0;
    f.publish_due(real, [&](const fm::entry& e) {
      ++posts;
      EXPECT_FALSE(e.initial);
      EXPECT_EQ(e.published, real);
      EXPECT_LE(e.sim_time, f.sim_time(real));
      EXPECT_GE(e.published, last_real);
      const double hour = std::fmod(e.sim_time, 86'400) / 3600;
      double d = std::fabs(hour - f.info(e.feed).peak_hour);
      d = std::min(d, 24 - d);
      near_peak += d < 6;
      const auto day = static_cast<int64_t>(e.sim_time / 86'400);
      const int dow = static_cast<int>((day + 4) % 7);
      weekend += dow == 0 || dow == 6;
    });
    last_real = real;
    EXPECT_GT(f.next_due(), real);
  }
  EXPECT_EQ(posts, f.published());
  EXPECT_NEAR(static_cast<double>(posts), expected_per_day * 28, expected_per_day * 28 * 0.05);
  // Daily cycle 1 + 0.6 cos: the half-day around the peak holds 1/2 + 0.6/pi = 69%.
  EXPECT_NEAR(static_cast<double>(near_peak) / static_cast<double>(posts), 0.69, 0.03);
  // Weekly: two weekend days at 0.75 against five weekdays at 1.1: 1.5/7 = 21.4%.
  EXPECT_NEAR(static_cast<double>(weekend) / static_cast<double>(posts), 0.214, 0.02);
}

TEST(Farm, InitialBacklogIsOld) {
  fm::farm f(opts(2'000), vocabulary::english(), now);
  for (uint32_t i = 0; i < f.size(); ++i) {
    for (uint64_t s = f.first_seq(i); s < f.next_seq(i); ++s) {
      const fm::entry e = f.make_entry(i, s);
      ASSERT_TRUE(e.initial);
      ASSERT_LT(e.published, now - 25 * 3600);
      if (s > f.first_seq(i)) {
        ASSERT_GT(e.published, f.make_entry(i, s - 1).published);
      }
    }
  }
  EXPECT_EQ(f.published(), 0u);
}

TEST(Farm, PostsChangeValidatorsAndDocument) {
  fm::farm f(opts(2'000), vocabulary::english(), now);
  // A feed with both validators that posts often.
  uint32_t id = 0;
  while (f.info(id).valid != fm::validators::etag_and_last_modified || f.info(id).rate_per_day < 20)
    ++id;
  const std::string tag0 = f.etag(id);
  const int64_t lm0 = f.last_modified(id);
  const uint64_t next0 = f.next_seq(id);
  EXPECT_FALSE(tag0.empty());
  EXPECT_EQ(tag0.front(), '"');
  f.start(now, 1);
  double t = now;
  while (f.next_seq(id) < next0 + 3) {
    t += 600;
    f.publish_due(t, [](const fm::entry&) {});
  }
  EXPECT_NE(f.etag(id), tag0);
  EXPECT_GT(f.last_modified(id), lm0);
  EXPECT_EQ(f.next_seq(id) - f.first_seq(id), f.info(id).keep);  // the oldest fell out
  std::string doc;
  f.render(id, doc);
  const fm::entry newest = f.make_entry(id, f.next_seq(id) - 1);
  EXPECT_NE(doc.find(newest.guid), std::string::npos);
  EXPECT_NE(doc.find(newest.text), std::string::npos);
  EXPECT_EQ(doc.find(f.make_entry(id, 0).guid + "<"), std::string::npos);

  // Validators by kind.
  for (uint32_t i = 0; i < f.size(); ++i) {
    switch (f.info(i).valid) {
      case fm::validators::etag_and_last_modified:
        EXPECT_FALSE(f.etag(i).empty());
        EXPECT_GE(f.last_modified(i), 0);
        break;
      case fm::validators::last_modified_only:
        EXPECT_TRUE(f.etag(i).empty());
        EXPECT_GE(f.last_modified(i), 0);
        break;
      case fm::validators::none:
        EXPECT_TRUE(f.etag(i).empty());
        EXPECT_EQ(f.last_modified(i), -1);
        break;
    }
  }
}

// --change-share (the crawler throughput benchmark): a request changes its feed with the
// set probability, deterministically from the seed, publishing one new entry now.
TEST(Farm, ChangeShareOfRequests) {
  fm::options o = opts(500);
  o.change_share = 0.25;
  fm::farm a(o, vocabulary::english(), now), b(o, vocabulary::english(), now);
  std::vector<bool> got_a, got_b;
  uint64_t entries = 0;
  for (int k = 0; k < 20'000; ++k) {
    const auto id = static_cast<uint32_t>(k % 500);
    const std::string tag = a.etag(id);
    const uint64_t next = a.next_seq(id);
    const bool changed = a.change_on_request(id, now + k, [&](const fm::entry& e) {
      ++entries;
      EXPECT_EQ(e.feed, id);
      EXPECT_EQ(e.seq, next);
      EXPECT_DOUBLE_EQ(e.published, now + k);
    });
    got_a.push_back(changed);
    got_b.push_back(b.change_on_request(id, now + k, [](const fm::entry&) {}));
    EXPECT_EQ(a.next_seq(id), next + (changed ? 1 : 0));
    if (changed && a.info(id).valid == fm::validators::etag_and_last_modified) {
      EXPECT_NE(a.etag(id), tag);
    }
  }
  EXPECT_EQ(got_a, got_b);  // the same seed, the same draws
  EXPECT_EQ(a.changed(), entries);
  EXPECT_EQ(a.published(), entries);
  EXPECT_NEAR(static_cast<double>(entries) / 20'000, 0.25, 0.02);
  // Documents come from kept entry elements under change_share: the same bytes as a farm
  // that keeps none renders from the same state, and after changes every entry in place,
  // newest first.
  fm::options plain = opts(500);
  fm::farm unchanged(plain, vocabulary::english(), now), kept(o, vocabulary::english(), now);
  std::string doc, want;
  for (uint32_t id = 0; id < 500; ++id) {
    unchanged.render(id, want);
    kept.render(id, doc);
    ASSERT_EQ(doc, want) << id;
    kept.render(id, doc);  // now from the kept elements
    ASSERT_EQ(doc, want) << id;
  }
  for (uint32_t id = 0; id < 500; ++id) {
    a.render(id, doc);
    size_t at = 0;
    for (uint64_t seq = a.next_seq(id); seq-- > a.first_seq(id);) {
      const fm::entry e = a.make_entry(id, seq);
      at = doc.find(e.guid, at);
      ASSERT_NE(at, std::string::npos) << id << " " << seq;
      ASSERT_NE(doc.find(e.text, at), std::string::npos) << id << " " << seq;
    }
  }

  // 0 never changes a feed; 1 always does.
  o.change_share = 0;
  fm::farm never(o, vocabulary::english(), now);
  o.change_share = 1;
  fm::farm always(o, vocabulary::english(), now);
  for (uint32_t id = 0; id < 100; ++id) {
    EXPECT_FALSE(never.change_on_request(id, now, [](const fm::entry&) {}));
    EXPECT_TRUE(always.change_on_request(id, now, [](const fm::entry&) {}));
  }
}

TEST(Farm, FindsFeedsByHostAndPath) {
  fm::farm f(opts(1'000), vocabulary::english(), now);
  for (uint32_t i = 0; i < f.size(); i += 37) {
    const std::string file = f.path(i).substr(6);  // after "/feed/"
    std::string upper = f.info(i).host;
    std::transform(upper.begin(), upper.end(), upper.begin(), ::toupper);
    EXPECT_EQ(f.find(f.info(i).host, file), i);
    EXPECT_EQ(f.find(upper + ":8080", file), i);
    EXPECT_EQ(f.find("nobody.example:8080", file), -1);
    EXPECT_EQ(f.find(f.info(i).host, std::to_string(i) + ".html"), -1);
  }
  EXPECT_EQ(f.find(f.info(0).host, "1000000.xml"), -1);
  EXPECT_EQ(f.find(f.info(0).host, ".xml"), -1);
  EXPECT_EQ(f.find(f.info(0).host, "0"), -1);
}

TEST(Farm, TruthLogMatchesTheServedDocuments) {
  fm::farm f(opts(300), vocabulary::english(), now);
  char path[] = "/tmp/farm_truth_XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  close(fd);
  {
    fm::truth_log log;
    std::string err;
    ASSERT_TRUE(log.open(path, &err)) << err;
    log.write_header(f, now);
    log.write_initial(f, false);
    f.start(now, 3600);
    log.write_start(now, 3600);
    f.publish_due(now + 60, [&](const fm::entry& e) { log.write_entry(f, e); });
    log.flush();
  }
  ASSERT_GT(f.published(), 0u);
  std::ifstream in(path);
  simdjson::dom::parser p;
  size_t feeds = 0, initial = 0, posted = 0, starts = 0;
  std::string doc;
  for (std::string line; std::getline(in, line);) {
    simdjson::dom::element o;
    ASSERT_EQ(p.parse(line).get(o), simdjson::SUCCESS) << line;
    const std::string_view kind = o["kind"].get_string().value();
    if (kind == "feed") {
      ++feeds;
      continue;
    }
    if (kind == "start") ++starts;
    if (kind != "entry") continue;
    const auto id = static_cast<uint32_t>(o["feed"].get_uint64().value());
    const uint64_t seq = o["seq"].get_uint64().value();
    const bool init = o["initial"].get_bool().value();
    (init ? initial : posted)++;
    EXPECT_EQ(o["url"].get_string().value(), f.url(id));
    if (seq < f.first_seq(id)) continue;  // pushed out of the document since
    const fm::entry e = f.make_entry(id, seq);
    EXPECT_EQ(o["guid"].get_string().value(), e.guid);
    EXPECT_EQ(o["link"].get_string().value(), e.link);
    EXPECT_EQ(o["title"].get_string().value(), e.title);
    EXPECT_EQ(o["text"].get_string().value(), e.text);
    EXPECT_NEAR(o["published"].get_double().value(), e.published, 0.001);
    if (init) {
      EXPECT_LT(e.published, now - 24 * 3600);
    }
    // The text is served exactly (the vocabulary has nothing XML or JSON would escape).
    f.render(id, doc);
    EXPECT_NE(doc.find(e.text), std::string::npos);
  }
  EXPECT_EQ(feeds, 300u);
  EXPECT_EQ(starts, 1u);
  EXPECT_EQ(initial, f.initial_entries());
  EXPECT_EQ(posted, f.published());
  unlink(path);
}

TEST(Farm, OpmlAndPins) {
  fm::farm f(opts(200), vocabulary::english(), now);
  char opml[] = "/tmp/farm_opml_XXXXXX", pins[] = "/tmp/farm_pins_XXXXXX";
  close(mkstemp(opml));
  close(mkstemp(pins));
  std::string err;
  ASSERT_TRUE(fm::write_opml(f, opml, &err)) << err;
  ASSERT_TRUE(fm::write_pins(f, pins, &err)) << err;
  std::ifstream o(opml);
  const std::string text((std::istreambuf_iterator<char>(o)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("<opml version=\"2.0\">"), std::string::npos);
  for (uint32_t i = 0; i < f.size(); ++i)
    EXPECT_NE(text.find("xmlUrl=\"" + f.url(i) + "\""), std::string::npos);
  std::ifstream pn(pins);
  size_t lines = 0;
  for (std::string line; std::getline(pn, line); ++lines)
    EXPECT_EQ(line, f.hosts()[lines] + ":8080:127.0.0.1");
  EXPECT_EQ(lines, f.hosts().size());
  unlink(opml);
  unlink(pins);
}

// --addresses: plain hosts pinned round the loopback addresses 127.0.0.1 ... 127.0.0.N.
TEST(Farm, PinsSpreadOverLoopbackAddresses) {
  fm::options o = opts(200);
  o.addresses = 8;
  fm::farm f(o, vocabulary::english(), now);
  char pins[] = "/tmp/farm_pins_XXXXXX";
  close(mkstemp(pins));
  std::string err;
  ASSERT_TRUE(fm::write_pins(f, pins, &err)) << err;
  std::ifstream pn(pins);
  std::set<std::string> used;
  size_t lines = 0;
  for (std::string line; std::getline(pn, line); ++lines) {
    const std::string want = fmt::format("127.0.0.{}", 1 + lines % 8);
    EXPECT_EQ(line, f.hosts()[lines] + ":8080:" + want);
    used.insert(want);
  }
  EXPECT_EQ(lines, f.hosts().size());
  EXPECT_EQ(used.size(), 8u);
  unlink(pins);
}

TEST(Farm, MisbehavingHosts) {
  fm::options o = opts(4'000);
  o.misbehaving_share = 0.2;
  o.raw_port = 9090;
  fm::farm f(o, vocabulary::english(), now);
  size_t by_kind[fm::misbehaviour_count] = {};
  for (size_t h = 0; h < f.hosts().size(); ++h) ++by_kind[size_t(f.host_misbehaves(h))];
  EXPECT_NEAR(static_cast<double>(by_kind[0]) / static_cast<double>(f.hosts().size()), 0.8, 0.03);
  for (size_t k = 1; k < fm::misbehaviour_count; ++k) EXPECT_GT(by_kind[k], 50u) << k;
  // Every feed behaves as its host does; the host's port is the raw one for raw kinds.
  std::map<std::string, fm::misbehaviour> of_host;
  for (size_t h = 0; h < f.hosts().size(); ++h) of_host[f.hosts()[h]] = f.host_misbehaves(h);
  std::string doc;
  for (uint32_t i = 0; i < f.size(); ++i) {
    const fm::feed_info& info = f.info(i);
    ASSERT_EQ(of_host[info.host], info.misbehaves);
    EXPECT_EQ(f.port_of(i), fm::raw(info.misbehaves) ? 9090 : 8080);
    EXPECT_NE(f.url(i).find(":" + std::to_string(f.port_of(i)) + "/feed/"), std::string::npos);
    if (info.misbehaves == fm::misbehaviour::redirect_chain) {
      EXPECT_GE(info.redirects, 2);
      EXPECT_LE(info.redirects, 4);
    } else {
      EXPECT_EQ(info.redirects, 0);
    }
    f.render(i, doc);
    const bool closed =
        doc.ends_with("</rss>\n") || doc.ends_with("</feed>\n") || doc.ends_with("]}\n");
    EXPECT_EQ(closed, info.misbehaves != fm::misbehaviour::malformed) << i;
    if (info.misbehaves == fm::misbehaviour::malformed && info.format != fm::feed_format::json) {
      EXPECT_NE(doc.find(" & more</title>"), std::string::npos);
    }
  }
  // A frozen Last-Modified stays put while the feed posts; the others move.
  f.start(now, 3600);
  std::vector<int64_t> lm(f.size());
  std::vector<uint64_t> next(f.size());
  for (uint32_t i = 0; i < f.size(); ++i) {
    lm[i] = f.last_modified(i);
    next[i] = f.next_seq(i);
  }
  f.publish_due(now + 600, [](const fm::entry&) {});
  size_t frozen = 0, moved = 0;
  for (uint32_t i = 0; i < f.size(); ++i) {
    if (f.next_seq(i) == next[i] || f.info(i).valid == fm::validators::none) continue;
    if (f.info(i).misbehaves == fm::misbehaviour::frozen_last_modified) {
      EXPECT_EQ(f.last_modified(i), lm[i]);
      EXPECT_TRUE(f.etag(i).empty());
      ++frozen;
    } else {
      EXPECT_GT(f.last_modified(i), lm[i]);
      ++moved;
    }
  }
  EXPECT_GT(frozen, 0u);
  EXPECT_GT(moved, 0u);
}

TEST(Farm, HttpsShareOfHostsWithTheirOwnPortAndPins) {
  fm::options o = opts(2000);
  o.https_share = 0.3;
  o.https_port = 8443;
  fm::farm f(o, vocabulary::english(), now);
  fm::farm plain(opts(2000), vocabulary::english(), now);
  size_t https_hosts = 0;
  for (const std::string& h : f.hosts()) https_hosts += f.https_host(h) ? 1 : 0;
  const double share = static_cast<double>(https_hosts) / static_cast<double>(f.hosts().size());
  EXPECT_GT(share, 0.25);
  EXPECT_LT(share, 0.35);
  for (uint32_t i = 0; i < f.size(); ++i) {
    const fm::feed_info& fi = f.info(i);
    EXPECT_EQ(fi.https, f.https_host(fi.host));  // one scheme per host
    EXPECT_EQ(
        f.url(i),
        (fi.https ? "https://" + fi.host + ":8443" : "http://" + fi.host + ":8080") + f.path(i));
    // The share changes schemes only: the same hosts, documents and rates.
    EXPECT_EQ(fi.host, plain.info(i).host);
    EXPECT_EQ(fi.rate_per_day, plain.info(i).rate_per_day);
    EXPECT_FALSE(plain.info(i).https);
  }
  char pins[] = "/tmp/farm_pins_XXXXXX";
  close(mkstemp(pins));
  std::string err;
  ASSERT_TRUE(fm::write_pins(f, pins, &err)) << err;
  std::ifstream pn(pins);
  size_t lines = 0;
  for (std::string line; std::getline(pn, line); ++lines) {
    const std::string& h = f.hosts()[lines];
    EXPECT_EQ(line, h + (f.https_host(h) ? ":8443" : ":8080") + ":127.0.0.1");
  }
  EXPECT_EQ(lines, f.hosts().size());
  unlink(pins);
}

TEST(Farm, CertificateAuthorityIssuesPerNameAndCaches) {
  std::string err;
  auto ca = fm::cert_authority::create(30, &err);
  ASSERT_TRUE(ca) << err;
  // The CA as a client would load it (its PEM), and a verifier checking name and purpose.
  const std::string pem = ca->ca_pem();
  EXPECT_EQ(pem.rfind("-----BEGIN CERTIFICATE-----", 0), 0u);
  BIO* b = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  X509* root = PEM_read_bio_X509(b, nullptr, nullptr, nullptr);
  BIO_free(b);
  ASSERT_NE(root, nullptr);
  X509_STORE* store = X509_STORE_new();
  X509_STORE_add_cert(store, root);
  auto verify = [&](X509* leaf, const std::string& name) {
    X509_STORE_CTX* ctx = X509_STORE_CTX_new();
    X509_STORE_CTX_init(ctx, store, leaf, nullptr);
    X509_VERIFY_PARAM* p = X509_STORE_CTX_get0_param(ctx);
    X509_VERIFY_PARAM_set1_host(p, name.c_str(), name.size());
    X509_VERIFY_PARAM_set_purpose(p, X509_PURPOSE_SSL_SERVER);
    const bool ok = X509_verify_cert(ctx) == 1;
    X509_STORE_CTX_free(ctx);
    return ok;
  };
  const feedplane::net::tls_identity* a = ca->identity_for("a.example");
  ASSERT_NE(a, nullptr);
  EXPECT_TRUE(verify(a->leaf(), "a.example"));
  EXPECT_FALSE(verify(a->leaf(), "b.example"));  // one name per leaf
  EXPECT_EQ(ca->identity_for("a.example"), a);   // cached
  EXPECT_EQ(ca->issued(), 1u);
  const feedplane::net::tls_identity* bb = ca->identity_for("b.example");
  ASSERT_NE(bb, nullptr);
  EXPECT_TRUE(verify(bb->leaf(), "b.example"));
  EXPECT_EQ(ca->issued(), 2u);
  // A bounded cache: the oldest name goes, and comes back re-issued (still valid).
  ca->set_cache_capacity(2);
  ASSERT_NE(ca->identity_for("c.example"), nullptr);
  EXPECT_EQ(ca->cached(), 2u);
  const feedplane::net::tls_identity* a2 = ca->identity_for("a.example");
  ASSERT_NE(a2, nullptr);
  EXPECT_EQ(ca->issued(), 4u);
  EXPECT_TRUE(verify(a2->leaf(), "a.example"));
  X509_STORE_free(store);
  X509_free(root);
}
