// SPDX-License-Identifier: Apache-2.0
// Helpers of the Redis tests: the broker's URLs (scripts/broker info redis)
// and a raw hiredis connection to look at what Redis stores, independently
// of the transport.
#pragma once

#include "broker_env.hpp"

#include <babelqueue/redis/transport.hpp>
#include <babelqueue/transport_registry.hpp>
#include <babelqueue/uuid.hpp>

#include <gtest/gtest.h>
#include <hiredis/hiredis.h>

#include <memory>
#include <string>
#include <vector>

namespace babelqueue::redis_test {

inline const std::map<std::string, std::string>& info() {
  static const auto values = babelqueue::testing::broker_info("redis");
  return values;
}

inline std::string plain_url() { return info().at("url"); }
inline std::string tls_url() { return info().at("tls_url"); }
inline std::string tls_ca() { return info().at("tls_ca"); }
inline int plain_port() { return std::stoi(info().at("port")); }

// url + "?" or "&" + parameter.
inline std::string with_param(const std::string& url, const std::string& parameter) {
  return url + (url.find('?') == std::string::npos ? "?" : "&") + parameter;
}

inline std::unique_ptr<Transport> open_or_die(const std::string& url) {
  redis::register_transport();
  auto opened = open_transport(url);
  if (!opened) throw std::runtime_error("opening " + url + " failed: " + opened.error().message());
  return std::move(*opened);
}

inline std::string fresh_queue(const std::string& role) { return "redis-test-" + role + "-" + uuid_v4().substr(0, 8); }

// A raw synchronous hiredis connection to the plain port.
class Raw {
 public:
  Raw() : context_(redisConnect("127.0.0.1", plain_port()), redisFree) {
    if (!context_ || context_->err != 0) throw std::runtime_error("raw hiredis connection failed");
  }

  // Runs a command; returns the reply's string, integer (as text), or the
  // elements of an array (strings) flattened into the vector.
  std::vector<std::string> run(const std::vector<std::string>& args) {
    std::vector<const char*> argv;
    std::vector<size_t> lengths;
    for (const auto& arg : args) {
      argv.push_back(arg.data());
      lengths.push_back(arg.size());
    }
    void* raw = redisCommandArgv(context_.get(), static_cast<int>(argv.size()), argv.data(), lengths.data());
    if (raw == nullptr) throw std::runtime_error("raw hiredis command failed");
    std::unique_ptr<redisReply, void (*)(void*)> reply(static_cast<redisReply*>(raw), freeReplyObject);
    std::vector<std::string> out;
    switch (reply->type) {
      case REDIS_REPLY_STRING:
      case REDIS_REPLY_STATUS: out.emplace_back(reply->str, reply->len); break;
      case REDIS_REPLY_ERROR: throw std::runtime_error("Redis error: " + std::string(reply->str, reply->len));
      case REDIS_REPLY_INTEGER: out.push_back(std::to_string(reply->integer)); break;
      case REDIS_REPLY_ARRAY:
        for (size_t i = 0; i < reply->elements; ++i) {
          out.emplace_back(
              reply->element[i]->str == nullptr ? "" : std::string(reply->element[i]->str, reply->element[i]->len));
        }
        break;
      default: break;
    }
    return out;
  }

  std::vector<std::string> list(const std::string& key) { return run({"LRANGE", key, "0", "-1"}); }
  long long number(const std::vector<std::string>& args) { return std::stoll(run(args).at(0)); }

 private:
  std::unique_ptr<redisContext, void (*)(redisContext*)> context_;
};

}  // namespace babelqueue::redis_test
