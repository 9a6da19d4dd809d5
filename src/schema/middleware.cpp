// SPDX-License-Identifier: Apache-2.0
#include <babelqueue/error.hpp>
#include <babelqueue/json.hpp>
#include <babelqueue/schema/middleware.hpp>

namespace babelqueue::schema {

std::string describe(std::string_view urn, const std::vector<Violation>& violations) {
  std::string out = "data of \"" + std::string(urn) + "\" does not match its schema: ";
  for (std::size_t i = 0; i < violations.size(); ++i) {
    if (i > 0) out += "; ";
    out += to_string(violations[i]);
  }
  return out;
}

Result<void> check(Provider& provider, std::string_view urn, const Value& data) {
  auto schema = provider.schema_for(urn);
  if (!schema) return unexpected(schema.error());
  if (!*schema) return {};  // no schema: never validated
  auto violations = (*schema)->validate(data);
  if (violations.empty()) return {};
  return unexpected(Errc::invalid_argument, describe(urn, violations));
}

Middleware::Middleware(std::shared_ptr<Provider> provider) : provider_(std::move(provider)) {
  if (!provider_) throw Error(Errc::invalid_argument, "the schema middleware needs a provider");
}

Result<void> Middleware::handle(const Message& message, const MessageHandler& next) {
  auto schema = provider_->schema_for(message.urn());
  // A schema that cannot be read is the deployment's fault, not the
  // message's: retried (the file may be fixed), unlike invalid data.
  if (!schema) return unexpected(ErrorInfo(schema.error().code(), schema.error().message(), /*retriable=*/true));
  if (*schema) {
    auto violations = (*schema)->validate(message.envelope().data());
    if (!violations.empty()) return unexpected(Errc::invalid_argument, describe(message.urn(), violations));
  }
  return next(message);
}

Result<void> Middleware::publish(PublishRequest& request, const PublishStep& next) {
  const std::string_view urn = request.envelope.urn();
  auto schema = provider_->schema_for(urn);
  if (!schema) return unexpected(schema.error());
  if (*schema) {
    // The Value the envelope was made from when the publisher has it; else
    // the envelope's data, read (not re-printed).
    std::vector<Violation> violations;
    if (request.data != nullptr) {
      violations = (*schema)->validate(*request.data);
    } else {
      violations = (*schema)->validate(request.envelope.data());
    }
    if (!violations.empty()) return unexpected(Errc::invalid_argument, describe(urn, violations));
  }
  return next(request);
}

}  // namespace babelqueue::schema
