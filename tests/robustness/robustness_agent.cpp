// SPDX-License-Identifier: Apache-2.0
// babelqueue_robustness_agent: the producer and consumer processes that
// tests/robustness/robustness.py starts, kills and accounts for.
//
//   produce URL QUEUE COUNT OUTFILE [--batch N] [--tag TAG] [--rate PER_SECOND]
//   consume URL QUEUE OUTFILE [--concurrency N] [--prefetch N] [--idle-exit SECONDS] [--work-ms N]
//   stats   URL QUEUE
//
// The accounting rests on one ordering rule per side:
//   - produce appends a message's meta.id to OUTFILE only after the publish
//     that carried it succeeded, so every recorded id was accepted by the
//     broker: if it is never consumed, the broker or the SDK lost it;
//   - consume appends meta.id to OUTFILE inside the handler, before the
//     handler returns and so before the ack: a consumer killed between the
//     write and the ack leaves a duplicate (the message is delivered again),
//     never a loss.
// Both write with one write() on an O_APPEND descriptor: a line is whole or
// absent even under SIGKILL (the data is in the kernel once write returns; a
// kill cannot lose it, only a power cut could), and several processes may
// append to one file.
//
// Transient broker errors (a broker restarted mid-run) are retried with
// backoff by both sides; the transport is reopened when it reports itself
// closed or the error is not retriable.
//
// Each process ends by printing one JSON line of counters on stdout.
#include "builtin.hpp"

#include <babelqueue/envelope.hpp>
#include <babelqueue/message.hpp>
#include <babelqueue/transport.hpp>
#include <babelqueue/transport_registry.hpp>
#include <babelqueue/url.hpp>
#include <babelqueue/worker.hpp>

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace bq = babelqueue;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

namespace {

constexpr std::string_view kUrn = "urn:babel:robustness:message";

// Set once SIGTERM/SIGINT arrived; checked between retries so a process
// stuck retrying a dead broker still stops when asked.
std::atomic<bool> stop_requested{false};

// The consumer's running worker, for the signal watcher to stop.
std::mutex current_worker_mutex;
bq::Worker* current_worker = nullptr;

// Brokers the harness can reach by URL. A transport library added to the
// build registers its schemes here (and is linked in CMakeLists.txt).

std::string shown_url(const std::string& url) {
  auto parsed = bq::Url::parse(url);
  return parsed ? parsed->redacted() : url;
}

void log_line(const std::string& text) {
  // One fprintf per line: lines of several threads stay whole.
  std::fprintf(stderr, "agent[%d]: %s\n", static_cast<int>(getpid()), text.c_str());
}

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

void sleep_unless_stopped(std::chrono::milliseconds total) {
  const auto until = Clock::now() + total;
  while (!stop_requested.load() && Clock::now() < until) std::this_thread::sleep_for(std::min(total, 50ms));
}

int open_append(const std::string& path) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) {
    log_line("cannot open " + path + ": " + std::strerror(errno));
    std::exit(2);
  }
  return fd;
}

// One write() call, so the record is all there or not there at all. A short
// write of a few hundred bytes to a local file does not happen short of a
// full disk; treat it as a failure rather than split the record.
bool append_record(int fd, std::string_view text) {
  for (;;) {
    const ssize_t n = ::write(fd, text.data(), text.size());
    if (n == static_cast<ssize_t>(text.size())) return true;
    if (n < 0 && errno == EINTR) continue;
    return false;
  }
}

// The longest call of each kind this process made to its transport, so the
// harness can check that no call blocked longer than the transport's
// documented timeouts, whatever the network did (robustness.py --call-bound).
// A receive is measured beyond the wait it was given.
struct LongestCalls {
  std::mutex mutex;
  std::chrono::milliseconds publish{0};
  std::chrono::milliseconds receive_beyond_wait{0};
  std::chrono::milliseconds settle{0};  // ack, ack_batch, release
  std::chrono::milliseconds extend{0};

