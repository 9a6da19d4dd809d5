// SPDX-License-Identifier: Apache-2.0
// peek(): the records the consumer group would read next on a topic, read
// by a consumer that never joins the group nor commits.
#pragma once

#include "client_support.hpp"
#include "topic_admin.hpp"

#include <babelqueue/kafka/transport.hpp>

#include <librdkafka/rdkafkacpp.h>

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace babelqueue::kafka::detail {

// Up to max records of topic after options.group's committed offsets (after
// the earliest ones where it has none), partition by partition, each in
// offset order; none for a missing topic. Records received by a consumer of
// the group and not committed yet are among them: Kafka keeps no other
// trace of them. client is a Producer lease's (metadata and watermarks);
// the reader's log lines go to log. Threads: any.
Result<std::vector<PeekedMessage>> group_peek(RdKafka::Producer& client, const TopicAdmin& admin,
                                              const kafka::Transport::Options& options, LogEvents& log,
                                              const std::string& topic, std::size_t max);

}  // namespace babelqueue::kafka::detail
