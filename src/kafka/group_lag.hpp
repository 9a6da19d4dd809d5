// SPDX-License-Identifier: Apache-2.0
// The consumer group's lag on a topic, for stats(): the records after the
// group's committed offsets (after the earliest ones where it has none).
#pragma once

#include "consumer.hpp"
#include "topic_admin.hpp"

#include <babelqueue/kafka/transport.hpp>

#include <librdkafka/rdkafkacpp.h>

#include <cstdint>
#include <string>

namespace babelqueue::kafka::detail {

// The lag of options.group on topic; 0 for a missing topic. client is a
// Producer lease's (metadata and watermarks), consumer reads the committed
// offsets. Threads: any.
Result<std::int64_t> group_lag(RdKafka::Producer& client, const TopicAdmin& admin, Consumer& consumer,
                               const kafka::Transport::Options& options, const std::string& topic);

}  // namespace babelqueue::kafka::detail
