#include "tuner/search/prior.h"

#include <algorithm>
#include <map>
#include <set>
#include <system_error>
#include <tuple>

#include "runtime/replay/kernel_tuner_cache.h"
#include "tuner/records/history.h"
#include "tuner/records/history_recording.h"

namespace tilesmith {
namespace fs = std::filesystem;

namespace {
constexpr const char* kWhatToGive =
    "give a results folder of an earlier autotune-loop run, its history.csv, or a Kernel Tuner "
    "cache file "
    "(.json or .json.gz, e.g. from `autotune-loop history --kernel-tuner-cache`)";

bool is_cache_file(const fs::path& p) {
  const std::string name = p.filename().string();
  auto ends = [&](const std::string& s) {
    return name.size() >= s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0;
  };
  return ends(".json") || ends(".json.gz");
}

// Fastest first; each config once, at its fastest time.
void sort_and_dedup(std::vector<PriorSource::Row>& rows) {
  std::sort(rows.begin(), rows.end(),
            [](const auto& a, const auto& b) { return a.time_ms < b.time_ms; });
  std::set<Config> seen;
  std::vector<PriorSource::Row> kept;
  for (auto& r : rows)
    if (seen.insert(r.config).second) kept.push_back(std::move(r));
  rows = std::move(kept);
}

Result<std::vector<PriorSource>> from_history(const fs::path& file) {
  auto load = read_history(file);
  if (!load.ok()) return Status(load.status().code(), load.status().message() + "; " + kWhatToGive);
  // One source per template, problem and device.
  std::map<std::tuple<std::string, std::string, std::string>, PriorSource> by_key;
  for (const HistoryRow& r : load->rows) {
    if (!r.evaluated() || !r.ok() || !r.median_ms || !(*r.median_ms > 0)) continue;
    auto config = config_from_json_text(r.config);
    if (!config.ok()) continue;
    PriorSource& s = by_key[{r.template_name, r.problem_key, r.device_name}];
    if (s.describe.empty()) {
      s.template_name = r.template_name;
      if (auto problem = problem_of_row(r); problem.ok()) s.problem = *problem;
      s.describe = r.template_name + ", " + std::to_string(r.m) + "x" + std::to_string(r.n) + "x" +
                   std::to_string(r.k) + " " + r.dtype + " " + r.layout +
                   (r.device_name.empty() ? "" : " on " + r.device_name) + ", from " +
                   file.string();
    }
    s.rows.push_back({std::move(config).value(), *r.median_ms});
  }
  std::vector<PriorSource> out;
  for (auto& [key, s] : by_key) {
    sort_and_dedup(s.rows);
    out.push_back(std::move(s));
  }
  if (out.empty())
    return Status::invalid(file.string() + " holds no successful measurement to learn from; " +
                           kWhatToGive);
  return out;
}

Result<std::vector<PriorSource>> from_cache(const fs::path& file) {
  auto cache = replay::read_kernel_tuner_cache(file);
  if (!cache.ok())
    return Status(cache.status().code(), cache.status().message() + "; " + kWhatToGive);
  PriorSource s;
  s.template_name = cache->kernel_name;
  s.problem = cache->problem;
  std::string sizes;
  for (std::int64_t v : cache->problem_size) {
    if (!sizes.empty()) sizes += 'x';
    sizes += std::to_string(v);
  }
  s.describe = cache->kernel_name + ", " + (cache->problem ? cache->problem->describe() : sizes) +
               (cache->device_name.empty() ? "" : " on " + cache->device_name) + ", from " +
               file.string();
  for (const auto& rec : cache->records) {
    if (rec.outcome != Outcome::kOk || !(rec.time_ms > 0) ||
        rec.point.size() != cache->param_names.size())
      continue;
    Config c;
    for (std::size_t i = 0; i < rec.point.size(); ++i) c[cache->param_names[i]] = rec.point[i];
    s.rows.push_back({std::move(c), rec.time_ms});
  }
  if (s.rows.empty())
    return Status::invalid(file.string() + " holds no successful measurement to learn from; " +
                           kWhatToGive);
  sort_and_dedup(s.rows);
  return std::vector<PriorSource>{std::move(s)};
}

int distance(const Config& a, const Config& b) {
  int d = 0;
  for (const auto& [name, value] : a) {
    auto it = b.find(name);
    d += it == b.end() || it->second != value;
  }
  for (const auto& [name, value] : b) d += !a.count(name);
  return d;
}

std::string ordinal(std::size_t i) {
  const std::size_t n = i + 1;
  const char* suffix = (n % 100 >= 11 && n % 100 <= 13) ? "th"
                       : n % 10 == 1                    ? "st"
                       : n % 10 == 2                    ? "nd"
                       : n % 10 == 3                    ? "rd"
                                                        : "th";
  return n == 1 ? std::string("fastest") : std::to_string(n) + suffix + " fastest";
}
}  // namespace

Result<std::vector<PriorSource>> load_prior(const fs::path& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    const fs::path history = path / kHistoryFileName;
    if (!fs::exists(history, ec))
      return Status::not_found(path.string() + " is a folder without a " + kHistoryFileName + "; " +
                               kWhatToGive);
    return from_history(history);
  }
  if (!fs::exists(path, ec))
    return Status::not_found(path.string() + ": no such file or folder; " + kWhatToGive);
  return is_cache_file(path) ? from_cache(path) : from_history(path);
}

