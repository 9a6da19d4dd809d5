// SPDX-License-Identifier: Apache-2.0
#include <babelqueue/memory/transport.hpp>
#include <babelqueue/transport_registry.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <thread>
#include <vector>

namespace bq = babelqueue;
using namespace std::chrono_literals;

TEST(TransportRegistry, MemoryIsAlwaysThere) {
  const auto schemes = bq::registered_schemes();
  EXPECT_NE(std::find(schemes.begin(), schemes.end(), "memory"), schemes.end());
  EXPECT_TRUE(std::is_sorted(schemes.begin(), schemes.end()));
  auto transport = bq::open_transport("memory://registry-test");
  ASSERT_TRUE(transport) << transport.error().message();
  EXPECT_TRUE((*transport)->capabilities().ordered);
}

TEST(TransportRegistry, MemoryUrlsShareTheNamedBroker) {
  auto producer = bq::open_transport("memory://registry-shared").value();
  auto consumer = bq::open_transport("MEMORY://registry-shared?visibility_timeout=0.2").value();
  auto other = bq::open_transport("memory://registry-other").value();
  ASSERT_TRUE(producer->publish("jobs", "hello"));
  EXPECT_TRUE(other->receive("jobs", 1, 0ms).value().empty());
  const auto received = consumer->receive("jobs", 1, 1s).value();
  ASSERT_EQ(received.size(), 1U);
  EXPECT_EQ(received[0].body, "hello");
  EXPECT_TRUE(consumer->capabilities().redelivers_unsettled);
  EXPECT_FALSE(producer->capabilities().redelivers_unsettled);
  // Settled through another transport of the same broker.
  EXPECT_TRUE(producer->ack(received[0]));
}

TEST(TransportRegistry, MemoryRejectsUnknownParameters) {
  for (const char* url : {"memory://x?visibilty_timeout=1", "memory://x?visibility_timeout=-1",
                          "memory://x?visibility_timeout=soon", "memory://x/path", "memory://x:1"}) {
    auto transport = bq::open_transport(url);
    ASSERT_FALSE(transport) << url;
    EXPECT_EQ(transport.error().code(), bq::Errc::invalid_argument) << url;
  }
}

TEST(TransportRegistry, UnknownSchemeListsTheKnownOnes) {
  auto transport = bq::open_transport("nope://x");
  ASSERT_FALSE(transport);
  EXPECT_EQ(transport.error().code(), bq::Errc::unsupported);
  EXPECT_NE(transport.error().message().find("nope://"), std::string::npos) << transport.error().message();
  EXPECT_NE(transport.error().message().find("memory"), std::string::npos) << transport.error().message();
}

TEST(TransportRegistry, MalformedUrlIsInvalidArgument) {
  auto transport = bq::open_transport("not a url");
  ASSERT_FALSE(transport);
  EXPECT_EQ(transport.error().code(), bq::Errc::invalid_argument);
}

TEST(TransportRegistry, RegisteringAddsAndReplacesCaseInsensitively) {
  int opened_by = 0;
  bq::register_transport("Fake-One", [&](const bq::Url& url) -> bq::Result<std::unique_ptr<bq::Transport>> {
    opened_by = 1;
    EXPECT_EQ(url.host, "h");
    return std::unique_ptr<bq::Transport>(std::make_unique<bq::memory::Transport>());
  });
  const auto schemes = bq::registered_schemes();
  EXPECT_NE(std::find(schemes.begin(), schemes.end(), "fake-one"), schemes.end());
  ASSERT_TRUE(bq::open_transport("fake-one://h"));
  EXPECT_EQ(opened_by, 1);

  bq::register_transport("fake-one", [&](const bq::Url&) -> bq::Result<std::unique_ptr<bq::Transport>> {
    opened_by = 2;
    return bq::unexpected(bq::Errc::connection, "broker down");
  });
  auto failed = bq::open_transport("fake-one://h");
  EXPECT_EQ(opened_by, 2);
  ASSERT_FALSE(failed);
  EXPECT_EQ(failed.error().code(), bq::Errc::connection);  // the factory's error, untouched
}

TEST(TransportRegistry, AFactoryReturningNothingIsAnInternalError) {
  bq::register_transport("fake-null", [](const bq::Url&) -> bq::Result<std::unique_ptr<bq::Transport>> {
    return std::unique_ptr<bq::Transport>();
  });
  auto transport = bq::open_transport("fake-null://");
  ASSERT_FALSE(transport);
  EXPECT_EQ(transport.error().code(), bq::Errc::internal);
}

TEST(TransportRegistry, RefusesAnEmptySchemeOrFactory) {
  EXPECT_THROW(bq::register_transport("", [](const bq::Url&) { return bq::open_transport("memory://"); }), bq::Error);
  EXPECT_THROW(bq::register_transport("x", nullptr), bq::Error);
}

TEST(TransportRegistry, RegisteringAndOpeningFromManyThreads) {
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([t] {
      for (int i = 0; i < 50; ++i) {
        bq::register_transport("fake-thread" + std::to_string(t), [](const bq::Url&) {
          return bq::Result<std::unique_ptr<bq::Transport>>(std::make_unique<bq::memory::Transport>());
        });
        EXPECT_TRUE(bq::open_transport("fake-thread" + std::to_string((t + 1) % 8) + "://x") ||
                    bq::open_transport("memory://x"));
        (void)bq::registered_schemes();
      }
    });
  }
  for (auto& thread : threads) thread.join();
}
