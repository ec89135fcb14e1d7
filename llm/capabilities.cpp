#include "llm/capabilities.h"

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "base/files.h"

namespace tilesmith::llm {

std::shared_ptr<CapabilityCache> CapabilityCache::process_default() {
  static auto cache = std::make_shared<CapabilityCache>();
  return cache;
}

std::string CapabilityCache::key(const std::string& endpoint, const std::string& model) {
  return endpoint + "|" + model;
}

CapabilityCache::CapabilityCache(std::filesystem::path persist_path) : path_(std::move(persist_path)) {
  if (path_.empty()) return;
  std::error_code ec;
  if (!std::filesystem::exists(path_, ec)) return;
  auto text = read_file(path_);
  if (!text.ok()) {
    spdlog::warn("ignoring LLM capability cache: {}", text.status().message());
    return;
  }
  nlohmann::json j = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) {
    spdlog::warn("ignoring LLM capability cache {}: not a JSON object", path_.string());
    return;
  }
  // Only well-formed fields are taken: the file may be old or edited by hand.
  for (const auto& [k, v] : j.items()) {
    if (!v.is_object()) continue;
    EndpointCapabilities caps;
    if (auto it = v.find("output_mode"); it != v.end() && it->is_string()) caps.output_mode = *it;
    if (auto it = v.find("max_tokens_field"); it != v.end() && it->is_string())
      caps.max_tokens_field = *it;
    if (auto it = v.find("dropped_parameters"); it != v.end() && it->is_array())
      for (const auto& p : *it)
        if (p.is_string()) caps.dropped_parameters.insert(p.get<std::string>());
    entries_[k] = std::move(caps);
  }
}

EndpointCapabilities CapabilityCache::get(const std::string& key) const {
  std::lock_guard lock(mutex_);
  auto it = entries_.find(key);
  return it == entries_.end() ? EndpointCapabilities{} : it->second;
}

Status CapabilityCache::put(const std::string& key, const EndpointCapabilities& caps) {
  std::lock_guard lock(mutex_);
  auto it = entries_.find(key);
  if (it != entries_.end() && it->second == caps) return {};
  entries_[key] = caps;
  return save_locked();
}

Status CapabilityCache::save_locked() const {
  if (path_.empty()) return {};
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [k, caps] : entries_) {
    j[k] = {{"output_mode", caps.output_mode},
            {"max_tokens_field", caps.max_tokens_field},
            {"dropped_parameters", caps.dropped_parameters}};
  }
  if (path_.has_parent_path()) TS_RETURN_IF_ERROR(ensure_directory(path_.parent_path()));
  return write_file_atomic(path_, j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n")
      .with_context("saving the LLM capability cache");
}

}  // namespace tilesmith::llm
