// SPDX-License-Identifier: Apache-2.0
#include "redis_connection.hpp"
#include "redis_frame.hpp"
#include "redis_scripts.hpp"

#include <babelqueue/detail/message_size.hpp>
#include <babelqueue/redis/transport.hpp>
#include <babelqueue/transport_registry.hpp>
#include <babelqueue/url_options.hpp>
#include <babelqueue/uuid.hpp>

#include <openssl/evp.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <charconv>
#include <condition_variable>
#include <cstdio>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <utility>

namespace babelqueue {
namespace {

using redis_detail::Command;
using redis_detail::Connection;
using redis_detail::Reply;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr std::string_view kLeasesSuffix = ":bq:leases";
constexpr std::string_view kDelayedSuffix = ":bq:delayed";
// Most elements one receive takes, and most due members one claim moves back.
constexpr std::size_t kMaxClaim = 1000;
constexpr std::string_view kMoveLimit = "1000";
// Messages per pipelined write of publish_batch.
constexpr std::size_t kBatchChunk = 1000;
// How often a busy queue's claims also move due delayed messages and expired
// leases back to the list.
constexpr milliseconds kSweepInterval{100};
// The most a claim may wait beyond command_timeout (claim_allowance()).
constexpr milliseconds kMaxClaimAllowance{60'000};

Unexpected<ErrorInfo> closed_error() { return unexpected(Errc::closed, "the Redis transport is closed"); }

Result<void> check_queue(std::string_view queue) {
  if (queue.empty()) return unexpected(Errc::invalid_argument, "the queue name is empty");
  return {};
}

// A message larger than the server takes is refused before it is sent, with
// both sizes: otherwise Redis answers only after the whole body went out, with
// a protocol error that closes the connection.
Result<void> check_size(std::string_view queue, std::size_t size, std::size_t limit) {
  if (size <= limit) return {};
  return unexpected(::babelqueue::detail::message_too_large(queue, size, "Redis", limit, "max_message_size"));
}

std::string hex_sha1(std::string_view text) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int size = 0;
  EVP_Digest(text.data(), text.size(), digest.data(), &size, EVP_sha1(), nullptr);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < size; ++i) {
    out.push_back(kHex[digest[i] >> 4U]);
    out.push_back(kHex[digest[i] & 0x0FU]);
  }
  return out;
}

std::string hex(std::uint64_t value, int width) {
  std::array<char, 17> text{};
  std::snprintf(text.data(), text.size(), "%0*llx", width, static_cast<unsigned long long>(value));  // NOLINT
  return text.data();
}

// A script and its SHA1, for EVALSHA.
struct Script {
  std::string_view source;
  std::string sha;
  explicit Script(std::string_view text) : source(text), sha(hex_sha1(text)) {}
};

const Script& claim_script() {
  static const Script script(redis_detail::kClaimScript);
  return script;
}
const Script& release_script() {
  static const Script script(redis_detail::kReleaseScript);
  return script;
}
const Script& extend_script() {
  static const Script script(redis_detail::kExtendScript);
  return script;
}
const Script& delay_script() {
  static const Script script(redis_detail::kDelayScript);
  return script;
}

// The lease member a delivery settles with: "<token>:<element>".
Result<std::string_view> lease_member(const Delivery& delivery) {
  const std::string& member = delivery.token.text;
  if (member.size() <= redis_detail::kTokenLength || member[redis_detail::kTokenLength] != ':') {
    return unexpected(Errc::invalid_argument, "the delivery was not received from a Redis transport");
  }
  if (delivery.queue.empty()) return unexpected(Errc::invalid_argument, "the delivery names no queue");
  return std::string_view(member);
}

std::string seconds_text(milliseconds d) {
  std::array<char, 32> text{};
  std::snprintf(text.data(), text.size(), "%.3f", static_cast<double>(d.count()) / 1000.0);
  return text.data();
}

}  // namespace

class redis::Transport::State {
 public:
  struct Pooled {
    std::unique_ptr<Connection> connection;
    std::uint64_t generation = 0;
  };

