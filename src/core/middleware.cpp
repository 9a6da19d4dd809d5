// SPDX-License-Identifier: Apache-2.0
#include <babelqueue/error.hpp>
#include <babelqueue/middleware.hpp>

namespace babelqueue {

MiddlewareChain::MiddlewareChain(std::vector<std::shared_ptr<Middleware>> middleware) {
  for (auto& m : middleware) add(std::move(m));
}

void MiddlewareChain::add(std::shared_ptr<Middleware> middleware) {
  if (!middleware) throw Error(Errc::invalid_argument, "a null middleware");
  middleware_.push_back(std::move(middleware));
}

// Composed from the innermost outwards, once: a delivery or a publish then
// costs one call per middleware and no allocation.
MessageHandler MiddlewareChain::wrap(MessageHandler handler) const {
  for (auto it = middleware_.rbegin(); it != middleware_.rend(); ++it) {
    handler = [m = *it, next = std::move(handler)](const Message& message) { return m->handle(message, next); };
  }
  return handler;
}

// A publish goes out through the layers in the opposite order: the first
// added is wrapped around send first, so it runs last.
PublishStep MiddlewareChain::compose_publish(PublishStep send) const {
  for (const auto& m : middleware_) {
    send = [m, next = std::move(send)](PublishRequest& request) { return m->publish(request, next); };
  }
  return send;
}

}  // namespace babelqueue
