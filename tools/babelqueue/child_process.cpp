// SPDX-License-Identifier: Apache-2.0
#include "child_process.hpp"

#include "support.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>
#include <set>

namespace babelqueue::cli {

namespace {

// The commands running now. A pid stays here until its zombie is reaped, so
// signal_running_children() can never hit a recycled pid.
std::mutex children_mutex;
std::set<pid_t> children;

constexpr std::size_t kTailKeep = 4096;
constexpr std::size_t kLongestLine = 64 * 1024;

std::string errno_text(int error) { return std::strerror(error); }

// Owns a file descriptor.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() { close(); }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const noexcept { return fd_; }
  bool open() const noexcept { return fd_ >= 0; }
  void close() noexcept {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
};

void set_nonblocking(int fd) {
  const int flags = fcntl(fd, F_GETFL);
  if (flags >= 0) fcntl(fd, F_SETFL, flags | O_NONBLOCK);
}

// The command's standard error: forwarded whole lines, and the last bytes kept.
class StderrSink {
 public:
  void add(std::string_view chunk) {
    tail_.append(chunk);
    if (tail_.size() > 2 * kTailKeep) tail_.erase(0, tail_.size() - kTailKeep);
    pending_.append(chunk);
    const std::size_t end = pending_.rfind('\n');
    if (end != std::string::npos) {
      Console::instance().raw_lines(std::string_view(pending_).substr(0, end + 1));
      pending_.erase(0, end + 1);
    } else if (pending_.size() > kLongestLine) {
      finish();
    }
  }
  void finish() {
    if (pending_.empty()) return;
    pending_ += '\n';
    Console::instance().raw_lines(pending_);
    pending_.clear();
  }
  std::string tail() const { return tail_.size() > kTailKeep ? tail_.substr(tail_.size() - kTailKeep) : tail_; }

 private:
  std::string pending_;
  std::string tail_;
};

// Reads what is available now; false at end of file or on an error.
bool read_available(int fd, StderrSink& sink) {
  char buffer[8192];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n > 0) {
      sink.add(std::string_view(buffer, static_cast<std::size_t>(n)));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
  }
}

bool has_exited(pid_t pid) {
  siginfo_t info{};
  // WNOWAIT: look without reaping; the pid is reaped under children_mutex.
  if (waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) != 0) return errno == ECHILD;
  return info.si_pid == pid;
}

// The command's wait status; empty when it cannot be known.
std::optional<int> reap(pid_t pid) {
  siginfo_t info{};
  while (waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOWAIT) != 0 && errno == EINTR) {
  }
  int status = 0;
  std::lock_guard lock(children_mutex);
  children.erase(pid);
  pid_t reaped = -1;
  do {
    reaped = waitpid(pid, &status, 0);
  } while (reaped < 0 && errno == EINTR);
  if (reaped != pid) return std::nullopt;
  return status;
}

std::vector<char*> c_strings(const std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (const std::string& s : strings) out.push_back(const_cast<char*>(s.c_str()));  // NOLINT: the exec ABI
  out.push_back(nullptr);
  return out;
}

Result<pid_t> spawn(const ChildSpec& spec, int stdin_fd, int stderr_fd) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, stdin_fd, STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&actions, stderr_fd, STDERR_FILENO);

  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  sigset_t empty;
  sigemptyset(&empty);
  posix_spawnattr_setsigmask(&attributes, &empty);
  sigset_t defaults;
  sigemptyset(&defaults);
  for (int s : {SIGPIPE, SIGINT, SIGTERM, SIGHUP, SIGQUIT}) sigaddset(&defaults, s);
  posix_spawnattr_setsigdefault(&attributes, &defaults);
  posix_spawnattr_setpgroup(&attributes, 0);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP);

  std::vector<char*> argv = c_strings(spec.argv);
  std::vector<char*> envp = c_strings(spec.environment);
  pid_t pid = -1;
  int error = 0;
  {
    std::lock_guard lock(children_mutex);
    error = posix_spawnp(&pid, argv[0], &actions, &attributes, argv.data(), envp.data());
    if (error == 0) children.insert(pid);
  }
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  if (error != 0) return unexpected(Errc::io, "cannot run '" + spec.argv.front() + "': " + errno_text(error));
  return pid;
}

}  // namespace

