// SPDX-License-Identifier: Apache-2.0
// Pulsar's commands (the BaseCommand of its binary protocol) and the message
// metadata, encoded and decoded by hand for the subset this client speaks.
// The field numbers are those of the protocol's PulsarApi.proto; every
// command below is exercised against a real broker by tests/pulsar.
// Internal to babelqueue::pulsar.
//
// Thread-safety: plain values and pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace babelqueue::pulsar_detail {

// BaseCommand.Type: each command's number is also the field number of its
// body in BaseCommand.
enum class CommandType : std::uint32_t {
  connect = 2,
  connected = 3,
  subscribe = 4,
  producer = 5,
  send = 6,
  send_receipt = 7,
  send_error = 8,
  message = 9,
  ack = 10,
  flow = 11,
  unsubscribe = 12,
  success = 13,
  error = 14,
  close_producer = 15,
  close_consumer = 16,
  producer_success = 17,
  ping = 18,
  pong = 19,
  redeliver_unacknowledged_messages = 20,
  partitioned_metadata = 21,
  partitioned_metadata_response = 22,
  lookup = 23,
  lookup_response = 24,
  reached_end_of_topic = 27,
  get_last_message_id = 29,
  get_last_message_id_response = 30,
  active_consumer_change = 31,
  auth_challenge = 36,
  auth_response = 37,
  ack_response = 38,
  topic_migrated = 70,
};

std::string_view to_string(CommandType type) noexcept;

// The protocol version this client announces (the broker answers with the
// lower of its own and this).
inline constexpr std::int32_t kProtocolVersion = 19;

enum class SubscriptionType : std::uint32_t { exclusive = 0, shared = 1, failover = 2, key_shared = 3 };
enum class InitialPosition : std::uint32_t { latest = 0, earliest = 1 };
enum class CompressionType : std::uint32_t { none = 0, lz4 = 1, zlib = 2, zstd = 3, snappy = 4 };
enum class LookupType : std::uint32_t { redirect = 0, connect = 1, failed = 2 };

// ServerError values the client reacts to by name.
enum class ServerError : std::int32_t {
  unknown = 0,
  metadata = 1,
  persistence = 2,
  authentication = 3,
  authorization = 4,
  consumer_busy = 5,
  service_not_ready = 6,
  checksum = 9,
  unsupported_version = 10,
  topic_not_found = 11,
  subscription_not_found = 12,
  consumer_not_found = 13,
  too_many_requests = 14,
  topic_terminated = 15,
  producer_busy = 16,
  invalid_topic_name = 17,
  not_allowed = 22,
};

std::string server_error_name(std::int32_t code);

struct MessageId {
  std::uint64_t ledger = 0;
  std::uint64_t entry = 0;
  std::int32_t partition = -1;
  std::int32_t batch_index = -1;

  friend bool operator==(const MessageId&, const MessageId&) = default;
};

using Properties = std::vector<std::pair<std::string, std::string>>;

// A command from the broker, flattened: the fields of whichever command it
// is (see type); the others keep their defaults.
struct Command {
  CommandType type{};
  std::optional<std::uint64_t> request_id;
  std::uint64_t producer_id = 0;
  std::uint64_t consumer_id = 0;
  std::uint64_t sequence_id = 0;
  MessageId message_id;
  std::uint32_t redelivery_count = 0;
  std::vector<std::int64_t> ack_set;  // MESSAGE: the batch entries still unacknowledged
  // CONNECTED
  std::string server_version;
  std::int32_t protocol_version = 0;
  std::optional<std::int32_t> max_message_size;
  // LOOKUP_RESPONSE
  std::string broker_url;
  std::string broker_url_tls;
  std::optional<LookupType> lookup;
  bool authoritative = false;
  bool proxy_through_service_url = false;
  // PARTITIONED_METADATA_RESPONSE
  std::uint32_t partitions = 0;
  bool failed = false;  // its response is Failed
  // PRODUCER_SUCCESS
  std::string producer_name;
  // ERROR, SEND_ERROR, LOOKUP and PARTITIONED_METADATA failures
  std::optional<std::int32_t> error;
  std::string message;
  // AUTH_CHALLENGE
  std::string auth_method_name;
  // GET_LAST_MESSAGE_ID_RESPONSE: the topic's last message is message_id;
  // this, where the broker tells it, the asking consumer's subscription's
  // mark-delete position (everything up to it is acknowledged).
  std::optional<MessageId> mark_delete_position;
};

// Decodes a BaseCommand. Nothing when the bytes are not a well-formed
// message or carry no type; an unknown type decodes (type holds its number)
// so the caller can name it.
std::optional<Command> decode_command(std::string_view bytes);

// ---- encoders: each returns the BaseCommand's bytes ----

std::string encode_connect(std::string_view client_version, std::string_view auth_method, std::string_view auth_data);
std::string encode_auth_response(std::string_view client_version, std::string_view auth_method,
                                 std::string_view auth_data);
std::string encode_ping();
std::string encode_pong();
std::string encode_lookup(std::string_view topic, std::uint64_t request_id, bool authoritative,
                          std::string_view listener_name = {});
std::string encode_partitioned_metadata(std::string_view topic, std::uint64_t request_id);
std::string encode_producer(std::string_view topic, std::uint64_t producer_id, std::uint64_t request_id);
std::string encode_send(std::uint64_t producer_id, std::uint64_t sequence_id, std::int32_t num_messages);
// durable false: a subscription that ends with its consumer (a reader),
// positioned after start when given.
std::string encode_subscribe(std::string_view topic, std::string_view subscription, SubscriptionType type,
                             std::uint64_t consumer_id, std::uint64_t request_id, std::string_view consumer_name,
                             InitialPosition position, bool durable = true, const MessageId* start = nullptr);
std::string encode_get_last_message_id(std::uint64_t consumer_id, std::uint64_t request_id);
std::string encode_flow(std::uint64_t consumer_id, std::uint32_t permits);
std::string encode_ack(std::uint64_t consumer_id, const std::vector<MessageId>& ids);
std::string encode_redeliver(std::uint64_t consumer_id, const std::vector<MessageId>& ids);
std::string encode_close_producer(std::uint64_t producer_id, std::uint64_t request_id);
std::string encode_close_consumer(std::uint64_t consumer_id, std::uint64_t request_id);

// ---- message metadata ----

struct MessageMetadata {
  std::string producer_name;
  std::uint64_t sequence_id = 0;
  std::uint64_t publish_time = 0;  // epoch ms
  Properties properties;
  std::optional<std::string> partition_key;  // the message key
  CompressionType compression = CompressionType::none;
  std::uint32_t uncompressed_size = 0;
  std::optional<std::int32_t> num_messages_in_batch;  // present: the payload is a batch
  std::uint64_t event_time = 0;
  std::optional<std::int64_t> deliver_at_time;  // epoch ms
  bool null_value = false;
};

std::string encode_metadata(const MessageMetadata& metadata);
std::optional<MessageMetadata> decode_metadata(std::string_view bytes);

// One entry of a batch (SingleMessageMetadata).
struct SingleMessageMetadata {
  Properties properties;
  std::optional<std::string> partition_key;
  std::int32_t payload_size = 0;
  bool compacted_out = false;
  bool null_value = false;
};

std::string encode_single_metadata(const SingleMessageMetadata& metadata);
std::optional<SingleMessageMetadata> decode_single_metadata(std::string_view bytes);

}  // namespace babelqueue::pulsar_detail
