// SPDX-License-Identifier: Apache-2.0
#include "child_process.hpp"

#include "support.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
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
#include <utility>

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
  int release() noexcept { return std::exchange(fd_, -1); }
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

// The program's path as run_child runs it: argv[0] itself when it holds a
// '/', else the first executable file of that name in PATH.
std::optional<std::string> resolve_program(const std::string& program) {
  const auto runnable = [](const std::string& path) {
    struct stat info {};
    return stat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode) && access(path.c_str(), X_OK) == 0;
  };
  if (program.empty()) return std::nullopt;
  if (program.find('/') != std::string::npos) return runnable(program) ? std::optional(program) : std::nullopt;
  const char* path_env = std::getenv("PATH");
  const std::string path = path_env != nullptr ? path_env : "/usr/local/bin:/usr/bin:/bin";
  std::size_t start = 0;
  for (;;) {
    const std::size_t end = path.find(':', start);
    std::string dir = path.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (dir.empty()) dir = ".";
    std::string candidate = dir + "/" + program;
    if (runnable(candidate)) return candidate;
    if (end == std::string::npos) return std::nullopt;
    start = end + 1;
  }
}

// What the supervisor and the command write on the report pipe: the
// command's exec failure (its errno) or its wait status, so the worker learns
// the command's own outcome even though it waits for the supervisor.
struct Report {
  char kind;  // 'E': exec failed (value = errno); 'S': the command ended (value = wait status)
  int value;
};

// The fds the supervisor keeps, at these numbers.
constexpr int kReportFd = 3;

// Everything below runs in the forked supervisor (and the command before its
// exec): a copy of a multi-threaded process, so only async-signal-safe calls,
// no allocation, no locks.
[[noreturn]] void exec_command(const char* path, char* const* argv, char* const* envp) {
  sigset_t none;
  sigemptyset(&none);
  struct sigaction defaults {};
  defaults.sa_handler = SIG_DFL;
  sigemptyset(&defaults.sa_mask);
  for (int s : {SIGPIPE, SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGCHLD}) sigaction(s, &defaults, nullptr);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  execve(path, argv, envp);
  const Report failed{'E', errno};
  (void)!::write(kReportFd, &failed, sizeof failed);
  _exit(127);
}

// Closes every fd from first up.
void close_from(int first, int max_fd) {
  if (close_range(static_cast<unsigned>(first), ~0U, 0) == 0) return;
  for (int fd = first; fd < max_fd; ++fd) ::close(fd);
}

// The supervisor: leader of the command's process group, child of the
// worker thread that runs the command. It dies with the worker
// (PR_SET_PDEATHSIG), and then kills the whole group; when the command ends,
// it reports its status and kills what the command left running in the
// group (with itself). Signals sent to the group by the worker (a stop) reach
// the command; the supervisor itself only watches.
[[noreturn]] void supervise(pid_t worker, int stdin_fd, int stderr_fd, int report_fd, int max_fd, const char* path,
                            char* const* argv, char* const* envp) {
  setpgid(0, 0);
  // Out of the way of 0..3 first, then into place.
  const int in = fcntl(stdin_fd, F_DUPFD, 10);
  const int err = fcntl(stderr_fd, F_DUPFD, 10);
  const int report = fcntl(report_fd, F_DUPFD, 10);
  if (in < 0 || err < 0 || report < 0 || dup2(in, STDIN_FILENO) < 0 || dup2(err, STDERR_FILENO) < 0 ||
      dup3(report, kReportFd, O_CLOEXEC) < 0) {
    _exit(127);
  }
  // Nothing of the worker's stays open here (its sockets, files, other
  // commands' pipes): an open copy would keep another command's input
  // from ending.
  close_from(kReportFd + 1, max_fd);

  sigset_t watched;
  sigemptyset(&watched);
  for (int s : {SIGCHLD, SIGTERM, SIGINT, SIGHUP, SIGQUIT}) sigaddset(&watched, s);
  sigprocmask(SIG_BLOCK, &watched, nullptr);
  struct sigaction defaults {};
  defaults.sa_handler = SIG_DFL;
  sigemptyset(&defaults.sa_mask);
  sigaction(SIGCHLD, &defaults, nullptr);  // an ignored SIGCHLD would discard the command's status
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (getppid() != worker) _exit(126);  // the worker died before the line above

  const pid_t command = fork();
  if (command < 0) {
    const Report failed{'E', errno};
    (void)!::write(kReportFd, &failed, sizeof failed);
    _exit(127);
  }
  if (command == 0) exec_command(path, argv, envp);
  ::close(STDIN_FILENO);
  ::close(STDERR_FILENO);

  for (;;) {
    siginfo_t info{};
    const int signal = sigwaitinfo(&watched, &info);
    if (signal == SIGCHLD) {
      int status = 0;
      const pid_t done = waitpid(command, &status, WNOHANG);
      if (done != command) continue;
      const Report ended{'S', status};
      (void)!::write(kReportFd, &ended, sizeof ended);
      ::close(kReportFd);
      kill(0, SIGKILL);  // what the command left running, and this process
      _exit(0);
    }
    if (signal > 0 && getppid() != worker) {
      // The worker is gone (its death signal, or a hang-up): nothing may
      // outlive it.
      kill(0, SIGKILL);
      _exit(1);
    }
    // Otherwise a signal the worker (or a terminal) sent to the group: the
    // command has it too; the supervisor waits for the command's end.
  }
}

