// SPDX-License-Identifier: Apache-2.0
// Value: a small JSON value with insertion-ordered objects, used to build and
// read message payloads (`data`).
//
// Kinds: null, bool, int64, uint64, double, number text (a JSON number too big
// for any C++ type, kept exactly as it arrived), string, array, object.
// Objects keep their keys in insertion order, because the order of `data` keys
// is part of the bytes other SDKs produce and compare.
//
// Thread-safety: a Value is a plain value type; concurrent reads are safe,
// concurrent writes need external synchronisation.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

namespace babelqueue {

class Value;
namespace detail {
class JsonOut;
}  // namespace detail

/// A JSON array.
using Array = std::vector<Value>;

/// A JSON number kept as its original text, for numbers no C++ type can hold
/// exactly (e.g. 123456789012345678901234567890). Re-emitted verbatim.
struct NumberText {
  std::string text;                                    ///< the number as it was written
  bool operator==(const NumberText&) const = default;  ///< same text
};

/// An insertion-ordered JSON object. Lookups are linear: payload objects are
/// small, and keeping one vector keeps iteration in key order and allocation low.
class Object {
 public:
  using Member = std::pair<std::string, Value>;                ///< a key and its value
  using iterator = std::vector<Member>::iterator;              ///< over the members, in order
  using const_iterator = std::vector<Member>::const_iterator;  ///< over the members, in order

  /// An empty object, or one with these members in this order.
  ///@{
  Object() = default;
  Object(std::initializer_list<Member> members);
  ///@}

  /// Sets key to value: replaces the value in place when the key exists (its
  /// position is kept), appends otherwise.
  Value& set(std::string key, Value value);
  /// The member's value, inserting null at the end when missing.
  Value& operator[](std::string_view key);
  /// The member's value, or null when there is no such key.
  ///@{
  const Value* find(std::string_view key) const noexcept;
  Value* find(std::string_view key) noexcept;
  ///@}
  /// Whether the key is there.
  bool contains(std::string_view key) const noexcept { return find(key) != nullptr; }
  /// Removes the member; false when there was none.
  bool erase(std::string_view key);

  // Defined after Value: clang instantiates std::vector's constexpr members
  // eagerly and needs Value complete by then.
  std::size_t size() const noexcept;  ///< the number of members
  bool empty() const noexcept;        ///< no members
  void reserve(std::size_t n);        ///< room for n members
  /// The members in insertion order.
  ///@{
  iterator begin() noexcept;
  iterator end() noexcept;
  const_iterator begin() const noexcept;
  const_iterator end() const noexcept;
  ///@}

  /// JSON equality: same keys with equal values, in any order.
  friend bool operator==(const Object& a, const Object& b);

 private:
  std::vector<Member> members_;
};

/// A JSON value: null, a boolean, a number (int64, uint64, a double, or the
/// text of one no C++ type holds), a string, an Array or an Object.
class Value {
 public:
  /// What the value holds.
  enum class Kind { null, boolean, int64, uint64, number_text, floating, string, array, object };

  /// Null, or implicitly from the C++ value of each kind: a JSON value is
  /// written as a literal at the call site.
  ///@{
  Value() noexcept = default;
  Value(std::nullptr_t) noexcept {}  // NOLINT: implicit conversions are the point of a JSON value
  Value(bool b) noexcept : v_(b) {}  // NOLINT
  template <class I>
  requires(std::is_integral_v<I> && !std::is_same_v<I, bool> && !std::is_same_v<I, char>) Value(I i)
  noexcept {  // NOLINT
    if constexpr (std::is_signed_v<I>) {
      v_ = static_cast<std::int64_t>(i);
    } else {
      v_ = static_cast<std::uint64_t>(i);
    }
  }
  Value(double d) noexcept : v_(d) {}                      // NOLINT
  Value(float f) noexcept : v_(static_cast<double>(f)) {}  // NOLINT
  Value(NumberText n) : v_(std::move(n)) {}                // NOLINT
  Value(std::string s) noexcept : v_(std::move(s)) {}      // NOLINT
  Value(std::string_view s) : v_(std::string(s)) {}        // NOLINT
  Value(const char* s) : v_(std::string(s)) {}             // NOLINT
  Value(Array a) noexcept : v_(std::move(a)) {}            // NOLINT
  Value(Object o) noexcept : v_(std::move(o)) {}           // NOLINT
  ///@}

