// SPDX-License-Identifier: Apache-2.0
// The out-of-line part of DataWriter: its rare paths (the common calls are
// inline, detail/data_writer_inline.hpp). Every byte the inline calls do not
// write themselves is left to the canonical writer (JsonOut), so typed data
// and a Value are written by the same code.
#include "data_writer_stacks.hpp"
#include "json_out.hpp"

#include <babelqueue/data_writer.hpp>

#include <algorithm>
#include <cstring>
#include <string>

namespace babelqueue {

namespace {

std::string quoted_key(std::string_view name) { return "\"" + std::string(name) + "\""; }

}  // namespace

DataWriter::DataWriter(detail::JsonOut& out, detail::DataWriterStacks& stacks) noexcept
    : out_(out),
      stacks_(stacks),
      base_(out.begin()),
      cur_(out.position()),
      limit_(out.end()),
      levels_(stacks.levels.data()),
      level_(levels_),
      levels_end_(levels_ + stacks.levels.size()),
      keys_(stacks.keys.data()),
      key_(keys_),
      keys_end_(keys_ + stacks.keys.size()) {}

[[gnu::always_inline]] inline void DataWriter::take_position() noexcept {
  base_ = out_.begin();
  cur_ = out_.position();
  limit_ = out_.end();
}

[[gnu::noinline]] char* DataWriter::grow_at(char* p, std::size_t n) {
  out_.seek(p);
  out_.reserve(n);
  take_position();
  return cur_;
}

// The stacks grow as the buffer does (doubling; their sizes are their
// capacities), the levels' no further than the depth data may have.
[[gnu::noinline]] bool DataWriter::grow_levels() {
  const auto depth = static_cast<std::size_t>(level_ - levels_);
  if (depth == kMaxDepth) {
    fail(Errc::invalid_argument, "data nests deeper than " + std::to_string(kMaxDepth) +
                                     " levels, more than an envelope may hold (DecodeOptions::max_depth)");
    return false;
  }
  std::vector<Level>& levels = stacks_.levels;
  levels.resize(std::min(std::max(levels.size() * 2, std::size_t{16}), kMaxDepth));
  levels_ = levels.data();
  level_ = levels_ + depth;
  levels_end_ = levels_ + levels.size();
  return true;
}

[[gnu::noinline]] void DataWriter::grow_keys() {
  const auto used = static_cast<std::size_t>(key_ - keys_);
  std::vector<KeyToken>& keys = stacks_.keys;
  keys.resize(std::max(keys.size() * 2, std::size_t{64}));
  keys_ = keys.data();
  key_ = keys_ + used;
  keys_end_ = keys_ + keys.size();
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

// data's own object, the first call, or a container where none may come.
[[gnu::noinline]] DataWriter& DataWriter::open_rare(char bracket, State inside, std::string_view kind) {
  if (state_ != State::start) {
    misplaced_value(kind);
    return *this;
  }
  if (inside != State::first_key) {
    fail(Errc::invalid_argument, "data must be a JSON object, got " + std::string(kind));
    return *this;
  }
  if (level_ == levels_end_ && !grow_levels()) return *this;
  push(0, bracket, State::done, inside);  // nothing may follow data's object
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

// Objects are small: a scan of their keys costs less than a set.
[[gnu::noinline]] bool DataWriter::taken_key_is_new(std::string_view name, KeyToken token) {
  const char* bytes = base_;
  const bool duplicate = std::any_of(keys_ + first_key_, key_, [&](const KeyToken& k) {
    return k.size == token.size && std::memcmp(bytes + k.offset, bytes + token.offset, token.size) == 0;
  });
  if (!duplicate) return true;
  fail(Errc::invalid_argument, "data has the key " + quoted_key(name) + " twice in one object");
  return false;
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

// The tokens the inline calls leave to the canonical writer: out_ takes the
// position, writes, and hands it back (it may have grown the buffer).
template <class Write>
char* DataWriter::write_through_out(char* p, char lead, Write write) {
  out_.seek(p);
  if (lead != 0) out_.put(lead);
  const detail::WriteStatus status = write(out_);
  take_position();
  if (status == detail::WriteStatus::ok) return cur_;
  fail(detail::write_error(status));
  return nullptr;
}

[[gnu::noinline]] char* DataWriter::string_slow_at(char* p, std::string_view text, char lead, char trail) {
  return write_through_out(p, lead,
                           [&](detail::JsonOut& out) { return trail != 0 ? out.key(text, true) : out.string(text); });
}

[[gnu::noinline]] char* DataWriter::integer_slow_at(char* p, std::int64_t number, char lead) {
  return write_through_out(p, lead, [&](detail::JsonOut& out) {
    out.integer(number);
    return detail::WriteStatus::ok;
  });
}

[[gnu::noinline]] char* DataWriter::unsigned_slow_at(char* p, std::uint64_t number, char lead) {
  return write_through_out(p, lead, [&](detail::JsonOut& out) {
    out.integer(number);
    return detail::WriteStatus::ok;
  });
}

[[gnu::noinline]] char* DataWriter::double_at(char* p, double number, char lead) {
  return write_through_out(p, lead, [&](detail::JsonOut& out) { return out.number(number); });
}

[[gnu::cold, gnu::noinline]] DataWriter& DataWriter::null_string() {
  fail(Errc::invalid_argument, "a null const char* is not a string; write value(nullptr) for a JSON null");
  return *this;
}

std::optional<ErrorInfo> DataWriter::finish() {
  out_.seek(cur_);
  if (error_) return error_;
  if (state_ == State::start) {
    return ErrorInfo(Errc::invalid_argument, "write_data wrote nothing: data must be a JSON object");
  }
  if (const auto open = static_cast<std::size_t>(level_ - levels_); open != 0) {
    return ErrorInfo(Errc::invalid_argument,
                     "data is unfinished: " + std::to_string(open) + " object or array still open");
  }
  return std::nullopt;
}

}  // namespace babelqueue