  // A connection borrowed from the pool; given back when destroyed.
  class Lease {
   public:
    Lease(State& state, Pooled pooled) : state_(&state), pooled_(std::move(pooled)) {}
    Lease(Lease&& other) noexcept : state_(std::exchange(other.state_, nullptr)), pooled_(std::move(other.pooled_)) {}
    Lease& operator=(Lease&&) = delete;
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    ~Lease() {
      if (state_ != nullptr) state_->give_back(std::move(pooled_));
    }
    Connection& operator*() { return *pooled_.connection; }
    Connection* operator->() { return pooled_.connection.get(); }

   private:
    State* state_;
    Pooled pooled_;
  };

  State(Options opts, redis_detail::Endpoint where) : options(std::move(opts)), endpoint(std::move(where)) {
    instance = uuid_v4();
    instance.erase(std::remove(instance.begin(), instance.end(), '-'), instance.end());
    instance.resize(16);
  }

  Options options;
  redis_detail::Endpoint endpoint;
  std::string instance;  // 16 random hex characters: this transport's part of every token
  std::atomic<std::uint64_t> next_token{0};

  // A fresh 24-hex token base; the claim script appends 8 hex per message.
  std::string token_base() { return instance + hex(next_token.fetch_add(1) & 0xFFFFFFFFULL, 8); }

  Result<Lease> borrow(Clock::time_point deadline) {
    std::unique_lock lock(mutex_);
    for (;;) {
      if (closed_) return closed_error();
      while (!idle_.empty()) {
        Pooled pooled = std::move(idle_.back());
        idle_.pop_back();
        if (pooled.generation == generation_) {
          busy_.insert(pooled.connection.get());
          return Lease(*this, std::move(pooled));
        }
        --open_;  // opened before a connection failure: probably dead too
      }
      if (open_ < options.max_connections) {
        const auto now = Clock::now();
        if (now < next_connect_) {
          if (next_connect_ > deadline) {
            const auto in = std::chrono::duration_cast<milliseconds>(next_connect_ - now);
            return unexpected(Errc::connection,
                              last_connect_error_ + " (next attempt in " + std::to_string(in.count()) + " ms)");
          }
          available_.wait_until(lock, next_connect_, [&] { return closed_; });
          continue;
        }
        ++open_;
        const std::uint64_t generation = generation_;
        lock.unlock();
        auto opened = Connection::open(endpoint, options.connect_timeout);
        lock.lock();
        if (!opened) {
          --open_;
          const std::int64_t failures = ++connect_failures_;
          if (connected_before_) reconnecting_ = true;
          const milliseconds pause = options.reconnect_backoff.delay_for(failures);
          next_connect_ = Clock::now() + pause;
          last_connect_error_ = opened.error().message();
          available_.notify_all();
          lock.unlock();
          log(LogLevel::warning, "redis: connect attempt " + std::to_string(failures) + " to " + endpoint.address() +
                                     " failed, next in " + std::to_string(pause.count()) +
                                     " ms: " + opened.error().message());
          return unexpected(opened.error());
        }
        const std::int64_t failures = std::exchange(connect_failures_, 0);
        const bool first = !connected_before_;
        const bool reconnected = std::exchange(reconnecting_, false);
        if (reconnected) reconnects.fetch_add(1, std::memory_order_relaxed);
        connected_before_ = true;
        next_connect_ = {};
        if (closed_) {
          --open_;
          return closed_error();
        }
        busy_.insert(opened->get());
        Lease lease(*this, Pooled{std::move(*opened), generation});
        lock.unlock();
        if (first || reconnected) {
          std::string line = (first ? "redis: connected to " : "redis: reconnected to ") + endpoint.address() +
                             " (database " + std::to_string(options.database) + (options.tls.enabled ? ", TLS" : "");
          if (failures > 0) {
            line += ", after " + std::to_string(failures) + " failed attempt" + (failures == 1 ? "" : "s");
          }
          log(LogLevel::info, line + ")");
        }
        return lease;
      }
      if (!available_.wait_until(lock, deadline,
                                 [&] { return closed_ || !idle_.empty() || open_ < options.max_connections; })) {
        return unexpected(Errc::timeout, "all " + std::to_string(options.max_connections) +
                                             " connections to Redis at " + endpoint.address() + " stayed busy");
      }
    }
  }

