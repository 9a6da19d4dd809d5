// SPDX-License-Identifier: Apache-2.0
// The payload schema middleware (the family's ADR-0024, library babelqueue::schema): a
// message whose URN has a schema is checked on both sides.
//
//   worker.use(std::make_shared<babelqueue::schema::Middleware>(provider));
//
//   - publish: invalid data fails Worker::publish before anything is sent
//     (Errc::invalid_argument; the message names each JSON pointer and rule);
//   - consume: invalid data never reaches the handler: the delivery fails
//     with the same text and takes the failure path (retry, then the
//     dead-letter queue with its bytes kept and the text in the dead_letter
//     block's error);
//   - a URN without a schema passes unchecked; a schema that cannot be read
//     fails the publish or the delivery.
// The data is read as it is, never re-printed; the envelope is untouched.
// Added after the idempotency and decryption middleware, it checks the
// cleartext (the family's order, middleware.hpp).
#pragma once

#include <babelqueue/middleware.hpp>
#include <babelqueue/schema/provider.hpp>

#include <memory>

namespace babelqueue::schema {

/// The text of an invalid payload's error: `data of "URN" does not match its
/// schema: /order_id: minimum (must be >= 1); ...`.
std::string describe(std::string_view urn, const std::vector<Violation>& violations);

/// Checks data against urn's schema: ok when valid or when urn has none.
Result<void> check(Provider& provider, std::string_view urn, const Value& data);

/// Checks payloads against their URN's schema on both sides (this header's
/// opening comment gives what happens to a payload that does not fit).
class Middleware final : public babelqueue::Middleware {
 public:
  /// Errc::invalid_argument Error for a null provider.
  explicit Middleware(std::shared_ptr<Provider> provider);

  Result<void> handle(const Message& message, const MessageHandler& next) override;
  Result<void> publish(PublishRequest& request, const PublishStep& next) override;

 private:
  std::shared_ptr<Provider> provider_;
};

}  // namespace babelqueue::schema
