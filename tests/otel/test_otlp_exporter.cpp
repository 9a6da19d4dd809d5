// SPDX-License-Identifier: Apache-2.0
// The OTLP exporter when the collector is not there or hangs (what it sends
// to a working one is checked by otlp_export_test.py, decoded by the official
// protobuf classes), and the OTEL_* variables.
#include <babelqueue/error.hpp>
#include <babelqueue/otel/environment.hpp>
#include <babelqueue/otel/otlp_exporter.hpp>

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace bq = babelqueue;
namespace otel = babelqueue::otel;
using namespace std::chrono_literals;

namespace {

// A socket on 127.0.0.1 that listens and never accepts: the kernel completes
// the connections, the requests are sent, and no answer ever comes.
class HangingCollector {
 public:
  HangingCollector() {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t size = sizeof address;
    auto* raw = reinterpret_cast<sockaddr*>(&address);  // NOLINT: the socket API's cast
    if (::bind(fd_, raw, size) != 0 || ::listen(fd_, 64) != 0 || ::getsockname(fd_, raw, &size) != 0) {
      throw std::runtime_error("cannot listen on 127.0.0.1");
    }
    port_ = ntohs(address.sin_port);
  }
  ~HangingCollector() { ::close(fd_); }
  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(port_) + "/v1/traces"; }

 private:
  int fd_ = -1;
  int port_ = 0;
};

// A port nothing listens on: bound, then closed.
std::string refused_endpoint() {
  int port = 0;
  {
    HangingCollector gone;
    port = std::stoi(gone.endpoint().substr(std::string("http://127.0.0.1:").size()));
  }
  return "http://127.0.0.1:" + std::to_string(port) + "/v1/traces";
}

otel::SpanData a_span(int n) {
  otel::SpanData s;
  s.context.trace_id = otel::trace_id_of("trace-" + std::to_string(n));
  s.context.span_id = otel::synthetic_span_id_of("span-" + std::to_string(n));
  s.context.sampled = true;
  s.name = "process urn:bench";
  s.kind = otel::SpanKind::consumer;
  s.attributes.push_back({"messaging.system", std::string("babelqueue")});
  return s;
}

struct Logged {
  std::mutex mutex;
  std::vector<std::string> lines;
  bq::LogSink sink() {
    return [this](bq::LogLevel, std::string_view line) {
      std::lock_guard lock(mutex);
      lines.emplace_back(line);
    };
  }
};

TEST(OtlpExporter, AHangingCollectorNeverHoldsTheCallerAndTheQueueStaysBounded) {
  HangingCollector collector;
  otel::OtlpExporterOptions o;
  o.endpoint = collector.endpoint();
  o.max_queue_size = 100;
  o.max_export_batch_size = 10;
  o.schedule_delay = 5ms;
  o.timeout = 30s;  // longer than the test: only the shutdown deadline ends the request
  o.log = {};
  otel::OtlpExporter exporter(o);
  for (int i = 0; i < 5000; ++i) exporter.on_end(a_span(i));
  const auto stats = exporter.stats();
  // At most one batch in the hanging request, at most the queue's size waiting.
  EXPECT_LE(stats.queued, 100U);
  EXPECT_GE(stats.dropped, 5000U - 100U - 10U);
  EXPECT_EQ(stats.exported, 0U);
  // The shutdown deadline aborts the hanging request; every span is accounted for.
  exporter.shutdown(300ms);
  const auto end = exporter.stats();
  EXPECT_EQ(end.exported + end.failed + end.dropped, 5000U);
  EXPECT_EQ(end.queued, 0U);
  exporter.on_end(a_span(0));  // after shutdown: dropped
  EXPECT_EQ(exporter.stats().dropped, end.dropped + 1);
}

TEST(OtlpExporter, ARefusedExportCountsItsSpansAsFailedAndIsLoggedOnce) {
  Logged logged;
  otel::OtlpExporterOptions o;
  o.endpoint = refused_endpoint();
  o.max_export_batch_size = 4;
  o.schedule_delay = 10s;
  o.log = logged.sink();
  otel::OtlpExporter exporter(o);
  for (int i = 0; i < 10; ++i) exporter.on_end(a_span(i));
  EXPECT_TRUE(exporter.force_flush(10s));
  const auto stats = exporter.stats();
  EXPECT_EQ(stats.failed, 10U);
  EXPECT_EQ(stats.exported, 0U);
  EXPECT_EQ(stats.requests, 3U);  // 4 + 4 + 2
  std::lock_guard lock(logged.mutex);
  ASSERT_EQ(logged.lines.size(), 1U);
  EXPECT_NE(logged.lines[0].find("did not take a batch"), std::string::npos) << logged.lines[0];
}

TEST(OtlpExporter, OptionsOutOfRangeAreRefused) {
  otel::OtlpExporterOptions o;
  o.endpoint = "";
  EXPECT_THROW(otel::OtlpExporter{o}, bq::Error);
  o.endpoint = "http://127.0.0.1:1/v1/traces";
  o.max_queue_size = 10;
  o.max_export_batch_size = 11;
  EXPECT_THROW(otel::OtlpExporter{o}, bq::Error);
}

