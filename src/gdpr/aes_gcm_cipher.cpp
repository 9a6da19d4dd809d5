// SPDX-License-Identifier: Apache-2.0
#include <babelqueue/error.hpp>
#include <babelqueue/gdpr/aes_gcm_cipher.hpp>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include <array>
#include <fstream>
#include <limits>
#include <memory>
#include <optional>
#include <sstream>

namespace babelqueue::gdpr {

namespace {

constexpr std::size_t kNonceSize = 12;
constexpr std::size_t kTagSize = 16;

const EVP_CIPHER* cipher_for(std::size_t key_size) noexcept {
  switch (key_size) {
    case 16: return EVP_aes_128_gcm();
    case 24: return EVP_aes_192_gcm();
    case 32: return EVP_aes_256_gcm();
    default: return nullptr;
  }
}

struct ContextDeleter {
  void operator()(EVP_CIPHER_CTX* ctx) const noexcept { EVP_CIPHER_CTX_free(ctx); }
};
using Context = std::unique_ptr<EVP_CIPHER_CTX, ContextDeleter>;

const unsigned char* bytes(std::string_view s) noexcept { return reinterpret_cast<const unsigned char*>(s.data()); }
unsigned char* bytes(std::string& s) noexcept { return reinterpret_cast<unsigned char*>(s.data()); }

bool fits_int(std::size_t n) noexcept { return n <= static_cast<std::size_t>(std::numeric_limits<int>::max()); }

// sealed = ciphertext ‖ tag under nonce; the plaintext when key
// authenticates it, nothing otherwise.
std::optional<std::string> open(const std::string& key, std::string_view nonce, std::string_view sealed) {
  const std::string_view ciphertext = sealed.substr(0, sealed.size() - kTagSize);
  std::string tag(sealed.substr(sealed.size() - kTagSize));
  Context ctx(EVP_CIPHER_CTX_new());
  if (!ctx) return std::nullopt;
  std::string plaintext(ciphertext.size(), '\0');
  int written = 0;
  int final_written = 0;
  if (EVP_DecryptInit_ex(ctx.get(), cipher_for(key.size()), nullptr, nullptr, nullptr) != 1 ||
      EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_SET_IVLEN, static_cast<int>(kNonceSize), nullptr) != 1 ||
      EVP_DecryptInit_ex(ctx.get(), nullptr, nullptr, bytes(key), bytes(nonce)) != 1 ||
      EVP_DecryptUpdate(ctx.get(), bytes(plaintext), &written, bytes(ciphertext),
                        static_cast<int>(ciphertext.size())) != 1 ||
      EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_SET_TAG, static_cast<int>(kTagSize), tag.data()) != 1 ||
      EVP_DecryptFinal_ex(ctx.get(), bytes(plaintext) + written, &final_written) != 1) {
    OPENSSL_cleanse(plaintext.data(), plaintext.size());
    return std::nullopt;
  }
  plaintext.resize(static_cast<std::size_t>(written + final_written));
  return plaintext;
}

std::string_view trim(std::string_view s) noexcept {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  return s;
}

}  // namespace

std::string base64_encode(std::string_view in) {
  std::string out(4 * ((in.size() + 2) / 3) + 1, '\0');
  const int n = EVP_EncodeBlock(bytes(out), bytes(in), static_cast<int>(in.size()));
  out.resize(static_cast<std::size_t>(n));
  return out;
}

Result<std::string> base64_decode(std::string_view text) {
  // EVP_DecodeBlock is lenient (white space, no padding check) and counts
  // the padding as zero bytes: the text is checked strictly first.
  auto bad = [] { return unexpected(Errc::invalid_argument, "not standard padded base64"); };
  if (text.size() % 4 != 0 || !fits_int(text.size())) return bad();
  std::size_t padding = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    const bool alphabet =
        (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' || c == '/';
    if (c == '=') {
      if (i + 2 < text.size()) return bad();  // only the last two characters may be padding
      ++padding;
    } else if (!alphabet || padding > 0) {
      return bad();
    }
  }
  std::string out(text.size() / 4 * 3, '\0');
  const int n = EVP_DecodeBlock(bytes(out), bytes(text), static_cast<int>(text.size()));
  if (n < 0) return bad();
  out.resize(static_cast<std::size_t>(n) - padding);
  return out;
}

