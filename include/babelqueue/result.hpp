// SPDX-License-Identifier: Apache-2.0
// Result<T>: a value or an ErrorInfo, shaped like std::expected<T, ErrorInfo>
// (C++23) so it can become an alias once the SDK moves to C++23 — with its
// composition: and_then, transform, or_else, transform_error, value_or.
//
//   auto id = babelqueue::Envelope::make(urn, data)
//                 .and_then([&](const Envelope& e) { return publish(e); })
//                 .transform([](const Receipt& r) { return r.id; })
//                 .value_or("");
//
// value() throws babelqueue::Error when the result holds an error, so code that
// prefers exceptions can write `auto env = decode(bytes).value();`.
#pragma once

#include <babelqueue/error.hpp>

#include <type_traits>
#include <utility>
#include <variant>

namespace babelqueue {

/// Tag type to build an error result: `return unexpected(Errc::io, "...")`.
template <class E = ErrorInfo>
struct Unexpected {
  E error;  ///< the error the result will hold
};

/// An error result under construction: `return unexpected(Errc::io, "...");`
/// or, with an error value already made, `return unexpected(std::move(info));`.
///@{
inline Unexpected<ErrorInfo> unexpected(Errc code, std::string message) {
  return Unexpected<ErrorInfo>{ErrorInfo(code, std::move(message))};
}
template <class E>
Unexpected<E> unexpected(E error) {
  return Unexpected<E>{std::move(error)};
}
///@}

/// How an error value becomes the exception value() throws. A custom error type
/// E provides `ErrorInfo to_error_info(const E&)` found by argument lookup.
inline const ErrorInfo& to_error_info(const ErrorInfo& info) noexcept { return info; }

template <class T, class E = ErrorInfo>
class Result;

namespace detail {
template <class R>
struct is_result : std::false_type {};
template <class T, class E>
struct is_result<Result<T, E>> : std::true_type {};
}  // namespace detail

/// A value of type T or an error of type E (ErrorInfo unless said otherwise),
/// shaped like C++23's std::expected.
template <class T, class E>
class [[nodiscard]] Result {
 public:
  using value_type = T;  ///< the type of the value

  /// A result holding the value, or the error: both implicit, so a function
  /// returns either directly.
  ///@{
  Result(T value) : state_(std::in_place_index<0>, std::move(value)) {}                // NOLINT: implicit by design
  Result(Unexpected<E> err) : state_(std::in_place_index<1>, std::move(err.error)) {}  // NOLINT
  ///@}

  /// A result holding a T made in place from args: no move of the value,
  /// for a function that builds a large value and returns the result by
  /// name.
  template <class... Args>
  explicit Result(std::in_place_t, Args&&... args) : state_(std::in_place_index<0>, std::forward<Args>(args)...) {}

  /// Whether the result holds a value (not an error).
  ///@{
  bool has_value() const noexcept { return state_.index() == 0; }
  explicit operator bool() const noexcept { return has_value(); }
  ///@}

  /// The value; throws babelqueue::Error with the error when there is none.
  ///@{
  T& value() & {
    throw_if_error();
    return std::get<0>(state_);
  }
  const T& value() const& {
    throw_if_error();
    return std::get<0>(state_);
  }
  T&& value() && {
    throw_if_error();
    return std::get<0>(std::move(state_));
  }
  ///@}

  /// The value, unchecked: only after has_value() said there is one.
  ///@{
  T& operator*() & noexcept { return *std::get_if<0>(&state_); }
  const T& operator*() const& noexcept { return *std::get_if<0>(&state_); }
  T* operator->() noexcept { return std::get_if<0>(&state_); }
  const T* operator->() const noexcept { return std::get_if<0>(&state_); }
  ///@}

  /// The error, unchecked: only when has_value() is false.
  ///@{
  const E& error() const& noexcept { return *std::get_if<1>(&state_); }
  E&& error() && noexcept { return std::move(*std::get_if<1>(&state_)); }
  ///@}

  /// The value, or fallback when the result holds an error.
  ///@{
  template <class U>
  T value_or(U&& fallback) const& {
    return has_value() ? std::get<0>(state_) : static_cast<T>(std::forward<U>(fallback));
  }
  template <class U>
  T value_or(U&& fallback) && {
    return has_value() ? std::get<0>(std::move(state_)) : static_cast<T>(std::forward<U>(fallback));
  }
  ///@}

  /// `f(value) -> Result<U, E>`, called only with a value; an error passes on.
  ///@{
  template <class F>
  auto and_then(F&& f) const& {
    using R = std::remove_cvref_t<std::invoke_result_t<F, const T&>>;
    static_assert(detail::is_result<R>::value, "and_then: the function must return a Result");
    if (!has_value()) return R(Unexpected<E>{error()});
    return std::forward<F>(f)(**this);
  }
  template <class F>
  auto and_then(F&& f) && {
    using R = std::remove_cvref_t<std::invoke_result_t<F, T&&>>;
    static_assert(detail::is_result<R>::value, "and_then: the function must return a Result");
    if (!has_value()) return R(Unexpected<E>{std::move(*this).error()});
    return std::forward<F>(f)(std::get<0>(std::move(state_)));
  }
  ///@}

