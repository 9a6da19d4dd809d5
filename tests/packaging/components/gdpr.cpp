// SPDX-License-Identifier: Apache-2.0
// A consumer of the installed babelqueue::gdpr alone: a marked field is
// encrypted by protect and comes back from unprotect; a wrong key is refused.
#include <babelqueue/gdpr/aes_gcm_cipher.hpp>
#include <babelqueue/gdpr/protect.hpp>

#include <iostream>
#include <string>

int main() {
  namespace gdpr = babelqueue::gdpr;
  auto schema = babelqueue::schema::Schema::parse(
      R"({"type":"object","properties":{"email":{"type":"string","x-gdpr-sensitive":"contact"}}})");
  auto cipher = gdpr::AesGcmCipher::create({std::string(32, 'k')});
  auto other = gdpr::AesGcmCipher::create({std::string(32, 'o')});
  if (!schema || !cipher || !other) return 1;
  babelqueue::Value data = babelqueue::Value::object({{"email", "alice@example.com"}, {"order_id", 1042}});
  if (!gdpr::protect(data, *schema, **cipher)) return 1;
  if (data.find("email")->as_string() == "alice@example.com") return 1;
  babelqueue::Value copy = data;
  if (gdpr::unprotect(copy, *schema, **other)) return 1;
  if (!gdpr::unprotect(data, *schema, **cipher)) return 1;
  if (data.find("email")->as_string() != "alice@example.com") return 1;
  std::cout << "gdpr: ok\n";
  return 0;
}
