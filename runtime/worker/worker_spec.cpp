#include "runtime/worker/worker_spec.h"

#include <unistd.h>

#include <cstdlib>
#include <sstream>

namespace tilesmith::worker {
namespace {

std::string number(double v) {
  std::ostringstream s;
  s.precision(17);
  s << v;
  return s.str();
}

bool executable_file(const std::filesystem::path& p) {
  std::error_code ec;
  return std::filesystem::is_regular_file(p, ec) && ::access(p.c_str(), X_OK) == 0;
}

void common_args(const WorkerSpec& s, std::vector<std::string>& a) {
  a.insert(a.end(), {"--backend", s.backend, "--device", std::to_string(s.device)});
  for (const auto& r : s.recordings) a.insert(a.end(), {"--recording", r.string()});
  if (!s.space_file.empty()) a.insert(a.end(), {"--space-file", s.space_file.string()});
  if (!s.spaces_dir.empty()) a.insert(a.end(), {"--spaces-dir", s.spaces_dir.string()});
  if (!s.find_space_file) a.push_back("--no-space-file");
}

}  // namespace

std::vector<std::string> worker_argv(const WorkerSpec& s, const std::filesystem::path& executable,
                                     bool compile_only) {
  std::vector<std::string> a{executable.string()};
  common_args(s, a);
  if (compile_only) a.push_back("--compile-only");
  for (const auto& d : s.template_dirs) a.insert(a.end(), {"--templates", d.string()});
  if (!s.gpu.cache_dir.empty()) a.insert(a.end(), {"--cache-dir", s.gpu.cache_dir.string()});
  a.insert(a.end(), {"--cache-max-bytes", std::to_string(s.gpu.cache_max_bytes), "--seed",
                     std::to_string(s.gpu.seed)});
  const TimingOptions& t = s.gpu.timing;
  a.insert(a.end(),
           {"--warmup-ms", number(t.warmup_ms), "--min-samples", std::to_string(t.min_samples),
            "--max-samples", std::to_string(t.max_samples), "--target-cv", number(t.target_cv),
            "--max-sampling-ms", number(t.max_sampling_ms), "--energy-ms", number(t.energy_ms),
            "--steady-ms", number(t.steady_ms)});
  if (!t.flush_l2) a.push_back("--no-l2-flush");
  a.insert(a.end(), s.extra_args.begin(), s.extra_args.end());
  return a;
}

std::vector<std::string> list_devices_argv(const WorkerSpec& s,
                                           const std::filesystem::path& executable) {
  std::vector<std::string> a{executable.string()};
  common_args(s, a);
  a.push_back("--list-devices");
  a.insert(a.end(), s.extra_args.begin(), s.extra_args.end());
  return a;
}

Result<std::filesystem::path> find_worker_executable(const std::filesystem::path& explicit_path) {
  std::vector<std::filesystem::path> tried;
  auto accept = [&](const std::filesystem::path& p) {
    tried.push_back(p);
    return executable_file(p);
  };
  if (!explicit_path.empty()) {
    if (accept(explicit_path)) return explicit_path;
    return Status::not_found("the worker executable " + explicit_path.string() +
                             " does not exist or is not executable");
  }
  if (const char* env = std::getenv("TILESMITH_WORKER"); env && *env) {
    if (accept(env)) return std::filesystem::path(env);
  }
  std::error_code ec;
  auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    auto beside = self.parent_path() / "tilesmith-worker";
    if (accept(beside)) return beside;
  }
#ifdef TILESMITH_WORKER_BUILD_PATH
  if (accept(TILESMITH_WORKER_BUILD_PATH))
    return std::filesystem::path(TILESMITH_WORKER_BUILD_PATH);
#endif
  std::string where;
  for (const auto& p : tried) where += (where.empty() ? "" : ", ") + p.string();
  return Status::not_found("tilesmith-worker not found (tried " + where +
                           "; set TILESMITH_WORKER)");
}

}  // namespace tilesmith::worker
