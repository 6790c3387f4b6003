// Test helper: a tiny DNS server on loopback UDP (one thread) with fixed answers, so the
// resolver and the HTTP client can be tested without any traffic leaving the machine.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <string>
#include <thread>

namespace feedplane::test {

// Answers: feed.test -> 192.0.2.7 + 2001:db8::7 (TTL 300); v6only.test -> AAAA only;
// loop.test -> 127.0.0.1 (A only); loop6.test -> ::1 (AAAA only); slow.test -> silence; anything
// else -> NXDOMAIN.
class fake_dns {
 public:
  fake_dns() {
    fd_ = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a);
    socklen_t len = sizeof a;
    getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] { serve(); });
  }
  ~fake_dns() {
    stop_ = true;
    shutdown(fd_, SHUT_RDWR);
    thread_.join();
    close(fd_);
  }
  uint16_t port() const { return port_; }
  int queries() const { return queries_.load(); }

 private:
  void serve() {
    uint8_t buf[512];
    while (!stop_) {
      pollfd p{fd_, POLLIN, 0};
      if (poll(&p, 1, 50) <= 0) continue;
      sockaddr_in from{};
      socklen_t fl = sizeof from;
      ssize_t n = recvfrom(fd_, buf, sizeof buf, 0, reinterpret_cast<sockaddr*>(&from), &fl);
      if (n < 12) continue;
      ++queries_;
      // Question: labels from offset 12, then qtype and qclass.
      size_t i = 12;
      std::string name;
      while (i < static_cast<size_t>(n) && buf[i] != 0) {
        size_t l = buf[i];
        if (!name.empty()) name.push_back('.');
        name.append(reinterpret_cast<char*>(buf + i + 1), l);
        i += l + 1;
      }
      size_t qend = i + 5;
      if (qend > static_cast<size_t>(n)) continue;
      uint16_t qtype = static_cast<uint16_t>(buf[i + 1] << 8 | buf[i + 2]);
      if (name == "slow.test") continue;
      std::string out(reinterpret_cast<char*>(buf), qend);
      out[2] = static_cast<char>(0x81);  // QR, RD
      out[3] = static_cast<char>(0x80);  // RA, rcode 0
      out[6] = out[7] = out[8] = out[9] = out[10] = out[11] = 0;
      int answers = 0;
      auto add = [&](uint16_t type, const uint8_t* rdata, uint16_t len) {
        const uint8_t rr[] = {
            0xc0, 0x0c, static_cast<uint8_t>(type >> 8), static_cast<uint8_t>(type), 0, 1, 0, 0,
            0x01, 0x2c, static_cast<uint8_t>(len >> 8),  static_cast<uint8_t>(len)};
        out.append(reinterpret_cast<const char*>(rr), sizeof rr);
        out.append(reinterpret_cast<const char*>(rdata), len);
        ++answers;
      };
      const uint8_t v4[4] = {192, 0, 2, 7};
      const uint8_t lo4[4] = {127, 0, 0, 1};
      uint8_t v6[16];
      inet_pton(AF_INET6, "2001:db8::7", v6);
      if (name == "feed.test" && qtype == 1) add(1, v4, 4);
      if (name == "loop.test" && qtype == 1) add(1, lo4, 4);
      uint8_t lo6[16] = {};
      lo6[15] = 1;
      if (name == "loop6.test" && qtype == 28) add(28, lo6, 16);
      if ((name == "feed.test" || name == "v6only.test") && qtype == 28) add(28, v6, 16);
      if (name != "feed.test" && name != "v6only.test" && name != "loop.test" &&
          name != "loop6.test")
        out[3] = static_cast<char>(0x83);
      out[7] = static_cast<char>(answers);
      sendto(fd_, out.data(), out.size(), 0, reinterpret_cast<sockaddr*>(&from), fl);
    }
  }
  int fd_ = -1;
  uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> queries_{0};
  std::thread thread_;
};

}  // namespace feedplane::test
