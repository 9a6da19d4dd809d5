// SPDX-License-Identifier: Apache-2.0
// Several processes on one SQLite file, and processes killed with SIGKILL.
//
// The test program re-executes itself (/proc/self/exe) with --sqlite-child
// ROLE ... to get genuinely separate processes: their own SQLite library
// state, their own file locks, nothing inherited but the file name. So this
// program has its own main().
#include "temp_dir.hpp"

#include <babelqueue/sqlite/transport.hpp>

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace bq = babelqueue;
namespace sqlite = bq::sqlite;
using bq::test_support::TempDir;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

namespace {

// --- the child side -------------------------------------------------------

std::unique_ptr<sqlite::Transport> open_or_die(const std::string& path, std::chrono::milliseconds visibility) {
  sqlite::Transport::Options options;
  options.path = path;
  options.visibility_timeout = visibility;
  options.poll_interval = 20ms;
  auto transport = sqlite::Transport::open(options);
  if (!transport) {
    std::cerr << "child: " << transport.error().message() << "\n";
    std::exit(2);
  }
  return std::move(*transport);
}

// produce-consume PATH QUEUE TAG COUNT OUT: publishes COUNT messages, taking
// what is ready after every other publish, then consumes until the queue
// stays empty for two seconds; acks everything and writes each body it
// received to OUT. Run twice at once, the two processes' writes interleave.
int child_produce_consume(const std::vector<std::string>& args) {
  auto transport = open_or_die(args.at(0), 30s);
  const std::string& queue = args.at(1);
  const int count = std::stoi(args.at(3));
  std::ofstream out(args.at(4));
  auto take = [&](std::chrono::milliseconds wait) -> int {  // messages taken, or -1 on error
    auto batch = transport->receive(queue, 4, wait);
    if (!batch) {
      std::cerr << "child receive: " << batch.error().message() << "\n";
      return -1;
    }
    for (const bq::Delivery& delivery : *batch) {
      if (auto acked = transport->ack(delivery); !acked) {
        std::cerr << "child ack: " << acked.error().message() << "\n";
        return -1;
      }
      out << delivery.body << "\n";
    }
    return static_cast<int>(batch->size());
  };
  for (int i = 0; i < count; ++i) {
    if (auto published = transport->publish(queue, args.at(2) + "-" + std::to_string(i)); !published) {
      std::cerr << "child publish: " << published.error().message() << "\n";
      return 3;
    }
    if (i % 2 == 1 && take(0ms) < 0) return 4;
  }
  auto idle_since = Clock::now();
  while (Clock::now() - idle_since < 2s) {
    const int taken = take(100ms);
    if (taken < 0) return 4;
    if (taken > 0) idle_since = Clock::now();
  }
  return out.good() ? 0 : 6;
}

// hold PATH QUEUE COUNT: reserves COUNT messages with a 1 s visibility
// timeout, says "held" on stdout, and waits to be killed.
int child_hold(const std::vector<std::string>& args) {
  auto transport = open_or_die(args.at(0), 1s);
  const std::size_t count = std::stoul(args.at(2));
  std::vector<bq::Delivery> held;
  while (held.size() < count) {
    auto batch = transport->receive(args.at(1), count - held.size(), 5s);
    if (!batch || batch->empty()) return 3;
    for (auto& delivery : *batch) held.push_back(std::move(delivery));
  }
  std::cout << "held" << std::endl;
  for (;;) ::pause();
}

// drain PATH QUEUE COUNT OUT: receives and acks COUNT messages (10 s at
// most), writing "BODY ATTEMPTS" lines to OUT.
int child_drain(const std::vector<std::string>& args) {
  auto transport = open_or_die(args.at(0), 30s);
  const std::size_t count = std::stoul(args.at(2));
  std::ofstream out(args.at(3));
  std::size_t received = 0;
  const auto deadline = Clock::now() + 10s;
  while (received < count && Clock::now() < deadline) {
    auto batch = transport->receive(args.at(1), count - received, 500ms);
    if (!batch) return 3;
    for (const bq::Delivery& delivery : *batch) {
      if (!transport->ack(delivery)) return 4;
      out << delivery.body << " " << delivery.native_attempts.value_or(-1) << "\n";
      ++received;
    }
  }
  return received == count ? 0 : 5;
}

// publish-forever PATH QUEUE: publishes 0, 1, 2, ... and prints each number
// once its publish has returned successfully.
int child_publish_forever(const std::vector<std::string>& args) {
  auto transport = open_or_die(args.at(0), 30s);
  for (long n = 0;; ++n) {
    if (!transport->publish(args.at(1), std::to_string(n))) return 3;
    std::cout << n << std::endl;
  }
}

int run_child(const std::string& role, const std::vector<std::string>& args) {
  if (role == "produce-consume") return child_produce_consume(args);
  if (role == "hold") return child_hold(args);
  if (role == "drain") return child_drain(args);
  if (role == "publish-forever") return child_publish_forever(args);
  std::cerr << "unknown child role " << role << "\n";
  return 100;
}

// --- the parent side ------------------------------------------------------

// A child process running this program with --sqlite-child. Killed (and
// reaped) when the object goes away, so a failing test leaves no orphans.
class Child {
 public:
  explicit Child(const std::vector<std::string>& args) {
    std::vector<std::string> all{"/proc/self/exe", "--sqlite-child"};
    all.insert(all.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (std::string& arg : all) argv.push_back(arg.data());
    argv.push_back(nullptr);
    int fds[2];
    if (::pipe(fds) != 0) throw std::runtime_error("pipe failed");
    pid_ = ::fork();
    if (pid_ < 0) throw std::runtime_error("fork failed");
    if (pid_ == 0) {
      // Only async-signal-safe calls between fork and exec.
      ::dup2(fds[1], STDOUT_FILENO);
      ::close(fds[0]);
      ::close(fds[1]);
      ::execv("/proc/self/exe", argv.data());
      ::_exit(127);
    }
    ::close(fds[1]);
    stdout_ = fds[0];
  }
  ~Child() {
    if (pid_ > 0) {
      kill_now();
    }
    if (stdout_ >= 0) ::close(stdout_);
  }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  // The next line the child printed, or nullopt at end of file or after timeout.
  std::optional<std::string> read_line(std::chrono::milliseconds timeout) {
    const auto deadline = Clock::now() + timeout;
    for (;;) {
      if (const auto newline = buffer_.find('\n'); newline != std::string::npos) {
        std::string line = buffer_.substr(0, newline);
        buffer_.erase(0, newline + 1);
        return line;
      }
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      if (left.count() <= 0) return std::nullopt;
      pollfd fd{stdout_, POLLIN, 0};
      const int ready = ::poll(&fd, 1, static_cast<int>(left.count()));
      if (ready < 0 && errno == EINTR) continue;
      if (ready <= 0) return std::nullopt;
      char chunk[4096];
      const ssize_t n = ::read(stdout_, chunk, sizeof chunk);
      if (n <= 0) return std::nullopt;
      buffer_.append(chunk, static_cast<std::size_t>(n));
    }
  }

  void kill_now() {
    ::kill(pid_, SIGKILL);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
  }

  // The exit code, or -1 when the child did not exit in time (it is killed).
  int wait_for_exit(std::chrono::milliseconds timeout) {
    const auto deadline = Clock::now() + timeout;
    while (Clock::now() < deadline) {
      int status = 0;
      const pid_t done = ::waitpid(pid_, &status, WNOHANG);
      if (done == pid_) {
        pid_ = -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      std::this_thread::sleep_for(20ms);
    }
    kill_now();
    return -1;
  }

 private:
  pid_t pid_ = -1;
  int stdout_ = -1;
  std::string buffer_;
};

std::vector<std::string> lines_of(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::string integrity_of(const std::string& path) {
  sqlite3* raw = nullptr;
  if (sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READWRITE, nullptr) != SQLITE_OK) {
    sqlite3_close(raw);
    return "cannot open";
  }
  std::unique_ptr<sqlite3, decltype(&sqlite3_close)> db(raw, &sqlite3_close);
  sqlite3_stmt* statement = nullptr;
  if (sqlite3_prepare_v2(db.get(), "PRAGMA integrity_check", -1, &statement, nullptr) != SQLITE_OK) {
    return sqlite3_errmsg(db.get());
  }
  std::unique_ptr<sqlite3_stmt, decltype(&sqlite3_finalize)> owned(statement, &sqlite3_finalize);
  if (sqlite3_step(statement) != SQLITE_ROW) return sqlite3_errmsg(db.get());
  return reinterpret_cast<const char*>(sqlite3_column_text(statement, 0));
}

std::unique_ptr<sqlite::Transport> open_parent(const std::string& path) {
  sqlite::Transport::Options options;
  options.path = path;
  auto transport = sqlite::Transport::open(options);
  EXPECT_TRUE(transport) << transport.error().message();
  return transport ? std::move(*transport) : nullptr;
}

}  // namespace

TEST(SqliteProcesses, TwoProcessesPublishAndConsumeOneFile) {
  TempDir dir("bq-sqlite-procs");
  const std::string path = dir.file("shared.db");
  constexpr int kCount = 300;
  Child a({"produce-consume", path, "jobs", "a", std::to_string(kCount), dir.file("a.out")});
  Child b({"produce-consume", path, "jobs", "b", std::to_string(kCount), dir.file("b.out")});
  ASSERT_EQ(a.wait_for_exit(30s), 0);
  ASSERT_EQ(b.wait_for_exit(30s), 0);

  std::map<std::string, int> seen;
  std::size_t by_a = 0;
  for (const char* out : {"a.out", "b.out"}) {
    for (const std::string& body : lines_of(dir.file(out))) {
      ++seen[body];
      if (std::string(out) == "a.out") ++by_a;
    }
  }
  EXPECT_EQ(seen.size(), 2U * kCount);
  for (const char* tag : {"a", "b"}) {
    for (int i = 0; i < kCount; ++i) {
      const std::string body = std::string(tag) + "-" + std::to_string(i);
      EXPECT_EQ(seen[body], 1) << body << " received " << seen[body] << " times";
    }
  }
  std::cout << "[          ] process a consumed " << by_a << " of " << 2 * kCount << "\n";
  auto transport = open_parent(path);
  const bq::QueueStats stats = transport->stats("jobs").value();
  EXPECT_EQ(stats.ready + stats.reserved + stats.delayed, 0);
  EXPECT_EQ(integrity_of(path), "ok");
}

TEST(SqliteProcesses, ReservationsOfAKilledConsumerComeBackToAnother) {
  TempDir dir("bq-sqlite-kill");
  const std::string path = dir.file("queue.db");
  constexpr int kCount = 5;
  {
    auto transport = open_parent(path);
    for (int i = 0; i < kCount; ++i) ASSERT_TRUE(transport->publish("jobs", "m" + std::to_string(i)));
  }
  Child holder({"hold", path, "jobs", std::to_string(kCount)});
  ASSERT_EQ(holder.read_line(20s), "held");
  {
    auto transport = open_parent(path);
    EXPECT_EQ(transport->stats("jobs").value().reserved, kCount);
  }
  holder.kill_now();  // SIGKILL while holding every message

  const auto killed_at = Clock::now();
  Child drainer({"drain", path, "jobs", std::to_string(kCount), dir.file("drained.out")});
  ASSERT_EQ(drainer.wait_for_exit(30s), 0);
  const auto lines = lines_of(dir.file("drained.out"));
  ASSERT_EQ(lines.size(), static_cast<std::size_t>(kCount));
  std::set<std::string> bodies;
  for (const std::string& line : lines) {
    const auto space = line.find(' ');
    bodies.insert(line.substr(0, space));
    EXPECT_EQ(line.substr(space + 1), "1") << "a crash-redelivered message counts one earlier delivery";
  }
  EXPECT_EQ(bodies, (std::set<std::string>{"m0", "m1", "m2", "m3", "m4"}));
  EXPECT_LE(Clock::now() - killed_at, 10s);
  EXPECT_EQ(integrity_of(path), "ok");
  auto transport = open_parent(path);
  const bq::QueueStats stats = transport->stats("jobs").value();
  EXPECT_EQ(stats.ready + stats.reserved + stats.delayed, 0);
}

TEST(SqliteProcesses, AKilledProducerLosesNothingItConfirmed) {
  TempDir dir("bq-sqlite-kill-producer");
  const std::string path = dir.file("queue.db");
  std::set<std::string> confirmed;
  {
    Child producer({"publish-forever", path, "jobs"});
    while (confirmed.size() < 300) {
      auto line = producer.read_line(20s);
      ASSERT_TRUE(line) << "the producer stopped after " << confirmed.size();
      confirmed.insert(*line);
    }
    producer.kill_now();
    // What it printed before dying was confirmed too.
    while (auto line = producer.read_line(100ms)) confirmed.insert(*line);
  }
  EXPECT_EQ(integrity_of(path), "ok");
  auto transport = open_parent(path);
  std::set<std::string> stored;
  for (;;) {
    auto batch = transport->receive("jobs", 500, 0ms).value();
    if (batch.empty()) break;
    for (const bq::Delivery& delivery : batch) {
      stored.insert(delivery.body);
      ASSERT_TRUE(transport->ack(delivery));
    }
  }
  for (const std::string& body : confirmed) EXPECT_TRUE(stored.contains(body)) << "lost " << body;
  EXPECT_GE(stored.size(), confirmed.size());
}

int main(int argc, char** argv) {
  if (argc >= 3 && std::strcmp(argv[1], "--sqlite-child") == 0) {
    return run_child(argv[2], std::vector<std::string>(argv + 3, argv + argc));
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