  void give_back(Pooled pooled) {
    std::unique_ptr<Connection> discarded;
    bool lost = false;
    {
      std::lock_guard lock(mutex_);
      busy_.erase(pooled.connection.get());
      if (pooled.connection->broken() || closed_ || pooled.generation != generation_) {
        // A connection that broke while others sat idle suggests the server
        // went away: the idle ones are dropped too, rather than failing the
        // next calls one by one.
        if (pooled.connection->broken() && pooled.generation == generation_ && !closed_) {
          ++generation_;
          lost = true;
          reconnecting_ = true;
        }
        discarded = std::move(pooled.connection);
        --open_;
      } else {
        idle_.push_back(std::move(pooled));
      }
      available_.notify_all();
    }
    if (lost) log(LogLevel::warning, "redis: connection to " + endpoint.address() + " lost; reconnecting on demand");
  }

  // Connections made again after one was lost or a connect failed.
  std::atomic<std::uint64_t> reconnects{0};

  // Runs commands on one pooled connection, in one round trip.
  Result<std::vector<Reply>> execute(std::span<const Command> commands) {
    auto lease = borrow(Clock::now() + options.command_timeout);
    if (!lease) return unexpected(lease.error());
    return (*lease)->execute(commands, options.command_timeout);
  }

  Result<std::vector<Reply>> execute_formatted(const std::string& wire, std::size_t replies) {
    auto lease = borrow(Clock::now() + options.command_timeout);
    if (!lease) return unexpected(lease.error());
    return (*lease)->execute_formatted(wire, replies, options.command_timeout);
  }

  Result<Reply> execute(const Command& command) {
    auto replies = execute(std::span<const Command>(&command, 1));
    if (!replies) return unexpected(replies.error());
    return std::move(replies->front());
  }

  // EVALSHA, falling back to EVAL when the server does not know the script
  // (after a restart or SCRIPT FLUSH).
  Result<Reply> eval(Connection& connection, const Script& script, std::initializer_list<std::string_view> keys,
                     std::initializer_list<std::string_view> args, milliseconds timeout) {
    const std::string key_count = std::to_string(keys.size());
    Command command{"EVALSHA", script.sha, key_count};
    command.insert(command.end(), keys.begin(), keys.end());
    command.insert(command.end(), args.begin(), args.end());
    auto reply = connection.execute(command, timeout);
    if (reply && reply->is_error() && reply->text.rfind("NOSCRIPT", 0) == 0) {
      command[0] = "EVAL";
      command[1] = script.source;
      reply = connection.execute(command, timeout);
    }
    return reply;
  }

  Result<Reply> eval(const Script& script, std::initializer_list<std::string_view> keys,
                     std::initializer_list<std::string_view> args) {
    auto lease = borrow(Clock::now() + options.command_timeout);
    if (!lease) return unexpected(lease.error());
    return eval(**lease, script, keys, args, options.command_timeout);
  }

  bool closed() {
    std::lock_guard lock(mutex_);
    return closed_;
  }

  // Never called with mutex_ held: the sink may take its time or call back.
  void log(LogLevel level, const std::string& message) const {
    if (options.log) options.log(level, message);
  }

  // Whether a claim on queue should first move due delayed messages and
  // expired leases back to the list: always after an empty claim (the wait
  // that follows ends when the next one is due), else at most every 100 ms
  // per queue, which keeps that work off the busy path.
  bool sweep_due(std::string_view queue, bool after_empty_claim) {
    const auto now = Clock::now();
    std::lock_guard lock(sweep_mutex_);
    auto found = last_sweep_.find(queue);
    if (found == last_sweep_.end()) found = last_sweep_.emplace(std::string(queue), Clock::time_point()).first;
    if (!after_empty_claim && now - found->second < kSweepInterval) return false;
    found->second = now;
    return true;
  }

  // What a claim on queue may take beyond command_timeout: a claim of big
  // elements is slow on the server before its first byte comes back (Redis
  // spent 1.4 s on one of 64 MiB here) and the client cannot know their size
  // beforehand, so a claim that timed out after it was sent doubles the
  // queue's allowance (from 1 s, at most kMaxClaimAllowance) for the claims
  // after it. The element it may have taken comes back when its lease ends.
  milliseconds claim_allowance(std::string_view queue) {
    std::lock_guard lock(sweep_mutex_);
    auto found = claim_allowance_.find(queue);
    return found == claim_allowance_.end() ? milliseconds(0) : found->second;
  }