std::vector<WarmStartSeed> prior_picks(const PriorSource& source, int count, int min_distance) {
  std::vector<std::size_t> chosen;
  for (std::size_t i = 0; i < source.rows.size() && int(chosen.size()) < count; ++i) {
    bool far = true;
    for (std::size_t j : chosen)
      far = far && distance(source.rows[i].config, source.rows[j].config) >= min_distance;
    if (far) chosen.push_back(i);
  }
  for (std::size_t i = 0; i < source.rows.size() && int(chosen.size()) < count; ++i)
    if (std::find(chosen.begin(), chosen.end(), i) == chosen.end()) chosen.push_back(i);
  std::sort(chosen.begin(), chosen.end());  // fastest first
  std::vector<WarmStartSeed> picks;
  for (std::size_t i : chosen) {
    WarmStartSeed s;
    s.config = source.rows[i].config;
    s.origin = "prior: " + ordinal(i) + " of " + source.describe;
    s.quiet_if_invalid = true;
    picks.push_back(std::move(s));
  }
  return picks;
}

std::vector<WarmStartSeed> prior_picks_for(const std::vector<PriorSource>& sources,
                                           const std::string& template_name, int count) {
  std::vector<std::vector<WarmStartSeed>> each;
  for (const auto& s : sources)
    if (s.template_name == template_name) each.push_back(prior_picks(s, count));
  std::vector<WarmStartSeed> out;
  std::set<Config> taken;
  for (std::size_t i = 0; int(out.size()) < count; ++i) {
    bool any = false;
    for (const auto& picks : each) {
      if (i >= picks.size() || int(out.size()) >= count) continue;
      any = true;
      if (taken.insert(picks[i].config).second) out.push_back(picks[i]);
    }
    if (!any) break;
  }
  return out;
}

std::vector<PriorMeasurement> prior_measurements_for(const std::vector<PriorSource>& sources,
                                                     const std::string& template_name,
                                                     const KernelTemplate* tmpl) {
  std::vector<PriorMeasurement> out;
  for (const auto& s : sources) {
    if (s.template_name != template_name || s.rows.empty()) continue;
    const double fastest = s.rows.front().time_ms;  // rows are fastest first
    if (!(fastest > 0)) continue;
    for (const auto& row : s.rows)
      out.push_back({tmpl ? tmpl->update_config(row.config).config : row.config, row.time_ms / fastest});
  }
  return out;
}

std::size_t append_prior_picks(std::vector<WarmStartSeed>& seeds,
                               const std::vector<PriorSource>& sources, const KernelTemplate& tmpl,
                               int count) {
  std::size_t added = 0;
  for (WarmStartSeed& pick : prior_picks_for(sources, tmpl.name(), count)) {
    ConfigUpdate u = tmpl.update_config(pick.config);
    pick.config = std::move(u.config);
    pick.updates = u.notes();
    if (std::any_of(seeds.begin(), seeds.end(),
                    [&](const WarmStartSeed& s) { return s.config == pick.config; }))
      continue;
    seeds.push_back(std::move(pick));
    ++added;
  }
  return added;
}

}  // namespace tilesmith
