// SPDX-License-Identifier: Apache-2.0
// The binding kit (binding.hpp): the contract-field scan, the
// schema-version gate and count parsing, shared by every transport.
#include <babelqueue/binding.hpp>

#include <bit>
#include <charconv>
#include <cstring>
#include <utility>

namespace babelqueue::binding {

ContractFields ContractFields::of(const Envelope& envelope) noexcept {
  return {envelope.urn(),      envelope.trace_id(),       envelope.id(),
          envelope.lang(),     envelope.schema_version(), envelope.created_at(),
          envelope.attempts(), envelope.has_dead_letter()};
}

bool operator==(const ContractFields& a, const ContractFields& b) noexcept {
  return a.job == b.job && a.trace_id == b.trace_id && a.id == b.id && a.lang == b.lang &&
         a.schema_version == b.schema_version && a.created_at == b.created_at && a.attempts == b.attempts &&
         a.dead_letter == b.dead_letter;
}

namespace {

// The offset of the first byte of text at or after from that is a quote, a
// backslash or a control character (< 0x20); text.size() when none is. Eight
// bytes at a time (SWAR): publish scans every body it sends.
std::size_t find_string_special(std::string_view text, std::size_t from) noexcept {
  constexpr std::uint64_t kOnes = 0x0101010101010101ULL;
  constexpr std::uint64_t kHigh = 0x8080808080808080ULL;
  if constexpr (std::endian::native == std::endian::little) {
    // In each test the lowest flagged byte is exact (a borrow only reaches
    // higher bytes), which is the only one used.
    while (from + 8 <= text.size()) {
      std::uint64_t word = 0;
      std::memcpy(&word, text.data() + from, 8);
      const std::uint64_t quote = word ^ (kOnes * '"');
      const std::uint64_t backslash = word ^ (kOnes * '\\');
      const std::uint64_t flags =
          (((quote - kOnes) & ~quote) | ((backslash - kOnes) & ~backslash) | ((word - kOnes * 0x20) & ~word)) & kHigh;
      if (flags != 0) return from + static_cast<std::size_t>(std::countr_zero(flags) / 8);
      from += 8;
    }
  }
  for (; from < text.size(); ++from) {
    const auto c = static_cast<unsigned char>(text[from]);
    if (c == '"' || c == '\\' || c < 0x20) return from;
  }
  return text.size();
}

// A forward reader over JSON text; every method returns false on anything
// it does not expect, which makes scan() give up.
class Scanner {
 public:
  explicit Scanner(std::string_view text) : text_(text) {}

  void skip_space() noexcept {
    // Bodies written by the SDKs have no whitespace between tokens.
    while (pos_ < text_.size() && static_cast<unsigned char>(text_[pos_]) <= ' ' &&
           (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n' || text_[pos_] == '\r')) {
      ++pos_;
    }
  }
  bool take(char c) noexcept {
    skip_space();
    if (pos_ >= text_.size() || text_[pos_] != c) return false;
    ++pos_;
    return true;
  }
  // True when the next token starts with c (nothing is taken).
  bool peek(char c) noexcept {
    skip_space();
    return pos_ < text_.size() && text_[pos_] == c;
  }
  bool at_end() noexcept {
    skip_space();
    return pos_ == text_.size();
  }
  // A string without escapes or control characters.
  bool plain_string(std::string_view& out) noexcept {
    if (!take('"')) return false;
    const std::size_t end = find_string_special(text_, pos_);
    if (end == text_.size() || text_[end] != '"') return false;
    out = text_.substr(pos_, end - pos_);
    pos_ = end + 1;
    return true;
  }
  // An integer without fraction or exponent, as JSON writes it.
  bool integer(std::int64_t& out) noexcept {
    skip_space();
    const bool negative = pos_ < text_.size() && text_[pos_] == '-';
    if (negative) ++pos_;
    const std::size_t digits = pos_;
    // At most 18 digits, which always fit; a longer number is left to the decoder.
    std::int64_t value = 0;
    while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') {
      if (pos_ - digits == 18) return false;
      value = value * 10 + (text_[pos_] - '0');
      ++pos_;
    }
    if (pos_ == digits || (text_[digits] == '0' && pos_ - digits > 1)) return false;
    if (pos_ < text_.size() && (text_[pos_] == '.' || text_[pos_] == 'e' || text_[pos_] == 'E')) return false;
    out = negative ? -value : value;
    return true;
  }
  // Any value, skipped: strings (escapes included), objects and arrays by
  // nesting, literals and numbers up to the next delimiter.
  bool skip_value() noexcept {
    skip_space();
    int depth = 0;
    do {
      if (pos_ >= text_.size()) return false;
      const char c = text_[pos_];
      if (c == '"') {
        if (!skip_string()) return false;
      } else if (c == '{' || c == '[') {
        ++depth;
        ++pos_;
      } else if (c == '}' || c == ']') {
        if (depth == 0) return false;
        --depth;
        ++pos_;
      } else if (depth > 0) {
        ++pos_;  // separators, literals and numbers inside a container
      } else {
        const std::size_t start = pos_;
        while (pos_ < text_.size() && text_[pos_] != ',' && text_[pos_] != '}' && text_[pos_] != ']' &&
               text_[pos_] != ' ' && text_[pos_] != '\t' && text_[pos_] != '\n' && text_[pos_] != '\r') {
          ++pos_;
        }
        if (pos_ == start) return false;
      }
    } while (depth > 0);
    return true;
  }

