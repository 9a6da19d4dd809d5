// SPDX-License-Identifier: Apache-2.0
#include "pulsar_commands.hpp"

#include "proto_wire.hpp"

namespace babelqueue::pulsar_detail {

namespace {

// BaseCommand's own field: its type.
constexpr std::uint32_t kTypeField = 1;

std::string base(CommandType type, const ProtoWriter* body) {
  ProtoWriter command;
  command.varint(kTypeField, static_cast<std::uint32_t>(type));
  if (body != nullptr) command.message(static_cast<std::uint32_t>(type), *body);
  return command.take();
}

std::string base(CommandType type, const ProtoWriter& body) { return base(type, &body); }

ProtoWriter message_id(const MessageId& id) {
  ProtoWriter w;
  w.varint(1, id.ledger);
  w.varint(2, id.entry);
  if (id.partition >= 0) w.signed_varint(3, id.partition);
  if (id.batch_index >= 0) w.signed_varint(4, id.batch_index);
  return w;
}

bool decode_message_id(std::string_view bytes, MessageId& id) {
  ProtoReader r(bytes);
  while (r.next()) {
    switch (r.field()) {
      case 1: id.ledger = r.varint(); break;
      case 2: id.entry = r.varint(); break;
      case 3: id.partition = static_cast<std::int32_t>(r.signed_varint()); break;
      case 4: id.batch_index = static_cast<std::int32_t>(r.signed_varint()); break;
      default: break;
    }
  }
  return r.ok();
}

bool decode_key_value(std::string_view bytes, Properties& into) {
  ProtoReader r(bytes);
  std::string key;
  std::string value;
  while (r.next()) {
    if (r.field() == 1) key = r.bytes();
    if (r.field() == 2) value = r.bytes();
  }
  if (!r.ok()) return false;
  into.emplace_back(std::move(key), std::move(value));
  return true;
}

void encode_properties(ProtoWriter& w, std::uint32_t field, const Properties& properties) {
  for (const auto& [key, value] : properties) {
    ProtoWriter kv;
    kv.bytes(1, key);
    kv.bytes(2, value);
    w.message(field, kv);
  }
}

// A repeated int64 field, packed or not.
bool read_int64s(const ProtoReader& r, std::vector<std::int64_t>& into) {
  if (r.wire() == ProtoReader::Wire::varint) {
    into.push_back(r.signed_varint());
    return true;
  }
  if (r.wire() != ProtoReader::Wire::length) return true;
  // Packed: the bytes are varints one after the other; read them as field 1.
  const std::string_view packed = r.bytes();
  std::uint64_t value = 0;
  unsigned shift = 0;
  for (char c : packed) {
    const auto byte = static_cast<std::uint8_t>(c);
    if (shift >= 64) return false;
    value |= static_cast<std::uint64_t>(byte & 0x7FU) << shift;
    if ((byte & 0x80U) == 0) {
      into.push_back(static_cast<std::int64_t>(value));
      value = 0;
      shift = 0;
    } else {
      shift += 7;
    }
  }
  return shift == 0;
}

// The body of one command into the flattened Command.
bool decode_body(CommandType type, std::string_view bytes, Command& c) {
  ProtoReader r(bytes);
  while (r.next()) {
    const std::uint32_t f = r.field();
    switch (type) {
      case CommandType::connected:
        if (f == 1) c.server_version = r.bytes();
        if (f == 2) c.protocol_version = static_cast<std::int32_t>(r.signed_varint());
        if (f == 3) c.max_message_size = static_cast<std::int32_t>(r.signed_varint());
        break;
      case CommandType::lookup_response:
        if (f == 1) c.broker_url = r.bytes();
        if (f == 2) c.broker_url_tls = r.bytes();
        if (f == 3) c.lookup = static_cast<LookupType>(r.varint());
        if (f == 4) c.request_id = r.varint();
        if (f == 5) c.authoritative = r.varint() != 0;
        if (f == 6) c.error = static_cast<std::int32_t>(r.signed_varint());
        if (f == 7) c.message = r.bytes();
        if (f == 8) c.proxy_through_service_url = r.varint() != 0;
        break;
      case CommandType::partitioned_metadata_response:
        if (f == 1) c.partitions = static_cast<std::uint32_t>(r.varint());
        if (f == 2) c.request_id = r.varint();
        if (f == 3) c.failed = r.varint() == 1;
        if (f == 4) c.error = static_cast<std::int32_t>(r.signed_varint());
        if (f == 5) c.message = r.bytes();
        break;
      case CommandType::producer_success:
        if (f == 1) c.request_id = r.varint();
        if (f == 2) c.producer_name = r.bytes();
        break;
      case CommandType::success:
        if (f == 1) c.request_id = r.varint();
        break;
      case CommandType::error:
        if (f == 1) c.request_id = r.varint();
        if (f == 2) c.error = static_cast<std::int32_t>(r.signed_varint());
        if (f == 3) c.message = r.bytes();
        break;
      case CommandType::send_receipt:
        if (f == 1) c.producer_id = r.varint();
        if (f == 2) c.sequence_id = r.varint();
        if (f == 3 && !decode_message_id(r.bytes(), c.message_id)) return false;
        break;
      case CommandType::send_error:
        if (f == 1) c.producer_id = r.varint();
        if (f == 2) c.sequence_id = r.varint();
        if (f == 3) c.error = static_cast<std::int32_t>(r.signed_varint());
        if (f == 4) c.message = r.bytes();
        break;
      case CommandType::message:
        if (f == 1) c.consumer_id = r.varint();
        if (f == 2 && !decode_message_id(r.bytes(), c.message_id)) return false;
        if (f == 3) c.redelivery_count = static_cast<std::uint32_t>(r.varint());
        if (f == 4 && !read_int64s(r, c.ack_set)) return false;
        break;
      case CommandType::close_producer:
        if (f == 1) c.producer_id = r.varint();
        if (f == 2) c.request_id = r.varint();
        break;
      case CommandType::close_consumer:
        if (f == 1) c.consumer_id = r.varint();
        if (f == 2) c.request_id = r.varint();
        break;
      case CommandType::get_last_message_id_response:
        if (f == 1 && !decode_message_id(r.bytes(), c.message_id)) return false;
        if (f == 2) c.request_id = r.varint();
        if (f == 3) {
          MessageId position;
          if (!decode_message_id(r.bytes(), position)) return false;
          c.mark_delete_position = position;
        }
        break;
      case CommandType::reached_end_of_topic:
      case CommandType::active_consumer_change:
        if (f == 1) c.consumer_id = r.varint();
        break;
      case CommandType::ack_response:
        if (f == 1) c.consumer_id = r.varint();
        if (f == 4) c.error = static_cast<std::int32_t>(r.signed_varint());
        if (f == 5) c.message = r.bytes();
        if (f == 6) c.request_id = r.varint();
        break;
      case CommandType::auth_challenge:
        if (f == 1) c.server_version = r.bytes();
        if (f == 2) {
          ProtoReader data(r.bytes());
          while (data.next()) {
            if (data.field() == 1) c.auth_method_name = data.bytes();
          }
          if (!data.ok()) return false;
        }
        if (f == 3) c.protocol_version = static_cast<std::int32_t>(r.signed_varint());
        break;
      default: break;
    }
  }
  return r.ok();
}

}  // namespace

std::string_view to_string(CommandType type) noexcept {
  switch (type) {
    case CommandType::connect: return "CONNECT";
    case CommandType::connected: return "CONNECTED";
    case CommandType::subscribe: return "SUBSCRIBE";
    case CommandType::producer: return "PRODUCER";
    case CommandType::send: return "SEND";
    case CommandType::send_receipt: return "SEND_RECEIPT";
    case CommandType::send_error: return "SEND_ERROR";
    case CommandType::message: return "MESSAGE";
    case CommandType::ack: return "ACK";
    case CommandType::flow: return "FLOW";
    case CommandType::unsubscribe: return "UNSUBSCRIBE";
    case CommandType::success: return "SUCCESS";
    case CommandType::error: return "ERROR";
    case CommandType::close_producer: return "CLOSE_PRODUCER";
    case CommandType::close_consumer: return "CLOSE_CONSUMER";
    case CommandType::producer_success: return "PRODUCER_SUCCESS";
    case CommandType::ping: return "PING";
    case CommandType::pong: return "PONG";
    case CommandType::redeliver_unacknowledged_messages: return "REDELIVER_UNACKNOWLEDGED_MESSAGES";
    case CommandType::partitioned_metadata: return "PARTITIONED_METADATA";
    case CommandType::partitioned_metadata_response: return "PARTITIONED_METADATA_RESPONSE";
    case CommandType::lookup: return "LOOKUP";
    case CommandType::lookup_response: return "LOOKUP_RESPONSE";
    case CommandType::reached_end_of_topic: return "REACHED_END_OF_TOPIC";
    case CommandType::get_last_message_id: return "GET_LAST_MESSAGE_ID";
    case CommandType::get_last_message_id_response: return "GET_LAST_MESSAGE_ID_RESPONSE";
    case CommandType::active_consumer_change: return "ACTIVE_CONSUMER_CHANGE";
    case CommandType::auth_challenge: return "AUTH_CHALLENGE";
    case CommandType::auth_response: return "AUTH_RESPONSE";
    case CommandType::ack_response: return "ACK_RESPONSE";
    case CommandType::topic_migrated: return "TOPIC_MIGRATED";
  }
  return "an unknown command";
}

std::string server_error_name(std::int32_t code) {
  switch (static_cast<ServerError>(code)) {
    case ServerError::unknown: return "UnknownError";
    case ServerError::metadata: return "MetadataError";
    case ServerError::persistence: return "PersistenceError";
    case ServerError::authentication: return "AuthenticationError";
    case ServerError::authorization: return "AuthorizationError";
    case ServerError::consumer_busy: return "ConsumerBusy";
    case ServerError::service_not_ready: return "ServiceNotReady";
    case ServerError::checksum: return "ChecksumError";
    case ServerError::unsupported_version: return "UnsupportedVersionError";
    case ServerError::topic_not_found: return "TopicNotFound";
    case ServerError::subscription_not_found: return "SubscriptionNotFound";
    case ServerError::consumer_not_found: return "ConsumerNotFound";
    case ServerError::too_many_requests: return "TooManyRequests";
    case ServerError::topic_terminated: return "TopicTerminatedError";
    case ServerError::producer_busy: return "ProducerBusy";
    case ServerError::invalid_topic_name: return "InvalidTopicName";
    case ServerError::not_allowed: return "NotAllowedError";
  }
  return "ServerError " + std::to_string(code);
}

std::optional<Command> decode_command(std::string_view bytes) {
  ProtoReader r(bytes);
  std::optional<std::uint64_t> type;
  std::string_view body;
  bool has_body = false;
  // The type may come after the body: find it first.
  while (r.next()) {
    if (r.field() == kTypeField && r.wire() == ProtoReader::Wire::varint) type = r.varint();
  }
  if (!r.ok() || !type || *type == 0 || *type > 0xFFFF) return std::nullopt;
  ProtoReader again(bytes);
  while (again.next()) {
    if (again.field() == *type && again.wire() == ProtoReader::Wire::length) {
      body = again.bytes();
      has_body = true;
    }
  }
  Command command;
  command.type = static_cast<CommandType>(*type);
  if (has_body && !decode_body(command.type, body, command)) return std::nullopt;
  return command;
}

std::string encode_connect(std::string_view client_version, std::string_view auth_method, std::string_view auth_data) {
  ProtoWriter w;
  w.bytes(1, client_version);
  if (!auth_method.empty()) {
    w.bytes(3, auth_data);
    w.bytes(5, auth_method);
  }
  w.signed_varint(4, kProtocolVersion);
  return base(CommandType::connect, w);
}

std::string encode_auth_response(std::string_view client_version, std::string_view auth_method,
                                 std::string_view auth_data) {
  ProtoWriter data;
  data.bytes(1, auth_method);
  data.bytes(2, auth_data);
  ProtoWriter w;
  w.bytes(1, client_version);
  w.message(2, data);
  w.signed_varint(3, kProtocolVersion);
  return base(CommandType::auth_response, w);
}

std::string encode_ping() { return base(CommandType::ping, ProtoWriter{}); }
std::string encode_pong() { return base(CommandType::pong, ProtoWriter{}); }

std::string encode_lookup(std::string_view topic, std::uint64_t request_id, bool authoritative,
                          std::string_view listener_name) {
  ProtoWriter w;
  w.bytes(1, topic);
  w.varint(2, request_id);
  w.boolean(3, authoritative);
  // advertised_listener_name: the broker answers with that listener's
  // address instead of its internal one.
  if (!listener_name.empty()) w.bytes(7, listener_name);
  return base(CommandType::lookup, w);
}

std::string encode_partitioned_metadata(std::string_view topic, std::uint64_t request_id) {
  ProtoWriter w;
  w.bytes(1, topic);
  w.varint(2, request_id);
  return base(CommandType::partitioned_metadata, w);
}

std::string encode_producer(std::string_view topic, std::uint64_t producer_id, std::uint64_t request_id) {
  ProtoWriter w;
  w.bytes(1, topic);
  w.varint(2, producer_id);
  w.varint(3, request_id);
  return base(CommandType::producer, w);
}

std::string encode_send(std::uint64_t producer_id, std::uint64_t sequence_id, std::int32_t num_messages) {
  ProtoWriter w;
  w.varint(1, producer_id);
  w.varint(2, sequence_id);
  if (num_messages != 1) w.signed_varint(3, num_messages);
  return base(CommandType::send, w);
}

std::string encode_subscribe(std::string_view topic, std::string_view subscription, SubscriptionType type,
                             std::uint64_t consumer_id, std::uint64_t request_id, std::string_view consumer_name,
                             InitialPosition position, bool durable, const MessageId* start) {
  ProtoWriter w;
  w.bytes(1, topic);
  w.bytes(2, subscription);
  w.varint(3, static_cast<std::uint32_t>(type));
  w.varint(4, consumer_id);
  w.varint(5, request_id);
  if (!consumer_name.empty()) w.bytes(6, consumer_name);
  w.boolean(8, durable);  // durable: the subscription outlives the consumer
  if (start != nullptr) w.message(9, message_id(*start));
  w.varint(13, static_cast<std::uint32_t>(position));
  return base(CommandType::subscribe, w);
}

std::string encode_get_last_message_id(std::uint64_t consumer_id, std::uint64_t request_id) {
  ProtoWriter w;
  w.varint(1, consumer_id);
  w.varint(2, request_id);
  return base(CommandType::get_last_message_id, w);
}

std::string encode_flow(std::uint64_t consumer_id, std::uint32_t permits) {
  ProtoWriter w;
  w.varint(1, consumer_id);
  w.varint(2, permits);
  return base(CommandType::flow, w);
}

std::string encode_ack(std::uint64_t consumer_id, const std::vector<MessageId>& ids) {
  ProtoWriter w;
  w.varint(1, consumer_id);
  w.varint(2, 0);  // Individual
  for (const auto& id : ids) w.message(3, message_id(id));
  return base(CommandType::ack, w);
}

std::string encode_redeliver(std::uint64_t consumer_id, const std::vector<MessageId>& ids) {
  ProtoWriter w;
  w.varint(1, consumer_id);
  for (const auto& id : ids) w.message(2, message_id(id));
  return base(CommandType::redeliver_unacknowledged_messages, w);
}

std::string encode_close_producer(std::uint64_t producer_id, std::uint64_t request_id) {
  ProtoWriter w;
  w.varint(1, producer_id);
  w.varint(2, request_id);
  return base(CommandType::close_producer, w);
}

std::string encode_close_consumer(std::uint64_t consumer_id, std::uint64_t request_id) {
  ProtoWriter w;
  w.varint(1, consumer_id);
  w.varint(2, request_id);
  return base(CommandType::close_consumer, w);
}

std::string encode_metadata(const MessageMetadata& m) {
  ProtoWriter w;
  w.bytes(1, m.producer_name);
  w.varint(2, m.sequence_id);
  w.varint(3, m.publish_time);
  encode_properties(w, 4, m.properties);
  if (m.partition_key) w.bytes(6, *m.partition_key);
  if (m.compression != CompressionType::none) {
    w.varint(8, static_cast<std::uint32_t>(m.compression));
    w.varint(9, m.uncompressed_size);
  }
  if (m.num_messages_in_batch) w.signed_varint(11, *m.num_messages_in_batch);
  if (m.event_time != 0) w.varint(12, m.event_time);
  if (m.deliver_at_time) w.signed_varint(19, *m.deliver_at_time);
  if (m.null_value) w.boolean(25, true);
  return w.take();
}

std::optional<MessageMetadata> decode_metadata(std::string_view bytes) {
  MessageMetadata m;
  ProtoReader r(bytes);
  while (r.next()) {
    switch (r.field()) {
      case 1: m.producer_name = r.bytes(); break;
      case 2: m.sequence_id = r.varint(); break;
      case 3: m.publish_time = r.varint(); break;
      case 4:
        if (!decode_key_value(r.bytes(), m.properties)) return std::nullopt;
        break;
      case 6: m.partition_key = std::string(r.bytes()); break;
      case 8: m.compression = static_cast<CompressionType>(r.varint()); break;
      case 9: m.uncompressed_size = static_cast<std::uint32_t>(r.varint()); break;
      case 11: m.num_messages_in_batch = static_cast<std::int32_t>(r.signed_varint()); break;
      case 12: m.event_time = r.varint(); break;
      case 19: m.deliver_at_time = r.signed_varint(); break;
      case 25: m.null_value = r.varint() != 0; break;
      default: break;
    }
  }
  if (!r.ok()) return std::nullopt;
  return m;
}

std::string encode_single_metadata(const SingleMessageMetadata& m) {
  ProtoWriter w;
  encode_properties(w, 1, m.properties);
  if (m.partition_key) w.bytes(2, *m.partition_key);
  w.signed_varint(3, m.payload_size);
  if (m.compacted_out) w.boolean(4, true);
  if (m.null_value) w.boolean(9, true);
  return w.take();
}

std::optional<SingleMessageMetadata> decode_single_metadata(std::string_view bytes) {
  SingleMessageMetadata m;
  bool has_size = false;
  ProtoReader r(bytes);
  while (r.next()) {
    switch (r.field()) {
      case 1:
        if (!decode_key_value(r.bytes(), m.properties)) return std::nullopt;
        break;
      case 2: m.partition_key = std::string(r.bytes()); break;
      case 3:
        m.payload_size = static_cast<std::int32_t>(r.signed_varint());
        has_size = true;
        break;
      case 4: m.compacted_out = r.varint() != 0; break;
      case 9: m.null_value = r.varint() != 0; break;
      default: break;
    }
  }
  if (!r.ok() || !has_size || m.payload_size < 0) return std::nullopt;
  return m;
}

}  // namespace babelqueue::pulsar_detail
