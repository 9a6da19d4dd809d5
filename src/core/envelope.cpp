// SPDX-License-Identifier: Apache-2.0
#include "data_writer_stacks.hpp"
#include "envelope_builder.hpp"
#include "json_out.hpp"
#include "json_walk.hpp"

#include <babelqueue/clock.hpp>
#include <babelqueue/envelope.hpp>
#include <babelqueue/json.hpp>
#include <babelqueue/uuid.hpp>

#include <simdjson.h>

#include <charconv>
#include <cstring>

namespace babelqueue {

namespace {

bool is_ascii_space(char c) noexcept { return c == ' ' || (c >= '\t' && c <= '\r'); }

std::string_view trim_ascii(std::string_view s) noexcept {
  while (!s.empty() && is_ascii_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_ascii_space(s.back())) s.remove_suffix(1);
  return s;
}

bool is_blank(std::string_view s) noexcept { return trim_ascii(s).empty(); }

// Appends JSON text without its insignificant whitespace; the bytes of every
// token (strings, numbers) stay exactly as they are. simdjson's minifier does
// it at memory speed, so compact input costs little more than a copy.
void append_compact(std::string& out, std::string_view json) {
  const std::size_t start = out.size();
  out.resize(start + json.size());
  std::size_t written = 0;
  if (simdjson::minify(json.data(), json.size(), out.data() + start, written) != simdjson::SUCCESS) {
    // Cannot happen for spans of a decoded body; keep the bytes as they are.
    std::memcpy(out.data() + start, json.data(), json.size());
    written = json.size();
  }
  out.resize(start + written);
}

void append_int(std::string& out, std::int64_t value) {
  char buf[24];
  auto [ptr, ec] = std::to_chars(buf, buf + sizeof buf, value);
  out.append(buf, static_cast<std::size_t>(ptr - buf));
}

// The per-thread buffers of make(). A write_data that makes an envelope
// itself (the user's code runs in the middle of make) gets fresh ones
// instead of overwriting those in use.
struct MakeScratch {
  std::string buffer;
  detail::DataWriterStacks stacks;
  bool busy = false;
};

class ScratchLease {
 public:
  ScratchLease() {
    thread_local MakeScratch shared;
    if (shared.busy) {
      scratch_ = &own_.emplace();
    } else {
      scratch_ = &shared;
    }
    scratch_->busy = true;
  }
  ~ScratchLease() { scratch_->busy = false; }
  ScratchLease(const ScratchLease&) = delete;
  ScratchLease& operator=(const ScratchLease&) = delete;
  MakeScratch& operator*() const noexcept { return *scratch_; }