  milliseconds grow_claim_allowance(std::string_view queue) {
    std::lock_guard lock(sweep_mutex_);
    auto found = claim_allowance_.find(queue);
    if (found == claim_allowance_.end()) found = claim_allowance_.emplace(std::string(queue), milliseconds(0)).first;
    found->second = std::clamp(found->second * 2, milliseconds(1000), kMaxClaimAllowance);
    return found->second;
  }

  void close(milliseconds deadline) {
    std::vector<Pooled> idle;
    {
      std::unique_lock lock(mutex_);
      if (!closed_) {
        closed_ = true;
        for (Connection* connection : busy_) connection->interrupt();
        idle.swap(idle_);
        open_ -= idle.size();
        available_.notify_all();
      }
      available_.wait_for(lock, deadline, [&] { return open_ == 0; });
    }
  }

 private:
  std::mutex mutex_;
  std::condition_variable available_;
  std::vector<Pooled> idle_;           // guarded by mutex_
  std::set<Connection*> busy_;         // guarded by mutex_
  std::size_t open_ = 0;               // idle + busy + being opened; guarded by mutex_
  bool closed_ = false;                // guarded by mutex_
  std::uint64_t generation_ = 0;       // guarded by mutex_
  Clock::time_point next_connect_;     // reconnect back-off; guarded by mutex_
  std::int64_t connect_failures_ = 0;  // consecutive; guarded by mutex_
  bool connected_before_ = false;      // guarded by mutex_
  bool reconnecting_ = false;          // a connection was lost or a connect failed; guarded by mutex_
  std::string last_connect_error_;     // guarded by mutex_
  std::mutex sweep_mutex_;
  std::map<std::string, Clock::time_point, std::less<>> last_sweep_;  // per queue; guarded by sweep_mutex_
  std::map<std::string, milliseconds, std::less<>> claim_allowance_;  // per queue; guarded by sweep_mutex_
};

namespace {

// An error reply as an ErrorInfo naming what was refused, with Redis's own
// error code (the reply's first word: OOM, WRONGTYPE, NOPERM, ...) kept and
// deciding whether the same command may succeed later: a full memory, a
// server loading its data or a read-only replica may pass; a key of the
// wrong type or a refused permission stays until someone changes it.
ErrorInfo refused(std::string_view what, std::string_view queue, const Reply& reply) {
  const std::string_view text = reply.text;
  const std::string native(text.substr(0, std::min(text.find(' '), text.size())));
  Errc code = Errc::broker;
  bool retriable = is_retriable(Errc::broker);
  if (native == "NOAUTH" || native == "NOPERM" || native == "WRONGPASS") {
    code = Errc::auth;
    retriable = false;
  } else if (native == "WRONGTYPE" || native == "EXECABORT") {
    retriable = false;
  }
  return ErrorInfo(code, "Redis refused " + std::string(what) + " on queue " + std::string(queue) + ": " + reply.text,
                   retriable)
      .with_native(native, reply.text);
}

std::string leases_key(std::string_view queue) { return std::string(queue).append(kLeasesSuffix); }
std::string delayed_key(std::string_view queue) { return std::string(queue).append(kDelayedSuffix); }

}  // namespace

redis::Transport::Transport(std::unique_ptr<State> state) : state_(std::move(state)) {}

redis::Transport::~Transport() { close(); }

const redis::Transport::Options& redis::Transport::options() const noexcept { return state_->options; }

Result<std::unique_ptr<redis::Transport>> redis::Transport::open(Options options) {
  if (options.host.empty()) return unexpected(Errc::invalid_argument, "the Redis host is empty");
  if (options.visibility_timeout.count() <= 0) {
    return unexpected(Errc::invalid_argument, "visibility_timeout must be positive");
  }
  if (options.connect_timeout.count() <= 0 || options.command_timeout.count() <= 0) {
    return unexpected(Errc::invalid_argument, "connect_timeout and command_timeout must be positive");
  }
  if (options.max_connections == 0) return unexpected(Errc::invalid_argument, "max_connections must be at least 1");
  if (options.max_message_size == 0) return unexpected(Errc::invalid_argument, "max_message_size must be at least 1");
  if (options.database < 0) return unexpected(Errc::invalid_argument, "the Redis database must be 0 or more");
  if (options.processing_suffix.empty() || options.processing_suffix == kLeasesSuffix ||
      options.processing_suffix == kDelayedSuffix) {
    return unexpected(Errc::invalid_argument, "processing_suffix must be non-empty and differ from " +
                                                  std::string(kLeasesSuffix) + " and " + std::string(kDelayedSuffix));
  }
  if (options.reconnect_backoff.initial.count() <= 0 || options.reconnect_backoff.max.count() <= 0) {
    return unexpected(Errc::invalid_argument, "reconnect_backoff's initial and max must be positive");
  }
  auto endpoint = redis_detail::endpoint_of(options);
  if (!endpoint) return unexpected(endpoint.error());
  auto state = std::make_unique<State>(std::move(options), std::move(*endpoint));
  {
    // Connect once now so that a wrong address, password or certificate is
    // reported by open(); the connection stays in the pool.
    auto first = state->borrow(Clock::now() + state->options.connect_timeout);
    if (!first) return unexpected(first.error());
  }
  return std::unique_ptr<redis::Transport>(new redis::Transport(std::move(state)));
}

