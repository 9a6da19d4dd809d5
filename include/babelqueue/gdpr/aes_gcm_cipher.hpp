// SPDX-License-Identifier: Apache-2.0
// AesGcmCipher: the family's field cipher (the Go SDK's reference,
// docs/gdpr.md), on OpenSSL's libcrypto: AES-GCM with the key's size
// (16, 24 or 32 bytes: AES-128, -192, -256), a fresh random 12-byte nonce
// per field, no associated data, written as standard padded base64 of
//   nonce (12 bytes) ‖ ciphertext ‖ tag (16 bytes)
// so what a Go, Python or other sibling's AES-GCM cipher with the same key
// wrote opens here, and the reverse.
//
// Beyond the siblings, a key ring for rotation: the first key encrypts,
// every key is tried to decrypt. Rotate by putting a new key first and
// keeping the old ones until no message encrypted with them is left.
//
// Key material is wiped from memory when the cipher is destroyed and never
// appears in an error text. Thread-safe.
#pragma once

#include <babelqueue/gdpr/cipher.hpp>
#include <babelqueue/result.hpp>

#include <cstddef>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace babelqueue::gdpr {

/// AES-GCM in the family's format, with a key ring.
class AesGcmCipher final : public Cipher {
 public:
  /// A cipher over keys (raw bytes, 16, 24 or 32 each), the first for
  /// encrypting. Errc::invalid_argument when there is none or one has
  /// another size.
  static Result<std::shared_ptr<AesGcmCipher>> create(std::vector<std::string> keys);

  /// A cipher over the keys of text: one standard-base64 key a line, the
  /// first line encrypting; blank lines and lines starting with '#' are
  /// skipped. Errc::invalid_argument naming the line of a key that is not
  /// base64 or has a wrong size.
  static Result<std::shared_ptr<AesGcmCipher>> from_key_lines(std::string_view text);

  /// from_key_lines() over a file's contents. Errc::not_found when the file
  /// cannot be read.
  static Result<std::shared_ptr<AesGcmCipher>> from_key_file(const std::filesystem::path& file);

  ~AesGcmCipher() override;
  AesGcmCipher(const AesGcmCipher&) = delete;             ///< keys are not copied around
  AesGcmCipher& operator=(const AesGcmCipher&) = delete;  ///< keys are not copied around

  /// Encrypts with the first key. Errc::internal if libcrypto fails.
  Result<std::string> encrypt(std::string_view plaintext) const override;

  /// Opens text with the first key of the ring that authenticates it.
  /// Errc::invalid_argument when it is not standard padded base64 or too
  /// short to hold a nonce and a tag; Errc::auth when no key authenticates
  /// it (a key the ring does not hold, or changed bytes).
  Result<std::string> decrypt(std::string_view ciphertext) const override;

  /// How many keys the ring holds.
  std::size_t key_count() const noexcept { return keys_.size(); }

 private:
  explicit AesGcmCipher(std::vector<std::string> keys) : keys_(std::move(keys)) {}
  std::vector<std::string> keys_;
};

/// Standard base64 with padding (RFC 4648 §4), the family's text form of
/// ciphertext and keys.
std::string base64_encode(std::string_view bytes);
/// The bytes of standard padded base64 text; Errc::invalid_argument for any
/// other text (a wrong length, a character outside the alphabet, misplaced
/// padding).
Result<std::string> base64_decode(std::string_view text);

}  // namespace babelqueue::gdpr
