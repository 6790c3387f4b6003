// Test/bench helper: a real nginx (Debian nginx-light) on a free loopback port, with a
// config written into its own temp prefix, run in the foreground as a child and stopped
// by its pid. Nothing is sent anywhere but 127.0.0.1.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

extern char** environ;

namespace feedplane::test {

// A port that was free a moment ago (bind to 0, read it back, close).
inline uint16_t free_port() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  close(fd);
  return ntohs(a.sin_port);
}

inline bool port_open(uint16_t port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(port);
  bool ok = connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  close(fd);
  return ok;
}

class nginx_server {
 public:
  // `server_blocks` is inserted into the http {} block; "@DIR@" in it becomes the prefix
  // directory (which holds www/, logs and temp paths).
  nginx_server() {
    dir_ = std::filesystem::temp_directory_path() /
           ("feedplane_nginx_" + std::to_string(getpid()) + "_" + std::to_string(counter()++));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_ / "www");
    std::filesystem::create_directories(dir_ / "tmp");
  }
  ~nginx_server() {
    stop();
    std::filesystem::remove_all(dir_);
  }
  nginx_server(const nginx_server&) = delete;
  nginx_server& operator=(const nginx_server&) = delete;

  const std::filesystem::path& dir() const { return dir_; }

  // Starts nginx with the given server blocks and waits until `wait_port` accepts.
  // Returns an empty string or a message (with the end of the error log).
  // worker_connections: per worker (benchmarks with thousands of connections raise it).
  std::string start(std::string server_blocks, uint16_t wait_port, int workers = 1,
                    int worker_connections = 4096) {
    std::string d = dir_.string();
    for (size_t p; (p = server_blocks.find("@DIR@")) != std::string::npos;)
      server_blocks.replace(p, 5, d);
    std::ofstream(dir_ / "nginx.conf")
        << "worker_processes " << workers << ";\n"
        << "error_log " << d << "/error.log warn;\n"
        << "pid " << d << "/nginx.pid;\n"
        << "worker_rlimit_nofile " << worker_connections * 2 + 64 << ";\n"
        << "events { worker_connections " << worker_connections << "; }\n"
        << "http {\n"
        << "  access_log off;\n"
        << "  client_body_temp_path " << d << "/tmp/body;\n"
        << "  proxy_temp_path " << d << "/tmp/proxy;\n"
        << "  fastcgi_temp_path " << d << "/tmp/fastcgi;\n"
        << "  uwsgi_temp_path " << d << "/tmp/uwsgi;\n"
        << "  scgi_temp_path " << d << "/tmp/scgi;\n"
        << "  keepalive_requests 1000000;\n"
        << "  types { application/rss+xml xml; text/plain txt; application/octet-stream bin; }\n"
        << server_blocks << "\n}\n";
    std::string conf = (dir_ / "nginx.conf").string();
    const char* argv[] = {"nginx",      "-p", d.c_str(),     "-c",
                          conf.c_str(), "-g", "daemon off;", nullptr};
    if (posix_spawn(&pid_, "/usr/sbin/nginx", nullptr, nullptr, const_cast<char**>(argv),
                    environ) != 0) {
      pid_ = -1;
      return "cannot spawn /usr/sbin/nginx";
    }
    for (int i = 0; i < 500; ++i) {
      if (port_open(wait_port)) return {};
      int st;
      if (waitpid(pid_, &st, WNOHANG) == pid_) {
        pid_ = -1;
        return "nginx exited: " + tail_log();
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return "nginx did not listen on port " + std::to_string(wait_port) + ": " + tail_log();
  }

  void stop() {
    if (pid_ <= 0) return;
    kill(pid_, SIGTERM);
    int st;
    for (int i = 0; i < 300; ++i) {
      if (waitpid(pid_, &st, WNOHANG) == pid_) {
        pid_ = -1;
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    kill(pid_, SIGKILL);
    waitpid(pid_, &st, 0);
    pid_ = -1;
  }

  pid_t pid() const { return pid_; }

  std::string tail_log() const {
    std::ifstream f(dir_ / "error.log");
    std::string s((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    return s.size() > 2000 ? s.substr(s.size() - 2000) : s;
  }

 private:
  static int& counter() {
    static int c = 0;
    return c;
  }
  std::filesystem::path dir_;
  pid_t pid_ = -1;
};

}  // namespace feedplane::test
