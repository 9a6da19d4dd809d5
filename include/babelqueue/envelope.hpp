// SPDX-License-Identifier: Apache-2.0
// Envelope: one BabelQueue message, as produced (make) or as received (decode).
//
// An Envelope owns the bytes it was made or decoded from and reads its fields
// out of them, so decoding allocates once and never parses `data` until asked.
// Re-emitting it (retry with attempts+1, dead-letter) splices the original bytes
// of `data` and of every unknown key back unchanged: numbers are never
// re-printed, keys never re-ordered.
//
// Thread-safety: an Envelope is an immutable value once built (only the
// in-memory attempts counter can be changed, by set_attempts); concurrent reads
// are safe.
#pragma once

#include <babelqueue/data_writer.hpp>
#include <babelqueue/dead_letter.hpp>
#include <babelqueue/detail/envelope_layout.hpp>
#include <babelqueue/rejection.hpp>
#include <babelqueue/result.hpp>
#include <babelqueue/typed_message.hpp>
#include <babelqueue/value.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace babelqueue {

/// The language tag this SDK writes into meta.lang and dead_letter.lang.
inline constexpr std::string_view kSourceLang = "cpp";
/// The only envelope version this SDK reads and writes.
inline constexpr std::int64_t kSchemaVersion = 1;

/// What Envelope::make() writes besides the URN and the data.
struct MakeOptions {
  std::string queue = "default";  ///< meta.queue
  std::string trace_id;           ///< continue this trace; blank = start a new one
  /// Fixed values instead of fresh ones: for tests, golden files and
  /// benchmarks. Leave empty in production code.
  std::string id;                          ///< meta.id (a fresh UUIDv7 when empty)
  std::optional<std::int64_t> created_at;  ///< meta.created_at, Unix epoch ms (now when empty)
};

/// The limits and callbacks of Envelope::decode().
struct DecodeOptions {
  std::size_t max_bytes = 16U * 1024U * 1024U;  ///< larger bodies: Rejection::too_large
  std::size_t max_depth = kDefaultMaxDepth;     ///< deeper nesting: Rejection::too_deep
  /// Called once per forbidden key dropped while decoding, with its JSON
  /// pointer ("/timestamp", "/meta/ts"). The warnings are also kept on the
  /// envelope (Envelope::warnings).
  std::function<void(std::string_view pointer)> on_warning;
};

/// The verdict of accepts(): true, or false with the reason.
class Acceptance {
 public:
  Acceptance() = default;  ///< accepted
  /// Not accepted, for this reason.
  explicit Acceptance(Rejection reason) noexcept : code_(static_cast<int>(reason) + 1) {}
  /// Whether the envelope is accepted.
  ///@{
  explicit operator bool() const noexcept { return code_ == 0; }
  bool accepted() const noexcept { return code_ == 0; }
  ///@}
  /// The reason when not accepted.
  std::optional<Rejection> reason() const noexcept {
    return code_ == 0 ? std::nullopt : std::optional(static_cast<Rejection>(code_ - 1));
  }

 private:
  // One integer (0: accepted, else the Rejection + 1) rather than an
  // optional<Rejection>: it is returned in a register whole, where the
  // optional was assembled on the stack a byte at a time and read back as a
  // word, a stalled store forward on every accepts() call.
  int code_ = 0;
};

class Envelope;
/// Judges an envelope by every rule of the wire contract decode() leaves to it
/// (docs/encoding.md): accepted, or the Rejection.
Acceptance accepts(const Envelope& envelope) noexcept;

/// One message of the canonical envelope: made from a URN and data, or decoded
/// from a body; its bytes are kept and re-emitted byte for byte (docs/encoding.md).
class Envelope {
 public:
  /// An empty envelope, with no body and no fields; make() and decode() give
  /// real ones.
  Envelope() noexcept;

  // ---- producing ------------------------------------------------------------

  /// A new envelope for urn with data (an object; null means {}). The URN is
  /// trimmed and must not be blank; data must hold no NaN/infinity and only
  /// valid UTF-8. Errors: Errc::invalid_argument, Errc::invalid_utf8.
  static Result<Envelope> make(std::string_view urn, const Value& data, const MakeOptions& options = {});

