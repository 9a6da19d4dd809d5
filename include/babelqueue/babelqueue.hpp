// SPDX-License-Identifier: Apache-2.0
// Everything of babelqueue::core in one include: the envelope and its codec,
// the transport interface, open_transport() and the memory transport, the
// Worker, redrive. A transport library has its own header (for example
// <babelqueue/sqlite/transport.hpp>).
#pragma once

#include <babelqueue/attempts_rule.hpp>
#include <babelqueue/backoff.hpp>
#include <babelqueue/binding.hpp>
#include <babelqueue/clock.hpp>
#include <babelqueue/dead_letter.hpp>
#include <babelqueue/duration.hpp>
#include <babelqueue/envelope.hpp>
#include <babelqueue/error.hpp>
#include <babelqueue/handler_outcome.hpp>
#include <babelqueue/json.hpp>
#include <babelqueue/log_sink.hpp>
#include <babelqueue/memory/transport.hpp>
#include <babelqueue/message.hpp>
#include <babelqueue/middleware.hpp>
#include <babelqueue/publish_params.hpp>
#include <babelqueue/publisher.hpp>
#include <babelqueue/redrive.hpp>
#include <babelqueue/rejection.hpp>
#include <babelqueue/release_delivery.hpp>
#include <babelqueue/result.hpp>
#include <babelqueue/stop_on_signals.hpp>
#include <babelqueue/tls_options.hpp>
#include <babelqueue/transport.hpp>
#include <babelqueue/transport_registry.hpp>
#include <babelqueue/typed_message.hpp>
#include <babelqueue/url.hpp>
#include <babelqueue/url_options.hpp>
#include <babelqueue/uuid.hpp>
#include <babelqueue/value.hpp>
#include <babelqueue/version.hpp>
#include <babelqueue/worker.hpp>
#include <babelqueue/worker_options.hpp>
