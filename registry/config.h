#pragma once
// A kernel configuration: named integer parameters. Only integers that passed the
// registry's domain checks are ever rendered into kernel source.

#include <cstdint>
#include <map>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "base/status.h"

namespace tilesmith {

// Ordered by name, so its JSON text and hash are canonical.
using Config = std::map<std::string, std::int64_t>;

// {"BLOCK_M":128,...} with keys sorted.
std::string config_to_json_text(const Config& c);
nlohmann::json config_to_json(const Config& c);
// Strict: an object of integers (no floats, strings or booleans).
Result<Config> config_from_json(const nlohmann::json& j);
Result<Config> config_from_json_text(const std::string& text);
// 16 hex digits over the canonical JSON text: the config's identity in history.csv.
std::string config_hash(const Config& c);

}  // namespace tilesmith