 private:
  std::optional<MakeScratch> own_;
  MakeScratch* scratch_;
};

}  // namespace

// ---- make -------------------------------------------------------------------

template <class WriteData>
Result<Envelope> EnvelopeBuilder::build(std::string_view urn, const MakeOptions& options, WriteData write_data) {
  const std::string_view job = trim_ascii(urn);
  if (job.empty()) return unexpected(Errc::invalid_argument, "the URN must not be blank");
  if (options.queue.empty()) return unexpected(Errc::invalid_argument, "the queue name must not be empty");

  char trace_buf[36];
  char id_buf[36];
  std::string_view trace_id = options.trace_id;
  if (is_blank(trace_id)) {
    uuid_v4(trace_buf);
    trace_id = std::string_view(trace_buf, sizeof trace_buf);
  }
  std::string_view id = options.id;
  if (id.empty()) {
    uuid_v4(id_buf);
    id = std::string_view(id_buf, sizeof id_buf);
  }
  if (id == trace_id) return unexpected(Errc::invalid_argument, "meta.id must differ from trace_id");
  // Not value_or(now_epoch_ms()): that would read the clock even when a time is given.
  const std::int64_t created_at = options.created_at ? *options.created_at : now_epoch_ms();

  // Written into a per-thread scratch buffer, then copied once at its exact
  // size: one allocation per envelope instead of a growing string's several.
  const ScratchLease scratch;
  detail::JsonOut out((*scratch).buffer, 0);
  auto record = [&](std::size_t begin) {
    return detail::Member{{}, {static_cast<std::uint32_t>(begin), static_cast<std::uint32_t>(out.size() - begin)}};
  };
  // A string field; invalid UTF-8 is remembered and reported before the
  // next part is written (a Result per field, with its error alternative,
  // cost more than writing the field).
  bool invalid_utf8 = false;
  auto field = [&](std::string_view key_prefix, std::string_view text) {
    out.literal(key_prefix);
    const std::size_t begin = out.size();
    invalid_utf8 |= out.string(text) != detail::WriteStatus::ok;
    return record(begin);
  };
  // A string field's text is its token without the quotes, unless writing it
  // needed escapes: then an unescaped copy goes to the side buffer.
  auto keep_text = [](Envelope& env, detail::Text& slot, const detail::Member& member, std::string_view text) {
    if (member.value.size == text.size() + 2) {
      slot = detail::Text{{member.value.offset + 1, member.value.size - 2}, false, true};
      return;
    }
    slot = detail::Text{
        {static_cast<std::uint32_t>(env.side_.size()), static_cast<std::uint32_t>(text.size())}, true, true};
    env.side_.append(text);
  };

  const detail::Member job_member = field("{\"job\":", job);
  const detail::Member trace_member = field(",\"trace_id\":", trace_id);
  if (invalid_utf8) return unexpected(detail::write_error(detail::WriteStatus::invalid_utf8));
  out.literal(",\"data\":");
  const std::size_t data_begin = out.size();
  if (std::optional<ErrorInfo> error = write_data(out, (*scratch).stacks)) return unexpected(std::move(*error));
  const detail::Member data_member = record(data_begin);
  out.literal(",\"meta\":");
  const std::size_t meta_begin = out.size();
  const detail::Member id_member = field("{\"id\":", id);
  const detail::Member queue_member = field(",\"queue\":", options.queue);
  if (invalid_utf8) return unexpected(detail::write_error(detail::WriteStatus::invalid_utf8));
  // This SDK's own tag needs no escape: written as it is.
  out.literal(",\"lang\":\"");
  const std::size_t lang_begin = out.size() - 1;
  out.literal(kSourceLang);
  out.put('"');
  const detail::Member lang_member = record(lang_begin);
  out.literal(",\"schema_version\":");
  const std::size_t version_begin = out.size();
  out.put('1');
  const detail::Member version_member = record(version_begin);
  out.literal(",\"created_at\":");
  const std::size_t created_begin = out.size();
  out.integer(created_at);
  const detail::Member created_member = record(created_begin);
  out.put('}');
  const detail::Member meta_member = record(meta_begin);
  out.literal(",\"attempts\":");
  const std::size_t attempts_begin = out.size();
  out.put('0');
  const detail::Member attempts_member = record(attempts_begin);
  out.put('}');
  // Nothing fails from here on: the envelope is made inside the result and
  // returned by name, never moved.
  Result<Envelope> made(std::in_place);
  Envelope& env = *made;
  env.buffer_.assign(out.data(), out.size());
  env.body_size_ = out.size();

  using T = detail::TopKey;
  using M = detail::MetaKey;
  env.top_[static_cast<std::size_t>(T::job)] = job_member;
  env.top_[static_cast<std::size_t>(T::trace_id)] = trace_member;
  env.top_[static_cast<std::size_t>(T::data)] = data_member;
  env.top_[static_cast<std::size_t>(T::meta)] = meta_member;
  env.top_[static_cast<std::size_t>(T::attempts)] = attempts_member;
  env.meta_[static_cast<std::size_t>(M::id)] = id_member;
  env.meta_[static_cast<std::size_t>(M::queue)] = queue_member;
  env.meta_[static_cast<std::size_t>(M::lang)] = lang_member;
  env.meta_[static_cast<std::size_t>(M::schema_version)] = version_member;
  env.meta_[static_cast<std::size_t>(M::created_at)] = created_member;
  keep_text(env, env.job_, job_member, job);
  keep_text(env, env.trace_id_, trace_member, trace_id);
  keep_text(env, env.id_, id_member, id);
  keep_text(env, env.queue_, queue_member, options.queue);
  keep_text(env, env.lang_, lang_member, kSourceLang);
  env.schema_version_ = {kSchemaVersion, true};
  env.created_at_ = {created_at, true};
  env.meta_is_object_ = true;
  env.data_is_object_ = true;
  env.judged_ = true;  // accepted: every rule of accepts() holds by construction
  return made;
}

Result<Envelope> EnvelopeBuilder::make(std::string_view urn, const Value& data, const MakeOptions& options) {
  if (!data.is_null() && !data.is_object()) {
    return unexpected(Errc::invalid_argument,
                      "data must be a JSON object, got " + std::string(Value::kind_name(data.kind())));
  }
  return build(urn, options, [&](detail::JsonOut& out, detail::DataWriterStacks&) -> std::optional<ErrorInfo> {
    if (data.is_null()) {
      out.literal("{}");
      return std::nullopt;
    }
    if (const detail::WriteStatus status = out.value(data); status != detail::WriteStatus::ok) {
      return detail::write_error(status);
    }
    return std::nullopt;
  });
}

Result<Envelope> EnvelopeBuilder::make(std::string_view urn, Envelope::WriteData write, const void* message,
                                       const MakeOptions& options) {
  return build(urn, options, [&](detail::JsonOut& out, detail::DataWriterStacks& stacks) {
    DataWriter writer(out, stacks);
    write(message, writer);
    return writer.finish();
  });
}

Result<Envelope> Envelope::make(std::string_view urn, const Value& data, const MakeOptions& options) {
  return EnvelopeBuilder::make(urn, data, options);
}

Result<Envelope> Envelope::make_written(std::string_view urn, WriteData write, const void* message,
                                        const MakeOptions& options) {
  return EnvelopeBuilder::make(urn, write, message, options);
}

// ---- fields -------------------------------------------------------------------

std::string_view Envelope::text(const detail::Text& t) const noexcept {
  if (!t.is_string) return {};
  return t.in_side ? std::string_view(side_.data() + t.span.offset, t.span.size) : slice(t.span);
}

std::string_view Envelope::urn() const noexcept {
  const std::string_view job = text(job_);
  if (!is_blank(job)) return job;
  const std::string_view alias = text(urn_);
  return is_blank(alias) ? job : alias;
}

std::string_view Envelope::trace_id() const noexcept { return text(trace_id_); }
std::string_view Envelope::id() const noexcept { return text(id_); }
std::string_view Envelope::queue() const noexcept { return text(queue_); }
std::string_view Envelope::lang() const noexcept { return text(lang_); }

std::optional<std::int64_t> Envelope::schema_version() const noexcept {
  return schema_version_.is_int ? std::optional(schema_version_.value) : std::nullopt;
}
std::optional<std::int64_t> Envelope::created_at() const noexcept {
  return created_at_.is_int ? std::optional(created_at_.value) : std::nullopt;
}

std::string_view Envelope::data_json() const noexcept {
  const auto& m = top_[static_cast<std::size_t>(Top::data)];
  return m ? slice(m->value) : std::string_view();
}

Value Envelope::data() const {
  const std::string_view json = data_json();
  if (json.empty()) return Value();
  // The bytes were validated when the envelope was decoded or made.
  return parse_json(json, JsonLimits{.max_depth = 1U << 20U, .max_bytes = json.size()}).value();
}

bool Envelope::has_dead_letter() const noexcept { return top_[static_cast<std::size_t>(Top::dead_letter)].has_value(); }

std::optional<DeadLetter> Envelope::dead_letter() const {
  const auto& m = top_[static_cast<std::size_t>(Top::dead_letter)];
  if (!m) return std::nullopt;
  auto value = parse_json(slice(m->value));
  if (!value || !value->is_object()) return std::nullopt;
  auto block = DeadLetter::from_value(*value);
  if (!block) return std::nullopt;
  return *block;
}

Acceptance accepts(const Envelope& e) noexcept {
  // Decode and make judge once; a consumer asks again for every message.
  if (e.judged_) return e.rejection_ ? Acceptance(*e.rejection_) : Acceptance();
  if (is_blank(e.urn())) return Acceptance(Rejection::missing_urn);
  if (!e.meta_is_object_) return Acceptance(Rejection::missing_meta);
  if (!e.schema_version_.is_int || e.schema_version_.value != kSchemaVersion) {
    return Acceptance(Rejection::unsupported_schema_version);
  }
  if (!e.data_is_object_) return Acceptance(Rejection::invalid_data);
  if (is_blank(e.trace_id())) return Acceptance(Rejection::missing_trace_id);
  if (!e.attempts_valid_) return Acceptance(Rejection::invalid_attempts);
  return Acceptance();
}

// ---- re-emitting ------------------------------------------------------------------

void Envelope::write_canonical(std::string& out, std::int64_t attempts, BlockMode mode, std::string_view block_json,
                               std::string_view trace_id_json) const {
  bool first = true;
  auto key = [&](std::string_view name) {
    out.append(first ? "{\"" : ",\"");
    first = false;
    out.append(name);
    out.append("\":");
  };
  for (Top t : {Top::job, Top::urn, Top::trace_id, Top::data}) {
    if (const auto& m = top_[static_cast<std::size_t>(t)]) {
      key(detail::kTopKeyNames[static_cast<std::size_t>(t)]);
      if (t == Top::trace_id && !trace_id_json.empty()) {
        out.append(trace_id_json);
      } else {
        append_compact(out, slice(m->value));
      }
    }
  }
  key("meta");
  bool meta_first = true;
  auto meta_key = [&](std::string_view raw_key) {
    out.push_back(meta_first ? '{' : ',');
    meta_first = false;
    out.append(raw_key);
    out.push_back(':');
  };
  for (std::size_t i = 0; i < meta_.size(); ++i) {
    if (meta_[i]) {
      out.push_back(meta_first ? '{' : ',');
      meta_first = false;
      out.push_back('"');
      out.append(detail::kMetaKeyNames[i]);
      out.append("\":");
      append_compact(out, slice(meta_[i]->value));
    }
  }
  for (const Member& m : unknown_meta_) {
    meta_key(slice(m.key));
    append_compact(out, slice(m.value));
  }
  out.append(meta_first ? "{}" : "}");
  key("attempts");
  append_int(out, attempts);
  if (mode == BlockMode::replace) {
    key("dead_letter");
    out.append(block_json);
  } else if (const auto& m = top_[static_cast<std::size_t>(Top::dead_letter)]; m && mode == BlockMode::keep) {
    key("dead_letter");
    append_compact(out, slice(m->value));
  }
  for (const Member& m : unknown_top_) {
    out.push_back(',');
    out.append(slice(m.key));
    out.push_back(':');
    append_compact(out, slice(m.value));
  }
  out.push_back('}');
}

// Only an accepted envelope is ever re-emitted in canonical form.
Result<void> Envelope::require_accepted() const {
  if (!rejection_) return {};
  return unexpected(Errc::rejected,
                    "a rejected envelope (" + std::string(to_string(*rejection_)) + ") is never re-emitted");
}

Result<std::string> Envelope::encode_with_attempts(std::int64_t attempts) const {
  if (auto ok = require_accepted(); !ok) return unexpected(ok.error());
  if (attempts < 0) return unexpected(Errc::invalid_argument, "attempts must be >= 0");
  std::string out;
  out.reserve(body_size_ + 8);
  write_canonical(out, attempts, BlockMode::keep, {});
  return out;
}

Result<std::string> Envelope::encode_redriven() const {
  if (auto ok = require_accepted(); !ok) return unexpected(ok.error());
  std::string out;
  out.reserve(body_size_);
  write_canonical(out, 0, BlockMode::remove, {});
  return out;
}

Result<Envelope> Envelope::with_trace_id(std::string_view trace_id) const {
  if (auto ok = require_accepted(); !ok) return unexpected(ok.error());
  if (is_blank(trace_id)) return unexpected(Errc::invalid_argument, "the trace_id must not be blank");
  std::string trace_id_json;
  if (auto r = write_json_string(trace_id_json, trace_id); !r) return unexpected(r.error());
  std::string out;
  out.reserve(body_size_ + trace_id_json.size());
  write_canonical(out, attempts_, BlockMode::keep, {}, trace_id_json);
  auto decoded = decode(out);
  // Cannot fail for the canonical form of an accepted envelope.
  if (!decoded) return unexpected(Errc::internal, "the re-encoded envelope did not decode: " + decoded.error().detail);
  return std::move(*decoded);
}

Result<std::string> Envelope::encode_dead_letter(const DeadLetter& block) const {
  // Written once, first: a block that cannot be encoded (invalid UTF-8 in its
  // error text) is reported, not thrown.
  std::string block_json;
  if (auto r = write_dead_letter(block_json, block); !r) return unexpected(r.error());
  if (rejection_) return splice_dead_letter(block_json);
  std::string out;
  out.reserve(body_size_ + block_json.size() + 24);
  write_canonical(out, attempts_, BlockMode::replace, block_json);
  return out;
}

// A rejected envelope keeps every byte: the block replaces an earlier block's
// value in place, or is inserted before the closing brace.
std::string Envelope::splice_dead_letter(std::string_view block_json) const {
  const std::string_view b = body();
  std::string out;
  out.reserve(b.size() + block_json.size() + 16);
  if (const auto& m = top_[static_cast<std::size_t>(Top::dead_letter)]) {
    out.append(b.substr(0, m->value.offset));
    out.append(block_json);
    out.append(b.substr(m->value.offset + m->value.size));
    return out;
  }
  std::size_t close = b.size();
  while (close > 0 && b[close - 1] != '}') --close;
  --close;  // the closing brace of the (decoded, so well-formed) object
  std::size_t before = close;
  while (before > 0 && detail::is_json_space(b[before - 1])) --before;
  const bool empty_object = b[before - 1] == '{';
  out.append(b.substr(0, close));
  out.append(empty_object ? "\"dead_letter\":" : ",\"dead_letter\":");
  out.append(block_json);
  out.append(b.substr(close));
  return out;
}

std::string dead_letter_body(std::string_view body, const DeadLetter& block, const DecodeOptions& options) {
  auto env = Envelope::decode(body, options);
  if (!env) return std::string(body);
  auto annotated = env->encode_dead_letter(block);
  return annotated ? std::move(*annotated) : std::string(body);
}

}  // namespace babelqueue
