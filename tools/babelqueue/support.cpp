// SPDX-License-Identifier: Apache-2.0
#include "support.hpp"

#include <babelqueue/detail/saturating.hpp>
#include <babelqueue/json.hpp>
#include <babelqueue/transport_registry.hpp>
#include <babelqueue/url.hpp>

#include <pthread.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <ctime>
#include <iostream>

namespace babelqueue::cli {

int fail(std::string_view message) {
  Console::instance().line("babelqueue: " + std::string(message));
  return kExitFailure;
}

namespace {

void replace_all(std::string& text, std::string_view what, std::string_view with) {
  if (what.empty()) return;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + with.size())) {
    text.replace(at, what.size(), with);
  }
}

}  // namespace

std::string redact_url(std::string_view url) {
  if (auto parsed = Url::parse(url)) return parsed->redacted();
  // Not a URL we can parse: still hide what looks like a password in
  // scheme://user:password@host.
  std::string text(url);
  const std::size_t scheme_end = text.find("://");
  if (scheme_end == std::string::npos) return text;
  const std::size_t start = scheme_end + 3;
  const std::size_t end = std::min(text.find_first_of("/?#", start), text.size());
  const std::size_t at = text.rfind('@', end == 0 ? 0 : end - 1);
  if (at == std::string::npos || at < start) return text;
  const std::size_t colon = text.find(':', start);
  if (colon == std::string::npos || colon > at) return text;
  text.replace(colon + 1, at - colon - 1, "***");
  return text;
}

std::unique_ptr<Transport> open_transport_or_report(const GlobalOptions& global) {
  // An unknown scheme, in the words of a shell user: the library's own
  // message tells a programmer which library to link.
  if (auto parsed = Url::parse(global.url)) {
    const std::vector<std::string> schemes = registered_schemes();
    if (std::find(schemes.begin(), schemes.end(), parsed->scheme) == schemes.end()) {
      std::string known;
      for (const std::string& scheme : schemes) known += (known.empty() ? "" : ", ") + scheme + "://";
      fail("cannot open " + redact_url(global.url) + ": this babelqueue does not know " + parsed->scheme +
           ":// URLs (it opens " + known + ")");
      return nullptr;
    }
  }
  auto opened = open_transport(global.url);
  if (opened) return std::move(*opened);
  const std::string shown = redact_url(global.url);
  std::string message = opened.error().message();
  // Errors may quote the URL (or its password): never print them in clear.
  if (auto parsed = Url::parse(global.url); parsed && !parsed->password.empty()) {
    replace_all(message, parsed->password, "***");
  }
  replace_all(message, global.url, shown);
  fail("cannot open " + shown + ": " + message);
  return nullptr;
}

std::string queue_name(const Transport& transport, const std::string& name) {
  constexpr std::string_view kFamilySuffix = ".dlq";
  if (name.size() <= kFamilySuffix.size() || !name.ends_with(kFamilySuffix)) return name;
  const std::string_view base = std::string_view(name).substr(0, name.size() - kFamilySuffix.size());
  return transport.dead_letter_queue(base);
}

Value headers_object(const Headers& headers) {
  Object object;
  for (const auto& [name, value] : headers) object.set(sanitize_utf8(name), sanitize_utf8(value));
  return Value(std::move(object));
}

int print_json_line(const Value& value) {
  auto line = to_json(value);
  if (!line) return fail(line.error().message());
  std::cout << *line << '\n';
  std::cout.flush();
  return kExitOk;
}

CLI::Validator header_check() {
  return CLI::Validator(
      [](std::string& value) -> std::string {
        const std::size_t eq = value.find('=');
        if (eq == std::string::npos || eq == 0) return "a header is NAME=VALUE, got '" + value + "'";
        return {};
      },
      "NAME=VALUE");
}

Headers parse_headers(const std::vector<std::string>& pairs) {
  Headers headers;
  for (const std::string& pair : pairs) {
    const std::size_t eq = pair.find('=');
    headers[pair.substr(0, eq)] = eq == std::string::npos ? std::string() : pair.substr(eq + 1);
  }
  return headers;
}

std::chrono::milliseconds seconds(double value) {
  // Held to a range a deadline can be added to (1e300 s is "for ever", not
  // an overflow).
  return detail::saturating_seconds(value);
}

std::string sanitize_utf8(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(text[i]); };
  std::size_t i = 0;
  while (i < text.size()) {
    const unsigned char c = byte(i);
    std::size_t length = 0;
    std::uint32_t code = 0;
    if (c < 0x80) {
      length = 1;
      code = c;
    } else if (c >= 0xC2 && c <= 0xDF) {
      length = 2;
      code = c & 0x1FU;
    } else if (c >= 0xE0 && c <= 0xEF) {
      length = 3;
      code = c & 0x0FU;
    } else if (c >= 0xF0 && c <= 0xF4) {
      length = 4;
      code = c & 0x07U;
    }
    bool valid = length != 0 && i + length <= text.size();
    for (std::size_t k = 1; valid && k < length; ++k) {
      if ((byte(i + k) & 0xC0U) != 0x80U) valid = false;
      code = (code << 6U) | (byte(i + k) & 0x3FU);
    }
    if (valid && length == 3 && (code < 0x800 || (code >= 0xD800 && code <= 0xDFFF))) valid = false;
    if (valid && length == 4 && (code < 0x10000 || code > 0x10FFFF)) valid = false;
    if (!valid) {
      out += "\xEF\xBF\xBD";
      ++i;
      continue;
    }
    out.append(text.substr(i, length));
    i += length;
  }
  return out;
}

