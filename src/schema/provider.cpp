// SPDX-License-Identifier: Apache-2.0
#include <babelqueue/json.hpp>
#include <babelqueue/schema/provider.hpp>

#include <fstream>
#include <iterator>
#include <mutex>

namespace babelqueue::schema {

namespace {

Result<std::string> read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return unexpected(Errc::not_found, "cannot read " + path.string());
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace

Result<void> MapProvider::add(std::string urn, std::string_view schema_json) {
  auto parsed = Schema::parse(schema_json);
  if (!parsed) return unexpected(parsed.error());
  add(std::move(urn), std::move(*parsed));
  return {};
}

void MapProvider::add(std::string urn, Schema schema) {
  schemas_[std::move(urn)] = std::make_shared<const Schema>(std::move(schema));
}

Result<std::shared_ptr<const Schema>> MapProvider::schema_for(std::string_view urn) {
  auto it = schemas_.find(urn);
  if (it == schemas_.end()) return std::shared_ptr<const Schema>();
  return it->second;
}

class DirectoryProvider::State {
 public:
  std::mutex mutex;
  std::map<std::string, std::filesystem::path, std::less<>> files;  // urn -> schema file
  std::map<std::string, std::shared_ptr<const Schema>, std::less<>> loaded;
};

DirectoryProvider::DirectoryProvider(std::unique_ptr<State> state) : state_(std::move(state)) {}
DirectoryProvider::~DirectoryProvider() = default;

Result<std::unique_ptr<DirectoryProvider>> DirectoryProvider::open(const std::filesystem::path& registry) {
  const std::filesystem::path manifest =
      std::filesystem::is_directory(registry) ? registry / "registry.json" : registry;
  auto text = read_file(manifest);
  if (!text) return unexpected(text.error());
  auto value = parse_json(*text);
  if (!value) return unexpected(Errc::invalid_json, manifest.string() + ": " + value.error().message());
  const Value* schemas = value->is_object() ? value->find("schemas") : nullptr;
  if (schemas == nullptr || !schemas->is_array()) {
    return unexpected(Errc::invalid_argument, manifest.string() + " has no \"schemas\" list");
  }
  auto state = std::make_unique<State>();
  for (const Value& entry : schemas->as_array()) {
    const Value* urn = entry.is_object() ? entry.find("urn") : nullptr;
    const Value* file = entry.is_object() ? entry.find("schema") : nullptr;
    if (urn == nullptr || file == nullptr || !urn->is_string() || !file->is_string()) continue;
    if (urn->as_string().empty() || file->as_string().empty()) continue;
    std::filesystem::path path(file->as_string());
    if (path.is_relative()) path = manifest.parent_path() / path;
    state->files.emplace(urn->as_string(), std::move(path));
  }
  return std::unique_ptr<DirectoryProvider>(new DirectoryProvider(std::move(state)));
}

Result<std::shared_ptr<const Schema>> DirectoryProvider::schema_for(std::string_view urn) {
  std::lock_guard lock(state_->mutex);
  if (auto it = state_->loaded.find(urn); it != state_->loaded.end()) return it->second;
  auto file = state_->files.find(urn);
  if (file == state_->files.end()) return std::shared_ptr<const Schema>();
  auto text = read_file(file->second);
  if (!text)
    return unexpected(text.error().code(), "the schema of \"" + std::string(urn) + "\": " + text.error().message());
  auto schema = Schema::parse(*text);
  if (!schema) {
    return unexpected(schema.error().code(), "the schema of \"" + std::string(urn) + "\" (" + file->second.string() +
                                                 "): " + schema.error().message());
  }
  auto shared = std::make_shared<const Schema>(std::move(*schema));
  state_->loaded.emplace(std::string(urn), shared);
  return shared;
}

}  // namespace babelqueue::schema
