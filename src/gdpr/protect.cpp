// SPDX-License-Identifier: Apache-2.0
// Field encryption on the text of data: the marked values are found by a
// scan of the (already validated) JSON text and replaced in place, so every
// other byte of the body stays as it arrived.
#include <babelqueue/error.hpp>
#include <babelqueue/gdpr/protect.hpp>
#include <babelqueue/json.hpp>

#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace babelqueue::gdpr {

namespace {

// One step of a marked path: a key, and whether its value is an array whose
// every element the rest of the path applies to ("addresses[]").
struct Segment {
  std::string key;
  bool fan_out = false;
};

std::vector<Segment> parse_path(std::string_view path) {
  std::vector<Segment> segments;
  if (path.empty()) return segments;  // a mark on data itself: nothing addressable
  while (true) {
    const auto dot = path.find('.');
    std::string_view part = path.substr(0, dot);
    Segment segment;
    if (part.size() >= 2 && part.substr(part.size() - 2) == "[]") {
      segment.fan_out = true;
      part.remove_suffix(2);
    }
    segment.key = std::string(part);
    segments.push_back(std::move(segment));
    if (dot == std::string_view::npos) break;
    path.remove_prefix(dot + 1);
  }
  return segments;
}

// A value's bytes in the text: [begin, end).
struct Span {
  std::size_t begin;
  std::size_t end;
};

// A scanner over JSON text that a parser has already accepted. It never
// reads past the end: on text it does not expect it stops (nothing found).
class Scanner {
 public:
  explicit Scanner(std::string_view text) : t_(text) {}

  std::size_t space(std::size_t i) const noexcept {
    while (i < t_.size() && (t_[i] == ' ' || t_[i] == '\n' || t_[i] == '\r' || t_[i] == '\t')) ++i;
    return i;
  }

  // One past the closing quote of the string opening at i.
  std::optional<std::size_t> string_end(std::size_t i) const noexcept {
    for (++i; i < t_.size(); ++i) {
      if (t_[i] == '\\') {
        ++i;
      } else if (t_[i] == '"') {
        return i + 1;
      }
    }
    return std::nullopt;
  }

  // One past the end of the value starting at i.
  std::optional<std::size_t> value_end(std::size_t i) const noexcept {
    if (i >= t_.size()) return std::nullopt;
    if (t_[i] == '"') return string_end(i);
    if (t_[i] == '{' || t_[i] == '[') {
      std::size_t depth = 0;
      while (i < t_.size()) {
        const char c = t_[i];
        if (c == '"') {
          auto end = string_end(i);
          if (!end) return std::nullopt;
          i = *end;
          continue;
        }
        if (c == '{' || c == '[') ++depth;
        if (c == '}' || c == ']') {
          if (--depth == 0) return i + 1;
        }
        ++i;
      }
      return std::nullopt;
    }
    while (i < t_.size() && t_[i] != ',' && t_[i] != '}' && t_[i] != ']' && t_[i] != ' ' && t_[i] != '\n' &&
           t_[i] != '\r' && t_[i] != '\t') {
      ++i;
    }
    return i;
  }

  // The spans of the values at segments[k...] under the value at i, in text
  // order. Every member with the key counts (a duplicate key too: none of
  // them may stay in cleartext).
  void find(std::size_t i, const std::vector<Segment>& segments, std::size_t k, std::vector<Span>& out) const {
    if (i >= t_.size() || t_[i] != '{') return;  // another shape here: skipped
    const Segment& segment = segments[k];
    const bool last = k + 1 == segments.size();
    i = space(i + 1);
    while (i < t_.size() && t_[i] == '"') {
      const auto key_end = string_end(i);
      if (!key_end) return;
      const bool match = key_equals(t_.substr(i, *key_end - i), segment.key);
      i = space(*key_end);
      if (i >= t_.size() || t_[i] != ':') return;
      const std::size_t value = space(i + 1);
      const auto value_stop = value_end(value);
      if (!value_stop) return;
      if (match) {
        if (!segment.fan_out) {
          if (last) {
            out.push_back({value, *value_stop});
          } else {
            find(value, segments, k + 1, out);
          }
        } else if (t_[value] == '[') {
          each_element(value, [&](std::size_t element, std::size_t element_end) {
            if (last) {
              out.push_back({element, element_end});
            } else {
              find(element, segments, k + 1, out);
            }
          });
        }
      }
      i = space(*value_stop);
      if (i >= t_.size() || t_[i] != ',') return;
      i = space(i + 1);
    }
  }

 private:
  // literal: a key with its quotes, as written (escapes included).
  static bool key_equals(std::string_view literal, std::string_view key) {
    const std::string_view raw = literal.substr(1, literal.size() - 2);
    if (raw.find('\\') == std::string_view::npos) return raw == key;
    auto parsed = parse_json(literal);
    return parsed && parsed->is_string() && parsed->as_string() == key;
  }

  template <class Visit>
  void each_element(std::size_t i, Visit&& visit) const {
    i = space(i + 1);
    while (i < t_.size() && t_[i] != ']') {
      const auto end = value_end(i);
      if (!end) return;
      visit(i, *end);
      i = space(*end);
      if (i >= t_.size() || t_[i] != ',') return;
      i = space(i + 1);
    }
  }

