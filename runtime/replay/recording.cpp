#include "runtime/replay/recording.h"

#include <algorithm>
#include <cstdio>
#include <set>

#include <nlohmann/json.hpp>

#include "runtime/replay/space_files.h"

namespace tilesmith::replay {
namespace {

std::string point_key(const PointValues& p) {
  std::string s;
  for (size_t i = 0; i < p.size(); ++i) {
    if (i) s += ',';
    s += std::to_string(p[i]);
  }
  return s;
}

std::string stem_of(const std::filesystem::path& path) {
  std::string name = path.filename().string();
  for (const char* ext : {".gz", ".json"}) {
    std::string e = ext;
    if (name.size() > e.size() && name.compare(name.size() - e.size(), e.size(), e) == 0)
      name.resize(name.size() - e.size());
  }
  return name;
}

// The space JSON for a recording: the recording's domains, in its key order, with the
// space file's descriptions, derived values and constraints.
Result<nlohmann::json> space_json(const KernelTunerCache& cache, const SpaceFile* file) {
  using nlohmann::json;
  std::map<std::string, std::string> descriptions;
  json out = json::object();
  if (file) {
    const json& fj = *file->json;
    std::set<std::string> declared;
    if (fj.contains("parameters") && fj["parameters"].is_array()) {
      for (const json& p : fj["parameters"]) {
        if (!p.is_object() || !p.contains("name") || !p["name"].is_string())
          return Status::invalid(file->path.string() + ": every parameter needs a string \"name\"");
        std::string name = p["name"].get<std::string>();
        declared.insert(name);
        if (p.contains("description") && p["description"].is_string())
          descriptions[name] = p["description"].get<std::string>();
      }
    }
    const std::set<std::string> recorded(cache.param_names.begin(), cache.param_names.end());
    if (declared != recorded) {
      std::string missing, extra;
      for (const auto& n : recorded)
        if (!declared.count(n)) missing += " " + n;
      for (const auto& n : declared)
        if (!recorded.count(n)) extra += " " + n;
      return Status::invalid(file->path.string() + " does not declare the recording's parameters" +
                             (missing.empty() ? "" : "; missing:" + missing) +
                             (extra.empty() ? "" : "; not recorded:" + extra));
    }
    for (const char* key : {"derived", "constraints"})
      if (fj.contains(key)) out[key] = fj[key];
  }
  json params = json::array();
  for (size_t i = 0; i < cache.param_names.size(); ++i) {
    json p = {{"name", cache.param_names[i]}, {"values", cache.param_values[i]}};
    if (auto it = descriptions.find(cache.param_names[i]); it != descriptions.end())
      p["description"] = it->second;
    params.push_back(std::move(p));
  }
  out["parameters"] = std::move(params);
  return out;
}

}  // namespace

size_t Recording::PointHash::operator()(const PointValues& p) const {
  std::uint64_t h = 1469598103934665603ULL;
  for (std::int64_t v : p) h = (h ^ static_cast<std::uint64_t>(v)) * 1099511628211ULL + (h >> 29);
  return static_cast<size_t>(h);
}

Result<std::shared_ptr<const Recording>> Recording::load(const std::filesystem::path& cache_file,
                                                         const RecordingOptions& options) {
  TS_ASSIGN_OR_RETURN(KernelTunerCache cache, read_kernel_tuner_cache(cache_file));
  return from_cache(std::move(cache), stem_of(cache_file), cache_file.string(), options);
}

std::shared_ptr<const Recording> Recording::renamed(const std::string& name) const {
  auto copy = std::make_shared<Recording>(*this);
  copy->name_ = name;
  return copy;
}

Result<std::shared_ptr<const Recording>> Recording::from_cache(KernelTunerCache cache,
                                                               const std::string& name,
                                                               const std::string& origin,
                                                               const RecordingOptions& options) {
  auto rec = std::make_shared<Recording>();
  rec->name_ = name;
  rec->origin_ = origin;
  rec->cache_ = std::move(cache);
  const auto& records = rec->cache_.records;

  bool any_ok = false;
  for (size_t i = 0; i < records.size(); ++i) {
    if (!rec->index_.emplace(records[i].point, i).second)
      return Status::invalid(origin + ": configuration " + point_key(records[i].point) +
                             " is recorded twice");
    if (records[i].outcome != Outcome::kOk) continue;
    rec->sorted_times_.push_back(records[i].time_ms);
    if (!any_ok || records[i].time_ms < records[rec->optimum_index_].time_ms)
      rec->optimum_index_ = i;
    any_ok = true;
  }
  if (!any_ok) return Status::invalid(origin + ": the recording holds no successful measurement");
  std::sort(rec->sorted_times_.begin(), rec->sorted_times_.end());

  std::optional<SpaceFile> file;
  if (!options.space_file.empty()) {
    TS_ASSIGN_OR_RETURN(SpaceFile f, read_space_file(options.space_file));
    file = std::move(f);
  } else if (options.find_space_file) {
    std::filesystem::path dir =
        options.spaces_dir.empty() ? default_spaces_dir() : options.spaces_dir;
    TS_ASSIGN_OR_RETURN(file,
                        find_space_file(dir, rec->cache_.kernel_name, rec->cache_.param_names));
  }
  TS_ASSIGN_OR_RETURN(nlohmann::json sj, space_json(rec->cache_, file ? &*file : nullptr));
  auto space = ParamSpace::from_json(sj);
  if (!space.ok()) return space.status().with_context(file ? file->path.string() : origin);
  rec->space_ = std::move(space).value();
  rec->space_origin_ = file ? file->path.string() : "membership in the recording";

  // A recorded configuration the constraints reject means the space file is wrong for
  // this recording; loading it anyway would hide part of the measurements.
  const SpaceContext ctx = rec->context();
  std::vector<PointValues> measurable;
  size_t rejected = 0;
  std::string first_reason;
  for (const auto& r : records) {
    if (r.outcome == Outcome::kInvalid) continue;
    measurable.push_back(r.point);
    if (file && !rec->space_.is_valid(r.point, ctx)) {
      if (rejected++ == 0)
        first_reason = point_key(r.point) + ": " +
                       rec->space_.validate(rec->space_.to_config(r.point), ctx).message();
    }
  }
  if (rejected)
    return Status::invalid(file->path.string() + " rejects " + std::to_string(rejected) +
                           " configuration(s) that " + origin + " measured, first " + first_reason);
  if (file) {
    rec->space_.for_each_valid(ctx, [&](const PointValues& p) {
      const KernelTunerRecord* r = rec->find(p);
      if (!r || r->outcome == Outcome::kInvalid) ++rec->unrecorded_valid_;
      return true;
    });
  }
  if (!file || rec->unrecorded_valid_ > 0) {
    TS_ASSIGN_OR_RETURN(rec->space_, rec->space_.restrict_to(measurable));
  }
  return std::shared_ptr<const Recording>(std::move(rec));
}

GemmProblem Recording::problem() const {
  if (cache_.problem) return *cache_.problem;
  GemmProblem p;
  const auto& ps = cache_.problem_size;
  p.m = ps.empty() ? 0 : ps[0];
  p.n = ps.size() > 1 ? ps[1] : p.m;
  p.k = ps.size() > 2 ? ps[2] : p.m;
  return p;
}

SpaceContext Recording::context() const {
  GemmProblem p = problem();
  SpaceContext ctx;
  ctx.constants = {{"M", double(p.m)}, {"N", double(p.n)}, {"K", double(p.k)}, {"WARP_SIZE", 32.0}};
  return ctx;
}

DeviceFacts Recording::device() const {
  DeviceFacts d;
  d.backend = "replay";
  d.name = cache_.device_name;
  d.arch = "recorded";
  // What bounds a template's speed (KernelTemplate::fastest_possible_ms), where the
  // recording run's device said it. NVIDIA only: the bound on AMD parts depends on the
  // architecture (packed FP32), which a replay's "recorded" arch does not carry.
  if (cache_.device && cache_.device->arch.rfind("sm_", 0) == 0) {
    d.multiprocessors = cache_.device->multiprocessors;
    d.clock_khz = cache_.device->clock_khz;
    d.fp32_lanes_per_multiprocessor = cache_.device->fp32_lanes_per_multiprocessor
                                          ? cache_.device->fp32_lanes_per_multiprocessor
                                          : fp32_lanes_for_arch(cache_.device->arch);
  }
  return d;
}

std::optional<DeviceFacts> Recording::launch_device() const {
  if (!cache_.device) return std::nullopt;
  DeviceFacts d = *cache_.device;
  d.shared_per_block_optin =
      std::max(d.shared_per_block_optin, nominal_facts_for_arch(d.arch).shared_per_block_optin);
  return d;
}

std::string Recording::describe() const {
  GemmProblem p = problem();
  char best[32];
  std::snprintf(best, sizeof best, "%.4g", optimum_ms());
  return cache_.kernel_name + " on " + cache_.device_name + ", " + std::to_string(size()) +
         " configurations, " + std::to_string(p.m) + "x" + std::to_string(p.n) + "x" +
         std::to_string(p.k) + ", best " + best + " ms";
}

const KernelTunerRecord* Recording::find(const PointValues& point) const {
  auto it = index_.find(point);
  return it == index_.end() ? nullptr : &cache_.records[it->second];
}

const KernelTunerRecord* Recording::find(const Config& config) const {
  auto point = space_.from_config(config);
  return point.ok() ? find(*point) : nullptr;
}

size_t Recording::count_within(double factor) const {
  double limit = factor * optimum_ms();
  return static_cast<size_t>(std::upper_bound(sorted_times_.begin(), sorted_times_.end(), limit) -
                             sorted_times_.begin());
}

}  // namespace tilesmith::replay
