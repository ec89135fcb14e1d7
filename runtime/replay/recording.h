#pragma once
// A Kernel Tuner recording ready to replay: its parameter space, one measurement per
// configuration, and the figures a search benchmark needs (the optimum, all times).
//
// The space: the recording's tune_params are the domains; the constraints, derived
// values and descriptions come from a space file (explicit, or found by kernel name in
// a folder, see space_files.h). Every recorded configuration must satisfy the space
// file (else loading fails: the file would be wrong). When the file admits valid
// configurations the recording never measured, the space is additionally restricted to
// the recorded ones, so a search never proposes what cannot be replayed. With no space
// file, validity is membership in the recording.
//
// Immutable after loading; share it (std::shared_ptr<const Recording>) between
// evaluators, proposers and benchmarks; all methods are const and thread-safe.

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "registry/config.h"
#include "registry/device_facts.h"
#include "registry/problem.h"
#include "registry/space.h"
#include "runtime/replay/kernel_tuner_cache.h"

namespace tilesmith::replay {

struct RecordingOptions {
  std::filesystem::path space_file;  // explicit space file; wins over the lookup
  std::filesystem::path spaces_dir;  // where to look by kernel name; empty: default_spaces_dir()
  bool find_space_file = true;       // false: validity is membership in the recording
};

class Recording {
 public:
  static Result<std::shared_ptr<const Recording>> load(const std::filesystem::path& cache_file,
                                                       const RecordingOptions& options = {});
  // From a parsed cache; `name` becomes the template name, `origin` is for messages.
  static Result<std::shared_ptr<const Recording>> from_cache(KernelTunerCache cache,
                                                             const std::string& name,
                                                             const std::string& origin,
                                                             const RecordingOptions& options = {});

  // The recorded template's name: the cache file's stem ("gemm_RTX_3090"), or the kernel's
  // name where recordings of one kernel at several problems are replayed together
  // (load_recordings), so that a problem set's templates carry over from problem to problem.
  const std::string& name() const { return name_; }
  // The same recording under another template name.
  std::shared_ptr<const Recording> renamed(const std::string& name) const;
  const std::string& origin() const { return origin_; }
  const std::string& device_name() const { return cache_.device_name; }
  const std::string& kernel_name() const { return cache_.kernel_name; }
  // The recorded template's math units ("fma" or ""), KernelTemplate::math.
  const std::string& math() const { return cache_.math; }
  const std::vector<std::int64_t>& problem_size() const { return cache_.problem_size; }
  // Where the constraints came from: a space file's path, or "membership in the recording".
  const std::string& space_origin() const { return space_origin_; }
  // Valid configurations of the space file that the recording lacks (before restriction).
  std::uint64_t unrecorded_valid() const { return unrecorded_valid_; }

  const ParamSpace& space() const { return space_; }
  // The problem tilesmith recorded with the cache (data types, layouts, epilogue) when
  // the file holds one; otherwise M, N from problem_size (N = M when it has one value),
  // K = its third value, else M (Kernel Tuner's GEMM recordings are square); fp32,
  // row-major.
  GemmProblem problem() const;
  // True when problem() is the whole recorded problem, not one inferred from the sizes:
  // then a replay answers for exactly that problem.
  bool knows_whole_problem() const { return cache_.problem.has_value(); }
  // Constants M, N, K, WARP_SIZE = 32; no device (a recording's limits are already applied).
  SpaceContext context() const;
  // backend "replay", name = device_name, arch "recorded".
  DeviceFacts device() const;
  // The device as the recording run described itself (the cache's tilesmith.device), where the file says.
  const std::optional<DeviceFacts>& recorded_device() const { return cache_.device; }
  // The GPU a template's blocks were laid out on, for carrying a prior measured on another
  // problem by their waves (tuner/search/prior_rescale.h): the recorded device with at least
  // its architecture's usual shared memory a block (files of early versions recorded 48 KiB
  // and 0 SMs; the SM count stays as recorded). nullopt where the file does not describe
  // its device (Kernel Tuner's own files).
  std::optional<DeviceFacts> launch_device() const;
  // "Xgemm on NVIDIA GeForce RTX 3090, 17956 configurations, 4096x4096, best 5.658 ms".
  std::string describe() const;

  // The vendor library's recorded time at problem() (the cache's tilesmith.vendor), and
  // its name; nullopt for a recording without one (Kernel Tuner's own files).
  std::optional<double> vendor_median_ms() const { return cache_.vendor_median_ms; }
  const std::string& vendor_name() const { return cache_.vendor_name; }

  size_t size() const { return cache_.records.size(); }
  const std::vector<KernelTunerRecord>& records() const { return cache_.records; }
  // nullptr when the configuration was not recorded.
  const KernelTunerRecord* find(const PointValues& point) const;
  const KernelTunerRecord* find(const Config& config) const;

  // The fastest ok record (time = Kernel Tuner's mean).
  const KernelTunerRecord& optimum() const { return cache_.records[optimum_index_]; }
  double optimum_ms() const { return optimum().time_ms; }
  // Mean times of every ok record, ascending.
  const std::vector<double>& sorted_times_ms() const { return sorted_times_; }
  // How many ok records are within `factor` of the optimum (time <= factor * optimum).
  size_t count_within(double factor) const;

 private:
  struct PointHash {
    size_t operator()(const PointValues& p) const;
  };
  std::string name_, origin_, space_origin_;
  KernelTunerCache cache_;
  ParamSpace space_;
  std::unordered_map<PointValues, size_t, PointHash> index_;
  size_t optimum_index_ = 0;
  std::vector<double> sorted_times_;
  std::uint64_t unrecorded_valid_ = 0;
};

}  // namespace tilesmith::replay