// ---- console -------------------------------------------------------------------

namespace {

void write_stderr(std::string_view text) {
  std::fwrite(text.data(), 1, text.size(), stderr);
  std::fflush(stderr);
}

std::size_t terminal_width() {
  winsize size{};
  if (ioctl(STDERR_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_col > 1) return size.ws_col;
  return 80;
}

}  // namespace

Console& Console::instance() {
  static Console console;
  return console;
}

namespace {

// Standard output and standard error are the same terminal (not merely two
// terminals): what one prints lands on the other's status line.
bool stdout_shares_terminal() {
  if (isatty(STDOUT_FILENO) != 1 || isatty(STDERR_FILENO) != 1) return false;
  struct stat out {};
  struct stat err {};
  if (fstat(STDOUT_FILENO, &out) != 0 || fstat(STDERR_FILENO, &err) != 0) return true;
  return out.st_rdev == err.st_rdev;
}

}  // namespace

Console::Console()
    : stderr_is_terminal_(isatty(STDERR_FILENO) == 1), stdout_shares_terminal_(stdout_shares_terminal()) {}

void Console::erase_locked() {
  if (shown_) write_stderr("\r\033[K");
  shown_ = false;
}

void Console::draw_locked() {
  if (!stderr_is_terminal_ || status_.empty()) return;
  const std::size_t width = terminal_width() - 1;
  write_stderr("\r\033[K" + (status_.size() > width ? status_.substr(0, width) : status_));
  shown_ = true;
}

void Console::line(std::string_view text) {
  std::lock_guard lock(mutex_);
  erase_locked();
  write_stderr(std::string(text) + "\n");
  draw_locked();
}

void Console::raw_lines(std::string_view text) {
  std::lock_guard lock(mutex_);
  erase_locked();
  write_stderr(text);
  draw_locked();
}

void Console::status(std::string_view text) {
  if (!stderr_is_terminal_) return;
  std::lock_guard lock(mutex_);
  status_ = text;
  draw_locked();
}

void Console::clear_status() {
  std::lock_guard lock(mutex_);
  status_.clear();
  erase_locked();
}

Progress::Progress(StdoutUse use, std::function<std::string()> render) : render_(std::move(render)) {
  if (!Console::instance().can_show_status(use)) return;
  thread_ = std::thread([this] {
    std::unique_lock lock(mutex_);
    while (!done_) {
      wake_.wait_for(lock, std::chrono::milliseconds(250), [&] { return done_; });
      if (done_) break;
      lock.unlock();
      Console::instance().status(render_());
      lock.lock();
    }
  });
}

void Progress::finish() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard lock(mutex_);
    done_ = true;
  }
  wake_.notify_all();
  thread_.join();
  Console::instance().clear_status();
}

// ---- signals -------------------------------------------------------------------

namespace {

sigset_t stop_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  return set;
}

}  // namespace

SignalWatcher::SignalWatcher(std::function<void(int, int)> on_signal) : on_signal_(std::move(on_signal)) {
  const sigset_t set = stop_signals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  thread_ = std::thread([this] {
    const sigset_t waited = stop_signals();
    int count = 0;
    while (!done_.load()) {
      // A short timeout, so the destructor never has to send a signal to
      // wake this thread up.
      const timespec timeout{0, 100'000'000};
      const int signal = sigtimedwait(&waited, nullptr, &timeout);
      if (signal > 0) {
        on_signal_(signal, ++count);
      } else if (count > 0) {
        on_signal_(0, count);
      }
    }
  });
}

SignalWatcher::~SignalWatcher() {
  done_.store(true);
  thread_.join();
}

std::string signal_name(int signal) {
  switch (signal) {
    case SIGHUP: return "SIGHUP";
    case SIGINT: return "SIGINT";
    case SIGQUIT: return "SIGQUIT";
    case SIGILL: return "SIGILL";
    case SIGABRT: return "SIGABRT";
    case SIGBUS: return "SIGBUS";
    case SIGFPE: return "SIGFPE";
    case SIGKILL: return "SIGKILL";
    case SIGSEGV: return "SIGSEGV";
    case SIGPIPE: return "SIGPIPE";
    case SIGALRM: return "SIGALRM";
    case SIGTERM: return "SIGTERM";
    case SIGUSR1: return "SIGUSR1";
    case SIGUSR2: return "SIGUSR2";
    default: return "signal " + std::to_string(signal);
  }
}

}  // namespace babelqueue::cli
