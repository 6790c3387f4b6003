// Raw loopback HTTP/1.1 clients for the server tests: blocking sockets, so that malformed,
// pipelined and slow requests are exactly what a test writes, and a small response reader.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <map>
#include <string>
#include <string_view>

#include "gtest/gtest.h"

namespace http_test {

inline int dial(int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(uint16_t(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  timeval tv{30, 0};  // a hang fails the test instead of blocking ctest
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  return fd;
}

inline void send_all(int fd, std::string_view s) {
  while (!s.empty()) {
    ssize_t n = send(fd, s.data(), s.size(), MSG_NOSIGNAL);
    if (n <= 0) return;  // the server may have closed; the response tells
    s.remove_prefix(size_t(n));
  }
}

struct response {
  int status = 0;
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;
};

// Reads responses from a blocking socket (bodies framed by Content-Length; none for 304 or
// when `head` is set).
class reader {
 public:
  explicit reader(int fd) : fd_(fd) {}
  bool next(response* r, bool head = false) {
    size_t end;
    while ((end = buf_.find("\r\n\r\n")) == std::string::npos) {
      if (!fill()) return false;
    }
    std::string h = buf_.substr(0, end);
    buf_.erase(0, end + 4);
    *r = response();
    if (h.size() < 12 || h.compare(0, 9, "HTTP/1.1 ") != 0) return false;
    r->status = std::stoi(h.substr(9, 3));
    size_t pos = h.find("\r\n");
    while (pos != std::string::npos) {
      size_t e = h.find("\r\n", pos + 2);
      std::string line =
          h.substr(pos + 2, e == std::string::npos ? std::string::npos : e - pos - 2);
      size_t c = line.find(':');
      if (c != std::string::npos) {
        std::string name = line.substr(0, c);
        for (auto& ch : name) ch = char(tolower(ch));
        std::string v = line.substr(c + 1);
        while (!v.empty() && v.front() == ' ') v.erase(0, 1);
        r->headers[name] = v;
      }
      pos = e;
    }
    size_t len = 0;
    if (r->status != 304 && !head && r->headers.count("content-length")) {
      len = std::stoul(r->headers["content-length"]);
    }
    while (buf_.size() < len) {
      if (!fill()) return false;
    }
    r->body = buf_.substr(0, len);
    buf_.erase(0, len);
    return true;
  }
  // True if the peer closed (EOF) with nothing more to read.
  bool at_eof() {
    if (!buf_.empty()) return false;
    char c;
    ssize_t n = recv(fd_, &c, 1, 0);
    if (n == 1) buf_.push_back(c);
    return n == 0;
  }
  const std::string& pending() const { return buf_; }

 private:
  bool fill() {
    char tmp[4096];
    ssize_t n = recv(fd_, tmp, sizeof(tmp), 0);
    if (n <= 0) return false;
    buf_.append(tmp, size_t(n));
    return true;
  }
  int fd_;
  std::string buf_;
};

// One request on a fresh connection; returns the response status (0 if none).
inline response one_shot(int port, std::string_view req, bool* closed_after = nullptr) {
  int fd = dial(port);
  send_all(fd, req);
  reader rd(fd);
  response r;
  if (!rd.next(&r)) r.status = 0;
  if (closed_after != nullptr) *closed_after = rd.at_eof();
  close(fd);
  return r;
}

}  // namespace http_test