  std::string_view t_;
};

// The family's plaintext of a value: its JSON, objects with sorted keys.
void sort_keys(Value& value) {
  if (value.is_array()) {
    for (Value& item : value.as_array()) sort_keys(item);
  } else if (value.is_object()) {
    Object sorted;
    std::vector<Object::Member> members(value.as_object().begin(), value.as_object().end());
    std::stable_sort(members.begin(), members.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    for (auto& [key, member] : members) {
      sort_keys(member);
      sorted.set(std::move(key), std::move(member));
    }
    value = Value(std::move(sorted));
  }
}

Result<std::string> plaintext_of(std::string_view leaf) {
  if (leaf.front() != '{' && leaf.front() != '[') return std::string(leaf);  // a scalar: its bytes as written
  auto value = parse_json(leaf);
  if (!value) return unexpected(value.error());
  sort_keys(*value);
  return to_json(*value);
}

enum class Direction { protect, unprotect };

std::string where(const schema::SensitivePath& path) { return "data." + path.path; }

// data with every marked value encrypted or decrypted, path after path.
Result<std::string> transform(std::string_view data, const schema::Schema& schema, const Cipher& cipher,
                              Direction direction) {
  std::string current(data);
  for (const schema::SensitivePath& path : schema.sensitive_paths()) {
    const auto segments = parse_path(path.path);
    if (segments.empty()) continue;
    std::vector<Span> spans;
    const Scanner scanner(current);
    scanner.find(scanner.space(0), segments, 0, spans);
    if (spans.empty()) continue;
    std::string next;
    next.reserve(current.size() + current.size() / 2);
    std::size_t copied = 0;
    for (const Span& span : spans) {
      next.append(current, copied, span.begin - copied);
      copied = span.end;
      const std::string_view leaf = std::string_view(current).substr(span.begin, span.end - span.begin);
      if (direction == Direction::protect) {
        auto plaintext = plaintext_of(leaf);
        if (!plaintext) return unexpected(plaintext.error());
        auto sealed = cipher.encrypt(*plaintext);
        if (!sealed) return unexpected(sealed.error().code(), where(path) + ": " + sealed.error().message());
        if (auto written = write_json_string(next, *sealed); !written) {
          return unexpected(Errc::invalid_argument, where(path) + ": the cipher's text is not valid UTF-8");
        }
        continue;
      }
      if (leaf.front() != '"') {  // not a ciphertext: left as it is
        next.append(leaf);
        continue;
      }
      auto text = parse_json(leaf);
      if (!text) return unexpected(text.error());
      auto plaintext = cipher.decrypt(text->as_string());
      if (!plaintext) {
        return unexpected(
            ErrorInfo(plaintext.error().code(), "cannot decrypt " + where(path) + ": " + plaintext.error().message()));
      }
      if (auto valid = parse_json(*plaintext); !valid) {
        return unexpected(Errc::invalid_json, "cannot decrypt " + where(path) + ": its plaintext is not JSON (" +
                                                  valid.error().message() + ")");
      }
      // Valid JSON: spliced as the producer wrote it (white space around it dropped).
      const std::string_view value(*plaintext);
      const std::size_t first = Scanner(value).space(0);
      std::size_t last = value.size();
      while (last > first && Scanner(value.substr(last - 1)).space(0) == 1) --last;
      next.append(value.substr(first, last - first));
    }
    next.append(current, copied, std::string::npos);
    current = std::move(next);
  }
  return current;
}

Result<Envelope> transform(const Envelope& envelope, const schema::Schema& schema, const Cipher& cipher,
                           Direction direction) {
  if (!accepts(envelope)) return unexpected(Errc::rejected, "not an acceptable envelope");
  const std::string_view body = envelope.body();
  const std::string_view data = envelope.data_json();
  if (data.empty()) return envelope;
  auto changed = transform(data, schema, cipher, direction);
  if (!changed) return unexpected(changed.error());
  if (*changed == data) return envelope;
  // data_json() views the body's own bytes: what comes before and after it is kept.
  const auto at = static_cast<std::size_t>(data.data() - body.data());
  std::string spliced;
  spliced.reserve(body.size() - data.size() + changed->size());
  spliced.append(body.substr(0, at)).append(*changed).append(body.substr(at + data.size()));
  auto decoded = Envelope::decode(spliced);
  if (!decoded) return unexpected(Errc::invalid_json, "the data with its fields replaced is not an envelope");
  decoded->set_attempts(envelope.attempts());
  return std::move(*decoded);
}

Result<void> transform(Value& data, const schema::Schema& schema, const Cipher& cipher, Direction direction) {
  auto text = to_json(data);
  if (!text) return unexpected(text.error());
  auto changed = transform(*text, schema, cipher, direction);
  if (!changed) return unexpected(changed.error());
  auto value = parse_json(*changed);
  if (!value) return unexpected(value.error());
  data = std::move(*value);
  return {};
}

}  // namespace

Result<Envelope> protect(const Envelope& envelope, const schema::Schema& schema, const Cipher& cipher) {
  return transform(envelope, schema, cipher, Direction::protect);
}

Result<Envelope> unprotect(const Envelope& envelope, const schema::Schema& schema, const Cipher& cipher) {
  return transform(envelope, schema, cipher, Direction::unprotect);
}

Result<void> protect(Value& data, const schema::Schema& schema, const Cipher& cipher) {
  return transform(data, schema, cipher, Direction::protect);
}

Result<void> unprotect(Value& data, const schema::Schema& schema, const Cipher& cipher) {
  return transform(data, schema, cipher, Direction::unprotect);
}

}  // namespace babelqueue::gdpr
