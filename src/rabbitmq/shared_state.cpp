// SPDX-License-Identifier: Apache-2.0
#include "shared_state.hpp"

#include <sys/eventfd.h>
#include <unistd.h>

namespace babelqueue::rabbitmq::detail {

WakeFd::WakeFd() : fd_(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {}

void WakeFd::signal() const {
  const std::uint64_t one = 1;
  [[maybe_unused]] const auto written = ::write(fd_, &one, sizeof one);
}

void WakeFd::drain() const {
  std::uint64_t value = 0;
  [[maybe_unused]] const auto read = ::read(fd_, &value, sizeof value);
}

void WakeFd::close() {
  if (fd_ >= 0) {
    ::close(fd_);
    fd_ = -1;
  }
}

}  // namespace babelqueue::rabbitmq::detail