  /// A new envelope for a typed message: its URN, and its data written by
  /// write_data (data_writer.hpp) when it has one, else its to_value()
  /// (typed_message.hpp). Every typed publish (Publisher, Worker) makes its
  /// envelope here. Errors: those of make() above, and the first mistake
  /// write_data made (DataWriter).
  template <PublishableMessage T>
  static Result<Envelope> make(const T& message, const MakeOptions& options = {}) {
    if constexpr (WritesData<T>) {
      return make_written(
          T::urn, [](const void* m, DataWriter& out) { static_cast<const T*>(m)->write_data(out); }, &message, options);
    } else {
      return make(T::urn, message.to_value(), options);
    }
  }

  // ---- consuming ------------------------------------------------------------

  /// Reads a body. Fails (with a typed Rejection) only when the bytes are not a
  /// JSON object the SDK will read: too large, invalid UTF-8, not JSON, not an
  /// object, too deep, a duplicate frame/meta key. Any other rule of the wire
  /// contract is judged by accepts(), so a rejected envelope can still be
  /// inspected and dead-lettered with its bytes.
  static Result<Envelope, DecodeError> decode(std::string_view body, const DecodeOptions& options = {});

  // ---- fields ---------------------------------------------------------------

  /// The URN: `job`, else the `urn` alias when `job` is absent or blank.
  std::string_view urn() const noexcept;
  std::string_view trace_id() const noexcept;  ///< trace_id
  /// The exact JSON text of `data` (empty when absent).
  std::string_view data_json() const noexcept;
  /// `data` parsed into a Value (null when absent).
  Value data() const;
  /// `data` read as a typed message (T::from_value, typed_message.hpp).
  template <TypedMessage T>
  T data_as() const {
    return T::from_value(data());
  }

  std::string_view id() const noexcept;     ///< meta.id ("" when absent or not a string)
  std::string_view queue() const noexcept;  ///< meta.queue
  std::string_view lang() const noexcept;   ///< meta.lang
  /// meta.schema_version and meta.created_at: empty when absent or not integers.
  ///@{
  std::optional<std::int64_t> schema_version() const noexcept;
  std::optional<std::int64_t> created_at() const noexcept;
  ///@}

  /// Top-level attempts (0 when absent). A transport may raise it from the
  /// broker's delivery count (set_attempts); re-emitting writes this value.
  ///@{
  std::int64_t attempts() const noexcept { return attempts_; }
  void set_attempts(std::int64_t attempts) noexcept { attempts_ = attempts; }
  ///@}

  /// Whether the body has a dead_letter block.
  bool has_dead_letter() const noexcept;
  /// The dead_letter block, read from its JSON (empty when absent or unreadable).
  std::optional<DeadLetter> dead_letter() const;

  /// JSON pointers of forbidden keys dropped while decoding.
  const std::vector<std::string>& warnings() const noexcept { return warnings_; }

  /// The bytes this envelope was made as or decoded from.
  std::string_view body() const noexcept { return {buffer_.data(), body_size_}; }

  // ---- re-emitting ------------------------------------------------------------

  /// The canonical bytes with the current attempts: known keys in canonical
  /// order (job, trace_id, data, meta, attempts, dead_letter), then unknown keys
  /// in arrival order, every value except attempts copied byte for byte
  /// (insignificant whitespace removed), forbidden keys left out. Equal to
  /// body() for a canonical body. Errc::rejected when the envelope is not
  /// accepted.
  Result<std::string> encode() const { return encode_with_attempts(attempts_); }
  /// encode() with another attempts count (what a retry publishes).
  Result<std::string> encode_with_attempts(std::int64_t attempts) const;

  /// The body for a dead-letter queue. An accepted envelope is re-emitted as
  /// encode() with the block (replacing an earlier one); a rejected one keeps
  /// every byte and gains the block before its closing brace.
  Result<std::string> encode_dead_letter(const DeadLetter& block) const;

  /// The body redrive publishes: encode() without the dead_letter block and
  /// with attempts 0.
  Result<std::string> encode_redriven() const;

  /// The same message in another trace: encode() with trace_id replaced and
  /// every other byte kept (meta.id, created_at, data, unknown keys), read
  /// back as an envelope. For a producer whose tracing decides the trace
  /// (the family's OpenTelemetry publish stamps the span's trace id).
  /// Errc::rejected when the envelope is not accepted, Errc::invalid_argument
  /// for a blank trace_id, Errc::invalid_utf8 for invalid UTF-8.
  Result<Envelope> with_trace_id(std::string_view trace_id) const;

