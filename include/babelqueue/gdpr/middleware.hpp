// SPDX-License-Identifier: Apache-2.0
// The field encryption middleware (the family's ADR-0030, library
// babelqueue::gdpr; docs/gdpr.md): a message whose URN's schema marks
// fields `x-gdpr-sensitive` travels with those fields encrypted.
//
//   worker.use(std::make_shared<babelqueue::gdpr::Middleware>(provider, cipher));
//   worker.use(std::make_shared<babelqueue::schema::Middleware>(provider));
//
//   - publish: the marked values are encrypted (protect) before the
//     message is sent; a cipher error fails the publish, nothing is sent;
//   - consume: the handler gets the message decrypted (unprotect). A field
//     that does not decrypt (a key the cipher does not hold, changed bytes,
//     not a ciphertext) never reaches the handler as garbage: the delivery
//     fails and takes the failure path — retried (a key deployed meanwhile
//     opens it), then dead-lettered with the bytes as they arrived and the
//     reason in the dead_letter block's error;
//   - a URN without a schema, or whose schema marks nothing, passes as it is;
//     a schema that cannot be read fails the publish or the delivery.
// Added before the schema middleware, the schema sees cleartext on both
// sides (the family's order, middleware.hpp). The Worker's own re-emits
// (retry, dead-letter) keep the bytes as they arrived, still encrypted.
#pragma once

#include <babelqueue/gdpr/cipher.hpp>
#include <babelqueue/middleware.hpp>
#include <babelqueue/schema/provider.hpp>

#include <memory>

namespace babelqueue::gdpr {

/// Encrypts marked fields on publish and decrypts them on consume (this
/// header's opening comment gives what happens when they do not decrypt).
class Middleware final : public babelqueue::Middleware {
 public:
  /// Errc::invalid_argument Error for a null provider or cipher.
  Middleware(std::shared_ptr<schema::Provider> provider, std::shared_ptr<const Cipher> cipher);

  Result<void> handle(const Message& message, const MessageHandler& next) override;
  Result<void> publish(PublishRequest& request, const PublishStep& next) override;

 private:
  std::shared_ptr<schema::Provider> provider_;
  std::shared_ptr<const Cipher> cipher_;
};

}  // namespace babelqueue::gdpr
