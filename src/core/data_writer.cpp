// SPDX-License-Identifier: Apache-2.0
// The DataWriter checks the shape of what it is given and leaves every byte
// to the canonical writer (JsonOut), so typed data and a Value are written by
// the same code.
#include "data_writer_stacks.hpp"
#include "json_out.hpp"

#include <babelqueue/data_writer.hpp>

#include <algorithm>
#include <cstring>
#include <span>
#include <string>

namespace babelqueue {

namespace {

std::string quoted_key(std::string_view name) { return "\"" + std::string(name) + "\""; }

// Mixes a key's size and first and last bytes into 64 bits, the top ones
// the best mixed. Computed from the caller's text, not from the token just
// written: a load of bytes that several stores have just written waits for
// them to land.
std::uint64_t fingerprint(std::string_view name) noexcept {
  const std::uint64_t ends = name.empty() ? 0
                                          : (std::uint64_t{static_cast<unsigned char>(name.front())} << 8U) |
                                                static_cast<unsigned char>(name.back());
  return ((std::uint64_t{name.size()} << 16U) | ends) * 0x9E3779B97F4A7C15ULL;
}

}  // namespace

DataWriter::DataWriter(detail::JsonOut& out, detail::DataWriterStacks& stacks) noexcept : out_(out), stacks_(stacks) {
  stacks_.clear();
}

// Mistakes are rare: kept out of the callers' way.
[[gnu::cold, gnu::noinline]] void DataWriter::fail(ErrorInfo error) {
  if (state_ == State::failed) return;
  error_.emplace(std::move(error));
  state_ = State::failed;
}

[[gnu::cold, gnu::noinline]] void DataWriter::fail(Errc code, std::string message) {
  fail(ErrorInfo(code, std::move(message)));
}

bool DataWriter::before_value(std::string_view kind) {
  switch (state_) {
    case State::value: state_ = State::next_key; return true;
    case State::first_item: state_ = State::next_item; return true;
    case State::next_item: out_.put(','); return true;
    default: return misplaced_value(kind);
  }
}

[[gnu::cold, gnu::noinline]] bool DataWriter::misplaced_value(std::string_view kind) {
  switch (state_) {
    case State::start: fail(Errc::invalid_argument, "data must be a JSON object, got " + std::string(kind)); break;
    case State::done:
      fail(Errc::invalid_argument, "data is complete: nothing may be written after its closing end_object()");
      break;
    case State::first_key:
    case State::next_key:
      fail(Errc::invalid_argument, "a key is due in a data object, got " + std::string(kind));
      break;
    default: break;  // failed already
  }
  return false;
}

DataWriter& DataWriter::open(char bracket, bool object) {
  if (state_ == State::start) {
    if (!object) {
      fail(Errc::invalid_argument, "data must be a JSON object, got array");
      return *this;
    }
    state_ = State::done;  // what follows data's object
  } else if (!before_value(object ? std::string_view("object") : std::string_view("array"))) {
    return *this;
  }
  if (stacks_.levels.size() == kMaxDepth) {
    fail(Errc::invalid_argument, "data nests deeper than " + std::to_string(kMaxDepth) +
                                     " levels, more than an envelope may hold (DecodeOptions::max_depth)");
    return *this;
  }
  stacks_.levels.push_back({first_key_, key_bits_, state_});
  first_key_ = static_cast<std::uint32_t>(stacks_.keys.size());
  key_bits_ = 0;
  state_ = object ? State::first_key : State::first_item;
  out_.put(bracket);
  return *this;
}

DataWriter& DataWriter::close(char bracket, bool object) {
  const bool open_here = object ? (state_ == State::first_key || state_ == State::next_key)
                                : (state_ == State::first_item || state_ == State::next_item);
  if (!open_here) return misplaced_end(object);
  stacks_.keys.resize(first_key_);
  const detail::DataWriterStacks::Level parent = stacks_.levels.back();
  stacks_.levels.pop_back();
  first_key_ = parent.first_key;
  key_bits_ = parent.key_bits;
  state_ = parent.state;
  out_.put(bracket);
  return *this;
}

[[gnu::cold, gnu::noinline]] DataWriter& DataWriter::misplaced_end(bool object) {
  const std::string call = object ? "end_object()" : "end_array()";
  switch (state_) {
    case State::start:
    case State::done: fail(Errc::invalid_argument, call + " without an open " + (object ? "object" : "array")); break;
    case State::value: fail(Errc::invalid_argument, call + " after a key without its value"); break;
    case State::failed: break;
    default: fail(Errc::invalid_argument, call + " closes an " + (object ? "array" : "object")); break;
  }
  return *this;
}

DataWriter& DataWriter::begin_object() { return open('{', true); }
DataWriter& DataWriter::end_object() { return close('}', true); }
DataWriter& DataWriter::begin_array() { return open('[', false); }
DataWriter& DataWriter::end_array() { return close(']', false); }

// Inlined into key() and each member function.
// Out of line: asked only when the key's bit is taken, and its scan would
// crowd the callers.
[[gnu::noinline]] bool DataWriter::seen(std::uint32_t offset, std::uint32_t size) const {
  const char* bytes = out_.data();
  const auto keys = std::span(stacks_.keys).subspan(first_key_);
  return std::any_of(keys.begin(), keys.end(), [&](const detail::DataWriterStacks::Key& k) {
    return k.size == size && std::memcmp(bytes + k.offset, bytes + offset, size) == 0;
  });
}

[[gnu::always_inline]] inline bool DataWriter::write_key(std::string_view name) {
  if (state_ != State::first_key && state_ != State::next_key) {
    misplaced_key(name);
    return false;
  }
  const bool first = state_ == State::first_key;
  // The token starts after the ',' and ends before the ':'.
  const std::size_t begin = out_.size() + (first ? 0 : 1);
  if (const detail::WriteStatus status = out_.key(name, first); status != detail::WriteStatus::ok) {
    fail(detail::write_error(status));
    return false;
  }
  const detail::DataWriterStacks::Key written{static_cast<std::uint32_t>(begin),
                                              static_cast<std::uint32_t>(out_.size() - 1 - begin)};
  // A key whose bit (of its size and first and last bytes) no earlier key of
  // the object set is new: most keys are known new so, without a look at the
  // others. One whose bit is taken is looked for among them; objects are
  // small, a scan of their keys costs less than a set.
  const std::uint64_t bit = std::uint64_t{1} << (fingerprint(name) >> 58U);
  const bool duplicate = (key_bits_ & bit) != 0 && seen(written.offset, written.size);
  key_bits_ |= bit;
  if (duplicate) {
    duplicate_key(name);
    return false;
  }
  stacks_.keys.push_back(written);
  state_ = State::value;
  return true;
}

[[gnu::cold, gnu::noinline]] DataWriter& DataWriter::duplicate_key(std::string_view name) {
  fail(Errc::invalid_argument, "data has the key " + quoted_key(name) + " twice in one object");
  return *this;
}

[[gnu::cold, gnu::noinline]] DataWriter& DataWriter::misplaced_key(std::string_view name) {
  switch (state_) {
    case State::value:
      fail(Errc::invalid_argument, "key " + quoted_key(name) + " where the previous key's value is due");
      break;
    case State::failed: break;
    default:
      fail(Errc::invalid_argument, "key " + quoted_key(name) + " outside an object: keys are written in objects only");
      break;
  }
  return *this;
}

DataWriter& DataWriter::key(std::string_view name) {
  write_key(name);
  return *this;
}

// A member's value follows its key at once: no state to check.
DataWriter& DataWriter::bool_member(std::string_view name, bool flag) {
  if (write_key(name)) {
    state_ = State::next_key;
    out_.literal(flag ? std::string_view("true") : std::string_view("false"));
  }
  return *this;
}

DataWriter& DataWriter::signed_member(std::string_view name, std::int64_t number) {
  if (write_key(name)) {
    state_ = State::next_key;
    out_.integer(number);
  }
  return *this;
}

DataWriter& DataWriter::unsigned_member(std::string_view name, std::uint64_t number) {
  if (write_key(name)) {
    state_ = State::next_key;
    out_.integer(number);
  }
  return *this;
}

DataWriter& DataWriter::double_member(std::string_view name, double number) {
  if (!write_key(name)) return *this;
  state_ = State::next_key;
  if (const detail::WriteStatus status = out_.number(number); status != detail::WriteStatus::ok) {
    fail(detail::write_error(status));
  }
  return *this;
}

DataWriter& DataWriter::string_member(std::string_view name, std::string_view text) {
  if (!write_key(name)) return *this;
  state_ = State::next_key;
  if (const detail::WriteStatus status = out_.string(text); status != detail::WriteStatus::ok) {
    fail(detail::write_error(status));
  }
  return *this;
}

DataWriter& DataWriter::value(std::nullptr_t) {
  if (before_value("null")) out_.literal("null");
  return *this;
}

DataWriter& DataWriter::boolean(bool flag) {
  if (before_value("bool")) out_.literal(flag ? std::string_view("true") : std::string_view("false"));
  return *this;
}

DataWriter& DataWriter::signed_integer(std::int64_t number) {
  if (before_value("int64")) out_.integer(number);
  return *this;
}

DataWriter& DataWriter::unsigned_integer(std::uint64_t number) {
  if (before_value("uint64")) out_.integer(number);
  return *this;
}

DataWriter& DataWriter::value(double number) {
  if (!before_value("double")) return *this;
  if (const detail::WriteStatus status = out_.number(number); status != detail::WriteStatus::ok) {
    fail(detail::write_error(status));
  }
  return *this;
}

DataWriter& DataWriter::value(std::string_view text) {
  if (!before_value("string")) return *this;
  if (const detail::WriteStatus status = out_.string(text); status != detail::WriteStatus::ok) {
    fail(detail::write_error(status));
  }
  return *this;
}

[[gnu::cold, gnu::noinline]] DataWriter& DataWriter::null_string() {
  fail(Errc::invalid_argument, "a null const char* is not a string; write value(nullptr) for a JSON null");
  return *this;
}

std::optional<ErrorInfo> DataWriter::finish() {
  if (error_) return error_;
  if (state_ == State::start) {
    return ErrorInfo(Errc::invalid_argument, "write_data wrote nothing: data must be a JSON object");
  }
  if (const std::size_t open = stacks_.levels.size(); open != 0) {
    return ErrorInfo(Errc::invalid_argument,
                     "data is unfinished: " + std::to_string(open) + " object or array still open");
  }
  return std::nullopt;
}

}  // namespace babelqueue
