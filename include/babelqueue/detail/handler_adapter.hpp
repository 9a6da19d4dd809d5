// SPDX-License-Identifier: Apache-2.0
// How Worker::handle() takes any callable: the return types it accepts, a
// move-only callable, and typed handlers of one or two arguments. Internal.
#pragma once

#include <babelqueue/handler_outcome.hpp>
#include <babelqueue/message.hpp>
#include <babelqueue/middleware.hpp>
#include <babelqueue/result.hpp>
#include <babelqueue/typed_message.hpp>

#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>

namespace babelqueue::detail {

// A returned outcome other than ack travels to the Worker as an exception,
// through whatever middleware is on the way.
inline Result<void> apply_returned_outcome(HandlerOutcome outcome) {
  if (outcome.kind() != HandlerOutcome::Kind::ack) throw OutcomeException(std::move(outcome));
  return {};
}

// handler(const Message&) returning void, Result<void> or HandlerOutcome,
// copyable or move-only (it is kept behind a shared pointer; the Worker calls
// it from every handler thread, as it would a std::function).
template <class F>
MessageHandler make_handler(F&& handler) {
  using Fn = std::decay_t<F>;
  static_assert(std::is_invocable_v<Fn&, const Message&>, "a handler is called as handler(const babelqueue::Message&)");
  using R = std::invoke_result_t<Fn&, const Message&>;
  static_assert(
      std::is_void_v<R> || std::is_same_v<std::decay_t<R>, HandlerOutcome> || std::is_convertible_v<R, Result<void>>,
      "a handler returns void, babelqueue::Result<void> or babelqueue::HandlerOutcome");
  auto shared = std::make_shared<Fn>(std::forward<F>(handler));
  return [shared](const Message& message) -> Result<void> {
    if constexpr (std::is_void_v<R>) {
      (*shared)(message);
      return {};
    } else if constexpr (std::is_same_v<std::decay_t<R>, HandlerOutcome>) {
      return apply_returned_outcome((*shared)(message));
    } else {
      return (*shared)(message);
    }
  };
}

// handler(const T&) or handler(const T&, const Message&) for a typed message:
// a payload that does not convert to T is an invalid payload, dead-lettered
// at once (it would fail the same way every time).
template <TypedMessage T, class F>
MessageHandler make_typed_handler(F&& handler) {
  using Fn = std::decay_t<F>;
  constexpr bool with_message = std::is_invocable_v<Fn&, const T&, const Message&>;
  constexpr bool alone = std::is_invocable_v<Fn&, const T&>;
  static_assert(with_message || alone,
                "a typed handler is called as handler(const T&) or handler(const T&, const babelqueue::Message&)");
  auto shared = std::make_shared<Fn>(std::forward<F>(handler));
  return make_handler([shared](const Message& message) {
    std::optional<T> value;
    try {
      value.emplace(message.envelope().template data_as<T>());
    } catch (const std::exception& e) {
      throw OutcomeException(
          HandlerOutcome::dead_letter("invalid payload for " + std::string(T::urn) + ": " + e.what()));
    }
    if constexpr (with_message) {
      return (*shared)(*value, message);
    } else {
      return (*shared)(*value);
    }
  });
}

}  // namespace babelqueue::detail
