#include "runtime/replay/space_files.h"

#include <algorithm>
#include <cstdlib>
#include <set>

#include <nlohmann/json.hpp>

#include "base/files.h"

#ifndef TILESMITH_SPACES_DIR
#define TILESMITH_SPACES_DIR "data/spaces"
#endif

namespace tilesmith::replay {

std::filesystem::path default_spaces_dir() {
  if (const char* env = std::getenv("TILESMITH_SPACES_DIR"); env && *env) return env;
  return TILESMITH_SPACES_DIR;
}

Result<SpaceFile> read_space_file(const std::filesystem::path& path) {
  TS_ASSIGN_OR_RETURN(std::string text, read_file(path));
  auto j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object())
    return Status::parse_error(path.string() + ": not a JSON object");
  return SpaceFile{path, std::make_shared<const nlohmann::json>(std::move(j))};
}

namespace {

bool claims_kernel(const nlohmann::json& j, const std::string& kernel_name) {
  auto kt = j.find("kernel_tuner");
  if (kt == j.end() || !kt->is_object()) return false;
  auto names = kt->find("kernel_names");
  if (names == kt->end() || !names->is_array()) return false;
  for (const auto& n : *names)
    if (n.is_string() && n.get<std::string>() == kernel_name) return true;
  return false;
}

std::set<std::string> declared_names(const nlohmann::json& j) {
  std::set<std::string> out;
  auto ps = j.find("parameters");
  if (ps == j.end() || !ps->is_array()) return out;
  for (const auto& p : *ps)
    if (p.is_object() && p.contains("name") && p["name"].is_string())
      out.insert(p["name"].get<std::string>());
  return out;
}

}  // namespace

Result<std::optional<SpaceFile>> find_space_file(const std::filesystem::path& dir,
                                                 const std::string& kernel_name,
                                                 const std::vector<std::string>& param_names) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) return std::optional<SpaceFile>();
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec))
    if (entry.path().extension() == ".json") files.push_back(entry.path());
  if (ec) return Status::io_error("listing " + dir.string() + ": " + ec.message());
  std::sort(files.begin(), files.end());
  const std::set<std::string> wanted(param_names.begin(), param_names.end());
  for (const auto& path : files) {
    TS_ASSIGN_OR_RETURN(std::string text, read_file(path));
    auto j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    // Files that do not parse cannot claim anything; only a claimant must be sound.
    if (j.is_discarded() || !j.is_object()) {
      if (text.find("\"" + kernel_name + "\"") != std::string::npos)
        return Status::parse_error(path.string() + " mentions kernel " + kernel_name +
                                   " but is not valid JSON");
      continue;
    }
    if (!claims_kernel(j, kernel_name)) continue;
    if (declared_names(j) != wanted) continue;  // another parameterisation of the same kernel
    return std::optional<SpaceFile>(
        SpaceFile{path, std::make_shared<const nlohmann::json>(std::move(j))});
  }
  return std::optional<SpaceFile>();
}

}  // namespace tilesmith::replay
