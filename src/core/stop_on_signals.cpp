// SPDX-License-Identifier: Apache-2.0
#include <babelqueue/error.hpp>
#include <babelqueue/stop_on_signals.hpp>
#include <babelqueue/worker.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <string>
#include <thread>
#include <utility>

namespace babelqueue {

namespace {

// The pipe's write end, read by the handler: a lock-free atomic is one of
// the few things a signal handler may touch.
std::atomic<int> signal_pipe{-1};
static_assert(std::atomic<int>::is_always_lock_free);

// A byte the handlers never write (signal numbers start at 1): the
// destructor's "stop reading".
constexpr unsigned char kQuit = 0;

extern "C" void write_signal_to_pipe(int number) {
  const int saved_errno = errno;  // write() may change it under the interrupted code
  const int fd = signal_pipe.load();
  if (fd >= 0) {
    const auto byte = static_cast<unsigned char>(number);
    [[maybe_unused]] const ssize_t written = ::write(fd, &byte, 1);  // full pipe: a stop is pending anyway
  }
  errno = saved_errno;
}

}  // namespace

class StopOnSignals::Impl {
 public:
  Impl(std::function<void(int)> on_signal, std::vector<int> signals)
      : on_signal_(std::move(on_signal)), signals_(std::move(signals)) {
    if (!on_signal_) throw Error(Errc::invalid_argument, "StopOnSignals needs a function to call");
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) {
      throw Error(Errc::io, std::string("StopOnSignals cannot create its pipe: ") + std::strerror(errno));
    }
    read_fd_ = fds[0];
    write_fd_ = fds[1];
    // The handler must never block: a full pipe drops the byte instead.
    ::fcntl(write_fd_, F_SETFL, ::fcntl(write_fd_, F_GETFL) | O_NONBLOCK);
    int expected = -1;
    if (!signal_pipe.compare_exchange_strong(expected, write_fd_)) {
      close_fds();
      throw Error(Errc::invalid_argument, "another StopOnSignals is alive: one at a time per process");
    }
    thread_ = std::thread([this] { read_loop(); });
    struct sigaction action {};
    action.sa_handler = write_signal_to_pipe;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;  // other threads' system calls go on undisturbed
    for (const int number : signals_) {
      struct sigaction previous {};
      if (::sigaction(number, &action, &previous) != 0) {
        const std::string why = std::strerror(errno);
        restore_and_stop();
        throw Error(Errc::invalid_argument,
                    "StopOnSignals cannot handle signal " + std::to_string(number) + ": " + why);
      }
      previous_.emplace_back(number, previous);
    }
  }

  ~Impl() { restore_and_stop(); }

  int received() const noexcept { return received_.load(); }

 private:
  void read_loop() {
    for (;;) {
      unsigned char byte = kQuit;
      const ssize_t n = ::read(read_fd_, &byte, 1);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0 || byte == kQuit) return;
      int none = 0;
      received_.compare_exchange_strong(none, byte);
      on_signal_(byte);
    }
  }

  void restore_and_stop() {
    for (auto it = previous_.rbegin(); it != previous_.rend(); ++it) ::sigaction(it->first, &it->second, nullptr);
    previous_.clear();
    signal_pipe.store(-1);
    if (thread_.joinable()) {
      const unsigned char quit = kQuit;
      // Non-blocking: on a full pipe (signals nobody read) retry until there is room.
      while (::write(write_fd_, &quit, 1) != 1) std::this_thread::yield();
      thread_.join();
    }
    close_fds();
  }

  void close_fds() {
    if (read_fd_ >= 0) ::close(read_fd_);
    if (write_fd_ >= 0) ::close(write_fd_);
    read_fd_ = write_fd_ = -1;
  }

  std::function<void(int)> on_signal_;
  std::vector<int> signals_;
  std::vector<std::pair<int, struct sigaction>> previous_;
  int read_fd_ = -1;
  int write_fd_ = -1;
  std::atomic<int> received_{0};
  std::thread thread_;
};

StopOnSignals::StopOnSignals(Worker& worker, std::vector<int> signals)
    : StopOnSignals([&worker](int) { worker.stop(); }, std::move(signals)) {}

StopOnSignals::StopOnSignals(std::function<void(int)> on_signal, std::vector<int> signals)
    : impl_(std::make_unique<Impl>(std::move(on_signal), std::move(signals))) {}

StopOnSignals::~StopOnSignals() = default;

int StopOnSignals::received() const noexcept { return impl_->received(); }

}  // namespace babelqueue
