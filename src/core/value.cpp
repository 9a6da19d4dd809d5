// SPDX-License-Identifier: Apache-2.0
#include <babelqueue/error.hpp>
#include <babelqueue/json.hpp>
#include <babelqueue/value.hpp>

#include <charconv>
#include <cmath>
#include <limits>

namespace babelqueue {

// ---- Object -------------------------------------------------------------------

Object::Object(std::initializer_list<Member> members) {
  members_.reserve(members.size());
  for (const auto& m : members) set(m.first, m.second);
}

Value& Object::set(std::string key, Value value) {
  if (Value* existing = find(key)) {
    *existing = std::move(value);
    return *existing;
  }
  members_.emplace_back(std::move(key), std::move(value));
  return members_.back().second;
}

Value& Object::operator[](std::string_view key) {
  if (Value* existing = find(key)) return *existing;
  members_.emplace_back(std::string(key), Value());
  return members_.back().second;
}

const Value* Object::find(std::string_view key) const noexcept {
  for (const auto& m : members_) {
    if (m.first == key) return &m.second;
  }
  return nullptr;
}

Value* Object::find(std::string_view key) noexcept {
  for (auto& m : members_) {
    if (m.first == key) return &m.second;
  }
  return nullptr;
}

bool Object::erase(std::string_view key) {
  for (auto it = members_.begin(); it != members_.end(); ++it) {
    if (it->first == key) {
      members_.erase(it);
      return true;
    }
  }
  return false;
}

bool operator==(const Object& a, const Object& b) {
  if (a.size() != b.size()) return false;
  for (const auto& [key, value] : a) {
    const Value* other = b.find(key);
    if (other == nullptr || !(*other == value)) return false;
  }
  return true;
}

// ---- Value --------------------------------------------------------------------

namespace {

[[noreturn]] void throw_kind(std::string_view wanted, Value::Kind actual) {
  throw Error(Errc::invalid_argument,
              "expected " + std::string(wanted) + ", got " + std::string(Value::kind_name(actual)));
}

bool is_integer_text(std::string_view text) noexcept { return text.find_first_of(".eE") == std::string_view::npos; }

}  // namespace

std::string_view Value::kind_name(Kind k) noexcept {
  switch (k) {
    case Kind::null: return "null";
    case Kind::boolean: return "bool";
    case Kind::int64: return "int64";
    case Kind::uint64: return "uint64";
    case Kind::number_text: return "number text";
    case Kind::floating: return "double";
    case Kind::string: return "string";
    case Kind::array: return "array";
    case Kind::object: return "object";
  }
  return "null";
}

bool Value::is_integer() const noexcept {
  switch (kind()) {
    case Kind::int64:
    case Kind::uint64: return true;
    case Kind::number_text: return is_integer_text(std::get<NumberText>(v_).text);
    default: return false;
  }
}

bool Value::is_number() const noexcept {
  const Kind k = kind();
  return k == Kind::int64 || k == Kind::uint64 || k == Kind::number_text || k == Kind::floating;
}

bool Value::as_bool() const {
  if (const bool* b = std::get_if<bool>(&v_)) return *b;
  throw_kind("bool", kind());
}

std::int64_t Value::as_int64() const {
  if (const auto* i = std::get_if<std::int64_t>(&v_)) return *i;
  if (const auto* u = std::get_if<std::uint64_t>(&v_)) {
    if (*u <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
      return static_cast<std::int64_t>(*u);
    }
    throw Error(Errc::invalid_argument, "integer " + std::to_string(*u) + " does not fit int64");
  }
  throw_kind("integer", kind());
}

std::uint64_t Value::as_uint64() const {
  if (const auto* u = std::get_if<std::uint64_t>(&v_)) return *u;
  if (const auto* i = std::get_if<std::int64_t>(&v_)) {
    if (*i >= 0) return static_cast<std::uint64_t>(*i);
    throw Error(Errc::invalid_argument, "integer " + std::to_string(*i) + " is negative");
  }
  throw_kind("unsigned integer", kind());
}

double Value::as_double() const {
  switch (kind()) {
    case Kind::floating: return std::get<double>(v_);
    case Kind::int64: return static_cast<double>(std::get<std::int64_t>(v_));
    case Kind::uint64: return static_cast<double>(std::get<std::uint64_t>(v_));
    case Kind::number_text: {
      const std::string& text = std::get<NumberText>(v_).text;
      double d = 0;
      auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), d);
      if (ec == std::errc::result_out_of_range) {
        return text.front() == '-' ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
      }
      return d;
    }
    default: throw_kind("number", kind());
  }
}

const std::string& Value::as_string() const {
  if (const auto* s = std::get_if<std::string>(&v_)) return *s;
  throw_kind("string", kind());
}

const Array& Value::as_array() const {
  if (const auto* a = std::get_if<Array>(&v_)) return *a;
  throw_kind("array", kind());
}

Array& Value::as_array() {
  if (auto* a = std::get_if<Array>(&v_)) return *a;
  throw_kind("array", kind());
}

const Object& Value::as_object() const {
  if (const auto* o = std::get_if<Object>(&v_)) return *o;
  throw_kind("object", kind());
}

Object& Value::as_object() {
  if (auto* o = std::get_if<Object>(&v_)) return *o;
  throw_kind("object", kind());
}

std::string Value::number_text() const {
  if (const auto* n = std::get_if<NumberText>(&v_)) return n->text;
  if (!is_number()) throw_kind("number", kind());
  std::string out;
  write_json(out, *this).value();
  return out;
}

const Value& Value::operator[](std::string_view key) const noexcept {
  static const Value kNull;
  const Value* found = find(key);
  return found != nullptr ? *found : kNull;
}

Value& Value::operator[](std::string_view key) {
  if (is_null()) v_ = Object();
  return as_object()[key];
}

const Value* Value::find(std::string_view key) const noexcept {
  const auto* o = std::get_if<Object>(&v_);
  return o != nullptr ? o->find(key) : nullptr;
}

bool operator==(const Value& a, const Value& b) {
  using Kind = Value::Kind;
  const Kind ka = a.kind();
  const Kind kb = b.kind();
  const bool a_int = ka == Kind::int64 || ka == Kind::uint64;
  const bool b_int = kb == Kind::int64 || kb == Kind::uint64;
  if (a_int && b_int) {
    if (ka == kb) return a.v_ == b.v_;
    // int64 vs uint64: equal only when both are the same non-negative number.
    const std::int64_t i = ka == Kind::int64 ? std::get<std::int64_t>(a.v_) : std::get<std::int64_t>(b.v_);
    const std::uint64_t u = ka == Kind::uint64 ? std::get<std::uint64_t>(a.v_) : std::get<std::uint64_t>(b.v_);
    return i >= 0 && static_cast<std::uint64_t>(i) == u;
  }
  return a.v_ == b.v_;
}

}  // namespace babelqueue
