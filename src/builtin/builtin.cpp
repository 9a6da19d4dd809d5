#include "builtin.hpp"

#include <mutex>

#if defined(BABELQUEUE_WITH_SQLITE)
#include <babelqueue/sqlite_transport.hpp>
#endif
#if defined(BABELQUEUE_WITH_REDIS)
#include <babelqueue/redis_transport.hpp>
#endif
#if defined(BABELQUEUE_WITH_RABBITMQ)
#include <babelqueue/rabbitmq_transport.hpp>
#endif
#if defined(BABELQUEUE_WITH_KAFKA)
#include <babelqueue/kafka_transport.hpp>
#endif
#if defined(BABELQUEUE_WITH_SQS)
#include <babelqueue/sqs_transport.hpp>
#endif

#if defined(BABELQUEUE_REDIS_CONFORMANCE)
#include "redis_conformance.hpp"
#endif
#if defined(BABELQUEUE_RABBITMQ_CONFORMANCE)
#include "rabbitmq_conformance.hpp"
#endif
#if defined(BABELQUEUE_KAFKA_CONFORMANCE)
#include "kafka_conformance.hpp"
#endif
#if defined(BABELQUEUE_SQS_CONFORMANCE)
#include "sqs_conformance.hpp"
#endif

namespace babelqueue::builtin {

void register_transports() {
  static std::once_flag once;
  std::call_once(once, [] {
#if defined(BABELQUEUE_WITH_SQLITE)
    sqlite::register_transport();
#endif
#if defined(BABELQUEUE_WITH_REDIS)
    redis::register_transport();
#endif
#if defined(BABELQUEUE_WITH_RABBITMQ)
    rabbitmq::register_transport();
#endif
#if defined(BABELQUEUE_WITH_KAFKA)
    kafka::register_transport();
#endif
#if defined(BABELQUEUE_WITH_SQS)
    sqs::register_transport();
#endif
  });
}

void add_conformance_sections(conformance::Runner& runner) {
  conformance::add_core_sections(runner);
#if defined(BABELQUEUE_REDIS_CONFORMANCE)
  redis::add_conformance_section(runner);
#endif
#if defined(BABELQUEUE_RABBITMQ_CONFORMANCE)
  rabbitmq::add_conformance_section(runner);
#endif
#if defined(BABELQUEUE_KAFKA_CONFORMANCE)
  kafka::add_conformance_section(runner);
#endif
#if defined(BABELQUEUE_SQS_CONFORMANCE)
  sqs::add_conformance_section(runner);
#endif
}

}  // namespace babelqueue::builtin
