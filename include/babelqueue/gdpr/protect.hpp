// SPDX-License-Identifier: Apache-2.0
// protect and unprotect: field encryption of a message's `data` (the
// family's ADR-0030, docs/gdpr.md). Which fields are personal data is known
// only from the URN's schema, whose `x-gdpr-sensitive` marks name them
// (schema::Schema::sensitive_paths); nothing in the message says it.
//
//   protect    every value at a marked path becomes the cipher's ciphertext
//              string of that value's JSON text (a string leaf "alice" is
//              encrypted as the 7 bytes "alice" with quotes; an object or
//              array as compact JSON with sorted keys, the family's form)
//   unprotect  every string at a marked path is decrypted and its JSON put
//              back; a value that is not a string is left as it is
//
// Paths as the siblings walk them: objects by key, `[]` fans out over every
// element of an array, a mark on an object or array (a container mark)
// encrypts it whole, a path that is absent or of another shape in this
// message is skipped, a mark on data itself is ignored. Marks are applied
// in path order. Only those values change: the frame, meta (schema_version
// too), trace_id, attempts and every other byte of data are kept as they
// were — the envelope functions splice the new values into the body, the
// unmarked parts are not re-printed.
//
// Run the schema check on cleartext: before protect on the producer, after
// unprotect on the consumer (the Middleware of middleware.hpp, added before
// the schema middleware, does both in the family's order).
#pragma once

#include <babelqueue/envelope.hpp>
#include <babelqueue/gdpr/cipher.hpp>
#include <babelqueue/result.hpp>
#include <babelqueue/schema/schema.hpp>
#include <babelqueue/value.hpp>

namespace babelqueue::gdpr {

/// The envelope with the marked values of its data encrypted; every other
/// byte of the body kept. A cipher's error is returned and nothing is
/// changed; Errc::rejected for an envelope that is not accepted.
Result<Envelope> protect(const Envelope& envelope, const schema::Schema& schema, const Cipher& cipher);

/// The envelope with the marked values of its data decrypted; every other
/// byte kept, attempts too. A string that does not decrypt, or whose
/// plaintext is not JSON, is an error (the cipher's code, or
/// Errc::invalid_json) naming its path: never garbage for the handler.
Result<Envelope> unprotect(const Envelope& envelope, const schema::Schema& schema, const Cipher& cipher);

/// protect() and unprotect() of a data Value in place (e.g. before
/// Envelope::make or Publisher::publish). On error data is left unchanged.
///@{
Result<void> protect(Value& data, const schema::Schema& schema, const Cipher& cipher);
Result<void> unprotect(Value& data, const schema::Schema& schema, const Cipher& cipher);
///@}

}  // namespace babelqueue::gdpr