Capabilities redis::Transport::capabilities() const {
  Capabilities caps;
  caps.headers = true;
  caps.native_delay = true;
  caps.native_release = true;
  caps.delivery_count = false;  // Redis lists keep no delivery count: the body's attempts is authoritative
  caps.redelivers_unsettled = true;
  caps.extendable_lease = true;
  caps.batch_publish = true;
  caps.ordered = true;
  caps.lease = state_->options.visibility_timeout;
  caps.peek = true;  // LRANGE on the list
  return caps;
}

ConnectionStats redis::Transport::connection_stats() const noexcept {
  return {"redis", state_->reconnects.load(std::memory_order_relaxed)};
}

Result<void> redis::Transport::publish(std::string_view queue, std::string_view body, const PublishOptions& options) {
  if (auto valid = check_queue(queue); !valid) return unexpected(valid.error());
  if (state_->closed()) return closed_error();
  auto element = redis_detail::frame(body, options.headers);
  if (!element) return unexpected(element.error());
  if (auto fits = check_size(queue, element->size(), state_->options.max_message_size); !fits) return fits;
  if (options.delay.count() > 0) {
    const std::string delayed = delayed_key(queue);
    const std::string member = state_->token_base() + hex(0, 8) + ":" + *element;
    const std::string delay_ms = std::to_string(options.delay.count());
    auto reply = state_->eval(delay_script(), {delayed}, {member, delay_ms});
    if (!reply) return unexpected(reply.error());
    if (reply->is_error()) return unexpected(refused("a delayed publish", queue, *reply));
    return {};
  }
  auto reply = state_->execute(Command{"RPUSH", queue, *element});
  if (!reply) return unexpected(reply.error());
  if (reply->is_error()) return unexpected(refused("RPUSH", queue, *reply));
  return {};
}

