// SPDX-License-Identifier: Apache-2.0
// DataWriter: a typed message writes its `data` straight into the envelope's
// canonical bytes, without building a Value tree first.
//
// Building the Value of a payload costs an allocation per string, array and
// object, several times what writing its bytes costs; a type that publishes
// often can instead write itself:
//
//   struct OrderCreated {
//     static constexpr std::string_view urn = "urn:babel:orders:created";
//     std::int64_t order_id = 0;
//     void write_data(babelqueue::DataWriter& out) const {
//       out.begin_object().member("order_id", order_id).end_object();
//     }
//   };
//
// The bytes are those the canonical writer makes of the equivalent Value
// (SPEC §3): members in the order written, the same numbers, strings and
// escapes. A mistake never reaches the wire: the first one (invalid UTF-8,
// NaN or an infinity, a duplicate key in one object, a value where a key is
// due or the reverse, an unbalanced end, nesting deeper than the envelope's
// limit, an unfinished document) is kept, every later call does nothing, and
// Envelope::make returns that error, so nothing is sent.
#pragma once

#include <babelqueue/error.hpp>

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <type_traits>

namespace babelqueue {

namespace detail {
class JsonOut;
struct DataWriterStacks;
}  // namespace detail

/// The character types: a character is not a number, nor a one-letter string.
template <class C>
concept CharacterType = std::same_as<C, char> || std::same_as<C, wchar_t> || std::same_as<C, char8_t> ||
    std::same_as<C, char16_t> || std::same_as<C, char32_t>;

/// The integer types DataWriter::value takes: every one but bool and the
/// character types.
template <class I>
concept DataInteger = std::integral<I> && !std::same_as<I, bool> && !CharacterType<I>;

/// The deepest nesting a decoder reads by default (DecodeOptions::max_depth),
/// the envelope's own object counting as the first level.
inline constexpr std::size_t kDefaultMaxDepth = 512;

/// Writes the `data` member of one envelope: made by Envelope::make and
/// handed to a typed message's write_data (WritesData).
class DataWriter {
 public:
  /// Containers nest this deep at most inside data (data itself is the
  /// first): the envelope around them must still decode with the default
  /// DecodeOptions.
  static constexpr std::size_t kMaxDepth = kDefaultMaxDepth - 1;

  DataWriter(const DataWriter&) = delete;
  DataWriter& operator=(const DataWriter&) = delete;

  /// Opens and closes an object or an array. data itself is an object: the
  /// first call is begin_object().
  ///@{
  DataWriter& begin_object();
  DataWriter& end_object();
  DataWriter& begin_array();
  DataWriter& end_array();
  ///@}

  /// The next member's key, inside an object; its value follows.
  DataWriter& key(std::string_view name);

  /// A value: in an array, after a key in an object.
  ///@{
  DataWriter& value(std::nullptr_t);
  DataWriter& value(double number);  ///< NaN and infinities are errors
  DataWriter& value(std::string_view text);
  /// A null pointer is an error.
  DataWriter& value(const char* text) { return text != nullptr ? value(std::string_view(text)) : null_string(); }
  /// Only a bool itself: a pointer or a number never turns into true.
  template <std::same_as<bool> B>
  DataWriter& value(B flag) {
    return boolean(flag);
  }
  /// Any integer type, written exactly (signed as int64, unsigned as uint64),
  /// never through a double.
  template <DataInteger I>
  DataWriter& value(I number) {
    if constexpr (std::is_signed_v<I>) {
      return signed_integer(static_cast<std::int64_t>(number));
    } else {
      return unsigned_integer(static_cast<std::uint64_t>(number));
    }
  }
  /// A character does not compile: write it as a string or as a number.
  template <CharacterType C>
  DataWriter& value(C) = delete;
  /// The value, or null when empty.
  template <class T>
  DataWriter& value(const std::optional<T>& maybe) {
    return maybe ? value(*maybe) : value(nullptr);
  }
  ///@}

