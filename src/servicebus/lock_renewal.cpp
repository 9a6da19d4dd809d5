// SPDX-License-Identifier: Apache-2.0
#include "lock_renewal.hpp"

#include <babelqueue/error.hpp>

#include <map>
#include <proton/codec/map.hpp>
#include <proton/codec/vector.hpp>
#include <proton/message.hpp>
#include <proton/scalar.hpp>
#include <proton/timestamp.hpp>
#include <proton/types.hpp>
#include <proton/uuid.hpp>
#include <proton/value.hpp>
#include <vector>

namespace babelqueue::servicebus {

namespace {

constexpr std::string_view kRenewLock = "com.microsoft:renew-lock";

// A GUID's text as a proton::uuid (its bytes in the text's order).
std::optional<proton::uuid> parse_uuid(std::string_view text) {
  std::string hex;
  for (const char c : text) {
    if (c != '-') hex.push_back(c);
  }
  if (hex.size() != 32) return std::nullopt;
  proton::uuid u;
  for (std::size_t i = 0; i < 16; ++i) {
    unsigned value = 0;
    for (std::size_t j = 0; j < 2; ++j) {
      const char c = hex[2 * i + j];
      value <<= 4;
      if (c >= '0' && c <= '9') {
        value |= static_cast<unsigned>(c - '0');
      } else if (c >= 'a' && c <= 'f') {
        value |= static_cast<unsigned>(c - 'a' + 10);
      } else if (c >= 'A' && c <= 'F') {
        value |= static_cast<unsigned>(c - 'A' + 10);
      } else {
        return std::nullopt;
      }
    }
    u[i] = static_cast<std::uint8_t>(value);
  }
  return u;
}

}  // namespace

LockRenewal::LockRenewal(amqp10::Client& client, std::chrono::milliseconds timeout, LogSink log)
    : client_(client), timeout_(timeout), log_(std::move(log)), thread_([this] { run(); }) {}

LockRenewal::~LockRenewal() { stop(); }

void LockRenewal::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  if (thread_.joinable()) thread_.join();
}

Result<std::chrono::system_clock::time_point> LockRenewal::renew(amqp10::Client& client, const std::string& queue,
                                                                 const std::string& lock_token,
                                                                 std::chrono::milliseconds timeout) {
  const auto token = parse_uuid(lock_token);
  if (!token) return unexpected(Errc::invalid_argument, "'" + lock_token + "' is not a lock token");
  proton::message request;
  request.properties().put("operation", std::string(kRenewLock));
  std::map<std::string, proton::value> body;
  body["lock-tokens"] = std::vector<proton::uuid>{*token};
  request.body(body);
  auto reply = client.request(queue + "/$management", std::move(request), timeout);
  if (!reply) return unexpected(reply.error());
  const auto& props = reply->properties();
  const std::int64_t status = props.exists("statusCode") ? proton::coerce<std::int64_t>(props.get("statusCode")) : 0;
  const std::string description =
      props.exists("statusDescription") ? proton::to_string(props.get("statusDescription")) : std::string();
  if (status == 410) {
    return unexpected(Errc::not_found, "the service no longer holds the lock (410: " + description +
                                           "); the message is delivered again");
  }
  if (status != 200) {
    return unexpected(Errc::broker, "renew-lock answered " + std::to_string(status) + ": " + description);
  }
  std::map<std::string, proton::value> answer;
  std::vector<proton::timestamp> expirations;
  try {
    proton::get(reply->body(), answer);
    proton::get(answer.at("expirations"), expirations);
  } catch (const std::exception& e) {
    return unexpected(Errc::broker, std::string("renew-lock answered without expirations: ") + e.what());
  }
  if (expirations.empty()) return unexpected(Errc::broker, "renew-lock answered without expirations");
  return std::chrono::system_clock::time_point(std::chrono::milliseconds(expirations.front().milliseconds()));
}

Result<void> LockRenewal::keep(std::uint64_t id, const std::string& queue, const std::string& lock_token,
                               std::chrono::milliseconds lease) {
  const auto asked_at = SystemClock::now();
  auto locked_until = renew(client_, queue, lock_token, timeout_);
  if (!locked_until) {
    forget(id);
    return unexpected(locked_until.error());
  }
  {
    std::lock_guard lock(mutex_);
    if (stopping_) return {};
    Held& held = held_[id];
    held.queue = queue;
    held.lock_token = lock_token;
    held.renewed_at = asked_at;
    held.locked_until = *locked_until;
    held.keep_until = std::max(held.keep_until, asked_at + lease);
  }
  changed_.notify_all();
  return {};
}

void LockRenewal::forget(std::uint64_t id) {
  std::lock_guard lock(mutex_);
  held_.erase(id);
}

void LockRenewal::run() {
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    const auto now = SystemClock::now();
    std::optional<SystemClock::time_point> next;
    std::vector<std::pair<std::uint64_t, Held>> due;
    for (auto it = held_.begin(); it != held_.end();) {
      Held& held = it->second;
      if (held.keep_until <= now || held.locked_until >= held.keep_until) {
        it = held_.erase(it);  // the lease it was kept for is covered
        continue;
      }
      if (held.due() <= now) {
        due.emplace_back(it->first, held);
      } else if (!next || held.due() < *next) {
        next = held.due();
      }
      ++it;
    }
    if (due.empty()) {
      if (next) {
        changed_.wait_until(lock, *next);
      } else {
        changed_.wait(lock);
      }
      continue;
    }
    lock.unlock();
    for (auto& [id, held] : due) {
      const auto asked_at = SystemClock::now();
      auto locked_until = renew(client_, held.queue, held.lock_token, timeout_);
      std::lock_guard relock(mutex_);
      auto it = held_.find(id);
      if (it == held_.end()) continue;  // settled meanwhile
      if (locked_until) {
        it->second.renewed_at = asked_at;
        it->second.locked_until = *locked_until;
      } else if (locked_until.error().code() == Errc::not_found || it->second.locked_until <= SystemClock::now()) {
        if (log_)
          log_(LogLevel::warning, "servicebus: the lock of a message on '" + held.queue +
                                      "' could not be kept: " + locked_until.error().message());
        held_.erase(it);
      } else {
        // Try again shortly, while the lock still holds.
        it->second.renewed_at = asked_at;
      }
    }
    lock.lock();
  }
}

}  // namespace babelqueue::servicebus
