// SPDX-License-Identifier: Apache-2.0
#include <babelqueue/detail/plain_port_probe.hpp>

#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <memory>

namespace babelqueue::detail {
namespace {

using Clock = std::chrono::steady_clock;

// Waits for events on fd until deadline; true when they came.
bool wait_for(int fd, short events, Clock::time_point deadline) {
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return false;
    pollfd entry{fd, events, 0};
    const int ready = ::poll(&entry, 1, static_cast<int>(left.count()));
    if (ready > 0) return true;
    if (ready < 0 && errno != EINTR) return false;
  }
}

// A non-blocking socket connected to address within deadline, else -1.
int connect_to(const addrinfo& address, Clock::time_point deadline) {
  const int fd = ::socket(address.ai_family, address.ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, address.ai_protocol);
  if (fd < 0) return -1;
  if (::connect(fd, address.ai_addr, address.ai_addrlen) == 0) return fd;
  int error = 0;
  socklen_t size = sizeof error;
  if (errno == EINPROGRESS && wait_for(fd, POLLOUT, deadline) &&
      ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &size) == 0 && error == 0) {
    return fd;
  }
  ::close(fd);
  return -1;
}

}  // namespace

bool answers_in_plain_text(const std::string& host, std::uint16_t port, std::string_view request,
                           std::chrono::milliseconds timeout) noexcept {
  const auto deadline = Clock::now() + timeout;
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found) != 0 || found == nullptr) return false;
  const std::unique_ptr<addrinfo, void (*)(addrinfo*)> addresses(found, ::freeaddrinfo);
  int fd = -1;
  for (const addrinfo* address = found; address != nullptr && fd < 0; address = address->ai_next) {
    fd = connect_to(*address, deadline);
  }
  if (fd < 0) return false;
  bool plain = false;
  std::size_t sent = 0;
  while (sent < request.size() && wait_for(fd, POLLOUT, deadline)) {
    const ssize_t n = ::send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n > 0) {
      sent += static_cast<std::size_t>(n);
    } else if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
      break;
    }
  }
  while (sent == request.size() && wait_for(fd, POLLIN, deadline)) {
    unsigned char first = 0;
    const ssize_t n = ::recv(fd, &first, 1, 0);
    if (n == 1) {
      // TLS records start with their content type: change_cipher_spec (20),
      // alert (21), handshake (22) or application_data (23).
      plain = first < 20 || first > 23;
      break;
    }
    if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) break;
  }
  ::close(fd);
  return plain;
}

}  // namespace babelqueue::detail