  /// An object member: key(name) then value(v). A scalar member is written
  /// by one call instead of two: most of data is members.
  template <class V>
  DataWriter& member(std::string_view name, const V& v) {
    if constexpr (std::same_as<V, bool>) {
      return bool_member(name, v);
    } else if constexpr (DataInteger<V> && std::is_signed_v<V>) {
      return signed_member(name, static_cast<std::int64_t>(v));
    } else if constexpr (DataInteger<V>) {
      return unsigned_member(name, static_cast<std::uint64_t>(v));
    } else if constexpr (std::floating_point<V>) {
      return double_member(name, static_cast<double>(v));
    } else if constexpr (!std::is_pointer_v<V> && !std::same_as<V, std::nullptr_t> &&
                         std::is_convertible_v<const V&, std::string_view>) {
      return string_member(name, std::string_view(v));
    } else {
      key(name);
      return value(v);
    }
  }

  /// Whether a mistake was made; its error is what Envelope::make returns.
  ///@{
  bool failed() const noexcept { return error_.has_value(); }
  const std::optional<ErrorInfo>& error() const noexcept { return error_; }
  ///@}

  /// What may come next; one byte, so that most calls test one thing.
  enum class State : std::uint8_t {
    start,       ///< nothing written: data's begin_object() is due
    first_key,   ///< in an empty object: a key
    next_key,    ///< in an object: ',' and a key, or its end
    value,       ///< in an object, after a key: its value
    first_item,  ///< in an empty array: a value or its end
    next_item,   ///< in an array: ',' and a value, or its end
    done,        ///< data's object is closed: nothing more
    failed,      ///< a mistake was made: nothing more
  };

 private:
  friend class EnvelopeBuilder;
  DataWriter(detail::JsonOut& out, detail::DataWriterStacks& stacks) noexcept;
  /// The error of the whole document: the first mistake, or an unfinished one.
  std::optional<ErrorInfo> finish();

  DataWriter& boolean(bool flag);
  /// The members member() writes in one call.
  ///@{
  DataWriter& bool_member(std::string_view name, bool flag);
  DataWriter& signed_member(std::string_view name, std::int64_t number);
  DataWriter& unsigned_member(std::string_view name, std::uint64_t number);
  DataWriter& double_member(std::string_view name, double number);
  DataWriter& string_member(std::string_view name, std::string_view text);
  ///@}
  /// Writes a key where one is due; false after a mistake.
  bool write_key(std::string_view name);
  /// Whether the open object has the key whose token lies at offset already.
  bool seen(std::uint32_t offset, std::uint32_t size) const;
  DataWriter& signed_integer(std::int64_t number);
  DataWriter& unsigned_integer(std::uint64_t number);
  /// Checks that a value (of this kind, for the message) may come now and
  /// writes the ',' before it; false after a mistake.
  bool before_value(std::string_view kind);
  bool misplaced_value(std::string_view kind);
  DataWriter& open(char bracket, bool object);
  DataWriter& close(char bracket, bool object);
  DataWriter& misplaced_key(std::string_view name);
  DataWriter& duplicate_key(std::string_view name);
  DataWriter& misplaced_end(bool object);
  DataWriter& null_string();
  void fail(Errc code, std::string message);
  void fail(ErrorInfo error);

  detail::JsonOut& out_;
  detail::DataWriterStacks& stacks_;
  std::optional<ErrorInfo> error_;
  std::uint32_t first_key_ = 0;  ///< where the open object's keys begin on the stack
  std::uint64_t key_bits_ = 0;   ///< one bit per key of the open object, of its size and head
  State state_ = State::start;
};

/// A typed message that writes its own data (see above). It may also be a
/// TypedMessage: Envelope::make prefers write_data, and a handler still
/// reads the data with from_value. write_data alone is enough to publish;
/// a handler (Worker::handle<T>) needs from_value and to_value as well.
template <class T>
concept WritesData = requires(const T& message, DataWriter& out) {
  { T::urn } -> std::convertible_to<std::string_view>;
  message.write_data(out);
};

}  // namespace babelqueue