Result<void> redis::Transport::publish_batch(std::span<const OutgoingMessage> messages) {
  if (state_->closed()) return closed_error();
  for (const OutgoingMessage& message : messages) {
    if (auto valid = check_queue(message.queue); !valid) return unexpected(valid.error());
  }
  std::size_t published = 0;
  std::string wire;
  for (std::size_t start = 0; start < messages.size(); start += kBatchChunk) {
    const auto chunk = messages.subspan(start, std::min(kBatchChunk, messages.size() - start));
    // The whole chunk goes out in one write, in the wire form; a message
    // without headers is copied once, straight from its body.
    wire.clear();
    std::size_t commands = 0;
    const bool any_delayed =
        std::any_of(chunk.begin(), chunk.end(), [](const OutgoingMessage& m) { return m.options.delay.count() > 0; });
    if (any_delayed) {
      const std::array<std::string_view, 3> load{"SCRIPT", "LOAD", delay_script().source};
      redis_detail::append_command(wire, load);
      ++commands;
    }
    for (std::size_t i = 0; i < chunk.size(); ++i) {
      const OutgoingMessage& message = chunk[i];
      std::string framed;
      std::string_view element = message.body;
      if (!message.options.headers.empty()) {
        auto made = redis_detail::frame(message.body, message.options.headers);
        if (!made) {
          return unexpected(made.error().code(), "message " + std::to_string(start + i) +
                                                     " of the batch: " + made.error().message() + "; " +
                                                     std::to_string(published) + " published before it");
        }
        framed = std::move(*made);
        element = framed;
      }
      if (auto fits = check_size(message.queue, element.size(), state_->options.max_message_size); !fits) {
        return unexpected(fits.error().code(), "message " + std::to_string(start + i) +
                                                   " of the batch: " + fits.error().message() + "; " +
                                                   std::to_string(published) + " published before it");
      }
      if (message.options.delay.count() > 0) {
        const std::string key = delayed_key(message.queue);
        const std::string member = state_->token_base() + hex(0, 8) + ":" + std::string(element);
        const std::string delay_ms = std::to_string(message.options.delay.count());
        const std::array<std::string_view, 6> eval{"EVALSHA", delay_script().sha, "1", key, member, delay_ms};
        redis_detail::append_command(wire, eval);
      } else {
        const std::array<std::string_view, 3> push{"RPUSH", message.queue, element};
        redis_detail::append_command(wire, push);
      }
      ++commands;
    }
    auto replies = state_->execute_formatted(wire, commands);
    if (!replies) {
      return unexpected(
          replies.error().with_message(replies.error().message() + " (publish_batch: " + std::to_string(published) +
                                       " of " + std::to_string(messages.size()) + " messages confirmed; the next " +
                                       std::to_string(chunk.size()) + " may or may not have been published)"));
    }
    // A refused SCRIPT LOAD shows in the answers of the delayed messages
    // (NOSCRIPT), which name the message; the others were published.
    const std::size_t first = any_delayed ? 1 : 0;
    for (std::size_t i = 0; i < chunk.size(); ++i) {
      const Reply& reply = (*replies)[first + i];
      if (reply.is_error()) {
        const ErrorInfo why = refused("a publish", chunk[i].queue, reply);
        return unexpected(why.with_message("message " + std::to_string(start + i) + " of the batch: " + why.message() +
                                           "; " + std::to_string(published) + " published before it"));
      }
      ++published;
    }
  }
  return {};
}

Result<std::vector<Delivery>> redis::Transport::receive(std::string_view queue, std::size_t max,
                                                        std::chrono::milliseconds wait) {
  if (auto valid = check_queue(queue); !valid) return unexpected(valid.error());
  if (max == 0) return unexpected(Errc::invalid_argument, "receive needs max >= 1");
  if (state_->closed()) return closed_error();
  const Options& options = state_->options;
  const auto deadline = Clock::now() + std::clamp(wait, milliseconds(0), milliseconds(std::chrono::hours(24)));
  const std::string leases = leases_key(queue);
  const std::string delayed = delayed_key(queue);
  max = std::min(max, kMaxClaim);
  const std::string count = std::to_string(max);
  const std::string visibility = std::to_string(options.visibility_timeout.count());

  auto lease = state_->borrow(deadline + options.command_timeout);
  if (!lease) return unexpected(lease.error());
  bool swept_nothing = false;  // the previous claim found the list empty
  for (;;) {
    const std::string base = state_->token_base();
    const bool sweep = state_->sweep_due(queue, swept_nothing);
    // Before the script runs, so the lease it grants ends no earlier.
    const auto lease_deadline = Clock::now() + options.visibility_timeout;
    // Looking further ahead than the wait left is of no use.
    const auto left =
        std::max<std::int64_t>(0, std::chrono::duration_cast<milliseconds>(deadline - Clock::now()).count());
    const std::string horizon = std::to_string(std::min<std::int64_t>(left, 3'600'000));
    auto claimed = state_->eval(**lease, claim_script(), {queue, leases, delayed},
                                {count, visibility, base, kMoveLimit, sweep ? "1" : "0", horizon},
                                options.command_timeout + state_->claim_allowance(queue));
    if (!claimed) {
      if (claimed.error().code() == Errc::outcome_unknown) {
        const milliseconds allowance = state_->grow_claim_allowance(queue);
        return unexpected(
            claimed.error().with_message(claimed.error().message() + "; a claim of big messages is slow: claims on " +
                                         std::string(queue) + " now wait " + std::to_string(allowance.count()) +
                                         " ms more, and a message this one took comes back when its lease ends"));
      }
      return unexpected(claimed.error());
    }
    if (claimed->is_error()) return unexpected(refused("a receive", queue, *claimed));
    const auto& elements = claimed->elements;
    if (claimed->type != Reply::Type::array || elements.empty() || elements[0].type != Reply::Type::integer) {
      return unexpected(Errc::broker, "unexpected answer of the Redis receive script on queue " + std::string(queue));
    }
    if (elements.size() > 1) {
      std::vector<Delivery> deliveries;
      deliveries.reserve(elements.size() - 1);
      for (std::size_t i = 1; i < elements.size(); ++i) {
        const std::string& element = elements[i].text;
        redis_detail::Unframed unframed = redis_detail::unframe(element);
        Delivery delivery;
        delivery.queue = std::string(queue);
        delivery.body = std::move(unframed.body);
        delivery.headers = std::move(unframed.headers);
        delivery.token.id = i;
        delivery.token.text.reserve(redis_detail::kTokenLength + 1 + element.size());
        delivery.token.text.append(base).append(hex(i, 8)).append(":").append(element);
        delivery.lease_deadline = lease_deadline;
        deliveries.push_back(std::move(delivery));
      }
      return deliveries;
    }
    swept_nothing = true;
    const auto now = Clock::now();
    if (now >= deadline) return std::vector<Delivery>{};
    // Wait until the list has an element, without taking it: moving the head
    // of a list onto its own head changes nothing, so an interrupted or lost
    // wait loses nothing. A due delayed message or an expiring lease ends
    // the wait early, so the claim script can move it.
    auto block = std::chrono::duration_cast<milliseconds>(deadline - now);
    if (elements[0].integer >= 0) block = std::min(block, milliseconds(elements[0].integer));
    block = std::max(block, milliseconds(1));
    const std::string timeout = seconds_text(block);
    auto woken =
        (*lease)->execute(Command{"BLMOVE", queue, queue, "LEFT", "LEFT", timeout}, options.command_timeout + block);
    if (!woken) return unexpected(woken.error());
    if (woken->is_error()) return unexpected(refused("a blocking wait", queue, *woken));
  }
}

