// SPDX-License-Identifier: Apache-2.0
#include <babelqueue/error.hpp>
#include <babelqueue/idempotency/middleware.hpp>
#include <babelqueue/release_delivery.hpp>

#include <condition_variable>
#include <map>
#include <mutex>
#include <string>
#include <thread>

namespace babelqueue::idempotency {

namespace {

// A claim's lease is renewed every third of it, so two renewals may fail
// before the claim can be taken over.
constexpr int kRenewalsPerLease = 3;

// The shortest hand-back delay: a holder's lease that is about to end is
// not worth a busy round trip through the broker.
constexpr std::chrono::milliseconds kMinHandBack{50};

std::string store_error(std::string_view doing, std::string_view id, const ErrorInfo& error) {
  std::string out = "idempotency store: ";
  out.append(doing).append(" of message ").append(id).append(" failed: ").append(error.message());
  return out;
}

}  // namespace

// Renews the claims of running handlers from one thread, started with the
// first claim and stopped with the middleware.
class Middleware::Renewer {
 public:
  Renewer(Store& store, std::chrono::milliseconds lease, LogSink log)
      : store_(store), lease_(lease), log_(std::move(log)) {}

  ~Renewer() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    changed_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

  void add(const std::string& token, std::string_view id) {
    std::lock_guard lock(mutex_);
    active_.emplace(token, std::string(id));
    if (!thread_.joinable()) thread_ = std::thread([this] { loop(); });
  }

  void remove(const std::string& token) {
    std::lock_guard lock(mutex_);
    active_.erase(token);
  }

 private:
  void loop() {
    const auto period = lease_ / kRenewalsPerLease;
    std::unique_lock lock(mutex_);
    while (!stopping_) {
      changed_.wait_for(lock, period, [&] { return stopping_; });
      if (stopping_) return;
      const auto due = active_;  // renewed outside the lock: a store call may take a while
      lock.unlock();
      for (const auto& [token, id] : due) {
        auto renewed = store_.renew(id, token, lease_);
        if (!renewed) {
          log(LogLevel::warning, store_error("renewing the claim", id, renewed.error()));
        } else if (!*renewed) {
          log(LogLevel::warning, "the claim of message " + id +
                                     " was lost while its handler ran (its lease passed, or the id was forgotten); "
                                     "another worker may run it too");
        }
      }
      lock.lock();
    }
  }

  void log(LogLevel level, const std::string& message) const {
    if (log_) log_(level, message);
  }

  Store& store_;
  const std::chrono::milliseconds lease_;
  const LogSink log_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::map<std::string, std::string> active_;  // token -> id
  bool stopping_ = false;
  std::thread thread_;
};

Middleware::Middleware(std::shared_ptr<Store> store, Options options)
    : store_(std::move(store)), options_(std::move(options)) {
  if (!store_) throw Error(Errc::invalid_argument, "the idempotency middleware needs a store");
  if (options_.claim && options_.claim_lease < std::chrono::milliseconds(kRenewalsPerLease)) {
    throw Error(Errc::invalid_argument, "the idempotency claim_lease must be at least 3 ms");
  }
  if (options_.claim) renewer_ = std::make_unique<Renewer>(*store_, options_.claim_lease, options_.log);
}

Middleware::~Middleware() = default;

Store& Middleware::store() noexcept { return *store_; }

Result<void> Middleware::handle(const Message& message, const MessageHandler& next) {
  const std::string_view id = message.id();
  if (id.empty()) return next(message);  // nothing to key on: fail open
  auto log = [this](const std::string& line) {
    if (options_.log) options_.log(LogLevel::warning, line);
  };

  if (!options_.claim) {
    auto seen = store_->seen(id);
    if (!seen) return unexpected(ErrorInfo(seen.error().code(), store_error("seen", id, seen.error())));
    if (*seen) return {};
    auto result = next(message);  // an exception passes through: the id stays unmarked
    if (result) {
      if (auto remembered = store_->remember(id); !remembered) log(store_error("remember", id, remembered.error()));
    }
    return result;
  }

  auto claim = store_->claim(id, options_.claim_lease);
  if (!claim) return unexpected(ErrorInfo(claim.error().code(), store_error("claim", id, claim.error())));
  switch (claim->state) {
    case ClaimState::done: return {};
    case ClaimState::in_flight: {
      const auto delay = claim->remaining.count() > 0 ? std::max(claim->remaining, kMinHandBack) : options_.claim_lease;
      throw ReleaseDelivery(delay, "message " + std::string(id) + " is being handled by another worker");
    }
    case ClaimState::acquired: break;
  }
  const std::string& token = claim->token;
  renewer_->add(token, id);
  Result<void> result;
  try {
    result = next(message);
  } catch (...) {
    renewer_->remove(token);
    if (auto abandoned = store_->abandon(id, token); !abandoned) log(store_error("abandon", id, abandoned.error()));
    throw;
  }
  renewer_->remove(token);
  if (result) {
    if (auto completed = store_->complete(id, token); !completed) log(store_error("remember", id, completed.error()));
  } else if (auto abandoned = store_->abandon(id, token); !abandoned) {
    log(store_error("abandon", id, abandoned.error()));
  }
  return result;
}

}  // namespace babelqueue::idempotency