  /// Internal layout, filled by the decoder and by make().
 private:
  friend class EnvelopeBuilder;
  friend class EnvelopeDecoder;
  friend class EnvelopeIndexDecoder;
  friend Acceptance accepts(const Envelope& envelope) noexcept;
  using Span = detail::Span;
  using Member = detail::Member;
  using Top = detail::TopKey;
  using MetaKey = detail::MetaKey;

  /// make() of a message that writes its own data: write(message, out).
  using WriteData = void (*)(const void* message, DataWriter& out);
  static Result<Envelope> make_written(std::string_view urn, WriteData write, const void* message,
                                       const MakeOptions& options);

  std::string_view slice(Span s) const noexcept { return {buffer_.data() + s.offset, s.size}; }
  std::string_view text(const detail::Text& t) const noexcept;
  /// The layout a decoder fills for a string field (job, urn, trace_id; id,
  /// queue, lang) and for an integer one (schema_version, created_at).
  ///@{
  detail::Text& text_of(Top which) noexcept { return which == Top::job ? job_ : which == Top::urn ? urn_ : trace_id_; }
  detail::Text& text_of(MetaKey which) noexcept {
    return which == MetaKey::id ? id_ : which == MetaKey::queue ? queue_ : lang_;
  }
  detail::Integer& integer_of(MetaKey which) noexcept {
    return which == MetaKey::schema_version ? schema_version_ : created_at_;
  }
  ///@}
  /// Keeps a decoded member of the frame (of meta) under its known key
  /// (known: its index), or among the unknown ones (known < 0, then nothing
  /// is returned).
  ///@{
  std::optional<Top> keep_top(int known, Member m) {
    if (known < 0) {
      unknown_top_.push_back(m);
      return std::nullopt;
    }
    top_[static_cast<std::size_t>(known)] = m;
    return static_cast<Top>(known);
  }
  std::optional<MetaKey> keep_meta(int known, Member m) {
    if (known < 0) {
      unknown_meta_.push_back(m);
      return std::nullopt;
    }
    meta_[static_cast<std::size_t>(known)] = m;
    return static_cast<MetaKey>(known);
  }
  ///@}
  enum class BlockMode { keep, replace, remove };
  /// block_json: the dead_letter block's JSON, written with BlockMode::replace;
  /// trace_id_json: the trace_id's JSON instead of the body's, when not empty.
  void write_canonical(std::string& out, std::int64_t attempts, BlockMode mode, std::string_view block_json,
                       std::string_view trace_id_json = {}) const;
  std::string splice_dead_letter(std::string_view block_json) const;
  Result<void> require_accepted() const;

  std::string buffer_;  ///< the body, with spare capacity for the parser's padding
  std::size_t body_size_ = 0;
  std::string side_;  ///< unescaped copies of string fields that had escapes
  std::array<detail::OptionalMember, static_cast<std::size_t>(Top::count)> top_;
  std::array<detail::OptionalMember, static_cast<std::size_t>(MetaKey::count)> meta_;
  std::vector<Member> unknown_top_;   ///< in arrival order
  std::vector<Member> unknown_meta_;  ///< in arrival order
  std::vector<std::string> warnings_;
  detail::Text job_, urn_, trace_id_, id_, queue_, lang_;
  detail::Integer schema_version_, created_at_;
  std::int64_t attempts_ = 0;
  bool attempts_valid_ = true;  ///< absent, or an integer >= 0
  bool meta_is_object_ = false;
  bool data_is_object_ = false;
  std::optional<Rejection> rejection_;  ///< cached verdict of accepts()
  bool judged_ = false;                 ///< rejection_ holds it (decoded or made)
};

/// Whether a consumer may hand this envelope to a handler: the URN (`job`, else
/// `urn`) is a non-blank string, meta is an object with schema_version the
/// integer 1, data is an object, trace_id is a non-blank string, and attempts is
/// absent or an integer >= 0 — checked in that order.
Acceptance accepts(const Envelope& envelope) noexcept;

/// The body to put on a dead-letter queue for a message that arrived as body:
/// decodable objects gain the block (see Envelope::encode_dead_letter); anything
/// else (not JSON, not an object, invalid UTF-8, duplicate keys, too deep, too
/// big) is returned byte for byte — its reason travels in transport headers.
std::string dead_letter_body(std::string_view body, const DeadLetter& block, const DecodeOptions& options = {});

}  // namespace babelqueue
