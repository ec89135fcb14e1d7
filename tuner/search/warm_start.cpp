#include "tuner/search/warm_start.h"

#include <set>
#include <system_error>

namespace tilesmith {
namespace fs = std::filesystem;

namespace {
constexpr const char* kWhatToGive =
    "give the best_config.json of an earlier autotune-loop run, or the results folder it was written in";
}  // namespace

Result<WarmStartFile> load_warm_start(const fs::path& path) {
  std::error_code ec;
  WarmStartFile out;
  out.path = path;
  if (fs::is_directory(path, ec)) {
    out.path = path / "best_config.json";
    if (!fs::exists(out.path, ec))
      return Status::not_found(path.string() + " is a folder without a best_config.json; " + kWhatToGive);
  } else if (!fs::exists(path, ec)) {
    return Status::not_found(path.string() + ": no such file or folder; " + kWhatToGive);
  }
  auto entries = read_best_config(out.path);
  // read_best_config's message already names the file and what is wrong with it.
  if (!entries.ok()) return Status(entries.status().code(), entries.status().message() + "; " + kWhatToGive);
  out.entries = std::move(entries).value();
  return out;
}

std::vector<WarmStartSeed> warm_start_seeds(const std::vector<WarmStartFile>& files, const std::string& template_name,
                                            const std::string& device_name, const KernelTemplate* current) {
  std::vector<WarmStartSeed> seeds;
  std::set<Config> taken;
  // A winner measured on this very GPU model is the better bet, whatever file it is in;
  // the other devices' winners still point at the right region of the space.
  for (const bool same_device : {true, false}) {
    for (const auto& file : files) {
      for (const auto& e : file.entries) {
        if (e.template_name != template_name) continue;
        const std::string recorded_on = e.device.is_object() ? e.device.value("name", std::string()) : "";
        if ((recorded_on == device_name) != same_device) continue;
        ConfigUpdate update;
        update.config = e.config;
        if (current) update = current->update_config(e.config);
        if (!taken.insert(update.config).second) continue;
        std::string origin = "winner for " + e.problem.describe();
        if (!same_device && !recorded_on.empty()) origin += " on " + recorded_on;
        origin += " in " + file.path.string();
        seeds.push_back({std::move(update.config), std::move(origin), update.notes()});
      }
    }
  }
  return seeds;
}

}  // namespace tilesmith
