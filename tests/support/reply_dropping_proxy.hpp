// SPDX-License-Identifier: Apache-2.0
// ReplyDroppingProxy: a TCP proxy on 127.0.0.1 in front of a real broker
// that can stop passing the broker's bytes back, as a network that loses the
// answer after the request arrived: the broker acts on the request, the
// client never hears of it. For the tests of "outcome unknown" errors.
//
//   ReplyDroppingProxy proxy(broker_port);   // connect the client to proxy.port()
//   ... a request that succeeds ...
//   proxy.drop_replies();                     // from now on the client hears nothing
//
// One client connection at a time; requests always reach the broker.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <stdexcept>
#include <thread>

namespace babelqueue::test_support {

class ReplyDroppingProxy {
 public:
  explicit ReplyDroppingProxy(int upstream_port) : upstream_port_(upstream_port) {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address = loopback(0);
    socklen_t length = sizeof(address);
    if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 ||
        ::listen(listen_fd_, 4) != 0 ||
        ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
      throw std::runtime_error("the proxy cannot listen");
    }
    port_ = ntohs(address.sin_port);
    thread_ = std::thread([this] { run(); });
  }
  ~ReplyDroppingProxy() {
    stop_ = true;
    thread_.join();
    ::close(listen_fd_);
  }
  ReplyDroppingProxy(const ReplyDroppingProxy&) = delete;
  ReplyDroppingProxy& operator=(const ReplyDroppingProxy&) = delete;

  int port() const { return port_; }
  void drop_replies() { drop_ = true; }

 private:
  static sockaddr_in loopback(int port) {
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<std::uint16_t>(port));
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return address;
  }

  void run() {
    while (!stop_) {
      pollfd waiting{listen_fd_, POLLIN, 0};
      if (::poll(&waiting, 1, 50) <= 0) continue;
      const int client = ::accept(listen_fd_, nullptr, nullptr);
      if (client < 0) continue;
      const int server = ::socket(AF_INET, SOCK_STREAM, 0);
      const sockaddr_in upstream = loopback(upstream_port_);
      if (::connect(server, reinterpret_cast<const sockaddr*>(&upstream), sizeof(upstream)) == 0) pump(client, server);
      ::close(server);
      ::close(client);
    }
  }

  // Copies bytes both ways until either side closes (or the proxy stops).
  void pump(int client, int server) {
    char buffer[65536];
    while (!stop_) {
      pollfd fds[2] = {{client, POLLIN, 0}, {server, POLLIN, 0}};
      if (::poll(fds, 2, 50) <= 0) continue;
      if (fds[0].revents != 0) {
        const ssize_t n = ::recv(client, buffer, sizeof(buffer), 0);
        if (n <= 0 || ::send(server, buffer, static_cast<std::size_t>(n), MSG_NOSIGNAL) != n) return;
      }
      if (fds[1].revents != 0) {
        const ssize_t n = ::recv(server, buffer, sizeof(buffer), 0);
        if (n <= 0) return;
        if (!drop_ && ::send(client, buffer, static_cast<std::size_t>(n), MSG_NOSIGNAL) != n) return;
      }
    }
  }

  int upstream_port_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<bool> drop_{false};
  std::thread thread_;
};

}  // namespace babelqueue::test_support
