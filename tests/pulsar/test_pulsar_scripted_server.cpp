// SPDX-License-Identifier: Apache-2.0
// What a real broker does not send on demand: a malformed frame in the
// middle of a connection, and a refused token. A scripted server on
// 127.0.0.1 speaks the protocol's first steps (it answers CONNECT, then
// misbehaves as each test wants), and the client must give a clear error and
// reconnect, never crash. Everything else runs against the real broker
// (test_pulsar_integration.cpp).
#include "proto_wire.hpp"
#include "pulsar_client.hpp"
#include "pulsar_commands.hpp"
#include "pulsar_frame.hpp"

#include <babelqueue/error.hpp>
#include <babelqueue/pulsar/transport.hpp>
#include <babelqueue/url.hpp>

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace pd = babelqueue::pulsar_detail;
using namespace std::chrono_literals;

namespace {

// Accepts connections one after the other and runs script(connection number,
// socket) on each; closes each socket after its script.
class ScriptedServer {
 public:
  using Script = std::function<void(int connection, int fd)>;

  explicit ScriptedServer(Script script) : script_(std::move(script)) {
    listener_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    address.sin_port = 0;
    const int on = 1;
    ::setsockopt(listener_, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
    if (::bind(listener_, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 || ::listen(listener_, 8) != 0) {
      ADD_FAILURE() << "cannot listen on 127.0.0.1";
    }
    socklen_t length = sizeof address;
    ::getsockname(listener_, reinterpret_cast<sockaddr*>(&address), &length);
    port_ = ntohs(address.sin_port);
    thread_ = std::thread([this] { run(); });
  }

  ~ScriptedServer() {
    stop_ = true;
    ::shutdown(listener_, SHUT_RDWR);
    ::close(listener_);
    thread_.join();
  }

  std::uint16_t port() const { return port_; }
  int connections() const { return connections_.load(); }

  // Reads one whole frame; empty when the peer closed.
  static std::string read_frame(int fd) {
    std::string size(4, '\0');
    if (!read_exact(fd, size)) return {};
    const auto total = (static_cast<std::uint32_t>(static_cast<std::uint8_t>(size[0])) << 24U) |
                       (static_cast<std::uint32_t>(static_cast<std::uint8_t>(size[1])) << 16U) |
                       (static_cast<std::uint32_t>(static_cast<std::uint8_t>(size[2])) << 8U) |
                       static_cast<std::uint8_t>(size[3]);
    std::string rest(total, '\0');
    if (!read_exact(fd, rest)) return {};
    return size + rest;
  }

  static void send_all(int fd, const std::string& bytes) {
    std::size_t at = 0;
    while (at < bytes.size()) {
      const ssize_t n = ::send(fd, bytes.data() + at, bytes.size() - at, MSG_NOSIGNAL);
      if (n <= 0) return;
      at += static_cast<std::size_t>(n);
    }
  }

  static std::string connected_frame() {
    pd::ProtoWriter body;
    body.bytes(1, "scripted");
    body.varint(2, 19);
    pd::ProtoWriter base;
    base.varint(1, 3);
    base.message(3, body);
    return pd::frame(base.data());
  }

 private:
  static bool read_exact(int fd, std::string& into) {
    std::size_t at = 0;
    while (at < into.size()) {
      const ssize_t n = ::recv(fd, into.data() + at, into.size() - at, 0);
      if (n <= 0) return false;
      at += static_cast<std::size_t>(n);
    }
    return true;
  }

  void run() {
    for (int n = 0; !stop_; ++n) {
      const int fd = ::accept(listener_, nullptr, nullptr);
      if (fd < 0) return;
      connections_++;
      script_(n, fd);
      ::close(fd);
    }
  }

  Script script_;
  int listener_ = -1;
  std::uint16_t port_ = 0;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::atomic<int> connections_{0};
};

// Answers PARTITIONED_METADATA with 0 partitions, until the client closes.
void answer_metadata(int fd) {
  for (;;) {
    const std::string request = ScriptedServer::read_frame(fd);
    if (request.empty()) return;
    auto decoded = pd::decode_frame(request);
    if (!decoded || decoded->command.type != pd::CommandType::partitioned_metadata) continue;
    // The request id is the command's field 2: read it back from the request.
    pd::ProtoReader base(std::string_view(request).substr(8));
    std::uint64_t request_id = 0;
    while (base.next()) {
      if (base.field() == 21) {
        pd::ProtoReader body(base.bytes());
        while (body.next()) {
          if (body.field() == 2) request_id = body.varint();
        }
      }
    }
    pd::ProtoWriter response;
    response.varint(1, 0);
    response.varint(2, request_id);
    pd::ProtoWriter answer;
    answer.varint(1, 22);
    answer.message(22, response);
    ScriptedServer::send_all(fd, pd::frame(answer.data()));
  }
}

}  // namespace

TEST(PulsarScriptedServer, AMalformedFrameDropsTheConnectionWithAClearErrorAndTheClientReconnects) {
  ScriptedServer server([](int connection, int fd) {
    if (ScriptedServer::read_frame(fd).empty()) return;  // CONNECT
    ScriptedServer::send_all(fd, ScriptedServer::connected_frame());
    if (connection == 0) {
      // A frame that announces 3 GB: no client may allocate that.
      std::this_thread::sleep_for(100ms);
      ScriptedServer::send_all(fd, std::string("\xC0\x00\x00\x00\x00\x00\x00\x04\x08\x12\x92\x01", 12));
      std::this_thread::sleep_for(500ms);
      return;
    }
    answer_metadata(fd);
  });
  std::mutex mutex;
  std::vector<std::string> logged;
  pd::ClientOptions options;
  options.port = server.port();
  options.reconnect = babelqueue::BackoffPolicy{10ms, 2.0, 100ms, 0.0};
  options.log = [&](babelqueue::LogLevel, std::string_view text) {
    std::lock_guard lock(mutex);
    logged.emplace_back(text);
  };
  auto client = pd::Client::connect(options);
  ASSERT_TRUE(client) << client.error().message();
  // The garbage arrives; the connection is dropped and logged.
  for (int i = 0; i < 100; ++i) {
    {
      std::lock_guard lock(mutex);
      if (!logged.empty()) break;
    }
    std::this_thread::sleep_for(20ms);
  }
  {
    std::lock_guard lock(mutex);
    ASSERT_FALSE(logged.empty());
    EXPECT_NE(logged.front().find("malformed frame"), std::string::npos) << logged.front();
    EXPECT_NE(logged.front().find("reconnecting"), std::string::npos) << logged.front();
  }
  // The next call reconnects and works.
  auto partitions = (*client)->partitions("persistent://public/default/x");
  ASSERT_TRUE(partitions) << partitions.error().message();
  EXPECT_EQ(*partitions, 0U);
  EXPECT_EQ(server.connections(), 2);
  (*client)->close(1s);
}

TEST(PulsarScriptedServer, AChecksumMismatchOnAMessageIsAClearErrorToo) {
  ScriptedServer server([](int connection, int fd) {
    if (ScriptedServer::read_frame(fd).empty()) return;
    ScriptedServer::send_all(fd, ScriptedServer::connected_frame());
    if (connection != 0) return answer_metadata(fd);
    pd::MessageMetadata metadata;
    metadata.producer_name = "p";
    pd::ProtoWriter id;
    id.varint(1, 1);
    id.varint(2, 1);
    pd::ProtoWriter message;
    message.varint(1, 1);
    message.message(2, id);
    pd::ProtoWriter base;
    base.varint(1, 9);
    base.message(9, message);
    std::string f = pd::payload_frame(base.data(), pd::encode_metadata(metadata), "payload");
    f.back() = 'X';
    ScriptedServer::send_all(fd, f);
    std::this_thread::sleep_for(500ms);
  });
  std::atomic<bool> seen{false};
  std::string text;
  std::mutex mutex;
  pd::ClientOptions options;
  options.port = server.port();
  options.log = [&](babelqueue::LogLevel, std::string_view line) {
    std::lock_guard lock(mutex);
    text = line;
    seen = true;
  };
  auto client = pd::Client::connect(options);
  ASSERT_TRUE(client) << client.error().message();
  for (int i = 0; i < 100 && !seen; ++i) std::this_thread::sleep_for(20ms);
  std::lock_guard lock(mutex);
  EXPECT_NE(text.find("checksum mismatch"), std::string::npos) << text;
}

TEST(PulsarScriptedServer, ARefusedTokenIsAnAuthErrorWithinTheConnectTimeout) {
  // What a broker with token authentication answers a token it does not
  // accept: ERROR AuthenticationError (request id -1), then it closes.
  std::string connect_seen;
  std::mutex mutex;
  ScriptedServer server([&](int, int fd) {
    const std::string connect = ScriptedServer::read_frame(fd);
    {
      std::lock_guard lock(mutex);
      connect_seen = connect;
    }
    pd::ProtoWriter error;
    error.varint(1, UINT64_MAX);
    error.varint(2, 3);  // AuthenticationError
    error.bytes(3, "Failed to authenticate");
    pd::ProtoWriter base;
    base.varint(1, 14);
    base.message(14, error);
    ScriptedServer::send_all(fd, pd::frame(base.data()));
  });
  pd::ClientOptions options;
  options.port = server.port();
  options.token = "not-a-valid-token";
  options.connect_timeout = 3s;
  const auto started = std::chrono::steady_clock::now();
  auto client = pd::Client::connect(options);
  ASSERT_FALSE(client);
  EXPECT_EQ(client.error().code(), babelqueue::Errc::auth) << client.error().message();
  EXPECT_NE(client.error().message().find("AuthenticationError"), std::string::npos) << client.error().message();
  EXPECT_EQ(client.error().message().find("not-a-valid-token"), std::string::npos) << client.error().message();
  EXPECT_LT(std::chrono::steady_clock::now() - started, 3s);
  // The token went out as auth method "token".
  std::lock_guard lock(mutex);
  EXPECT_NE(connect_seen.find("token"), std::string::npos);
  EXPECT_NE(connect_seen.find("not-a-valid-token"), std::string::npos);
}

TEST(PulsarScriptedServer, ALookupNamesTheListenerAndTheClientGoesWhereTheBrokerAnswers) {
  // The listener's address: a second server, which only has to be reached.
  ScriptedServer listener([](int, int fd) {
    if (ScriptedServer::read_frame(fd).empty()) return;  // CONNECT
    ScriptedServer::send_all(fd, ScriptedServer::connected_frame());
    while (!ScriptedServer::read_frame(fd).empty()) {
    }
  });
  // The service URL's broker answers a LOOKUP that names the listener
  // "external" with the second server, and any other with itself.
  std::mutex mutex;
  std::vector<std::string> names;  // advertised_listener_name of each LOOKUP ("" when absent)
  ScriptedServer service([&](int, int fd) {
    if (ScriptedServer::read_frame(fd).empty()) return;
    ScriptedServer::send_all(fd, ScriptedServer::connected_frame());
    for (;;) {
      const std::string request = ScriptedServer::read_frame(fd);
      if (request.empty()) return;
      auto decoded = pd::decode_frame(request);
      if (!decoded || decoded->command.type != pd::CommandType::lookup) continue;
      std::uint64_t request_id = 0;
      std::string name;
      pd::ProtoReader base(std::string_view(request).substr(8));
      while (base.next()) {
        if (base.field() != 23) continue;
        pd::ProtoReader body(base.bytes());
        while (body.next()) {
          if (body.field() == 2) request_id = body.varint();
          if (body.field() == 7) name = body.bytes();
        }
      }
      {
        std::lock_guard lock(mutex);
        names.push_back(name);
      }
      pd::ProtoWriter response;
      response.bytes(1, "pulsar://127.0.0.1:" + std::to_string(name == "external" ? listener.port() : 1));
      response.varint(3, 1);  // Connect
      response.varint(4, request_id);
      pd::ProtoWriter answer;
      answer.varint(1, 24);
      answer.message(24, response);
      ScriptedServer::send_all(fd, pd::frame(answer.data()));
    }
  });
  pd::ClientOptions options;
  options.port = service.port();
  options.listener_name = "external";
  options.operation_timeout = 500ms;
  options.connect_timeout = 1s;
  auto client = pd::Client::connect(options);
  ASSERT_TRUE(client) << client.error().message();
  // The listener's server never answers PRODUCER: the send times out, but
  // only after the client went where the lookup said.
  std::vector<pd::OutMessage> messages(1);
  messages[0].payload = "{}";
  auto sent = (*client)->send("persistent://public/default/x", std::move(messages), 500ms);
  EXPECT_FALSE(sent);
  (*client)->close(1s);
  std::lock_guard lock(mutex);
  ASSERT_FALSE(names.empty());
  EXPECT_EQ(names.front(), "external");
  EXPECT_EQ(listener.connections(), 1);
}

TEST(PulsarUrl, ListenerNameIsAnOption) {
  auto url = babelqueue::Url::parse("pulsar://127.0.0.1:6650?listener_name=external");
  ASSERT_TRUE(url);
  auto options = babelqueue::pulsar::Transport::options_from_url(*url);
  ASSERT_TRUE(options) << options.error().message();
  EXPECT_EQ(options->listener_name, "external");
  auto plain = babelqueue::Url::parse("pulsar://127.0.0.1:6650");
  ASSERT_TRUE(plain);
  auto none = babelqueue::pulsar::Transport::options_from_url(*plain);
  ASSERT_TRUE(none) << none.error().message();
  EXPECT_TRUE(none->listener_name.empty());
}