  void note(std::chrono::milliseconds& slot, Clock::time_point started, std::chrono::milliseconds allowed = {}) {
    const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - started) - allowed;
    std::lock_guard lock(mutex);
    slot = std::max(slot, took);
  }

  std::string json() {
    std::lock_guard lock(mutex);
    return "{\"publish\":" + std::to_string(publish.count()) +
           ",\"receive_beyond_wait\":" + std::to_string(receive_beyond_wait.count()) +
           ",\"settle\":" + std::to_string(settle.count()) + ",\"extend\":" + std::to_string(extend.count()) + "}";
  }
};

LongestCalls longest_calls;

// Forwards every call to the real transport and times it (LongestCalls).
class TimedTransport final : public bq::Transport {
 public:
  explicit TimedTransport(std::unique_ptr<bq::Transport> inner) : inner_(std::move(inner)) {}

  bq::Capabilities capabilities() const override { return inner_->capabilities(); }
  bq::Result<void> publish(std::string_view queue, std::string_view body, const bq::PublishOptions& options) override {
    const auto started = Clock::now();
    auto result = inner_->publish(queue, body, options);
    longest_calls.note(longest_calls.publish, started);
    return result;
  }
  bq::Result<void> publish_batch(std::span<const bq::OutgoingMessage> messages) override {
    const auto started = Clock::now();
    auto result = inner_->publish_batch(messages);
    longest_calls.note(longest_calls.publish, started);
    return result;
  }
  bq::Result<std::vector<bq::Delivery>> receive(std::string_view queue, std::size_t max,
                                                std::chrono::milliseconds wait) override {
    const auto started = Clock::now();
    auto result = inner_->receive(queue, max, wait);
    longest_calls.note(longest_calls.receive_beyond_wait, started, wait);
    return result;
  }
  bq::Result<void> ack(const bq::Delivery& delivery) override {
    const auto started = Clock::now();
    auto result = inner_->ack(delivery);
    longest_calls.note(longest_calls.settle, started);
    return result;
  }
  using bq::Transport::ack_batch;
  bq::Result<void> ack_batch(std::span<const bq::Delivery> deliveries, std::vector<bq::AckFailure>& failures) override {
    const auto started = Clock::now();
    auto result = inner_->ack_batch(deliveries, failures);
    longest_calls.note(longest_calls.settle, started);
    return result;
  }
  bq::Result<void> release(const bq::Delivery& delivery, std::chrono::milliseconds delay) override {
    const auto started = Clock::now();
    auto result = inner_->release(delivery, delay);
    longest_calls.note(longest_calls.settle, started);
    return result;
  }
  bq::Result<void> extend(const bq::Delivery& delivery, std::chrono::milliseconds lease) override {
    const auto started = Clock::now();
    auto result = inner_->extend(delivery, lease);
    longest_calls.note(longest_calls.extend, started);
    return result;
  }
  std::string dead_letter_queue(std::string_view queue) const override { return inner_->dead_letter_queue(queue); }
  bq::Result<bq::QueueStats> stats(std::string_view queue) override { return inner_->stats(queue); }
  bq::Result<std::vector<bq::PeekedMessage>> peek(std::string_view queue, std::size_t max) override {
    return inner_->peek(queue, max);
  }
  void close(std::chrono::milliseconds deadline) override { inner_->close(deadline); }

 private:
  std::unique_ptr<bq::Transport> inner_;
};

// Opens the transport, retrying while the broker is unreachable.
std::unique_ptr<bq::Transport> open_with_retry(const std::string& url) {
  std::chrono::milliseconds backoff = 100ms;
  for (int attempt = 1;; ++attempt) {
    auto opened = bq::open_transport(url);
    if (opened) return std::make_unique<TimedTransport>(std::move(*opened));
    log_line("opening " + shown_url(url) + " failed (" + std::string(bq::to_string(opened.error().code())) +
             "): " + opened.error().message());
    if (stop_requested.load()) return nullptr;
    // invalid_argument / unsupported: a wrong URL never gets better.
    if (!opened.error().retriable() && attempt >= 3) return nullptr;
    sleep_unless_stopped(backoff);
    backoff = std::min(backoff * 2, std::chrono::milliseconds(5000));
  }
}

