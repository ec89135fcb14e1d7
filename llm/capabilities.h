#pragma once
// What an endpoint was found to accept, remembered per (endpoint, model) so that the
// fallbacks (json_schema -> json_object -> text, a parameter the model rejects) are
// discovered once per process instead of once per request. Optionally persisted to a
// small JSON file (e.g. results/llm_capabilities.json) so the next run starts informed.
//
// Thread-safe.

#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>

#include "base/status.h"

namespace tilesmith::llm {

struct EndpointCapabilities {
  std::string output_mode;                 // an output_mode_name(); "" = not learned yet
  std::set<std::string> dropped_parameters;  // request fields the model rejected
  std::string max_tokens_field;            // "" = the provider's default field name
  bool operator==(const EndpointCapabilities&) const = default;
};

class CapabilityCache {
 public:
  // The cache every provider uses unless given another one: process lifetime, not persisted.
  static std::shared_ptr<CapabilityCache> process_default();

  // With a path: loads it when it exists (a corrupt file is ignored with a warning, never
  // fatal) and rewrites it atomically on every change.
  explicit CapabilityCache(std::filesystem::path persist_path = {});

  // "http://127.0.0.1:8000/v1|qwen2.5-coder"
  static std::string key(const std::string& endpoint, const std::string& model);

  EndpointCapabilities get(const std::string& key) const;
  // Stores and, when persisted, saves; a failed save is returned but the memory copy stays.
  Status put(const std::string& key, const EndpointCapabilities& caps);

 private:
  Status save_locked() const;

  std::filesystem::path path_;
  mutable std::mutex mutex_;
  std::map<std::string, EndpointCapabilities> entries_;
};

}  // namespace tilesmith::llm
