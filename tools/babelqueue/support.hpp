// SPDX-License-Identifier: Apache-2.0
// What the queue commands share: opening the transport named by --url,
// headers given as K=V, the terminal's progress line, and signal handling.
#pragma once

#include "commands.hpp"

#include <babelqueue/transport.hpp>
#include <babelqueue/value.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace babelqueue::cli {

// Prints "babelqueue: MESSAGE" to standard error; returns kExitFailure.
int fail(std::string_view message);

// Opens the transport of global.url. On failure prints a message naming the
// URL with its secrets redacted and returns null (the command exits 1).
std::unique_ptr<Transport> open_transport_or_report(const GlobalOptions& global);

// The URL with its password (and secret query values) replaced by ***, for
// messages; also for text that does not parse as a URL.
std::string redact_url(std::string_view url);

// The queue a command works on: name as given, except the family's
// dead-letter name QUEUE.dlq, which becomes the transport's own name for
// QUEUE's dead-letter queue where that differs (SQS: QUEUE-dlq, as dots are
// not allowed there). So `stats orders.dlq` works on every broker.
std::string queue_name(const Transport& transport, const std::string& name);

// The out-of-band headers as a JSON object, names and values made valid
// UTF-8.
Value headers_object(const Headers& headers);

// Prints value as one line of JSON on standard output; kExitOk, else
// (a value JSON cannot hold) prints why and returns kExitFailure.
int print_json_line(const Value& value);

// A CLI11 check for K=V (K not empty).
CLI::Validator header_check();
// Headers from K=V strings already checked by header_check().
Headers parse_headers(const std::vector<std::string>& pairs);

// A duration given in (possibly fractional) seconds.
std::chrono::milliseconds seconds(double value);

// text with every byte sequence that is not valid UTF-8 replaced by U+FFFD,
// so it can travel in JSON (a dead_letter block's error).
std::string sanitize_utf8(std::string_view text);

// Whether a command writes to standard output while its status line shows
// (publish prints ids, drain bodies, work's commands whatever they print),
// or only once it is done (bench).
enum class StdoutUse { while_running, at_the_end };

// Standard error shared by log lines, child processes' output and, on a
// terminal, one status line kept at the bottom and redrawn in place.
class Console {
 public:
  static Console& instance();

  // True when a status line can be drawn without colliding with anything:
  // standard error is a terminal and standard output is not that same
  // terminal, or the command writes nothing there until it is done. Every
  // other write to standard error goes through this class, which erases the
  // line first.
  bool can_show_status(StdoutUse use) const noexcept {
    return stderr_is_terminal_ && (use == StdoutUse::at_the_end || !stdout_shares_terminal_);
  }

  // Writes text (a whole line, newline added) above the status line.
  void line(std::string_view text);
  // Writes complete lines as they are (each ends with a newline) above the
  // status line.
  void raw_lines(std::string_view text);
  // Replaces the status line (no-op when standard error is not a terminal;
  // the caller checked can_show_status()).
  void status(std::string_view text);
  // Removes the status line.
  void clear_status();

 private:
  Console();
  void erase_locked();
  void draw_locked();
  std::mutex mutex_;
  std::string status_;
  bool shown_ = false;
  bool stderr_is_terminal_ = false;
  bool stdout_shares_terminal_ = false;
};

// While alive, redraws the console's status line with render() every 250 ms
// when Console::can_show_status(use); otherwise it starts no thread. Clears
// it at the end.
class Progress {
 public:
  Progress(StdoutUse use, std::function<std::string()> render);
  ~Progress() { finish(); }
  // Stops redrawing and removes the line (before a command with
  // StdoutUse::at_the_end prints its result). Idempotent.
  void finish();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

 private:
  std::function<std::string()> render_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool done_ = false;
  std::thread thread_;
};

// Takes SIGINT and SIGTERM away from their default action and hands them to
// on_signal(signal, how_many_so_far) on a dedicated thread (sigwait on a
// blocked set). Once a signal arrived, on_signal(0, count) is also called
// every 100 ms, so a stop requested before the work started is not lost. Create it before any other thread, so every
// thread inherits the blocked mask; child processes must reset their mask (see child_process.hpp). The signals stay
// blocked after destruction, so one arriving during the final clean-up is ignored instead of killing the process.
class SignalWatcher {
 public:
  explicit SignalWatcher(std::function<void(int signal, int count)> on_signal);
  ~SignalWatcher();
  SignalWatcher(const SignalWatcher&) = delete;
  SignalWatcher& operator=(const SignalWatcher&) = delete;

 private:
  std::function<void(int, int)> on_signal_;
  std::atomic<bool> done_{false};
  std::thread thread_;
};

// The conventional name of a signal ("SIGTERM"), else "signal N".
std::string signal_name(int signal);

}  // namespace babelqueue::cli
