// `feedplane serve` end to end: the real binary (FEEDPLANE_BINARY) on a free loopback port,
// driven by curl and by a raw socket; started and stopped (SIGTERM, by pid) by the test.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace fs = std::filesystem;

namespace {

// FEEDPLANE_BINARY, else the feedplane built beside this test (<build>/dataplane/feedplane).
std::string binary() {
  const char* b = std::getenv("FEEDPLANE_BINARY");
  if (b != nullptr && *b != '\0') return b;
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return "";
  fs::path guess = self.parent_path().parent_path() / "dataplane" / "feedplane";
  return fs::exists(guess, ec) ? guess.string() : "";
}

// Runs a shell command, returns stdout.
std::string sh(const std::string& cmd, int* status = nullptr) {
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
  int st = pclose(p);
  if (status != nullptr) *status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return out;
}

struct served {
  pid_t pid = -1;
  int port = 0;
  std::string first_line;
  std::string err_path;
};

// Starts `feedplane serve ARGS` and waits for its "listening on" line.
served start(const std::vector<std::string>& args, const fs::path& dir) {
  served s;
  s.err_path = (dir / "serve.err").string();
  int out[2];
  if (pipe(out) != 0) return s;
  s.pid = fork();
  if (s.pid == 0) {
    dup2(out[1], 1);
    FILE* e = fopen(s.err_path.c_str(), "w");
    if (e != nullptr) dup2(fileno(e), 2);
    close(out[0]);
    std::vector<char*> argv;
    std::string bin = binary();
    argv.push_back(bin.data());
    std::vector<std::string> copy = args;
    for (auto& a : copy) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(bin.c_str(), argv.data());
    _exit(127);
  }
  close(out[1]);
  std::string line;
  char c;
  while (read(out[0], &c, 1) == 1 && c != '\n') line.push_back(c);
  close(out[0]);
  s.first_line = line;
  size_t at = line.find("127.0.0.1:");
  if (at != std::string::npos) s.port = std::atoi(line.c_str() + at + 10);
  return s;
}

int stop(served& s) {
  if (s.pid <= 0) return -1;
  kill(s.pid, SIGTERM);
  int st = 0;
  waitpid(s.pid, &st, 0);
  s.pid = -1;
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

class serve_test : public ::testing::Test {
 protected:
  void SetUp() override {
    // scripts/setup installs curl; ctest sets FEEDPLANE_BINARY (tests/CMakeLists.txt).
    ASSERT_FALSE(binary().empty()) << "FEEDPLANE_BINARY not set";
    ASSERT_FALSE(sh("command -v curl").empty()) << "curl not installed: run scripts/setup";
    dir_ = fs::temp_directory_path() / ("fp-serve-" + std::to_string(getpid()));
    fs::create_directories(dir_ / "data" / "public");
    std::ofstream f(dir_ / "data" / "public" / "feed.xml", std::ios::binary);
    for (int i = 0; body_.size() < 8192; ++i) {
      body_ += "<item><title>entry " + std::to_string(i) + "</title></item>\n";
    }
    body_.resize(8192);
    f << body_;
  }
  void TearDown() override {
    if (s_.pid > 0) stop(s_);
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  std::string url(const std::string& path) const {
    return "http://127.0.0.1:" + std::to_string(s_.port) + path;
  }
  fs::path dir_;
  std::string body_;
  served s_;
};

}  // namespace

TEST_F(serve_test, healthz_static_gzip_head_conditional_keepalive_with_curl) {
  s_ = start(
      {"serve", "--listen", "127.0.0.1:0", "--data", (dir_ / "data").string(), "--shards", "2"},
      dir_);
  ASSERT_GT(s_.port, 0) << s_.first_line;
  EXPECT_NE(s_.first_line.find("2 shard(s)"), std::string::npos) << s_.first_line;

  EXPECT_EQ(sh("curl -s " + url("/healthz")), "ok\n");
  EXPECT_EQ(sh("curl -s " + url("/static/feed.xml")), body_);
  // gzip on request; curl decodes it.
  std::string hdr = sh("curl -s --compressed -D - -o " + (dir_ / "gz.out").string() + " " +
                       url("/static/feed.xml"));
  EXPECT_NE(hdr.find("Content-Encoding: gzip"), std::string::npos) << hdr;
  std::ifstream gz(dir_ / "gz.out", std::ios::binary);
  std::string decoded((std::istreambuf_iterator<char>(gz)), std::istreambuf_iterator<char>());
  EXPECT_EQ(decoded, body_);
  // HEAD.
  hdr = sh("curl -s -I " + url("/static/feed.xml"));
  EXPECT_NE(hdr.find("HTTP/1.1 200 OK"), std::string::npos) << hdr;
  EXPECT_NE(hdr.find("Content-Length: 8192"), std::string::npos) << hdr;
  // Conditional: the ETag and Last-Modified just served give 304.
  size_t e = hdr.find("ETag: ");
  ASSERT_NE(e, std::string::npos);
  std::string etag = hdr.substr(e + 6, hdr.find("\r\n", e) - e - 6);
  EXPECT_EQ(sh("curl -s -o /dev/null -w '%{http_code}' -H 'If-None-Match: " + etag + "' " +
               url("/static/feed.xml")),
            "304");
  size_t m = hdr.find("Last-Modified: ");
  ASSERT_NE(m, std::string::npos);
  std::string lm = hdr.substr(m + 15, hdr.find("\r\n", m) - m - 15);
  EXPECT_EQ(sh("curl -s -o /dev/null -w '%{http_code}' -H 'If-Modified-Since: " + lm + "' " +
               url("/static/feed.xml")),
            "304");
  // Keep-alive: curl reuses one connection for two URLs.
  std::string v = sh("curl -sv -o /dev/null -o /dev/null " + url("/healthz") + " " +
                     url("/static/feed.xml") + " 2>&1");
  EXPECT_NE(v.find("Re-using existing connection"), std::string::npos) << v;
  EXPECT_EQ(sh("curl -s -o /dev/null -w '%{http_code}' " + url("/nope")), "404");
  EXPECT_EQ(sh("curl -s -o /dev/null -w '%{http_code}' -X POST " + url("/healthz")), "405");
  // A malformed request on a raw socket gets 400, and the server keeps serving.
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(uint16_t(s_.port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  timeval tv{10, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  const char bad[] = "BAD REQUEST LINE\r\n\r\n";
  ASSERT_EQ(send(fd, bad, sizeof(bad) - 1, MSG_NOSIGNAL), ssize_t(sizeof(bad) - 1));
  char buf[512];
  ssize_t n = recv(fd, buf, sizeof(buf), 0);
  ASSERT_GT(n, 12);
  EXPECT_EQ(std::string(buf, 12), "HTTP/1.1 400");
  close(fd);
  EXPECT_EQ(sh("curl -s " + url("/healthz")), "ok\n");
  EXPECT_EQ(stop(s_), 0);
}

TEST_F(serve_test, flags_override_config_file_and_errors_are_clear) {
  // The file asks for a privileged port and 3 shards; the flags override both.
  std::ofstream(dir_ / "fp.toml") << "[server]\nlisten = \"127.0.0.1:1\"\nshards = 3\n";
  s_ = start({"serve", "--config", (dir_ / "fp.toml").string(), "--listen", "127.0.0.1:0", "--data",
              (dir_ / "data").string(), "--shards", "1"},
             dir_);
  ASSERT_GT(s_.port, 0) << s_.first_line;
  EXPECT_NE(s_.first_line.find("1 shard(s)"), std::string::npos) << s_.first_line;
  EXPECT_EQ(sh("curl -s " + url("/healthz")), "ok\n");
  EXPECT_EQ(stop(s_), 0);

  // Without the flag, the file's shard count applies.
  std::ofstream(dir_ / "fp2.toml") << "[server]\nlisten = \"127.0.0.1:0\"\nshards = 3\n";
  s_ =
      start({"serve", "--config", (dir_ / "fp2.toml").string(), "--data", (dir_ / "data").string()},
            dir_);
  EXPECT_NE(s_.first_line.find("3 shard(s)"), std::string::npos) << s_.first_line;
  EXPECT_EQ(stop(s_), 0);

  int st = 0;
  std::string out =
      sh(binary() + " serve --listen nonsense --data " + (dir_ / "data").string() + " 2>&1", &st);
  EXPECT_NE(st, 0);
  EXPECT_NE(out.find("ADDR:PORT"), std::string::npos) << out;
  out = sh(binary() + " serve --config " + (dir_ / "missing.toml").string() + " 2>&1", &st);
  EXPECT_NE(st, 0);
  EXPECT_NE(out.find("missing.toml"), std::string::npos) << out;
}

// SIGTERM while connections are open (idle keep-alive, half-sent request, a response being
// read) and while requests keep arriving: a clean exit 0, every time.
TEST_F(serve_test, sigterm_with_open_connections_exits_cleanly) {
  for (int round = 0; round < 3; ++round) {
    s_ = start(
        {"serve", "--listen", "127.0.0.1:0", "--data", (dir_ / "data").string(), "--shards", "2"},
        dir_);
    ASSERT_GT(s_.port, 0) << s_.first_line;
    auto dial = [&] {
      int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      sockaddr_in a{};
      a.sin_family = AF_INET;
      a.sin_port = htons(uint16_t(s_.port));
      a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
      timeval tv{10, 0};
      setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
      return fd;
    };
    std::vector<int> fds;
    for (int i = 0; i < 8; ++i) {
      int fd = dial();
      const std::string req = "GET /static/feed.xml HTTP/1.1\r\nHost: t\r\n\r\n";
      if (i % 2 == 0) {
        send(fd, req.data(), req.size(), MSG_NOSIGNAL);  // response left unread
      } else {
        send(fd, req.data(), 10, MSG_NOSIGNAL);  // half a request
      }
      fds.push_back(fd);
    }
    // Keep curl busy against it while the signal lands.
    std::string busy = "for i in $(seq 20); do curl -s -o /dev/null " + url("/static/feed.xml") +
                       "; done >/dev/null 2>&1 &";
    sh(busy);
    EXPECT_EQ(sh("curl -s " + url("/healthz")), "ok\n");
    EXPECT_EQ(stop(s_), 0) << "round " << round;
    for (int fd : fds) close(fd);
  }
}