Result<void> redis::Transport::ack(const Delivery& delivery) {
  auto member = lease_member(delivery);
  if (!member) return unexpected(member.error());
  if (state_->closed()) return closed_error();
  const std::string leases = leases_key(delivery.queue);
  auto reply = state_->execute(Command{"ZREM", leases, *member});
  if (!reply) return unexpected(reply.error());
  if (reply->is_error()) return unexpected(refused("an ack", delivery.queue, *reply));
  if (reply->integer != 1) {
    return unexpected(Errc::not_found, "the message of queue " + delivery.queue +
                                           " is no longer reserved by this delivery (its lease expired and it went "
                                           "back to the queue, or it was settled already)");
  }
  return {};
}

Result<void> redis::Transport::release(const Delivery& delivery, std::chrono::milliseconds delay) {
  auto member = lease_member(delivery);
  if (!member) return unexpected(member.error());
  const std::string leases = leases_key(delivery.queue);
  const std::string delayed = delayed_key(delivery.queue);
  const std::string delay_ms = std::to_string(std::max<std::int64_t>(0, delay.count()));
  auto reply = state_->eval(release_script(), {delivery.queue, leases, delayed}, {*member, delay_ms});
  if (!reply) return unexpected(reply.error());
  if (reply->is_error()) return unexpected(refused("a release", delivery.queue, *reply));
  if (reply->integer != 1) {
    return unexpected(Errc::not_found, "the message of queue " + delivery.queue +
                                           " is no longer reserved by this delivery; nothing was released");
  }
  return {};
}

Result<void> redis::Transport::extend(const Delivery& delivery, std::chrono::milliseconds lease) {
  auto member = lease_member(delivery);
  if (!member) return unexpected(member.error());
  if (lease.count() <= 0) return unexpected(Errc::invalid_argument, "extend needs a positive lease");
  const std::string leases = leases_key(delivery.queue);
  const std::string lease_ms = std::to_string(lease.count());
  auto reply = state_->eval(extend_script(), {leases}, {*member, lease_ms});
  if (!reply) return unexpected(reply.error());
  if (reply->is_error()) return unexpected(refused("a lease extension", delivery.queue, *reply));
  if (reply->integer != 1) {
    return unexpected(Errc::not_found, "the message of queue " + delivery.queue +
                                           " is no longer reserved by this delivery; its lease was not extended");
  }
  return {};
}

