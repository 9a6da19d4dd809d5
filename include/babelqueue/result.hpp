// Result<T>: a value or an ErrorInfo, shaped like std::expected<T, ErrorInfo>
// (C++23) so it can become an alias once the SDK moves to C++23.
//
// value() throws babelqueue::Error when the result holds an error, so code that
// prefers exceptions can write `auto env = decode(bytes).value();`.
#pragma once

#include <babelqueue/error.hpp>

#include <type_traits>
#include <utility>
#include <variant>

namespace babelqueue {

// Tag type to build an error result: `return unexpected(Errc::io, "...")`.
template <class E = ErrorInfo>
struct Unexpected {
  E error;
};

inline Unexpected<ErrorInfo> unexpected(Errc code, std::string message) {
  return Unexpected<ErrorInfo>{ErrorInfo(code, std::move(message))};
}
template <class E>
Unexpected<E> unexpected(E error) {
  return Unexpected<E>{std::move(error)};
}

// How an error value becomes the exception value() throws. A custom error type
// E provides `ErrorInfo to_error_info(const E&)` found by argument lookup.
inline const ErrorInfo& to_error_info(const ErrorInfo& info) noexcept { return info; }

template <class T, class E = ErrorInfo>
class [[nodiscard]] Result {
 public:
  using value_type = T;

  Result(T value) : state_(std::in_place_index<0>, std::move(value)) {}                // NOLINT: implicit by design
  Result(Unexpected<E> err) : state_(std::in_place_index<1>, std::move(err.error)) {}  // NOLINT

  bool has_value() const noexcept { return state_.index() == 0; }
  explicit operator bool() const noexcept { return has_value(); }

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

  T& operator*() & noexcept { return *std::get_if<0>(&state_); }
  const T& operator*() const& noexcept { return *std::get_if<0>(&state_); }
  T* operator->() noexcept { return std::get_if<0>(&state_); }
  const T* operator->() const noexcept { return std::get_if<0>(&state_); }

  const E& error() const& noexcept { return *std::get_if<1>(&state_); }
  E&& error() && noexcept { return std::move(*std::get_if<1>(&state_)); }

  template <class U>
  T value_or(U&& fallback) const& {
    return has_value() ? std::get<0>(state_) : static_cast<T>(std::forward<U>(fallback));
  }

 private:
  void throw_if_error() const {
    if (!has_value()) throw Error(to_error_info(std::get<1>(state_)));
  }

  std::variant<T, E> state_;
};

// Result of an operation that yields no value.
template <>
class [[nodiscard]] Result<void, ErrorInfo> {
 public:
  Result() = default;
  Result(Unexpected<ErrorInfo> err) : error_(std::move(err.error)), failed_(true) {}  // NOLINT

  bool has_value() const noexcept { return !failed_; }
  explicit operator bool() const noexcept { return has_value(); }
  void value() const {
    if (failed_) throw Error(error_);
  }
  const ErrorInfo& error() const noexcept { return error_; }

 private:
  ErrorInfo error_{Errc::internal, {}};
  bool failed_ = false;
};

}  // namespace babelqueue