Result<ChildOutcome> run_child(const ChildSpec& spec) {
  if (spec.argv.empty()) return unexpected(Errc::invalid_argument, "no command to run");
  int in_fds[2];
  int err_fds[2];
  if (pipe2(in_fds, O_CLOEXEC) != 0) return unexpected(Errc::io, "pipe: " + errno_text(errno));
  Fd in_read(in_fds[0]);
  Fd in_write(in_fds[1]);
  if (pipe2(err_fds, O_CLOEXEC) != 0) return unexpected(Errc::io, "pipe: " + errno_text(errno));
  Fd err_read(err_fds[0]);
  Fd err_write(err_fds[1]);

  auto pid = spawn(spec, in_read.get(), err_write.get());
  in_read.close();
  err_write.close();
  if (!pid) return unexpected(pid.error());
  set_nonblocking(in_write.get());
  set_nonblocking(err_read.get());

  StderrSink sink;
  std::size_t written = 0;
  if (spec.input.empty()) in_write.close();
  while (in_write.open() || err_read.open()) {
    pollfd fds[2];
    nfds_t count = 0;
    const int in_index = in_write.open() ? static_cast<int>(count++) : -1;
    if (in_index >= 0) fds[in_index] = pollfd{in_write.get(), POLLOUT, 0};
    const int err_index = err_read.open() ? static_cast<int>(count++) : -1;
    if (err_index >= 0) fds[err_index] = pollfd{err_read.get(), POLLIN, 0};
    const int ready = poll(fds, count, 100);
    if (ready < 0 && errno != EINTR) break;
    if (ready > 0 && in_index >= 0 && fds[in_index].revents != 0) {
      const std::string_view rest = spec.input.substr(written);
      const ssize_t n = ::write(in_write.get(), rest.data(), std::min<std::size_t>(rest.size(), 65536));
      if (n > 0) written += static_cast<std::size_t>(n);
      // Done, or the command closed its standard input (EPIPE): it had what it wanted.
      if (written == spec.input.size() || (n < 0 && errno != EAGAIN && errno != EINTR)) in_write.close();
    }
    if (ready > 0 && err_index >= 0 && fds[err_index].revents != 0) {
      if (!read_available(err_read.get(), sink)) err_read.close();
    }
    if (has_exited(*pid)) {
      // A background grandchild may hold the pipes open: take what the
      // command wrote and stop there.
      if (err_read.open()) read_available(err_read.get(), sink);
      break;
    }
  }
  in_write.close();
  err_read.close();
  sink.finish();
  const std::optional<int> status = reap(*pid);
  // Only when SIGCHLD is ignored (run_work resets it): never call that a success.
  if (!status) return unexpected(Errc::io, "cannot learn the exit status of '" + spec.argv.front() + "'");

  ChildOutcome outcome;
  outcome.exited = WIFEXITED(*status);
  if (outcome.exited) outcome.exit_status = WEXITSTATUS(*status);
  if (WIFSIGNALED(*status)) outcome.term_signal = WTERMSIG(*status);
  outcome.stderr_tail = sink.tail();
  return outcome;
}

void signal_running_children(int signal) {
  std::lock_guard lock(children_mutex);
  for (const pid_t pid : children) kill(-pid, signal);
}

bool executable_exists(const std::string& program) {
  const auto runnable = [](const std::string& path) {
    struct stat info {};
    return stat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode) && access(path.c_str(), X_OK) == 0;
  };
  if (program.empty()) return false;
  if (program.find('/') != std::string::npos) return runnable(program);
  const char* path_env = std::getenv("PATH");
  const std::string path = path_env != nullptr ? path_env : "/usr/local/bin:/usr/bin:/bin";
  std::size_t start = 0;
  for (;;) {
    const std::size_t end = path.find(':', start);
    std::string dir = path.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (dir.empty()) dir = ".";
    if (runnable(dir + "/" + program)) return true;
    if (end == std::string::npos) return false;
    start = end + 1;
  }
}

}  // namespace babelqueue::cli
