// SPDX-License-Identifier: Apache-2.0
// StopOnSignals: stops a Worker cleanly on SIGINT and SIGTERM (or calls a
// function of yours), the safe way.
//
// Worker::stop() takes a lock and wakes condition variables, which a signal
// handler must not do (neither is async-signal-safe). This object installs
// handlers that only write the signal's number to a pipe; a thread of its
// own reads it and calls stop() (or your function) as ordinary code. No
// signal mask to set up, no rule about which thread exists first: create it
// before run(), keep it alive while the worker runs.
//
//   babelqueue::StopOnSignals stopper(worker);  // SIGINT, SIGTERM
//   worker.run().value();
//   if (stopper.received() != 0) { ... stopped by a signal ... }
//
// The destructor restores the handlers that were installed before. One
// instance at a time per process (the handlers share one pipe): a second
// one while the first lives is an Errc::invalid_argument Error. POSIX only.
#pragma once

#include <csignal>
#include <functional>
#include <memory>
#include <vector>

namespace babelqueue {

class Worker;

/// Stops a Worker (or calls a function) on SIGINT and SIGTERM, from a thread
/// of its own rather than inside the signal handler.
class StopOnSignals {
 public:
  /// worker.stop() on each of signals.
  explicit StopOnSignals(Worker& worker, std::vector<int> signals = {SIGINT, SIGTERM});
  /// on_signal(number) on each of signals, on the helper's thread.
  explicit StopOnSignals(std::function<void(int)> on_signal, std::vector<int> signals = {SIGINT, SIGTERM});
  ~StopOnSignals();
  StopOnSignals(const StopOnSignals&) = delete;
  StopOnSignals& operator=(const StopOnSignals&) = delete;

  /// The first of the signals received, 0 while none was.
  int received() const noexcept;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace babelqueue
