// SPDX-License-Identifier: Apache-2.0
#include "connection.hpp"

#include "amqp_projection.hpp"

#include <babelqueue/detail/plain_port_probe.hpp>

#include <amqp_ssl_socket.h>
#include <amqp_tcp_socket.h>
#include <openssl/ssl.h>
#include <openssl/x509_vfy.h>

#include <arpa/inet.h>

#include <algorithm>
#include <string_view>

namespace babelqueue::rabbitmq::detail {
namespace {

using std::chrono::milliseconds;

// What an AMQP 0-9-1 client sends first; a plain broker answers with its
// connection.start frame (or its own header).
constexpr std::string_view kAmqpProtocolHeader{"AMQP\x00\x00\x09\x01", 8};

bool is_ip_literal(const std::string& host) {
  in6_addr address{};
  return inet_pton(AF_INET, host.c_str(), &address) == 1 || inet_pton(AF_INET6, host.c_str(), &address) == 1;
}

// Makes OpenSSL's chain verification also check that the certificate names
// name: one of its IP addresses for an IP literal, else one of its DNS names.
bool verify_name(SSL_CTX* context, const std::string& name) {
  if (context == nullptr) return false;
  X509_VERIFY_PARAM* param = SSL_CTX_get0_param(context);
  if (is_ip_literal(name)) return X509_VERIFY_PARAM_set1_ip_asc(param, name.c_str()) == 1;
  return X509_VERIFY_PARAM_set1_host(param, name.c_str(), name.size()) == 1;
}

// rabbitmq-c sets the host it connects to as the SNI of its SSL object just
// before the handshake. OpenSSL announces the start of the handshake before
// it writes the ClientHello, which carries the SNI: replacing it there sends
// the context's server name (its app data, ex_data 0) instead.
void replace_sni(const SSL* ssl, int where, int /*ret*/) {
  if ((where & SSL_CB_HANDSHAKE_START) == 0) return;
  const auto* name = static_cast<const std::string*>(SSL_CTX_get_ex_data(SSL_get_SSL_CTX(ssl), 0));
  if (name == nullptr) return;
  // SSL_set_tlsext_host_name, spelt without its C casts. The callback is
  // handed a const SSL, but it is the connection's own, not yet sending.
  SSL_ctrl(const_cast<SSL*>(ssl), SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name,
           const_cast<char*>(name->c_str()));
}

// name must outlive the context.
bool send_server_name(SSL_CTX* context, const std::string& name) {
  // Index 0 is the context's app data, which rabbitmq-c does not use.
  if (context == nullptr || SSL_CTX_set_ex_data(context, 0, const_cast<std::string*>(&name)) != 1) return false;
  SSL_CTX_set_info_callback(context, &replace_sni);
  return true;
}

}  // namespace

std::string endpoint_of(const rabbitmq::Transport::Options& options) {
  return (options.tls.enabled ? "amqps://" : "amqp://") + options.host + ":" + std::to_string(options.port);
}

std::string status_text(int status) { return amqp_error_string2(status); }

timeval to_timeval(milliseconds d) {
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(d.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>((d.count() % 1000) * 1000);
  return tv;
}

AmqpFailure failure_of(const amqp_rpc_reply_t& reply, const std::string& what) {
  switch (reply.reply_type) {
    case AMQP_RESPONSE_SERVER_EXCEPTION:
      if (reply.reply.id == AMQP_CHANNEL_CLOSE_METHOD) {
        const auto* close = static_cast<const amqp_channel_close_t*>(reply.reply.decoded);
        const std::string native = std::to_string(close->reply_code) + " " + std::string(view(close->reply_text));
        return AmqpFailure{ErrorInfo(close->reply_code == 404 ? Errc::not_found : Errc::broker,
                                     what + ": broker closed the channel: " + native)
                               .with_native(native),
                           0xFFFF};
      }
      if (reply.reply.id == AMQP_CONNECTION_CLOSE_METHOD) {
        const auto* close = static_cast<const amqp_connection_close_t*>(reply.reply.decoded);
        const Errc code = close->reply_code == 403 || close->reply_code == 530 ? Errc::auth : Errc::connection;
        const std::string native = std::to_string(close->reply_code) + " " + std::string(view(close->reply_text));
        return AmqpFailure{ErrorInfo(code, what + ": broker closed the connection: " + native).with_native(native), 0};
      }
      return AmqpFailure{ErrorInfo(Errc::broker, what + ": unexpected broker reply"), 0};
    case AMQP_RESPONSE_LIBRARY_EXCEPTION:
      return AmqpFailure{ErrorInfo(reply.library_error == AMQP_STATUS_TIMEOUT ? Errc::timeout : Errc::connection,
                                   what + ": " + status_text(reply.library_error)),
                         0};
    default: return AmqpFailure{ErrorInfo(Errc::connection, what + ": no reply"), 0};
  }
}

// ---- Connection -----------------------------------------------------------

Connection::Connection(const rabbitmq::Transport::Options& options, ChannelClosed on_channel_closed)
    : options_(options), on_channel_closed_(std::move(on_channel_closed)) {}

Connection::~Connection() { close(); }

Result<void> Connection::open() {
  const std::string endpoint = endpoint_of(options_);
  conn_ = amqp_new_connection();
  if (conn_ == nullptr) return unexpected(Errc::internal, "amqp_new_connection failed");
  const TlsOptions& tls = options_.tls;
  amqp_socket_t* socket = tls.enabled ? amqp_ssl_socket_new(conn_) : amqp_tcp_socket_new(conn_);
  if (socket == nullptr) {
    close();
    return unexpected(Errc::internal, "cannot create a rabbitmq-c socket");
  }
  if (tls.enabled) {
    if (!tls.ca_file.empty()) {
      const int status = amqp_ssl_socket_set_cacert(socket, tls.ca_file.c_str());
      if (status != AMQP_STATUS_OK) {
        close();
        return unexpected(Errc::auth, "cannot load the CA certificate " + tls.ca_file + ": " + status_text(status));
      }
    }
    if (!tls.cert_file.empty()) {
      const int status = amqp_ssl_socket_set_key(socket, tls.cert_file.c_str(), tls.key_file.c_str());
      if (status != AMQP_STATUS_OK) {
        close();
        return unexpected(Errc::auth, "cannot load the client certificate " + tls.cert_file + " / key " + tls.key_file +
                                          ": " + status_text(status));
      }
    }
    amqp_ssl_socket_set_verify_peer(socket, tls.verify ? 1 : 0);
    auto* context = static_cast<SSL_CTX*>(amqp_ssl_socket_get_context(socket));
    // rabbitmq-c matches the host it connects to against the certificate's
    // DNS names only, and takes no other name. For an IP address, or for
    // tls.server_name, OpenSSL checks the name while verifying the chain
    // (whose result rabbitmq-c reads).
    const bool by_openssl = tls.verify && (!tls.server_name.empty() || is_ip_literal(options_.host));
    if (by_openssl && !verify_name(context, checked_name())) {
      close();
      return unexpected(Errc::internal, "cannot ask OpenSSL to verify the broker's name " + checked_name());
    }
    amqp_ssl_socket_set_verify_hostname(socket, by_openssl ? 0 : (tls.verify ? 1 : 0));
    if (!tls.server_name.empty() && !send_server_name(context, tls.server_name)) {
      close();
      return unexpected(Errc::internal, "cannot ask OpenSSL to send the server name " + tls.server_name);
    }
  }
  timeval timeout = to_timeval(options_.connect_timeout);
  amqp_set_handshake_timeout(conn_, &timeout);
  amqp_set_rpc_timeout(conn_, &timeout);
  int status = amqp_socket_open_noblock(socket, options_.host.c_str(), options_.port, &timeout);
  if (status != AMQP_STATUS_OK) {
    close();
    if (status == AMQP_STATUS_SSL_HOSTNAME_VERIFY_FAILED) {
      return unexpected(Errc::auth, "TLS handshake with " + endpoint +
                                        " failed: the broker's certificate does not name host '" + options_.host +
                                        "' among its DNS names");
    }
    if (status <= AMQP_STATUS_SSL_ERROR && status > _AMQP_STATUS_SSL_NEXT_VALUE) {
      // A plain AMQP port answers the ClientHello with its protocol header,
      // which OpenSSL reports like a refused certificate: ask the port, in
      // plain AMQP, before blaming the CA.
      const auto probe_timeout = std::clamp(options_.connect_timeout, milliseconds(1), milliseconds(1000));
      if (babelqueue::detail::answers_in_plain_text(options_.host, options_.port, kAmqpProtocolHeader, probe_timeout)) {
        return unexpected(Errc::connection, std::string(babelqueue::detail::kNotATlsPort) + " (" + endpoint +
                                                " answers plain amqp://; amqps:// needs the broker's TLS port, "
                                                "5671 by default)");
      }
      return unexpected(
          Errc::auth,
          "TLS handshake with " + endpoint + " failed: " + status_text(status) +
              (tls.verify ? " (is tls_ca=" + (tls.ca_file.empty() ? std::string("<system>") : tls.ca_file) +
                                " the CA that signed the broker's certificate, and does the certificate name " +
                                (is_ip_literal(checked_name()) ? "IP address " : "host ") + checked_name() + "?)"
                          : std::string()));
    }
    return unexpected(status == AMQP_STATUS_TIMEOUT ? Errc::timeout : Errc::connection,
                      "cannot connect to " + endpoint + ": " + status_text(status));
  }
  const auto heartbeat = static_cast<int>(options_.heartbeat.count());
  // connection_name: how operators (rabbitmqctl list_connections, the
  // management UI) tell this connection apart.
  amqp_table_entry_t name_entry{};
  name_entry.key = bytes_of("connection_name");
  name_entry.value.kind = AMQP_FIELD_KIND_UTF8;
  name_entry.value.value.bytes = bytes_of(options_.connection_name);
  amqp_table_t client_properties{1, &name_entry};
  const amqp_rpc_reply_t login = amqp_login_with_properties(conn_, options_.vhost.c_str(), 0, AMQP_DEFAULT_FRAME_SIZE,
                                                            heartbeat, &client_properties, AMQP_SASL_METHOD_PLAIN,
                                                            options_.user.c_str(), options_.password.c_str());
  if (login.reply_type != AMQP_RESPONSE_NORMAL) {
    AmqpFailure failure = failure_of(login, "login");
    close();
    const bool closed_by_broker = login.reply_type == AMQP_RESPONSE_SERVER_EXCEPTION ||
                                  login.library_error == AMQP_STATUS_CONNECTION_CLOSED ||
                                  login.library_error == AMQP_STATUS_SOCKET_CLOSED;
    if (closed_by_broker) {
      return unexpected(Errc::auth, "RabbitMQ at " + endpoint + " refused login as user '" + options_.user +
                                        "' on vhost '" + options_.vhost + "': check the user, password and vhost (" +
                                        failure.info.message() + ")");
    }
    return unexpected(failure.info.code(), "login to " + endpoint + " failed: " + failure.info.message());
  }
  for (amqp_channel_t channel : {kPublishChannel, kConsumeChannel, kControlChannel}) {
    amqp_channel_open(conn_, channel);
    if (auto opened = check_rpc(channel, "channel.open"); !opened) {
      close();
      return unexpected(opened.error());
    }
  }
  if (options_.confirm) {
    amqp_confirm_select(conn_, kPublishChannel);
    if (auto selected = check_rpc(kPublishChannel, "confirm.select"); !selected) {
      close();
      return unexpected(selected.error());
    }
  }
  set_rpc_timeout(options_.publish_timeout);
  lost_.reset();
  return {};
}

void Connection::close() {
  if (conn_ == nullptr) return;
  if (!lost_) {
    // A clean goodbye; a broken connection is just destroyed.
    amqp_channel_close(conn_, kPublishChannel, AMQP_REPLY_SUCCESS);
    amqp_channel_close(conn_, kConsumeChannel, AMQP_REPLY_SUCCESS);
    amqp_channel_close(conn_, kControlChannel, AMQP_REPLY_SUCCESS);
    amqp_connection_close(conn_, AMQP_REPLY_SUCCESS);
  }
  amqp_destroy_connection(conn_);
  conn_ = nullptr;
}

Result<void> Connection::check_rpc(amqp_channel_t channel, const std::string& what) {
  const amqp_rpc_reply_t reply = amqp_get_rpc_reply(conn_);
  if (reply.reply_type == AMQP_RESPONSE_NORMAL) return {};
  const AmqpFailure failure = failure_of(reply, what);
  if (failure.channel != 0) {
    on_channel_close(channel, failure.info);
  } else {
    if (reply.reply_type == AMQP_RESPONSE_SERVER_EXCEPTION) {
      amqp_connection_close_ok_t ok{};
      amqp_send_method(conn_, 0, AMQP_CONNECTION_CLOSE_OK_METHOD, &ok);
    }
    lost_ = failure.info;
  }
  return unexpected(failure.info);
}

void Connection::on_channel_close(amqp_channel_t channel, const ErrorInfo& why) {
  amqp_channel_close_ok_t ok{};
  amqp_send_method(conn_, channel, AMQP_CHANNEL_CLOSE_OK_METHOD, &ok);
  on_channel_closed_(channel, why);
  if (!reopen_channel(channel)) lost_ = why;
}

void Connection::on_connection_close(const ErrorInfo& why) {
  amqp_connection_close_ok_t ok{};
  amqp_send_method(conn_, 0, AMQP_CONNECTION_CLOSE_OK_METHOD, &ok);
  lost_ = why;
}

void Connection::set_rpc_timeout(milliseconds timeout) {
  timeval tv = to_timeval(timeout);
  amqp_set_rpc_timeout(conn_, &tv);
}

bool Connection::reopen_channel(amqp_channel_t channel) {
  amqp_channel_open(conn_, channel);
  if (amqp_get_rpc_reply(conn_).reply_type != AMQP_RESPONSE_NORMAL) return false;
  if (channel == kPublishChannel && options_.confirm) {
    amqp_confirm_select(conn_, channel);
    if (amqp_get_rpc_reply(conn_).reply_type != AMQP_RESPONSE_NORMAL) return false;
  }
  return true;
}

}  // namespace babelqueue::rabbitmq::detail