// SIGINT/SIGTERM are blocked in every thread (this runs first in main, and
// threads inherit the mask); a watcher thread takes them with sigwait() and
// calls the stop callback as ordinary code (Worker::stop() is not
// async-signal-safe).
sigset_t block_stop_signals() {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  return signals;
}

class SignalWatcher {
 public:
  SignalWatcher(sigset_t signals, std::function<void()> on_stop) : signals_(signals) {
    thread_ = std::thread([this, on_stop = std::move(on_stop)] {
      int signal = 0;
      sigwait(&signals_, &signal);
      if (finished_.load()) return;
      stop_requested.store(true);
      // Worker::run() clears earlier stop requests when it starts, so one
      // stop() landing just before a run() would be forgotten: repeat it
      // until the process is done.
      while (!finished_.load()) {
        on_stop();
        std::this_thread::sleep_for(50ms);
      }
    });
  }
  SignalWatcher(const SignalWatcher&) = delete;
  SignalWatcher& operator=(const SignalWatcher&) = delete;
  ~SignalWatcher() {
    finished_.store(true);
    // Wakes the watcher if it still waits in sigwait(): a signal of its set,
    // addressed to that thread only.
    pthread_kill(thread_.native_handle(), SIGTERM);
    thread_.join();
  }

 private:
  sigset_t signals_;
  std::atomic<bool> finished_{false};
  std::thread thread_;
};

// ---- produce ---------------------------------------------------------------------

int produce(const std::vector<std::string>& args) {
  if (args.size() < 4) return 2;
  const std::string& url = args[0];
  const std::string& queue = args[1];
  const long count = std::atol(args[2].c_str());
  const std::string& outfile = args[3];
  std::size_t batch_size = 100;
  std::string tag = "p" + std::to_string(getpid());
  double rate = 0;  // messages per second; 0 = as fast as the broker takes them
  for (std::size_t i = 4; i + 1 < args.size(); i += 2) {
    if (args[i] == "--batch") batch_size = static_cast<std::size_t>(std::max(1L, std::atol(args[i + 1].c_str())));
    if (args[i] == "--tag") tag = args[i + 1];
    if (args[i] == "--rate") rate = std::atof(args[i + 1].c_str());
  }
  bq::builtin::register_transports();
  const int fd = open_append(outfile);
  std::unique_ptr<bq::Transport> transport = open_with_retry(url);
  if (!transport) return 1;

  const auto start = Clock::now();
  long published = 0;
  std::uint64_t retries = 0;
  while (published < count && !stop_requested.load()) {
    if (rate > 0) {
      // A steady stream rather than one burst, so that consumers are killed
      // while messages keep arriving, as in production.
      const auto due = start + std::chrono::duration_cast<Clock::duration>(
                                   std::chrono::duration<double>(static_cast<double>(published) / rate));
      std::this_thread::sleep_until(due);
    }
    // A batch is built once and retried as is: the same meta.ids go out
    // again, so a publish that reached the broker but whose answer was lost
    // shows up as a duplicate, never as two different messages.
    std::vector<bq::OutgoingMessage> batch;
    std::string ids;
    const long end = std::min(count, published + static_cast<long>(batch_size));
    for (long seq = published; seq < end; ++seq) {
      auto envelope = bq::Envelope::make(kUrn, bq::Value::object({{"producer", tag}, {"seq", seq}}), {.queue = queue});
      if (!envelope) {
        log_line("make failed: " + envelope.error().message());
        return 1;
      }
      ids.append(envelope->id()).push_back('\n');
      batch.push_back({queue, std::string(envelope->body()), {}});
    }
    std::chrono::milliseconds backoff = 50ms;
    for (;;) {
      auto sent = transport->publish_batch(batch);
      if (sent) break;
      ++retries;
      const bq::ErrorInfo& error = sent.error();
      log_line("publish of " + std::to_string(batch.size()) + " messages failed (" +
               std::string(bq::to_string(error.code())) + "): " + error.message() + "; retrying");
      if (stop_requested.load()) break;
      sleep_unless_stopped(backoff);
      backoff = std::min(backoff * 2, std::chrono::milliseconds(5000));
      if (error.code() == bq::Errc::closed || !error.retriable()) {
        transport->close(1s);
        transport = open_with_retry(url);
        if (!transport) return 1;
      }
    }
    if (stop_requested.load()) break;
    // Recorded only now that the broker holds them.
    if (!append_record(fd, ids)) {
      log_line(std::string("writing ids failed: ") + std::strerror(errno));
      return 1;
    }
    published = end;
  }
  transport->close();
  std::printf(
      "{\"role\":\"producer\",\"pid\":%d,\"published\":%ld,\"publish_retries\":%llu,\"longest_call_ms\":%s,"
      "\"seconds\":%.3f}\n",
      static_cast<int>(getpid()), published, static_cast<unsigned long long>(retries), longest_calls.json().c_str(),
      seconds_since(start));
  return published == count ? 0 : 1;
}

