// SPDX-License-Identifier: Apache-2.0
// AWS credentials and region for the SQS transport, found the way AWS users
// expect (library babelqueue::sqs).
//
// Credentials, first found wins:
//   1. explicit (CredentialOptions::explicit_credentials),
//   2. environment: AWS_ACCESS_KEY_ID + AWS_SECRET_ACCESS_KEY
//      (+ AWS_SESSION_TOKEN) — skipped when a profile is named explicitly,
//   3. the shared credentials file (AWS_SHARED_CREDENTIALS_FILE, else
//      ~/.aws/credentials), section [profile],
//   4. the shared config file (AWS_CONFIG_FILE, else ~/.aws/config),
//      section [profile NAME] (or [default]).
// The profile is CredentialOptions::profile, else AWS_PROFILE, else
// "default". Region: explicit, else AWS_REGION, else AWS_DEFAULT_REGION,
// else the profile's `region` in the config file.
// Not supported: instance metadata (IMDS), SSO, assume-role and
// credential_process profiles — pass such credentials explicitly.
//
// Secrets never appear in error messages or in to_string().
//
// Thread-safety: plain functions and values.
#pragma once

#include <babelqueue/result.hpp>

#include <optional>
#include <string>

namespace babelqueue::sqs {

/// AWS access keys, and where they came from.
struct AwsCredentials {
  std::string access_key_id;      ///< AKIA...
  std::string secret_access_key;  ///< never logged
  std::string session_token;      ///< empty for long-term keys
  std::string source;             ///< where they came from, e.g. "environment", "profile 'dev' in ~/.aws/credentials"
};

/// "AKIA…XMPL from environment": the key id shortened, never the secret.
std::string to_string(const AwsCredentials& credentials);

/// Where resolve_credentials() looks.
struct CredentialOptions {
  std::optional<AwsCredentials> explicit_credentials;  ///< these, when given; else the environment and profiles
  std::string profile;                                 ///< empty: AWS_PROFILE, else "default"
};

/// Errc::auth naming every place looked at when nothing was found, or a
/// profile that is incomplete (a key id without a secret).
Result<AwsCredentials> resolve_credentials(const CredentialOptions& options = {});

/// explicit_region when not empty, else the environment, else the profile's
/// config. Errc::invalid_argument listing where it looked when none is set.
Result<std::string> resolve_region(const std::string& explicit_region, const std::string& profile = {});

}  // namespace babelqueue::sqs
