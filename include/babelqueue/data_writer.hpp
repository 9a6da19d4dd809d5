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
  [[gnu::always_inline]] DataWriter& value(const char* text) {
    return text != nullptr ? value(std::string_view(text)) : null_string();
  }
  /// Only a bool itself: a pointer or a number never turns into true.
  template <std::same_as<bool> B>
  [[gnu::always_inline]] DataWriter& value(B flag) {
    return boolean(flag);
  }
  /// Any integer type, written exactly (signed as int64, unsigned as uint64),
  /// never through a double.
  template <DataInteger I>
  [[gnu::always_inline]] DataWriter& value(I number) {
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
  [[gnu::always_inline]] DataWriter& value(const std::optional<T>& maybe) {
    return maybe ? value(*maybe) : value(nullptr);
  }
  ///@}

  /// An object member: key(name) then value(v). A scalar member is written
  /// by one call instead of two: most of data is members. Like every call
  /// of a token, inlined into the caller (detail/data_writer_inline.hpp).
  template <class V>
  [[gnu::always_inline]] DataWriter& member(std::string_view name, const V& v) {
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
  friend struct detail::DataWriterStacks;

  // The calls a payload makes by the hundred (keys, members, values, the
  // brackets) are inline (detail/data_writer_inline.hpp): a call into the
  // library per token, each loading and storing the write position, cost
  // more than the token's bytes. Only the rare paths are out of line: a
  // mistake, a grown buffer or stack, a string that needs escapes or a UTF-8
  // check or is 16 bytes or longer, a double, an integer of three digits or
  // more, a key whose duplicate check needs a look at the others.

  /// The container around an open one: the bits of its keys, where its keys
  /// begin on the key stack, and what may come in it once the inner one is
  /// closed.
  struct Level {
    std::uint64_t key_bits = 0;
    std::uint32_t first_key = 0;
    State state = State::done;
  };
  /// A key token of an open object, where it lies in the output (offsets,
  /// which a grown buffer keeps): canonical escaping is one-to-one, so equal
  /// tokens are equal keys.
  struct KeyToken {
    std::uint32_t offset = 0;
    std::uint32_t size = 0;
  };

  DataWriter(detail::JsonOut& out, detail::DataWriterStacks& stacks) noexcept;
  /// The error of the whole document: the first mistake, or an unfinished
  /// one. Hands the write position back to the envelope's writer.
  std::optional<ErrorInfo> finish();

  // The tokens of a call are written from a position p it keeps in a
  // register, passed to and returned by these, and stored in cur_ once per
  // call: a byte stored through a char pointer may be any object, the
  // writer's own members included, so cur_ would otherwise be stored and
  // loaded again around every token, each waiting for the one before. They
  // return the position after the token, or nullptr after a mistake (kept,
  // the state failed). lead is a byte before the token (a ','), trail one
  // after it (a key's ':'), each skipped when 0.
  ///@{
  /// At least n writable bytes at p (the buffer may move: p moves with it).
  char* room_at(char* p, std::size_t n);
  char* grow_at(char* p, std::size_t n);
  /// A key where one is due, its state left to the caller.
  char* key_at(char* p, std::string_view name);
  char* string_at(char* p, std::string_view text, char lead, char trail);
  char* string_slow_at(char* p, std::string_view text, char lead, char trail);
  char* integer_at(char* p, std::int64_t number, char lead);
  char* integer_slow_at(char* p, std::int64_t number, char lead);
  char* unsigned_at(char* p, std::uint64_t number, char lead);
  char* unsigned_slow_at(char* p, std::uint64_t number, char lead);
  char* double_at(char* p, double number, char lead);
  char* literal_at(char* p, std::string_view text, char lead);
  ///@}
  /// Where a value may come now: the byte it needs before it (',', or 0 for
  /// none), the state moved past it. Elsewhere -1, the mistake kept.
  int before_value(std::string_view kind);
  bool misplaced_value(std::string_view kind);
  /// Whether the key token just written is new in its object, its bit being
  /// taken: the object's other keys are compared. A duplicate is a mistake.
  bool taken_key_is_new(std::string_view name, KeyToken token);

  DataWriter& boolean(bool flag);
  DataWriter& signed_integer(std::int64_t number);
  DataWriter& unsigned_integer(std::uint64_t number);
  /// The members member() writes in one call.
  ///@{
  DataWriter& bool_member(std::string_view name, bool flag);
  DataWriter& signed_member(std::string_view name, std::int64_t number);
  DataWriter& unsigned_member(std::string_view name, std::uint64_t number);
  DataWriter& double_member(std::string_view name, double number);
  DataWriter& string_member(std::string_view name, std::string_view text);
  ///@}
  /// Opens a container where a value may come (inside: the state in it).
  DataWriter& open(char bracket, State inside, std::string_view kind);
  /// data's own object (the first call), or a container where none may come.
  DataWriter& open_rare(char bracket, State inside, std::string_view kind);
  /// Opens a container: keeps the one around it (after: what may come in
  /// it once this one is closed), then writes lead and the bracket.
  void push(char lead, char bracket, State after, State inside);
  bool grow_levels();
  void grow_keys();
  DataWriter& close(char bracket, bool object);
  DataWriter& misplaced_key(std::string_view name);
  DataWriter& misplaced_end(bool object);
  DataWriter& null_string();
  void fail(Errc code, std::string message);
  void fail(ErrorInfo error);
  /// Takes the write position from out_ after it wrote (and maybe grew).
  void take_position() noexcept;
  /// The out-of-line tokens (the *_slow_at calls and double_at): write(out_)
  /// writes the token at p after lead and says how it went.
  template <class Write>
  char* write_through_out(char* p, char lead, Write write);

  detail::JsonOut& out_;
  detail::DataWriterStacks& stacks_;
  // The output: kept here, not asked of out_, so an inline call reaches it
  // without a call. out_ has it back around each out-of-line write.
  char* base_;   ///< the buffer's first byte: key tokens are offsets from it
  char* cur_;    ///< the next byte to write
  char* limit_;  ///< the end of the buffer
  // The stacks' storage (their sizes are their capacities, kept between
  // messages), as pointers for the same reason.
  Level* levels_;                ///< the bottom of the stack of open containers
  Level* level_;                 ///< the next free level: level_ - levels_ is the depth
  Level* levels_end_;            ///< where the stack must grow, or kMaxDepth levels
  KeyToken* keys_;               ///< the bottom of the stack of open objects' keys
  KeyToken* key_;                ///< the next free slot
  KeyToken* keys_end_;           ///< where the stack must grow
  std::uint64_t key_bits_ = 0;   ///< one bit per key of the open object, of its size and ends
  std::uint32_t first_key_ = 0;  ///< where the open object's keys begin on the key stack
  State state_ = State::start;
  std::optional<ErrorInfo> error_;
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

#include <babelqueue/detail/data_writer_inline.hpp>  // IWYU pragma: export