// ---- consume ---------------------------------------------------------------------

int consume(const std::vector<std::string>& args, sigset_t stop_signals) {
  // Lives for the whole process: a SIGTERM may come while a worker runs,
  // while the transport is being reopened, or while sleeping before a retry.
  SignalWatcher watcher(stop_signals, [] {
    std::lock_guard lock(current_worker_mutex);
    if (current_worker != nullptr) current_worker->stop();
  });
  if (args.size() < 3) return 2;
  const std::string& url = args[0];
  const std::string& queue = args[1];
  const std::string& outfile = args[2];
  std::size_t concurrency = 2;
  std::size_t prefetch = 0;
  double idle_exit = 10;
  std::chrono::milliseconds work{0};
  for (std::size_t i = 3; i + 1 < args.size(); i += 2) {
    if (args[i] == "--concurrency")
      concurrency = static_cast<std::size_t>(std::max(1L, std::atol(args[i + 1].c_str())));
    if (args[i] == "--prefetch") prefetch = static_cast<std::size_t>(std::max(0L, std::atol(args[i + 1].c_str())));
    if (args[i] == "--idle-exit") idle_exit = std::atof(args[i + 1].c_str());
    if (args[i] == "--work-ms") work = std::chrono::milliseconds(std::max(0L, std::atol(args[i + 1].c_str())));
  }
  bq::builtin::register_transports();
  const int fd = open_append(outfile);
  const auto start = Clock::now();
  bq::WorkerMetricsSnapshot total;
  std::uint64_t restarts = 0;
  bool idle = false;

  while (!stop_requested.load()) {
    std::unique_ptr<bq::Transport> transport = open_with_retry(url);
    if (!transport) break;
    bq::WorkerOptions options;
    options.default_queue = queue;
    options.concurrency = concurrency;
    options.prefetch = prefetch;
    options.poll_timeout = 500ms;
    // Nothing should ever fail here; if something does (a record that cannot
    // be written), it stays visible in QUEUE.dlq instead of being dropped.
    options.dead_letter = true;
    options.max_attempts = 5;
    options.shutdown_deadline = 10s;
    options.log = bq::stderr_log_sink(bq::LogLevel::warning);
    bq::Worker worker(std::move(transport), options);
    worker.handle(std::string(kUrn), [fd, work](const bq::Message& message) {
      std::string line(message.id());
      line.push_back('\n');
      if (!append_record(fd, line)) throw std::runtime_error(std::string("recording failed: ") + std::strerror(errno));
      // Simulated work between the record and the ack: a SIGKILL landing
      // here leaves a recorded message unacknowledged, so it is delivered
      // again and counted as a duplicate. The duplicates thus show that kills
      // interrupted messages in flight and that those came back.
      if (work.count() > 0) std::this_thread::sleep_for(work);
    });

    bq::RunLimits limits;
    if (idle_exit > 0) limits.idle_exit = std::chrono::milliseconds(static_cast<std::int64_t>(idle_exit * 1000));
    {
      // Under the lock the watcher takes to call stop(): the watcher never
      // touches a worker that is being destroyed.
      std::lock_guard lock(current_worker_mutex);
      if (stop_requested.load()) break;
      current_worker = &worker;
    }
    bq::Result<bq::RunSummary> run = worker.run({queue}, limits);
    {
      std::lock_guard lock(current_worker_mutex);
      current_worker = nullptr;
    }

    const bq::WorkerMetricsSnapshot m = worker.metrics().snapshot();
    total.received += m.received;
    total.succeeded += m.succeeded;
    total.failed += m.failed;
    total.retried += m.retried;
    total.dead_lettered += m.dead_lettered;
    total.poison += m.poison;
    total.released += m.released;
    total.settle_errors += m.settle_errors;
    if (run) {
      idle = run->reason == bq::RunSummary::Reason::idle;
      break;
    }
    // Only errors the worker cannot retry by itself end a run: start over
    // with a fresh connection (the broker may have been restarted).
    ++restarts;
    log_line("the worker stopped on " + std::string(bq::to_string(run.error().code())) + ": " + run.error().message() +
             "; reconnecting");
    sleep_unless_stopped(1s);
  }
  std::printf(
      "{\"role\":\"consumer\",\"pid\":%d,\"received\":%llu,\"succeeded\":%llu,\"failed\":%llu,\"retried\":%llu,"
      "\"dead_lettered\":%llu,\"poison\":%llu,\"released\":%llu,\"settle_errors\":%llu,\"worker_restarts\":%llu,"
      "\"longest_call_ms\":%s,\"ended\":\"%s\",\"seconds\":%.3f}\n",
      static_cast<int>(getpid()), static_cast<unsigned long long>(total.received),
      static_cast<unsigned long long>(total.succeeded), static_cast<unsigned long long>(total.failed),
      static_cast<unsigned long long>(total.retried), static_cast<unsigned long long>(total.dead_lettered),
      static_cast<unsigned long long>(total.poison), static_cast<unsigned long long>(total.released),
      static_cast<unsigned long long>(total.settle_errors), static_cast<unsigned long long>(restarts),
      longest_calls.json().c_str(), idle ? "idle" : "stopped", seconds_since(start));
  return 0;
}

