// SPDX-License-Identifier: Apache-2.0
#include "management_peek.hpp"

#include "servicebus_projection.hpp"

#include <babelqueue/error.hpp>

#include <chrono>
#include <exception>
#include <map>
#include <proton/annotation_key.hpp>
#include <proton/binary.hpp>
#include <proton/codec/map.hpp>
#include <proton/codec/vector.hpp>
#include <proton/scalar.hpp>
#include <proton/symbol.hpp>
#include <proton/timestamp.hpp>
#include <proton/types.hpp>
#include <proton/value.hpp>

namespace babelqueue::servicebus {

namespace {

constexpr std::string_view kPeekMessage = "com.microsoft:peek-message";
constexpr std::string_view kMessageState = "x-opt-message-state";

// What the service's annotations say of a peeked copy.
void describe(PeekedCopy& copy) {
  std::map<proton::annotation_key, proton::value> annotations;
  if (!copy.message.message_annotations().empty()) proton::get(copy.message.message_annotations().value(), annotations);
  auto find = [&](std::string_view key) -> const proton::value* {
    auto it = annotations.find(proton::annotation_key(proton::symbol(std::string(key))));
    return it == annotations.end() ? nullptr : &it->second;
  };
  if (const auto* seq = find(kSequenceNumberAnnotation); seq != nullptr) {
    copy.sequence_number = proton::coerce<std::int64_t>(*seq);
  }
  if (const auto* state = find(kMessageState); state != nullptr) {
    copy.waiting_elsewhere = proton::coerce<std::int64_t>(*state) != 0;  // 0 Active, 1 Deferred, 2 Scheduled
  } else if (const auto* at = find(kScheduledEnqueueTimeAnnotation); at != nullptr && at->type() == proton::TIMESTAMP) {
    const auto now =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch());
    copy.waiting_elsewhere = proton::get<proton::timestamp>(*at).milliseconds() > now.count();
  }
}

}  // namespace

Result<std::vector<PeekedCopy>> peek_messages(amqp10::Client& client, const std::string& queue, std::int64_t from,
                                              std::int32_t count, std::chrono::milliseconds timeout) {
  proton::message request;
  request.properties().put("operation", std::string(kPeekMessage));
  std::map<std::string, proton::value> body;
  body["from-sequence-number"] = from;
  body["message-count"] = count;
  request.body(body);
  auto reply = client.request(queue + "/$management", std::move(request), timeout);
  if (!reply) return unexpected(reply.error());
  const auto& props = reply->properties();
  const std::int64_t status = props.exists("statusCode") ? proton::coerce<std::int64_t>(props.get("statusCode")) : 0;
  const std::string description =
      props.exists("statusDescription") ? proton::to_string(props.get("statusDescription")) : std::string();
  if (status == 204) return std::vector<PeekedCopy>{};
  if (status != 200) {
    return unexpected(Errc::broker, "peek-message answered " + std::to_string(status) + ": " + description);
  }
  std::vector<PeekedCopy> out;
  try {
    std::map<std::string, proton::value> answer;
    proton::get(reply->body(), answer);
    // A list of maps, each a message's bytes under "message".
    std::vector<proton::value> messages;
    proton::get(answer.at("messages"), messages);
    out.reserve(messages.size());
    for (const proton::value& item : messages) {
      std::map<std::string, proton::value> entry;
      proton::get(item, entry);
      const auto bytes = proton::get<proton::binary>(entry.at("message"));
      PeekedCopy copy;
      copy.message.decode(std::vector<char>(bytes.begin(), bytes.end()));
      describe(copy);
      out.push_back(std::move(copy));
    }
  } catch (const std::exception& e) {
    return unexpected(Errc::broker, std::string("peek-message answered with messages it could not read: ") + e.what());
  }
  return out;
}

}  // namespace babelqueue::servicebus