Result<std::shared_ptr<AesGcmCipher>> AesGcmCipher::create(std::vector<std::string> keys) {
  if (keys.empty()) return unexpected(Errc::invalid_argument, "AES-GCM needs at least one key");
  for (std::size_t i = 0; i < keys.size(); ++i) {
    if (cipher_for(keys[i].size()) == nullptr) {
      const std::size_t size = keys[i].size();
      for (auto& key : keys) OPENSSL_cleanse(key.data(), key.size());
      return unexpected(Errc::invalid_argument, "AES-GCM key " + std::to_string(i + 1) + " has " +
                                                    std::to_string(size) + " bytes; a key has 16, 24 or 32");
    }
  }
  return std::shared_ptr<AesGcmCipher>(new AesGcmCipher(std::move(keys)));
}

Result<std::shared_ptr<AesGcmCipher>> AesGcmCipher::from_key_lines(std::string_view text) {
  std::vector<std::string> keys;
  auto wipe = [&keys] {
    for (auto& key : keys) OPENSSL_cleanse(key.data(), key.size());
  };
  std::size_t line_number = 0;
  while (!text.empty()) {
    const auto end = text.find('\n');
    const std::string_view line = trim(text.substr(0, end));
    text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
    ++line_number;
    if (line.empty() || line.front() == '#') continue;
    auto key = base64_decode(line);
    if (!key || cipher_for(key->size()) == nullptr) {
      wipe();
      if (key) OPENSSL_cleanse(key->data(), key->size());
      // The line itself is never quoted: it is key material.
      return unexpected(Errc::invalid_argument, "key line " + std::to_string(line_number) +
                                                    " is not a standard base64 key of 16, 24 or 32 bytes");
    }
    keys.push_back(std::move(*key));
  }
  if (keys.empty()) return unexpected(Errc::invalid_argument, "no key: one standard base64 key a line is expected");
  return create(std::move(keys));
}

Result<std::shared_ptr<AesGcmCipher>> AesGcmCipher::from_key_file(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return unexpected(Errc::not_found, "cannot read the key file " + file.string());
  std::ostringstream contents;
  contents << in.rdbuf();
  std::string text = std::move(contents).str();
  auto cipher = from_key_lines(text);
  OPENSSL_cleanse(text.data(), text.size());
  if (!cipher) return unexpected(cipher.error().code(), file.string() + ": " + cipher.error().message());
  return cipher;
}

AesGcmCipher::~AesGcmCipher() {
  for (auto& key : keys_) OPENSSL_cleanse(key.data(), key.size());
}

Result<std::string> AesGcmCipher::encrypt(std::string_view plaintext) const {
  if (!fits_int(plaintext.size())) return unexpected(Errc::invalid_argument, "a field too large to encrypt");
  const std::string& key = keys_.front();
  std::string sealed(kNonceSize + plaintext.size() + kTagSize, '\0');
  unsigned char* nonce = bytes(sealed);
  unsigned char* out = nonce + kNonceSize;
  int written = 0;
  int final_written = 0;
  Context ctx(EVP_CIPHER_CTX_new());
  if (!ctx || RAND_bytes(nonce, static_cast<int>(kNonceSize)) != 1 ||
      EVP_EncryptInit_ex(ctx.get(), cipher_for(key.size()), nullptr, nullptr, nullptr) != 1 ||
      EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_SET_IVLEN, static_cast<int>(kNonceSize), nullptr) != 1 ||
      EVP_EncryptInit_ex(ctx.get(), nullptr, nullptr, reinterpret_cast<const unsigned char*>(key.data()), nonce) != 1 ||
      EVP_EncryptUpdate(ctx.get(), out, &written, bytes(plaintext), static_cast<int>(plaintext.size())) != 1 ||
      EVP_EncryptFinal_ex(ctx.get(), out + written, &final_written) != 1 ||
      EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_GET_TAG, static_cast<int>(kTagSize), out + written + final_written) !=
          1) {
    return unexpected(Errc::internal, "AES-GCM encryption failed in libcrypto");
  }
  return base64_encode(sealed);
}

Result<std::string> AesGcmCipher::decrypt(std::string_view ciphertext) const {
  auto raw = base64_decode(ciphertext);
  if (!raw) return unexpected(Errc::invalid_argument, "not an AES-GCM field: " + raw.error().message());
  if (raw->size() < kNonceSize + kTagSize) {
    return unexpected(Errc::invalid_argument, "not an AES-GCM field: too short for a nonce and a tag");
  }
  const std::string_view all(*raw);
  for (const std::string& key : keys_) {
    if (auto plaintext = open(key, all.substr(0, kNonceSize), all.substr(kNonceSize))) return std::move(*plaintext);
  }
  return unexpected(Errc::auth,
                    "no key of the ring authenticates the field (encrypted with another key, or changed since)");
}

}  // namespace babelqueue::gdpr