// ---- stats -----------------------------------------------------------------------

int stats(const std::vector<std::string>& args) {
  if (args.size() < 2) return 2;
  bq::builtin::register_transports();
  auto opened = bq::open_transport(args[0]);
  if (!opened) {
    log_line("opening " + shown_url(args[0]) + " failed: " + opened.error().message());
    return 1;
  }
  bq::Transport& transport = **opened;
  auto print = [&](const char* key, std::string_view queue) {
    auto s = transport.stats(queue);
    if (!s) {
      std::printf("\"%s\":null", key);
      return;
    }
    std::printf("\"%s\":{\"ready\":%lld,\"reserved\":%lld,\"delayed\":%lld}", key, static_cast<long long>(s->ready),
                static_cast<long long>(s->reserved), static_cast<long long>(s->delayed));
  };
  std::printf("{");
  print("queue", args[1]);
  std::printf(",");
  print("dead_letter_queue", transport.dead_letter_queue(args[1]));
  std::printf("}\n");
  return 0;
}

int usage() {
  std::fprintf(stderr,
               "usage: babelqueue_robustness_agent produce URL QUEUE COUNT OUTFILE [--batch N] [--tag TAG] "
               "[--rate PER_SECOND]\n"
               "       babelqueue_robustness_agent consume URL QUEUE OUTFILE [--concurrency N] [--prefetch N] "
               "[--idle-exit SECONDS] [--work-ms N]\n"
               "       babelqueue_robustness_agent stats URL QUEUE\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  const sigset_t stop_signals = block_stop_signals();
  if (argc < 2) return usage();
  const std::string_view mode = argv[1];
  const std::vector<std::string> args(argv + 2, argv + argc);
  int status = 2;
  if (mode == "produce") {
    // The producer needs no clean shutdown: the harness never stops it early.
    // Its signals are unblocked again so SIGTERM/SIGINT end it at once.
    pthread_sigmask(SIG_UNBLOCK, &stop_signals, nullptr);
    status = produce(args);
  } else if (mode == "consume") {
    status = consume(args, stop_signals);
  } else if (mode == "stats") {
    status = stats(args);
  }
  return status == 2 ? usage() : status;
}
