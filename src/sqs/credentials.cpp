// SPDX-License-Identifier: Apache-2.0
#include <babelqueue/sqs/credentials.hpp>

#include <cstdlib>
#include <fstream>
#include <map>
#include <optional>
#include <vector>

namespace babelqueue::sqs {
namespace {

std::string env(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr ? std::string(value) : std::string();
}

std::string trim(std::string_view text) {
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) return {};
  const auto last = text.find_last_not_of(" \t\r\n");
  return std::string(text.substr(first, last - first + 1));
}

// An INI file as the AWS CLI writes it: [section] headers, key = value lines,
// '#' and ';' comment lines. Sections map to their keys.
using IniFile = std::map<std::string, std::map<std::string, std::string>>;

std::optional<IniFile> read_ini(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  IniFile file;
  std::string section;
  std::string line;
  while (std::getline(in, line)) {
    const std::string text = trim(line);
    if (text.empty() || text[0] == '#' || text[0] == ';') continue;
    if (text.front() == '[' && text.back() == ']') {
      section = trim(std::string_view(text).substr(1, text.size() - 2));
      file[section];
      continue;
    }
    const auto eq = text.find('=');
    if (eq == std::string::npos || section.empty()) continue;
    file[section][trim(std::string_view(text).substr(0, eq))] = trim(std::string_view(text).substr(eq + 1));
  }
  return file;
}

std::string home_file(const char* override_variable, const char* relative) {
  std::string path = env(override_variable);
  if (!path.empty()) return path;
  const std::string home = env("HOME");
  return home.empty() ? std::string() : home + "/" + relative;
}

std::string credentials_file() { return home_file("AWS_SHARED_CREDENTIALS_FILE", ".aws/credentials"); }
std::string config_file() { return home_file("AWS_CONFIG_FILE", ".aws/config"); }

std::string profile_name(const std::string& explicit_profile) {
  if (!explicit_profile.empty()) return explicit_profile;
  std::string from_env = env("AWS_PROFILE");
  return from_env.empty() ? std::string("default") : from_env;
}

// The config file names profiles "[profile NAME]", except "[default]".
const std::map<std::string, std::string>* config_section(const IniFile& file, const std::string& profile) {
  auto found = file.find("profile " + profile);
  if (found == file.end()) found = file.find(profile);
  return found == file.end() ? nullptr : &found->second;
}

std::string value_of(const std::map<std::string, std::string>& section, const char* key) {
  const auto found = section.find(key);
  return found == section.end() ? std::string() : found->second;
}

Result<std::optional<AwsCredentials>> from_section(const std::map<std::string, std::string>& section,
                                                   const std::string& where) {
  AwsCredentials credentials;
  credentials.access_key_id = value_of(section, "aws_access_key_id");
  credentials.secret_access_key = value_of(section, "aws_secret_access_key");
  credentials.session_token = value_of(section, "aws_session_token");
  credentials.source = where;
  if (credentials.access_key_id.empty() && credentials.secret_access_key.empty()) {
    return std::optional<AwsCredentials>{};
  }
  if (credentials.access_key_id.empty() || credentials.secret_access_key.empty()) {
    return unexpected(Errc::auth, where + " has only one of aws_access_key_id and aws_secret_access_key");
  }
  return std::optional<AwsCredentials>(std::move(credentials));
}

}  // namespace

std::string to_string(const AwsCredentials& credentials) {
  const std::string& id = credentials.access_key_id;
  const std::string shown = id.size() > 8 ? id.substr(0, 4) + "…" + id.substr(id.size() - 4) : std::string("…");
  return shown + " from " + (credentials.source.empty() ? std::string("options") : credentials.source);
}

Result<AwsCredentials> resolve_credentials(const CredentialOptions& options) {
  if (options.explicit_credentials) {
    AwsCredentials credentials = *options.explicit_credentials;
    if (credentials.access_key_id.empty() || credentials.secret_access_key.empty()) {
      return unexpected(Errc::auth, "the explicit AWS credentials need both an access key id and a secret access key");
    }
    if (credentials.source.empty()) credentials.source = "options";
    return credentials;
  }
  std::vector<std::string> looked;
  if (options.profile.empty()) {
    AwsCredentials credentials;
    credentials.access_key_id = env("AWS_ACCESS_KEY_ID");
    credentials.secret_access_key = env("AWS_SECRET_ACCESS_KEY");
    credentials.session_token = env("AWS_SESSION_TOKEN");
    credentials.source = "environment";
    if (!credentials.access_key_id.empty() && !credentials.secret_access_key.empty()) return credentials;
    if (!credentials.access_key_id.empty() || !credentials.secret_access_key.empty()) {
      return unexpected(Errc::auth, "only one of AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY is set");
    }
    looked.emplace_back("AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY");
  }
  const std::string profile = profile_name(options.profile);
  const std::string shared = credentials_file();
  if (!shared.empty()) {
    if (auto file = read_ini(shared)) {
      if (const auto section = file->find(profile); section != file->end()) {
        auto found = from_section(section->second, "profile '" + profile + "' in " + shared);
        if (!found) return unexpected(found.error());
        if (*found) return std::move(**found);
      }
    }
    looked.push_back("profile '" + profile + "' in " + shared);
  }
  const std::string config = config_file();
  if (!config.empty()) {
    if (auto file = read_ini(config)) {
      if (const auto* section = config_section(*file, profile)) {
        auto found = from_section(*section, "profile '" + profile + "' in " + config);
        if (!found) return unexpected(found.error());
        if (*found) return std::move(**found);
      }
    }
    looked.push_back("profile '" + profile + "' in " + config);
  }
  std::string where;
  for (const auto& place : looked) where += (where.empty() ? "" : ", ") + place;
  return unexpected(Errc::auth, "no AWS credentials found (looked at " + where +
                                    "); set them in the environment, a shared credentials file, or the options");
}

Result<std::string> resolve_region(const std::string& explicit_region, const std::string& profile) {
  if (!explicit_region.empty()) return explicit_region;
  for (const char* name : {"AWS_REGION", "AWS_DEFAULT_REGION"}) {
    std::string value = env(name);
    if (!value.empty()) return value;
  }
  const std::string name = profile_name(profile);
  const std::string config = config_file();
  if (!config.empty()) {
    if (auto file = read_ini(config)) {
      if (const auto* section = config_section(*file, name)) {
        std::string region = value_of(*section, "region");
        if (!region.empty()) return region;
      }
    }
  }
  return unexpected(Errc::invalid_argument,
                    "no AWS region: put it in the URL (sqs://us-east-1), or set AWS_REGION, AWS_DEFAULT_REGION or "
                    "`region` of profile '" +
                        name + "' in " + (config.empty() ? std::string("~/.aws/config") : config));
}

}  // namespace babelqueue::sqs
