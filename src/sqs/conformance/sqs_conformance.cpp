// SPDX-License-Identifier: Apache-2.0
#include "sqs_conformance.hpp"

#include "../sqs_projection.hpp"

#include <babelqueue/json.hpp>
#include <babelqueue/sqs/transport.hpp>
#include <babelqueue/uuid.hpp>

#include <algorithm>
#include <map>

namespace babelqueue::sqs {
namespace {

using Attributes = std::map<std::string, std::pair<std::string, std::string>>;  // name -> (DataType, StringValue)

std::string compare(const Value& expected, const Attributes& actual) {
  std::string why;
  for (const auto& [name, spec] : expected.as_object()) {
    const auto found = actual.find(name);
    const std::string& type = spec["DataType"].as_string();
    const std::string& value = spec["StringValue"].as_string();
    if (found == actual.end()) {
      why += name + " missing; ";
    } else if (found->second != std::make_pair(type, value)) {
      why += name + " is " + found->second.first + " \"" + found->second.second + "\", expected " + type + " \"" +
             value + "\"; ";
    }
  }
  for (const auto& [name, spec] : actual) {
    if (!expected.as_object().contains(name)) why += "unexpected attribute " + name + "; ";
  }
  return why;
}

// Publishes body to a fresh queue of the live server and reads the
// attributes back as the server stores them.
Result<Attributes> round_trip(const std::string& url, const std::string& body) {
  auto parsed = Url::parse(url);
  if (!parsed) return unexpected(parsed.error());
  auto options = sqs::Transport::options_from_url(*parsed);
  if (!options) return unexpected(options.error());
  options->create_queues = true;
  options->fifo = false;
  auto transport = sqs::Transport::open(std::move(*options));
  if (!transport) return unexpected(transport.error());
  const std::string queue = "bq-conformance-" + uuid_v4().substr(0, 8);
  auto cleanup = [&] {
    for (const std::string& name : {queue, (*transport)->dead_letter_queue(queue)}) {
      if (auto queue_url = (*transport)->queue_url(name)) {
        static_cast<void>((*transport)->request("DeleteQueue", Value::object({{"QueueUrl", *queue_url}})));
      }
    }
  };
  if (auto published = (*transport)->publish(queue, body); !published) {
    cleanup();
    return unexpected(published.error());
  }
  auto queue_url = (*transport)->queue_url(queue);
  if (!queue_url) return unexpected(queue_url.error());
  auto answer = (*transport)
                    ->request("ReceiveMessage", Value::object({{"QueueUrl", *queue_url},
                                                               {"WaitTimeSeconds", 5},
                                                               {"MessageAttributeNames", Value::array({"All"})}}));
  cleanup();
  if (!answer) return unexpected(answer.error());
  const Value& messages = (*answer)["Messages"];
  if (!messages.is_array() || messages.as_array().empty()) {
    return unexpected(Errc::not_found, "the published message was not received back");
  }
  const Value& message = messages.as_array().front();
  if (message["Body"] != Value(body)) return unexpected(Errc::broker, "the body came back changed");
  Attributes attributes;
  if (const Object* received = message["MessageAttributes"].if_object()) {
    for (const auto& [name, spec] : *received) {
      const std::string* type = spec["DataType"].if_string();
      const std::string* value = spec["StringValue"].if_string();
      attributes[name] = {type != nullptr ? *type : "", value != nullptr ? *value : ""};
    }
  }
  return attributes;
}

void run_section(const conformance::Suite& suite, const Value& block, const conformance::Options& options,
                 conformance::Reporter& reporter) {
  const Value& projection = block["attribute_projection"];
  const std::string body = suite.read_file(projection["envelope_file"].as_string());
  const Value& expected = projection["message_attributes"];
  {
    Attributes computed;
    for (const auto& attribute : sqs_detail::project_attributes(body, {})) {
      computed[attribute.name] = {attribute.data_type, attribute.value};
    }
    const std::string why = compare(expected, computed);
    if (why.empty()) {
      reporter.pass("sqs/attribute_projection");
    } else {
      reporter.fail("sqs/attribute_projection", why);
    }
  }
  const std::string live = "sqs/attribute_projection/server";
  if (!options.url || !options.url->starts_with("sqs://")) {
    reporter.skip(live, "needs --url sqs://...");
  } else if (auto read_back = round_trip(*options.url, body); !read_back) {
    reporter.fail(live, read_back.error().message());
  } else if (const std::string why = compare(expected, *read_back); !why.empty()) {
    reporter.fail(live, why);
  } else {
    reporter.pass(live);
  }

  for (const Value& c : block["attempts_reconciliation"]["cases"].as_array()) {
    const std::string name = "sqs/attempts_reconciliation/" + c["name"].as_string();
    const std::int64_t body_attempts = c["body_attempts"].as_int64();
    const std::string* count = c["approximate_receive_count"].if_string();
    const auto native = sqs_detail::native_attempts(count);
    // The runtime's merge (Worker): max(body, native) when the transport reports one.
    const std::int64_t attempts = native ? std::max(body_attempts, *native) : body_attempts;
    const std::int64_t want = c["expected_attempts"].as_int64();
    if (attempts == want) {
      reporter.pass(name);
    } else {
      reporter.fail(name, "attempts " + std::to_string(attempts) + ", expected " + std::to_string(want));
    }
  }
}

}  // namespace

void add_conformance_section(conformance::Runner& runner) { runner.add_section("sqs", run_section); }

}  // namespace babelqueue::sqs
