// Registers every transport of an installed BabelQueue and opens a URL of
// each broker scheme at a closed port: each must fail as a connection error
// of its own transport, not as "no transport for this scheme".
#include <babelqueue/kafka_transport.hpp>
#include <babelqueue/rabbitmq_transport.hpp>
#include <babelqueue/redis_transport.hpp>
#include <babelqueue/sqlite_transport.hpp>
#include <babelqueue/sqs_transport.hpp>
#include <babelqueue/transport_registry.hpp>

#include <iostream>
#include <string>

int main() {
  babelqueue::sqlite::register_transport();
  babelqueue::redis::register_transport();
  babelqueue::rabbitmq::register_transport();
  babelqueue::kafka::register_transport();
  babelqueue::sqs::register_transport();
  int failures = 0;
  for (const std::string url : {"redis://127.0.0.1:1/0", "amqp://guest:guest@127.0.0.1:1/%2F"}) {
    auto opened = babelqueue::open_transport(url);
    const bool unknown_scheme = !opened && opened.error().message().find("no transport for") != std::string::npos;
    std::cout << url << ": " << (opened ? std::string("opened") : opened.error().message()) << '\n';
    if (opened || unknown_scheme) ++failures;
  }
  // Kafka and SQS connect lazily: opening succeeds, the scheme is known.
  for (const std::string url : {"kafka://127.0.0.1:1", "sqs://us-east-1?endpoint=http://127.0.0.1:1"}) {
    auto opened = babelqueue::open_transport(url);
    const bool unknown_scheme = !opened && opened.error().message().find("no transport for") != std::string::npos;
    std::cout << url << ": " << (opened ? std::string("opened") : opened.error().message()) << '\n';
    if (unknown_scheme) ++failures;
  }
  std::cout << (failures == 0 ? "transports: ok" : "transports: FAILED") << '\n';
  return failures == 0 ? 0 : 1;
}