 private:
  // Skips the string at pos_ (its opening quote), escapes included: memchr
  // finds each quote, and the backslashes before it tell whether it ends the
  // string. Lenient (a raw control character is not looked for): only the six
  // fields the scan reads are checked strictly.
  bool skip_string() noexcept {
    std::size_t from = pos_ + 1;
    for (;;) {
      const std::size_t quote = text_.find('"', from);
      if (quote == std::string_view::npos) return false;
      std::size_t backslashes = 0;
      while (quote - backslashes > from && text_[quote - backslashes - 1] == '\\') ++backslashes;
      if (backslashes % 2 == 0) {
        pos_ = quote + 1;
        return true;
      }
      from = quote + 1;
    }
  }

  std::string_view text_;
  std::size_t pos_ = 0;
};

// Reads the members of an object (after its '{'), calling member(key) for
// each; member reads the value. False on malformed text or a repeated key
// among the ones member() reports as tracked.
template <class Member>
bool scan_object(Scanner& in, Member&& member) noexcept {
  if (in.take('}')) return true;
  // A repeated key makes the decoder refuse the body, so the scan does too.
  // (Plain arrays, left uninitialized: this runs for every published record.)
  constexpr std::size_t kMaxKeys = 16;
  const char* seen_data[kMaxKeys];
  std::size_t seen_size[kMaxKeys];
  std::size_t count = 0;
  do {
    std::string_view key;
    if (!in.plain_string(key) || count == kMaxKeys) return false;
    for (std::size_t i = 0; i < count; ++i) {
      if (seen_size[i] == key.size() && std::memcmp(seen_data[i], key.data(), key.size()) == 0) return false;
    }
    seen_data[count] = key.data();
    seen_size[count] = key.size();
    ++count;
    if (!in.take(':') || !member(key)) return false;
  } while (in.take(','));
  return in.take('}');
}

}  // namespace

std::optional<ContractFields> scan(std::string_view body) noexcept {
  ContractFields out;
  bool job = false, trace = false, meta = false, attempts = false;
  bool id = false, lang = false, version = false, created = false;
  Scanner in(body);
  if (!in.take('{')) return std::nullopt;
  const bool read = scan_object(in, [&](std::string_view key) {
    auto once = [](bool& seen) { return !std::exchange(seen, true); };
    if (key == "job") return once(job) && in.plain_string(out.job);
    if (key == "trace_id") return once(trace) && in.plain_string(out.trace_id);
    if (key == "attempts") return once(attempts) && in.integer(out.attempts);
    if (key == "urn") return false;  // the alias: the decoder knows which one wins
    if (key == "dead_letter") {
      // Only an object is a block; the decoder decides what anything else is.
      out.dead_letter = true;
      return in.peek('{') && in.skip_value();
    }
    if (key == "meta") {
      if (!once(meta) || !in.take('{')) return false;
      return scan_object(in, [&](std::string_view inner) {
        if (inner == "id") return once(id) && in.plain_string(out.id);
        if (inner == "lang") return once(lang) && in.plain_string(out.lang);
        if (inner == "schema_version") return once(version) && in.integer(out.schema_version.emplace());
        if (inner == "created_at") return once(created) && in.integer(out.created_at.emplace());
        return in.skip_value();
      });
    }
    return in.skip_value();
  });
  if (!read || !in.at_end() || !job || !trace || !meta || out.attempts < 0) return std::nullopt;
  return out;
}

std::optional<ContractFields> read(std::string_view body, std::optional<Envelope>& decoded) {
  if (auto fields = scan(body)) return fields;
  auto envelope = Envelope::decode(body);
  if (!envelope) return std::nullopt;
  decoded.emplace(std::move(*envelope));
  return ContractFields::of(*decoded);
}

std::optional<Rejection> schema_version_gate(std::optional<std::string_view> text) noexcept {
  if (!text) return std::nullopt;
  bool blank = true;
  for (char c : *text) {
    if (c != ' ' && c != '\t' && c != '\n' && c != '\v' && c != '\f' && c != '\r') {
      blank = false;
      break;
    }
  }
  if (blank || *text == "1") return std::nullopt;
  return Rejection::schema_version_gate;
}

std::optional<Rejection> schema_version_gate(std::int64_t value) noexcept {
  if (value == 1) return std::nullopt;
  return Rejection::schema_version_gate;
}

std::optional<std::int64_t> parse_count(std::string_view text) noexcept {
  if (text.empty()) return std::nullopt;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
  }
  std::int64_t value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

}  // namespace babelqueue::binding