Result<QueueStats> redis::Transport::stats(std::string_view queue) {
  if (auto valid = check_queue(queue); !valid) return unexpected(valid.error());
  const std::string leases = leases_key(queue);
  const std::string delayed = delayed_key(queue);
  const std::string processing = std::string(queue) + state_->options.processing_suffix;
  const std::array<Command, 4> commands{Command{"LLEN", queue}, Command{"ZCARD", leases}, Command{"ZCARD", delayed},
                                        Command{"LLEN", processing}};
  auto replies = state_->execute(commands);
  if (!replies) return unexpected(replies.error());
  for (const Reply& reply : *replies) {
    if (reply.is_error()) return unexpected(refused("stats", queue, reply));
  }
  QueueStats stats;
  stats.ready = (*replies)[0].integer;
  stats.reserved = (*replies)[1].integer + (*replies)[3].integer;
  stats.delayed = (*replies)[2].integer;
  return stats;
}

Result<std::vector<PeekedMessage>> redis::Transport::peek(std::string_view queue, std::size_t max) {
  if (auto valid = check_queue(queue); !valid) return unexpected(valid.error());
  if (max == 0) return unexpected(Errc::invalid_argument, "peek needs max >= 1");
  // The head of the list is what the next claim pops (LPOP): LRANGE reads
  // it and changes nothing.
  const std::string last = std::to_string(std::min(max, kMaxClaim) - 1);
  auto reply = state_->execute(Command{"LRANGE", queue, "0", last});
  if (!reply) return unexpected(reply.error());
  if (reply->is_error()) return unexpected(refused("peek", queue, *reply));
  std::vector<PeekedMessage> shown;
  shown.reserve(reply->elements.size());
  for (const Reply& element : reply->elements) {
    redis_detail::Unframed unframed = redis_detail::unframe(element.text);
    shown.push_back(PeekedMessage{std::move(unframed.body), std::move(unframed.headers), std::nullopt});
  }
  return shown;
}

void redis::Transport::close(std::chrono::milliseconds deadline) { state_->close(deadline); }

Result<redis::Transport::Options> redis::Transport::options_from_url(const Url& url) {
  if (url.scheme != "redis" && url.scheme != "rediss") {
    return unexpected(Errc::invalid_argument, "not a redis:// or rediss:// URL: " + url.redacted());
  }
  Options options;
  if (url.host.find(',') != std::string::npos) {
    return unexpected(Errc::invalid_argument, "redis:// takes one host, not " + url.host);
  }
  if (!url.host.empty()) options.host = url.host;
  if (url.port) options.port = *url.port;
  options.user = url.user;
  options.password = url.password;
  if (!url.path.empty()) {
    int database = -1;
    const auto* end = url.path.data() + url.path.size();
    const auto parsed = std::from_chars(url.path.data(), end, database);
    if (parsed.ec != std::errc() || parsed.ptr != end || database < 0) {
      return unexpected(Errc::invalid_argument,
                        "the path of a redis:// URL is the database number, not '" + url.path + "'");
    }
    options.database = database;
  }
  options.tls.enabled = url.scheme == "rediss";
  constexpr milliseconds kMin(1);
  constexpr std::chrono::hours kHour(1);
  UrlOptionReader read(url);
  read.duration("visibility_timeout", options.visibility_timeout, {.min = kMin});
  read.duration("connect_timeout", options.connect_timeout, {.min = kMin, .max = kHour});
  read.duration("command_timeout", options.command_timeout, {.min = kMin, .max = kHour});
  read.integer("max_connections", options.max_connections, 1, 1024);
  read.integer("max_message_size", options.max_message_size, 1, std::numeric_limits<std::int64_t>::max());
  read.text("processing_suffix", options.processing_suffix);
  read.duration("reconnect_min", options.reconnect_backoff.initial, {.min = kMin, .max = kHour});
  read.duration("reconnect_max", options.reconnect_backoff.max, {.min = kMin, .max = kHour}, {"reconnect_backoff_max"});
  read.tls(options.tls, "rediss://");
  if (auto done = read.finish(); !done) return unexpected(done.error());
  return options;
}

namespace redis {

void register_transport() {
  const TransportFactory factory = url_factory<redis::Transport>();
  babelqueue::register_transport("redis", factory);
  babelqueue::register_transport("rediss", factory);
}

}  // namespace redis
}  // namespace babelqueue