  /// Builders that read well at call sites:
  /// `Value::object({{"order_id", 1042}, {"items", Value::array({1, 2})}})`
  ///@{
  static Value object(std::initializer_list<Object::Member> members = {}) { return Value(Object(members)); }
  static Value array(std::initializer_list<Value> items = {}) { return Value(Array(items)); }
  ///@}

  /// What the value holds.
  Kind kind() const noexcept { return static_cast<Kind>(v_.index()); }
  /// Whether the value is of that kind.
  ///@{
  bool is_null() const noexcept { return kind() == Kind::null; }
  bool is_bool() const noexcept { return kind() == Kind::boolean; }
  ///@}
  /// int64, uint64 or number text that is an integer.
  bool is_integer() const noexcept;
  /// Whether the value is of that kind (any number for is_number()).
  ///@{
  bool is_number() const noexcept;
  bool is_string() const noexcept { return kind() == Kind::string; }
  bool is_array() const noexcept { return kind() == Kind::array; }
  bool is_object() const noexcept { return kind() == Kind::object; }
  ///@}

  /// Typed read: throws babelqueue::Error (Errc::invalid_argument) naming the
  /// expected and the actual kind when the value does not fit; so do the
  /// other as_ reads.
  bool as_bool() const;
  std::int64_t as_int64() const;         ///< int64, or a uint64 that fits
  std::uint64_t as_uint64() const;       ///< uint64, or a non-negative int64
  double as_double() const;              ///< any number (number text is parsed; may round)
  const std::string& as_string() const;  ///< a string
  /// An array, read-only or to change in place.
  ///@{
  const Array& as_array() const;
  Array& as_array();
  ///@}
  /// An object, read-only or to change in place.
  ///@{
  const Object& as_object() const;
  Object& as_object();
  ///@}
  /// The exact text of a number: the kept text for number text, else the
  /// canonical spelling.
  std::string number_text() const;

  /// Non-throwing access: null when the value is not of that kind.
  const std::string* if_string() const noexcept { return std::get_if<std::string>(&v_); }
  /// The kept text of a number that fits no C++ type.
  const std::string* if_number_text() const noexcept {
    const auto* n = std::get_if<NumberText>(&v_);
    return n != nullptr ? &n->text : nullptr;
  }
  const Array* if_array() const noexcept { return std::get_if<Array>(&v_); }     ///< the array, or null
  const Object* if_object() const noexcept { return std::get_if<Object>(&v_); }  ///< the object, or null

  /// Object member access. The const form returns a shared null for a missing
  /// key or a non-object; the mutable form turns null into an empty object.
  ///@{
  const Value& operator[](std::string_view key) const noexcept;
  Value& operator[](std::string_view key);
  ///@}
  /// The member's value; null when missing or when this is not an object.
  const Value* find(std::string_view key) const noexcept;

  /// JSON equality: int64/uint64 compare by value, objects ignore key order,
  /// a double never equals an integer (1 != 1.0, as the conformance suite says).
  friend bool operator==(const Value& a, const Value& b);

  /// The kind's name as error messages give it ("object", "int64", ...).
  static std::string_view kind_name(Kind k) noexcept;

 private:
  // The canonical writer visits the alternatives directly: one jump per
  // value instead of a kind() and a checked as_ read.
  friend class detail::JsonOut;

  std::variant<std::nullptr_t, bool, std::int64_t, std::uint64_t, NumberText, double, std::string, Array, Object> v_{
      nullptr};
};

inline std::size_t Object::size() const noexcept { return members_.size(); }
inline bool Object::empty() const noexcept { return members_.empty(); }
inline void Object::reserve(std::size_t n) { members_.reserve(n); }
inline Object::iterator Object::begin() noexcept { return members_.begin(); }
inline Object::iterator Object::end() noexcept { return members_.end(); }
inline Object::const_iterator Object::begin() const noexcept { return members_.begin(); }
inline Object::const_iterator Object::end() const noexcept { return members_.end(); }

}  // namespace babelqueue
