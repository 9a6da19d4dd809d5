// SPDX-License-Identifier: Apache-2.0
#include <babelqueue/error.hpp>
#include <babelqueue/gdpr/middleware.hpp>
#include <babelqueue/gdpr/protect.hpp>

namespace babelqueue::gdpr {

namespace {

// The schema of urn when it marks any field; null when there is nothing to
// encrypt or decrypt.
Result<std::shared_ptr<const schema::Schema>> marking_schema(schema::Provider& provider, std::string_view urn) {
  auto found = provider.schema_for(urn);
  if (!found) return unexpected(found.error());
  if (!*found || (*found)->sensitive_paths().empty()) return std::shared_ptr<const schema::Schema>();
  return found;
}

}  // namespace

Middleware::Middleware(std::shared_ptr<schema::Provider> provider, std::shared_ptr<const Cipher> cipher)
    : provider_(std::move(provider)), cipher_(std::move(cipher)) {
  if (!provider_) throw Error(Errc::invalid_argument, "the field encryption middleware needs a schema provider");
  if (!cipher_) throw Error(Errc::invalid_argument, "the field encryption middleware needs a cipher");
}

Result<void> Middleware::handle(const Message& message, const MessageHandler& next) {
  auto schema = marking_schema(*provider_, message.urn());
  // A schema that cannot be read is the deployment's fault: retried.
  if (!schema) return unexpected(ErrorInfo(schema.error().code(), schema.error().message(), /*retriable=*/true));
  if (!*schema) return next(message);
  auto clear = unprotect(message.envelope(), **schema, *cipher_);
  if (!clear) {
    // Retried, then dead-lettered: a key added to the ring meanwhile opens
    // it; the Worker re-emits the bytes as they arrived.
    return unexpected(ErrorInfo(clear.error().code(), clear.error().message(), /*retriable=*/true));
  }
  const Message decrypted(*clear, message.queue(), message.headers());
  return next(decrypted);
}

Result<void> Middleware::publish(PublishRequest& request, const PublishStep& next) {
  auto schema = marking_schema(*provider_, request.envelope.urn());
  if (!schema) return unexpected(schema.error());
  if (!*schema) return next(request);
  auto sealed = protect(request.envelope, **schema, *cipher_);
  if (!sealed) return unexpected(sealed.error());
  request.envelope = std::move(*sealed);
  request.data = nullptr;  // it holds the cleartext, no longer what is sent
  return next(request);
}

}  // namespace babelqueue::gdpr