struct Spawned {
  pid_t supervisor;
  int report_fd;  // read end: the supervisor's Report, then end of file
};

Result<Spawned> spawn(const ChildSpec& spec, int stdin_fd, int stderr_fd) {
  const std::optional<std::string> path = resolve_program(spec.argv.front());
  if (!path) {
    return unexpected(Errc::io, "cannot run '" + spec.argv.front() + "': " + errno_text(ENOENT));
  }
  int report_fds[2];
  if (pipe2(report_fds, O_CLOEXEC) != 0) return unexpected(Errc::io, "pipe: " + errno_text(errno));
  Fd report_read(report_fds[0]);
  Fd report_write(report_fds[1]);
  std::vector<char*> argv = c_strings(spec.argv);
  std::vector<char*> envp = c_strings(spec.environment);
  rlimit files{};
  const int max_fd = getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur != RLIM_INFINITY
                         ? static_cast<int>(std::min<rlim_t>(files.rlim_cur, 1 << 20))
                         : 1 << 16;
  const pid_t worker = getpid();
  pid_t pid = -1;
  {
    std::lock_guard lock(children_mutex);
    pid = fork();
    if (pid == 0) {
      supervise(worker, stdin_fd, stderr_fd, report_write.get(), max_fd, path->c_str(), argv.data(), envp.data());
    }
    if (pid > 0) {
      setpgid(pid, pid);  // as the supervisor does: whichever runs first, signals find the group
      children.insert(pid);
    }
  }
  if (pid < 0) return unexpected(Errc::io, "cannot run '" + spec.argv.front() + "': fork: " + errno_text(errno));
  report_write.close();
  return Spawned{pid, report_read.release()};
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

  auto spawned = spawn(spec, in_read.get(), err_write.get());
  in_read.close();
  err_write.close();
  if (!spawned) return unexpected(spawned.error());
  const pid_t supervisor = spawned->supervisor;
  Fd report(spawned->report_fd);
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
    if (has_exited(supervisor)) {
      // A background grandchild may hold the pipes open: take what the
      // command wrote and stop there.
      if (err_read.open()) read_available(err_read.get(), sink);
      break;
    }
  }
  in_write.close();
  err_read.close();
  sink.finish();
  std::optional<int> status = reap(supervisor);
  // Only when SIGCHLD is ignored (run_work resets it): never call that a success.
  if (!status) return unexpected(Errc::io, "cannot learn the exit status of '" + spec.argv.front() + "'");
  // The supervisor has exited, so every write end of the report pipe is
  // closed: this read ends. The command's own status, when the supervisor
  // lived to report it; else the supervisor's (killed by the worker's SIGKILL).
  for (;;) {
    Report record{};
    const ssize_t n = ::read(report.get(), &record, sizeof record);
    if (n < 0 && errno == EINTR) continue;
    if (n != static_cast<ssize_t>(sizeof record)) break;
    if (record.kind == 'E') {
      return unexpected(Errc::io, "cannot run '" + spec.argv.front() + "': " + errno_text(record.value));
    }
    if (record.kind == 'S') status = record.value;
  }

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

bool executable_exists(const std::string& program) { return resolve_program(program).has_value(); }

}  // namespace babelqueue::cli
