// SPDX-License-Identifier: Apache-2.0
// The DataWriter checks the shape of what it is given and leaves every byte
// to the canonical writer (JsonOut), so typed data and a Value are written by
// the same code.
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

DataWriter::DataWriter(detail::JsonOut& out, detail::DataWriterStacks& stacks) noexcept : out_(out), stacks_(stacks) {
  stacks_.clear();
}

void DataWriter::fail(Errc code, std::string message) {
  if (!error_) error_.emplace(code, std::move(message));
}

bool DataWriter::before_value(std::string_view kind) {
  if (error_) return false;
  if (stacks_.levels.empty()) {
    if (started_) {
      fail(Errc::invalid_argument, "data is complete: nothing may be written after its closing end_object()");
    } else {
      fail(Errc::invalid_argument, "data must be a JSON object, got " + std::string(kind));
    }
    return false;
  }
  auto& level = stacks_.levels.back();
  if (level.object) {
    if (key_due_) {
      fail(Errc::invalid_argument, "a key is due in a data object, got " + std::string(kind));
      return false;
    }
    key_due_ = true;
  } else if (!level.empty) {
    out_.put(',');
  }
  level.empty = false;
  return true;
}

DataWriter& DataWriter::open(char bracket, bool object) {
  if (stacks_.levels.empty() && !started_ && !error_) {
    if (!object) {
      fail(Errc::invalid_argument, "data must be a JSON object, got array");
      return *this;
    }
    started_ = true;
  } else if (!before_value(object ? "object" : "array")) {
    return *this;
  }
  if (stacks_.levels.size() == kMaxDepth) {
    fail(Errc::invalid_argument, "data nests deeper than " + std::to_string(kMaxDepth) +
                                     " levels, more than an envelope may hold (DecodeOptions::max_depth)");
    return *this;
  }
  stacks_.levels.push_back({static_cast<std::uint32_t>(stacks_.keys.size()), object, true});
  key_due_ = object;
  out_.put(bracket);
  return *this;
}

DataWriter& DataWriter::close(char bracket, bool object) {
  if (error_) return *this;
  const std::string_view call = object ? "end_object()" : "end_array()";
  if (stacks_.levels.empty()) {
    fail(Errc::invalid_argument, std::string(call) + " without an open " + (object ? "object" : "array"));
    return *this;
  }
  const auto& level = stacks_.levels.back();
  if (level.object != object) {
    fail(Errc::invalid_argument, std::string(call) + " closes an " + (object ? "array" : "object"));
    return *this;
  }
  if (object && !key_due_) {
    fail(Errc::invalid_argument, "end_object() after a key without its value");
    return *this;
  }
  stacks_.keys.resize(level.first_key);
  stacks_.levels.pop_back();
  key_due_ = !stacks_.levels.empty() && stacks_.levels.back().object;
  out_.put(bracket);
  return *this;
}

DataWriter& DataWriter::begin_object() { return open('{', true); }
DataWriter& DataWriter::end_object() { return close('}', true); }
DataWriter& DataWriter::begin_array() { return open('[', false); }
DataWriter& DataWriter::end_array() { return close(']', false); }

DataWriter& DataWriter::key(std::string_view name) {
  if (error_) return *this;
  if (stacks_.levels.empty() || !stacks_.levels.back().object) {
    fail(Errc::invalid_argument, "key " + quoted_key(name) + " outside an object: keys are written in objects only");
    return *this;
  }
  if (!key_due_) {
    fail(Errc::invalid_argument, "key " + quoted_key(name) + " where the previous key's value is due");
    return *this;
  }
  auto& level = stacks_.levels.back();
  // The token starts after the ',' and ends before the ':'.
  const std::size_t begin = out_.size() + (level.empty ? 0 : 1);
  if (const detail::WriteStatus status = out_.key(name, level.empty); status != detail::WriteStatus::ok) {
    error_.emplace(detail::write_error(status));
    return *this;
  }
  const detail::DataWriterStacks::Key written{static_cast<std::uint32_t>(begin),
                                              static_cast<std::uint32_t>(out_.size() - 1 - begin)};
  // Objects are small: a scan of this object's keys costs less than a set.
  const char* bytes = out_.data();
  const auto first = stacks_.keys.begin() + level.first_key;
  const bool duplicate = std::any_of(first, stacks_.keys.end(), [&](const detail::DataWriterStacks::Key& k) {
    return k.size == written.size && std::memcmp(bytes + k.offset, bytes + written.offset, k.size) == 0;
  });
  if (duplicate) {
    fail(Errc::invalid_argument, "data has the key " + quoted_key(name) + " twice in one object");
    return *this;
  }
  stacks_.keys.push_back(written);
  level.empty = false;
  key_due_ = false;
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
    error_.emplace(detail::write_error(status));
  }
  return *this;
}

DataWriter& DataWriter::value(std::string_view text) {
  if (!before_value("string")) return *this;
  if (const detail::WriteStatus status = out_.string(text); status != detail::WriteStatus::ok) {
    error_.emplace(detail::write_error(status));
  }
  return *this;
}

DataWriter& DataWriter::value(const char* text) {
  if (text == nullptr) {
    fail(Errc::invalid_argument, "a null const char* is not a string; write value(nullptr) for a JSON null");
    return *this;
  }
  return value(std::string_view(text));
}

std::optional<ErrorInfo> DataWriter::finish() {
  if (error_) return error_;
  if (!started_) return ErrorInfo(Errc::invalid_argument, "write_data wrote nothing: data must be a JSON object");
  if (!stacks_.levels.empty()) {
    return ErrorInfo(Errc::invalid_argument,
                     "data is unfinished: " + std::to_string(stacks_.levels.size()) + " object or array still open");
  }
  return std::nullopt;
}

}  // namespace babelqueue
