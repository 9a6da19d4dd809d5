// SPDX-License-Identifier: Apache-2.0
// What the tests, benchmarks and the conformance section reach inside a
// kafka::Transport: internal, not installed, not public API.
#pragma once

#include <babelqueue/kafka/transport.hpp>

#include <cstddef>
#include <string>
#include <string_view>

namespace babelqueue::kafka::detail {

struct TransportAccess {
  // The retry topic of tier index (0-based) for topic, under retry_topic_pattern.
  static std::string retry_topic(const Transport& transport, std::string_view topic, std::size_t tier);
  // Creates topic when missing (partitions, replication_factor of the options).
  // Errc::not_found naming the topic when it is missing and cannot be created.
  static Result<void> ensure_topic(Transport& transport, std::string_view topic);
};

}  // namespace babelqueue::kafka::detail
