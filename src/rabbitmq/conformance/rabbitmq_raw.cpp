// SPDX-License-Identifier: Apache-2.0
#include "rabbitmq_raw.hpp"

#include "amqp_projection.hpp"

#include <babelqueue/rabbitmq/transport.hpp>
#include <babelqueue/url.hpp>

#include <amqp.h>
#include <amqp_ssl_socket.h>
#include <amqp_tcp_socket.h>

namespace babelqueue::rabbitmq::raw {
namespace {

using detail::bytes_of;
using detail::view;

amqp_connection_state_t state_of(void* connection) { return static_cast<amqp_connection_state_t>(connection); }

Result<void> check(amqp_connection_state_t conn, const std::string& what) {
  const amqp_rpc_reply_t reply = amqp_get_rpc_reply(conn);
  if (reply.reply_type == AMQP_RESPONSE_NORMAL) return {};
  if (reply.reply_type == AMQP_RESPONSE_SERVER_EXCEPTION && reply.reply.id == AMQP_CHANNEL_CLOSE_METHOD) {
    const auto* close = static_cast<const amqp_channel_close_t*>(reply.reply.decoded);
    amqp_channel_close_ok_t ok{};
    amqp_send_method(conn, 1, AMQP_CHANNEL_CLOSE_OK_METHOD, &ok);
    amqp_channel_open(conn, 1);
    return unexpected(close->reply_code == 404 ? Errc::not_found : Errc::broker,
                      what + ": " + std::string(view(close->reply_text)));
  }
  if (reply.reply_type == AMQP_RESPONSE_LIBRARY_EXCEPTION) {
    return unexpected(Errc::connection, what + ": " + amqp_error_string2(reply.library_error));
  }
  return unexpected(Errc::broker, what + ": broker error");
}

}  // namespace

Result<Client> Client::connect(const std::string& url_text) {
  auto url = Url::parse(url_text);
  if (!url) return unexpected(url.error());
  auto options = rabbitmq::Transport::options_from_url(*url);
  if (!options) return unexpected(options.error());
  amqp_connection_state_t conn = amqp_new_connection();
  const TlsOptions& tls = options->tls;
  amqp_socket_t* socket = tls.enabled ? amqp_ssl_socket_new(conn) : amqp_tcp_socket_new(conn);
  if (tls.enabled) {
    if (!tls.ca_file.empty()) amqp_ssl_socket_set_cacert(socket, tls.ca_file.c_str());
    amqp_ssl_socket_set_verify_peer(socket, tls.verify ? 1 : 0);
    amqp_ssl_socket_set_verify_hostname(socket, tls.verify ? 1 : 0);
  }
  timeval timeout{10, 0};
  if (const int status = amqp_socket_open_noblock(socket, options->host.c_str(), options->port, &timeout);
      status != AMQP_STATUS_OK) {
    amqp_destroy_connection(conn);
    return unexpected(Errc::connection, std::string("raw connect: ") + amqp_error_string2(status));
  }
  const amqp_rpc_reply_t login = amqp_login(conn, options->vhost.c_str(), 0, AMQP_DEFAULT_FRAME_SIZE, 0,
                                            AMQP_SASL_METHOD_PLAIN, options->user.c_str(), options->password.c_str());
  if (login.reply_type != AMQP_RESPONSE_NORMAL) {
    amqp_destroy_connection(conn);
    return unexpected(Errc::auth, "raw login refused");
  }
  amqp_channel_open(conn, 1);
  if (auto opened = check(conn, "channel.open"); !opened) {
    amqp_destroy_connection(conn);
    return unexpected(opened.error());
  }
  return Client(conn);
}

Client::Client(Client&& other) noexcept : connection_(other.connection_) { other.connection_ = nullptr; }

Client::~Client() {
  if (connection_ == nullptr) return;
  amqp_connection_state_t conn = state_of(connection_);
  amqp_channel_close(conn, 1, AMQP_REPLY_SUCCESS);
  amqp_connection_close(conn, AMQP_REPLY_SUCCESS);
  amqp_destroy_connection(conn);
}

Result<std::optional<Message>> Client::get(const std::string& queue) {
  amqp_connection_state_t conn = state_of(connection_);
  const amqp_rpc_reply_t reply = amqp_basic_get(conn, 1, bytes_of(queue), 0);
  if (reply.reply_type != AMQP_RESPONSE_NORMAL) {
    if (auto checked = check(conn, "basic.get " + queue); !checked) return unexpected(checked.error());
  }
  if (reply.reply.id == AMQP_BASIC_GET_EMPTY_METHOD) return std::optional<Message>{};
  const auto* get_ok = static_cast<const amqp_basic_get_ok_t*>(reply.reply.decoded);
  const std::uint64_t tag = get_ok->delivery_tag;
  const bool redelivered = get_ok->redelivered != 0;
  amqp_message_t message;
  const amqp_rpc_reply_t read = amqp_read_message(conn, 1, &message, 0);
  if (read.reply_type != AMQP_RESPONSE_NORMAL) return unexpected(Errc::connection, "raw read_message failed");
  Message out;
  out.redelivered = redelivered;
  out.body = std::string(view(message.body));
  const amqp_basic_properties_t& p = message.properties;
  auto put = [&](amqp_flags_t flag, const char* name, amqp_bytes_t value) {
    if ((p._flags & flag) != 0) out.properties[name] = std::string(view(value));
  };
  put(AMQP_BASIC_TYPE_FLAG, "type", p.type);
  put(AMQP_BASIC_CORRELATION_ID_FLAG, "correlation_id", p.correlation_id);
  put(AMQP_BASIC_MESSAGE_ID_FLAG, "message_id", p.message_id);
  put(AMQP_BASIC_APP_ID_FLAG, "app_id", p.app_id);
  put(AMQP_BASIC_CONTENT_TYPE_FLAG, "content_type", p.content_type);
  put(AMQP_BASIC_CONTENT_ENCODING_FLAG, "content_encoding", p.content_encoding);
  if ((p._flags & AMQP_BASIC_DELIVERY_MODE_FLAG) != 0) out.delivery_mode = p.delivery_mode;
  if ((p._flags & AMQP_BASIC_HEADERS_FLAG) != 0) {
    for (int i = 0; i < p.headers.num_entries; ++i) {
      const amqp_table_entry_t& entry = p.headers.entries[i];
      const std::string name(view(entry.key));
      out.header_kinds[name] = static_cast<char>(entry.value.kind);
      if (auto number = detail::field_integer(entry.value)) {
        out.headers[name] = *number;
      } else if (entry.value.kind == AMQP_FIELD_KIND_BOOLEAN) {
        out.headers[name] = entry.value.value.boolean != 0;
      } else if (auto text = detail::field_text(entry.value)) {
        out.headers[name] = *text;
      }
    }
  }
  amqp_destroy_message(&message);
  amqp_basic_ack(conn, 1, tag, 0);
  amqp_maybe_release_buffers(conn);
  return std::optional<Message>(std::move(out));
}

Result<std::int64_t> Client::count(const std::string& queue) {
  amqp_connection_state_t conn = state_of(connection_);
  const amqp_queue_declare_ok_t* ok = amqp_queue_declare(conn, 1, bytes_of(queue), 1, 0, 0, 0, amqp_empty_table);
  if (auto checked = check(conn, "passive declare " + queue); !checked) return unexpected(checked.error());
  return static_cast<std::int64_t>(ok->message_count);
}

Result<void> Client::delete_queue(const std::string& queue) {
  amqp_connection_state_t conn = state_of(connection_);
  amqp_queue_delete(conn, 1, bytes_of(queue), 0, 0);
  return check(conn, "delete " + queue);
}

Result<void> Client::publish_plain(const std::string& queue, const std::string& body) {
  amqp_connection_state_t conn = state_of(connection_);
  amqp_queue_declare(conn, 1, bytes_of(queue), 0, 1, 0, 0, amqp_empty_table);
  if (auto checked = check(conn, "declare " + queue); !checked) return checked;
  if (amqp_basic_publish(conn, 1, amqp_empty_bytes, bytes_of(queue), 0, 0, nullptr, bytes_of(body)) != AMQP_STATUS_OK) {
    return unexpected(Errc::connection, "raw publish failed");
  }
  return {};
}

}  // namespace babelqueue::rabbitmq::raw