otel::EnvironmentReader reader(std::map<std::string, std::string> values) {
  return [values = std::move(values)](const char* name) -> std::optional<std::string> {
    auto it = values.find(name);
    if (it == values.end()) return std::nullopt;
    return it->second;
  };
}

TEST(OtelEnvironment, OffUnlessAnEndpointOrTheExporterIsNamed) {
  EXPECT_FALSE(otel::options_from_environment({}, reader({})).enabled);
  EXPECT_FALSE(otel::options_from_environment({}, reader({{"OTEL_SERVICE_NAME", "x"}})).enabled);
  EXPECT_TRUE(otel::options_from_environment({}, reader({{"OTEL_TRACES_EXPORTER", "otlp"}})).enabled);
  EXPECT_TRUE(otel::options_from_environment({}, reader({{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"}})).enabled);
  EXPECT_FALSE(otel::options_from_environment(
                   {}, reader({{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"}, {"OTEL_SDK_DISABLED", "TRUE"}}))
                   .enabled);
  EXPECT_FALSE(otel::options_from_environment(
                   {}, reader({{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"}, {"OTEL_TRACES_EXPORTER", "none"}}))
                   .enabled);
  EXPECT_FALSE(otel::tracing_from_environment({}, reader({})));
}

TEST(OtelEnvironment, EndpointsHeadersResourceSamplerAndBatching) {
  const auto o = otel::options_from_environment(
      {}, reader({{"OTEL_EXPORTER_OTLP_ENDPOINT", "https://collector:4318/"},
                  {"OTEL_EXPORTER_OTLP_HEADERS", "api-key=a%2Cb,tenant=t1"},
                  {"OTEL_EXPORTER_OTLP_TRACES_HEADERS", "Tenant=t2"},
                  {"OTEL_EXPORTER_OTLP_TIMEOUT", "2500"},
                  {"OTEL_EXPORTER_OTLP_CERTIFICATE", "/etc/ca.pem"},
                  {"OTEL_SERVICE_NAME", "orders"},
                  {"OTEL_RESOURCE_ATTRIBUTES", "service.version=1.2,deployment.environment=prod"},
                  {"OTEL_TRACES_SAMPLER", "traceidratio"},
                  {"OTEL_TRACES_SAMPLER_ARG", "0"},
                  {"OTEL_BSP_SCHEDULE_DELAY", "250"},
                  {"OTEL_BSP_MAX_QUEUE_SIZE", "64"},
                  {"OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "128"}}));
  EXPECT_TRUE(o.enabled);
  EXPECT_EQ(o.exporter.endpoint, "https://collector:4318/v1/traces");
  ASSERT_EQ(o.exporter.headers.size(), 2U);
  EXPECT_EQ(o.exporter.headers[0], (std::pair<std::string, std::string>{"api-key", "a,b"}));
  EXPECT_EQ(o.exporter.headers[1], (std::pair<std::string, std::string>{"tenant", "t2"}));
  EXPECT_EQ(o.exporter.timeout, 2500ms);
  EXPECT_EQ(o.exporter.ca_file, "/etc/ca.pem");
  EXPECT_EQ(o.tracer.service_name, "orders");
  EXPECT_EQ(o.exporter.service_name, "orders");
  ASSERT_EQ(o.tracer.resource.size(), 2U);
  EXPECT_EQ(o.tracer.resource[0].key, "service.version");
  EXPECT_FALSE(o.tracer.sampler.should_sample(nullptr, otel::trace_id_of("x")));
  EXPECT_EQ(o.exporter.schedule_delay, 250ms);
  EXPECT_EQ(o.exporter.max_queue_size, 64U);
  EXPECT_EQ(o.exporter.max_export_batch_size, 64U);  // never above the queue

  const auto traces =
      otel::options_from_environment({}, reader({{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://a:4318"},
                                                 {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://b:9999/custom"}}));
  EXPECT_EQ(traces.exporter.endpoint, "http://b:9999/custom");
}

TEST(OtelEnvironment, ValuesThatDoNotParseAreReportedAndTheDefaultIsUsed) {
  Logged logged;
  const auto o = otel::options_from_environment(logged.sink(), reader({{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"},
                                                                       {"OTEL_TRACES_SAMPLER", "sometimes"},
                                                                       {"OTEL_BSP_MAX_QUEUE_SIZE", "lots"},
                                                                       {"OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"},
                                                                       {"OTEL_EXPORTER_OTLP_HEADERS", "novalue,=x"}}));
  EXPECT_TRUE(o.enabled);
  EXPECT_EQ(o.exporter.max_queue_size, 2048U);
  EXPECT_TRUE(o.tracer.sampler.should_sample(nullptr, otel::trace_id_of("x")));
  EXPECT_TRUE(o.exporter.headers.empty());
  std::lock_guard lock(logged.mutex);
  EXPECT_EQ(logged.lines.size(), 5U);  // the sampler, the queue size, the protocol, two header entries
}

}  // namespace
