#include "registry/config.h"

#include <nlohmann/json.hpp>

#include "base/hash.h"

namespace tilesmith {

nlohmann::json config_to_json(const Config& c) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [k, v] : c) j[k] = v;
  return j;
}

std::string config_to_json_text(const Config& c) { return config_to_json(c).dump(); }

Result<Config> config_from_json(const nlohmann::json& j) {
  if (!j.is_object()) return Status::invalid("a config must be a JSON object of integer parameters");
  Config c;
  for (const auto& [k, v] : j.items()) {
    if (!v.is_number_integer())
      return Status::invalid("parameter " + k + " must be an integer, got " + v.dump());
    c[k] = v.get<std::int64_t>();
  }
  return c;
}

Result<Config> config_from_json_text(const std::string& text) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Status::parse_error("config is not valid JSON: " + text);
  return config_from_json(j);
}

std::string config_hash(const Config& c) { return short_hash(config_to_json_text(c)); }

}  // namespace tilesmith
