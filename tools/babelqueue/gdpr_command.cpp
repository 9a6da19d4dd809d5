// SPDX-License-Identifier: Apache-2.0
// `babelqueue gdpr protect|unprotect`: field encryption of one envelope, on
// stdin and stdout, with the schemas of a registry directory and a key file
// (docs/gdpr.md, docs/cli.md). No broker is needed.
#include "commands.hpp"

#include <babelqueue/envelope.hpp>
#include <babelqueue/gdpr/aes_gcm_cipher.hpp>
#include <babelqueue/gdpr/protect.hpp>
#include <babelqueue/schema/provider.hpp>

#include <iostream>
#include <memory>

namespace babelqueue::cli {

namespace {

struct GdprArgs {
  std::string registry;
  std::string key_file;
};

int fail(const std::string& message) {
  std::cerr << "babelqueue: gdpr: " << message << '\n';
  return kExitFailure;
}

int run_gdpr(const GdprArgs& args, bool encrypting) {
  auto provider = schema::DirectoryProvider::open(args.registry);
  if (!provider) return fail("--registry " + args.registry + ": " + provider.error().message());
  auto cipher = gdpr::AesGcmCipher::from_key_file(args.key_file);  // its errors never quote a key
  if (!cipher) return fail("--key-file " + cipher.error().message());
  const std::string body = read_stdin();
  auto env = Envelope::decode(body);
  if (!env) return fail("stdin is not an envelope: " + std::string(to_string(env.error().reason)));
  auto schema = (*provider)->schema_for(env->urn());
  if (!schema) return fail(schema.error().message());
  if (!*schema) {  // no schema, nothing marked: the envelope as it came
    std::cout << env->body() << '\n';
    return kExitOk;
  }
  auto out = encrypting ? gdpr::protect(*env, **schema, **cipher) : gdpr::unprotect(*env, **schema, **cipher);
  if (!out) return fail(out.error().message());
  std::cout << out->body() << '\n';
  return kExitOk;
}

}  // namespace

void add_gdpr_command(CLI::App& app, Action& action) {
  CLI::App* gdpr = app.add_subcommand(
      "gdpr", "Encrypt or decrypt the x-gdpr-sensitive fields of an envelope on stdin (no broker needed)");
  gdpr->require_subcommand(1);
  auto args = std::make_shared<GdprArgs>();
  for (const bool encrypting : {true, false}) {
    CLI::App* sub = gdpr->add_subcommand(
        encrypting ? "protect" : "unprotect",
        encrypting ? "Print the envelope with its marked fields encrypted (AES-GCM with the key file's first key)"
                   : "Print the envelope with its marked fields decrypted (with any key of the key file)");
    sub->add_option("--registry", args->registry,
                    "The schema registry: a registry.json, or the directory holding it; a URN without a schema "
                    "passes unchanged")
        ->required()
        ->type_name("DIR");
    sub->add_option("--key-file", args->key_file,
                    "One standard base64 AES key (16, 24 or 32 bytes) a line: the first encrypts, every one "
                    "decrypts; never printed")
        ->required()
        ->type_name("FILE");
    sub->callback([&action, args, encrypting] { action = [args, encrypting] { return run_gdpr(*args, encrypting); }; });
  }
}

}  // namespace babelqueue::cli
