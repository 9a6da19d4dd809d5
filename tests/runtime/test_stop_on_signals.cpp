// SPDX-License-Identifier: Apache-2.0
// StopOnSignals: a signal stops a running Worker through the helper's own
// thread (Worker::stop() is not called from the handler); the handlers that
// were there before come back; one helper at a time.
#include <babelqueue/memory/transport.hpp>
#include <babelqueue/stop_on_signals.hpp>
#include <babelqueue/worker.hpp>

#include <gtest/gtest.h>

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>

namespace bq = babelqueue;
using namespace std::chrono_literals;

namespace {

std::atomic<int> previous_handler_calls{0};
extern "C" void count_call(int) { previous_handler_calls.fetch_add(1); }

}  // namespace

TEST(StopOnSignals, ASignalStopsARunningWorker) {
  bq::memory::Transport transport;
  bq::WorkerOptions options;
  options.default_queue = "orders";
  options.poll_timeout = 50ms;
  options.log = {};
  bq::Worker worker(transport, options);
  bq::StopOnSignals stopper(worker);
  // Sent to the process, as `kill` from a shell would: any thread may take it.
  std::thread killer([] {
    std::this_thread::sleep_for(200ms);
    ::kill(::getpid(), SIGTERM);
  });
  const auto started = std::chrono::steady_clock::now();
  auto summary = worker.run();  // no limits: only a stop ends it
  killer.join();
  ASSERT_TRUE(summary) << summary.error().message();
  EXPECT_EQ(summary->reason, bq::RunSummary::Reason::stopped);
  EXPECT_EQ(stopper.received(), SIGTERM);
  EXPECT_LT(std::chrono::steady_clock::now() - started, 10s);
}

TEST(StopOnSignals, CallsAFunctionAndRestoresThePreviousHandler) {
  struct sigaction counting {};
  counting.sa_handler = count_call;
  sigemptyset(&counting.sa_mask);
  struct sigaction original {};
  ASSERT_EQ(::sigaction(SIGUSR1, &counting, &original), 0);
  previous_handler_calls = 0;
  {
    std::atomic<int> seen{0};
    bq::StopOnSignals stopper([&](int number) { seen = number; }, {SIGUSR1});
    ::raise(SIGUSR1);
    for (int i = 0; i < 200 && seen.load() == 0; ++i) std::this_thread::sleep_for(5ms);
    EXPECT_EQ(seen.load(), SIGUSR1);
    EXPECT_EQ(stopper.received(), SIGUSR1);
    EXPECT_EQ(previous_handler_calls.load(), 0) << "the helper's handler replaced it while alive";
  }
  ::raise(SIGUSR1);
  EXPECT_EQ(previous_handler_calls.load(), 1) << "the handler that was there before is back";
  ::sigaction(SIGUSR1, &original, nullptr);
}

TEST(StopOnSignals, OneAtATime) {
  bq::StopOnSignals first([](int) {}, {SIGUSR2});
  EXPECT_THROW(bq::StopOnSignals([](int) {}, {SIGUSR2}), bq::Error);
}
