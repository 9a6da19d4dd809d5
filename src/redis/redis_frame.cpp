// SPDX-License-Identifier: Apache-2.0
#include "redis_frame.hpp"

#include <babelqueue/json.hpp>
#include <babelqueue/value.hpp>

namespace babelqueue::redis_detail {

namespace {
constexpr std::string_view kFrameKey = "__bq_frame";
}  // namespace

Headers sanitized(const Headers& headers) {
  Headers out;
  for (const auto& [name, value] : headers) {
    if (!name.empty() && !value.empty()) out.emplace(name, value);
  }
  return out;
}

Result<std::string> frame(std::string_view body, const Headers& headers) {
  const Headers clean = sanitized(headers);
  if (clean.empty()) return std::string(body);
  std::string out;
  out.reserve(body.size() + body.size() / 8 + 64);
  out.append(R"({"__bq_frame":1,"headers":{)");
  bool first = true;
  for (const auto& [name, value] : clean) {
    if (!first) out.push_back(',');
    first = false;
    const auto not_utf8 = [&] { return unexpected(Errc::invalid_utf8, "the header " + name + " is not valid UTF-8"); };
    if (!write_json_string(out, name)) return not_utf8();
    out.push_back(':');
    if (!write_json_string(out, value)) return not_utf8();
  }
  out.append(R"(},"body":)");
  if (!write_json_string(out, body)) return std::string(body);  // not UTF-8: bare, bytes kept
  out.push_back('}');
  return out;
}

Unframed unframe(std::string_view element) {
  Unframed result;
  const auto verbatim = [&] {
    result.body.assign(element);
    result.headers.clear();
    result.framed = false;
    return result;
  };
  if (element.empty() || element.front() != '{' || element.find("\"__bq_frame\"") == std::string_view::npos) {
    return verbatim();
  }
  auto parsed = parse_json(element);
  if (!parsed || !parsed->is_object()) return verbatim();
  const Object& object = parsed->as_object();
  const Value* version = object.find(kFrameKey);
  if (version == nullptr || !version->is_number() || version->as_double() == 0.0) return verbatim();
  const Value* body = object.find("body");
  if (body == nullptr || !body->is_string()) return verbatim();
  result.body = body->as_string();
  if (const Value* headers = object.find("headers"); headers != nullptr && headers->is_object()) {
    for (const auto& [name, value] : headers->as_object()) {
      if (value.is_string() && !name.empty() && !value.as_string().empty()) {
        result.headers.emplace(name, value.as_string());
      }
    }
  }
  result.framed = true;
  return result;
}

}  // namespace babelqueue::redis_detail
