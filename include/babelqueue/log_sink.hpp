// SPDX-License-Identifier: Apache-2.0
// LogSink: where the Worker and the transports write their log lines
// (connects, reconnects, give-ups, handler failures). A plain callback, so
// an application routes them to its own logger; no output by default other
// than warnings and errors on standard error.
//
// Thread-safety: a sink is called from worker threads and transport I/O
// threads, possibly concurrently: it must be thread-safe and must outlive
// what it was given to. Messages never hold credentials.
#pragma once

#include <functional>
#include <string_view>

namespace babelqueue {

/// How much a log line matters.
enum class LogLevel { debug, info, warning, error };
/// The level's name ("debug", "info", "warning", "error").
std::string_view to_string(LogLevel level) noexcept;

/// An empty function silences the component it is given to.
using LogSink = std::function<void(LogLevel level, std::string_view message)>;

/// The default sink: lines at min_level and above to standard error, one
/// write per line ("babelqueue warning: ..."), so lines of several threads
/// stay whole.
LogSink stderr_log_sink(LogLevel min_level = LogLevel::warning);

}  // namespace babelqueue