  /// `f(value) -> U`: `Result<U, E>` holding f's value, or the same error.
  ///@{
  template <class F>
  auto transform(F&& f) const& {
    using U = std::remove_cvref_t<std::invoke_result_t<F, const T&>>;
    if (!has_value()) return Result<U, E>(Unexpected<E>{error()});
    if constexpr (std::is_void_v<U>) {
      std::forward<F>(f)(**this);
      return Result<U, E>();
    } else {
      return Result<U, E>(std::forward<F>(f)(**this));
    }
  }
  template <class F>
  auto transform(F&& f) && {
    using U = std::remove_cvref_t<std::invoke_result_t<F, T&&>>;
    if (!has_value()) return Result<U, E>(Unexpected<E>{std::move(*this).error()});
    if constexpr (std::is_void_v<U>) {
      std::forward<F>(f)(std::get<0>(std::move(state_)));
      return Result<U, E>();
    } else {
      return Result<U, E>(std::forward<F>(f)(std::get<0>(std::move(state_))));
    }
  }

  /// `f(error) -> Result<T, E2>`, called only with an error (to recover or
  /// replace it); a value passes on.
  template <class F>
  auto or_else(F&& f) const& {
    using R = std::remove_cvref_t<std::invoke_result_t<F, const E&>>;
    static_assert(detail::is_result<R>::value, "or_else: the function must return a Result");
    if (has_value()) return R(**this);
    return std::forward<F>(f)(error());
  }

  /// `f(error) -> E2`: `Result<T, E2>` with the error mapped, or the same value.
  template <class F>
  auto transform_error(F&& f) const& {
    using E2 = std::remove_cvref_t<std::invoke_result_t<F, const E&>>;
    if (has_value()) return Result<T, E2>(**this);
    return Result<T, E2>(Unexpected<E2>{std::forward<F>(f)(error())});
  }

 private:
  void throw_if_error() const {
    if (!has_value()) throw Error(to_error_info(std::get<1>(state_)));
  }

  std::variant<T, E> state_;
};

/// Result of an operation that yields no value.
template <>
class [[nodiscard]] Result<void, ErrorInfo> {
 public:
  /// Success, or the error (implicit, so a function returns it directly).
  ///@{
  Result() = default;
  Result(Unexpected<ErrorInfo> err) : error_(std::move(err.error)), failed_(true) {}  // NOLINT
  ///@}

  /// Whether the operation succeeded.
  ///@{
  bool has_value() const noexcept { return !failed_; }
  explicit operator bool() const noexcept { return has_value(); }
  ///@}
  /// Throws babelqueue::Error with the error when the operation failed.
  void value() const {
    if (failed_) throw Error(error_);
  }
  /// The error, unchecked: only when has_value() is false.
  const ErrorInfo& error() const noexcept { return error_; }

  /// `f() -> Result<U>`, called only on success; an error passes on.
  template <class F>
  auto and_then(F&& f) const {
    using R = std::remove_cvref_t<std::invoke_result_t<F>>;
    static_assert(detail::is_result<R>::value, "and_then: the function must return a Result");
    if (failed_) return R(Unexpected<ErrorInfo>{error_});
    return std::forward<F>(f)();
  }

  /// `f() -> U`: `Result<U>` holding f's value, or the same error.
  template <class F>
  auto transform(F&& f) const {
    using U = std::remove_cvref_t<std::invoke_result_t<F>>;
    if (failed_) return Result<U, ErrorInfo>(Unexpected<ErrorInfo>{error_});
    if constexpr (std::is_void_v<U>) {
      std::forward<F>(f)();
      return Result<U, ErrorInfo>();
    } else {
      return Result<U, ErrorInfo>(std::forward<F>(f)());
    }
  }

  /// `f(error) -> Result<void>`, called only on an error; success passes on.
  template <class F>
  auto or_else(F&& f) const {
    using R = std::remove_cvref_t<std::invoke_result_t<F, const ErrorInfo&>>;
    static_assert(detail::is_result<R>::value, "or_else: the function must return a Result");
    if (!failed_) return R();
    return std::forward<F>(f)(error_);
  }

  /// `f(error) -> ErrorInfo`: the error replaced (a message with more context).
  template <class F>
  Result transform_error(F&& f) const {
    if (!failed_) return {};
    return Result(Unexpected<ErrorInfo>{std::forward<F>(f)(error_)});
  }

 private:
  ErrorInfo error_{Errc::internal, {}};
  bool failed_ = false;
};

}  // namespace babelqueue
