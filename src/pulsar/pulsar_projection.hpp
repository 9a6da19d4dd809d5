// SPDX-License-Identifier: Apache-2.0
// The Pulsar binding's mapping table: an envelope and its publish options
// onto a Pulsar message (payload, string properties, key, deliver_at_time),
// and a received message back onto a Delivery. Internal to
// babelqueue::pulsar (the conformance section uses it too).
//
// Thread-safety: pure functions.
#pragma once

#include "pulsar_client.hpp"

#include <babelqueue/transport.hpp>

#include <string_view>

namespace babelqueue::pulsar {

// The property that mirrors a publish delay, in milliseconds.
inline constexpr std::string_view kDelayProperty = "bq-delay";

// The message for body: the six bq- properties from the envelope's contract
// fields (options.contract, else read from the body), out-of-band headers as
// further properties (the binding's names win), the ordering key as the
// message key, a delay as deliver_at_time (now + delay) plus bq-delay.
pulsar_detail::OutMessage make_message(std::string_view body, const PublishOptions& options);

// The delivery of a received message: the bq-schema-version gate, the
// redeliveryCount as native_attempts (0-based), the key as ordering key,
// every property the binding does not own as a header.
Delivery to_delivery(std::string_view queue, pulsar_detail::InMessage message);

}  // namespace babelqueue::pulsar
