// SPDX-License-Identifier: Apache-2.0
// Cipher: what field encryption (the family's ADR-0030, library
// babelqueue::gdpr; docs/gdpr.md) turns one field's value into and back. A
// seam for a KMS, Vault's transit engine, an HSM or a tokenisation service;
// AesGcmCipher (aes_gcm_cipher.hpp) is the family's concrete one.
//
// Thread-safety: a Cipher is shared by every handler and publishing thread;
// encrypt() and decrypt() must be safe to call from several threads at once.
#pragma once

#include <babelqueue/result.hpp>

#include <string>
#include <string_view>

/// GDPR field encryption of the `data` leaves a schema marks
/// `x-gdpr-sensitive` (library babelqueue::gdpr).
namespace babelqueue::gdpr {

/// Encrypts and decrypts one field value at a time.
class Cipher {
 public:
  virtual ~Cipher() = default;

  /// The ciphertext of plaintext (the JSON text of one field's value), as
  /// text that can stand in a JSON string (valid UTF-8; base64 in the
  /// family's format). The same plaintext may give a different text each
  /// call (a fresh nonce is expected).
  virtual Result<std::string> encrypt(std::string_view plaintext) const = 0;

  /// The exact plaintext encrypt() was given. An error, never other bytes,
  /// for a text this cipher's keys did not make or that was changed since.
  virtual Result<std::string> decrypt(std::string_view ciphertext) const = 0;
};

}  // namespace babelqueue::gdpr
