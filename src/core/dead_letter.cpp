// SPDX-License-Identifier: Apache-2.0
#include <babelqueue/clock.hpp>
#include <babelqueue/dead_letter.hpp>
#include <babelqueue/envelope.hpp>
#include <babelqueue/json.hpp>

#include <cxxabi.h>

#include <charconv>
#include <cstdlib>
#include <memory>
#include <typeinfo>

namespace babelqueue {

std::string_view to_string(DeadLetterReason reason) noexcept {
  switch (reason) {
    case DeadLetterReason::failed: return "failed";
    case DeadLetterReason::unknown_urn: return "unknown_urn";
    case DeadLetterReason::poison: return "poison";
  }
  return "failed";
}

std::optional<DeadLetterReason> dead_letter_reason_from_string(std::string_view name) noexcept {
  if (name == "failed") return DeadLetterReason::failed;
  if (name == "unknown_urn") return DeadLetterReason::unknown_urn;
  if (name == "poison") return DeadLetterReason::poison;
  return std::nullopt;
}

DeadLetter DeadLetter::make(DeadLetterReason reason, std::string original_queue, std::int64_t attempts,
                            std::optional<std::string> error, std::optional<std::string> exception) {
  DeadLetter block;
  block.reason = std::string(to_string(reason));
  block.error = std::move(error);
  block.exception = std::move(exception);
  block.failed_at = now_epoch_ms();
  block.original_queue = std::move(original_queue);
  block.attempts = attempts;
  block.lang = std::string(kSourceLang);
  return block;
}

Result<DeadLetter> DeadLetter::from_value(const Value& v) {
  if (!v.is_object()) return unexpected(Errc::invalid_argument, "dead_letter must be an object");
  DeadLetter block;
  try {
    if (const Value* x = v.find("reason"); x != nullptr && x->is_string()) block.reason = x->as_string();
    if (const Value* x = v.find("error"); x != nullptr && x->is_string()) block.error = x->as_string();
    if (const Value* x = v.find("exception"); x != nullptr && x->is_string()) block.exception = x->as_string();
    if (const Value* x = v.find("failed_at"); x != nullptr && x->is_integer()) block.failed_at = x->as_int64();
    if (const Value* x = v.find("original_queue"); x != nullptr && x->is_string()) {
      block.original_queue = x->as_string();
    }
    if (const Value* x = v.find("attempts"); x != nullptr && x->is_integer()) block.attempts = x->as_int64();
    if (const Value* x = v.find("lang"); x != nullptr && x->is_string()) block.lang = x->as_string();
  } catch (const Error& e) {
    return unexpected(e.info());
  }
  return block;
}

Result<void> write_dead_letter(std::string& out, const DeadLetter& block) {
  auto optional_string = [&](const std::optional<std::string>& s) -> Result<void> {
    if (!s) {
      out.append("null");
      return {};
    }
    return write_json_string(out, *s);
  };
  auto append_int = [&](std::int64_t n) {
    char buf[24];
    auto [ptr, ec] = std::to_chars(buf, buf + sizeof buf, n);
    out.append(buf, static_cast<std::size_t>(ptr - buf));
  };
  out.append("{\"reason\":");
  if (auto r = write_json_string(out, block.reason); !r) return r;
  out.append(",\"error\":");
  if (auto r = optional_string(block.error); !r) return r;
  out.append(",\"exception\":");
  if (auto r = optional_string(block.exception); !r) return r;
  out.append(",\"failed_at\":");
  append_int(block.failed_at);
  out.append(",\"original_queue\":");
  if (auto r = write_json_string(out, block.original_queue); !r) return r;
  out.append(",\"attempts\":");
  append_int(block.attempts);
  out.append(",\"lang\":");
  if (auto r = write_json_string(out, block.lang); !r) return r;
  out.push_back('}');
  return {};
}

namespace {
std::string demangle(const char* mangled) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> name(abi::__cxa_demangle(mangled, nullptr, nullptr, &status), std::free);
  return status == 0 && name ? std::string(name.get()) : std::string(mangled);
}
}  // namespace

std::string exception_type_name(const std::exception& error) { return demangle(typeid(error).name()); }

std::string current_exception_type_name() {
  const std::type_info* type = abi::__cxa_current_exception_type();
  return type != nullptr ? demangle(type->name()) : std::string("unknown");
}

}  // namespace babelqueue
