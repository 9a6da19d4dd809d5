// SPDX-License-Identifier: Apache-2.0
// The idempotency middleware (the family's ADR-0022, library babelqueue::idempotency):
// a message whose meta.id was handled already is acked without running its
// handler. Delivery stays at-least-once; the effect becomes once per id.
//
//   worker.use(std::make_shared<babelqueue::idempotency::Middleware>(store));
//
// The family's contract, which the conformance suite's `idempotency`
// sequences check on every store, with and without the claim:
//   - the key is meta.id verbatim (never trace_id);
//   - an id already remembered: the handler does not run, the message is acked;
//   - a handler that succeeds: its id is remembered;
//   - a handler that fails (error or exception): the id stays unmarked, and
//     the failure goes on to retry and dead-letter as usual;
//   - a message without a usable meta.id runs unguarded (fails open);
//   - Store::forget(id) lets the id run again.
// A store error before the handler fails the delivery (it is retried); a
// store error after a success is logged and ignored, since the effect
// happened (at worst the id runs again).
//
// Beyond the siblings, Options::claim (on by default): the id is claimed
// for claim_lease before the handler runs, the claim is renewed every third
// of that while it runs, and a second delivery of an id claimed elsewhere is
// handed back (ReleaseDelivery) after the rest of that claim's lease instead
// of running at the same time. A holder that dies stops renewing: its claim
// expires and the next delivery takes it over.
//
// Thread-safety: one middleware serves every handler thread of a worker
// (and several workers may share one).
#pragma once

#include <babelqueue/idempotency/store.hpp>
#include <babelqueue/log_sink.hpp>
#include <babelqueue/middleware.hpp>

#include <chrono>
#include <memory>
#include <tuple>
#include <type_traits>
#include <utility>

namespace babelqueue::idempotency {

/// How the idempotency middleware claims and logs.
struct Options {
  /// Claim each id while its handler runs (above). Off: the family's plain
  /// post-success seen-set, where two concurrent deliveries both run.
  bool claim = true;
  /// How long a claim lasts without renewal: how long a crashed holder's
  /// messages wait before another worker takes them over.
  std::chrono::milliseconds claim_lease{std::chrono::seconds(30)};
  /// Where lost claims and store errors after a success are logged.
  LogSink log = stderr_log_sink();
};

/// The idempotency middleware (this header's opening comment gives the
/// contract): a message whose meta.id was handled already is acked without
/// running its handler.
class Middleware final : public babelqueue::Middleware {
 public:
  /// Errc::invalid_argument Error for a null store or a claim_lease under 3 ms.
  explicit Middleware(std::shared_ptr<Store> store, Options options = {});
  ~Middleware() override;
  Middleware(const Middleware&) = delete;
  Middleware& operator=(const Middleware&) = delete;

  Result<void> handle(const Message& message, const MessageHandler& next) override;

  Store& store() noexcept;  ///< the store it keeps the ids in

 private:
  class Renewer;
  std::shared_ptr<Store> store_;
  Options options_;
  std::unique_ptr<Renewer> renewer_;
};

namespace detail {
/// handler(args...) as a Result<void>, whether it returns void or a Result.
template <class F, class... Args>
Result<void> call_as_result(F& handler, const Args&... args) {
  if constexpr (std::is_void_v<std::invoke_result_t<F&, const Args&...>>) {
    handler(args...);
    return {};
  } else {
    return handler(args...);
  }
}
}  // namespace detail

/// The same guard around one handler, for code that does not go through a
/// Worker's middleware or guards only some URNs: handler(const Message&) or
/// a typed handler(const T&, const Message&), returning void or Result<void>.
/// The result takes the same arguments and returns Result<void>.
///
///   worker.handle<OrderCreated>(babelqueue::idempotency::idempotent(store, charge_order));
template <class F>
auto idempotent(std::shared_ptr<Store> store, F handler, Options options = {}) {
  auto guard = std::make_shared<Middleware>(std::move(store), std::move(options));
  return [guard, f = std::move(handler)](const auto&... args) mutable -> Result<void> {
    static_assert(sizeof...(args) >= 1, "a handler takes the Message last");
    const Message& message = std::get<sizeof...(args) - 1>(std::forward_as_tuple(args...));
    return guard->handle(message, [&](const Message&) { return detail::call_as_result(f, args...); });
  };
}

}  // namespace babelqueue::idempotency
