#include "tuner/search/prior_rescale.h"

#include <algorithm>
#include <map>
#include <string>

namespace tilesmith {
namespace {

// Threads an SM (or a CU) holds at once on the GPUs the templates target (sm_80/sm_90 and
// CDNA: 2,048; sm_86/sm_89 hold 1,536, where a block's shared memory binds first anyway).
constexpr std::int64_t kThreadsPerMultiprocessor = 2048;
// Shared memory the GPU keeps per resident block beside what the kernel asks for.
constexpr std::int64_t kReservedSharedPerBlock = 1024;

}  // namespace

std::optional<std::int64_t> wave_rounds(const KernelTemplate& tmpl, const Config& config,
                                        const GemmProblem& problem, const DeviceFacts& device) {
  if (device.multiprocessors <= 0) return std::nullopt;
  auto rendered = tmpl.render(problem, config, device);
  if (!rendered.ok()) return std::nullopt;
  std::int64_t blocks = std::int64_t(rendered->grid[0]) * rendered->grid[1] * rendered->grid[2];
  if (auto derived = tmpl.space().derive(config, tmpl.context(problem, &device)); derived.ok()) {
    if (auto it = derived->find("WORK_BLOCKS"); it != derived->end() && it->second > 0)
      blocks = std::int64_t(it->second);
  }
  const std::int64_t per_block = std::int64_t(rendered->dynamic_shared_bytes) + kReservedSharedPerBlock;
  const std::int64_t shared_room = (device.shared_per_block_optin + kReservedSharedPerBlock) / per_block;
  const std::int64_t thread_room = kThreadsPerMultiprocessor / std::max<std::int64_t>(rendered->threads(), 1);
  const std::int64_t resident = std::max<std::int64_t>(1, std::min(shared_room, thread_room));
  const std::int64_t slots = std::int64_t(device.multiprocessors) * resident;
  return (std::max<std::int64_t>(blocks, 1) + slots - 1) / slots;
}

PriorSource rescaled_to_problem(const PriorSource& source, const KernelTemplate& tmpl,
                                const GemmProblem& target, const DeviceFacts& device) {
  if (!source.problem || source.rows.empty()) return source;
  const GemmProblem& from = *source.problem;
  if (from.m == target.m && from.n == target.n && from.k == target.k) return source;
  PriorSource out = source;
  out.rows.clear();
  const double k_ratio = double(target.k) / double(std::max<std::int64_t>(from.k, 1));
  for (const auto& row : source.rows) {
    const Config config = tmpl.update_config(row.config).config;
    const auto there = wave_rounds(tmpl, config, target, device);
    const auto here = wave_rounds(tmpl, config, from, device);
    if (!there || !here) continue;
    out.rows.push_back({row.config, row.time_ms * double(*there) * k_ratio / double(*here)});
  }
  if (out.rows.empty()) return source;
  std::stable_sort(out.rows.begin(), out.rows.end(),
                   [](const auto& a, const auto& b) { return a.time_ms < b.time_ms; });
  out.describe += ", carried to " + std::to_string(target.m) + "x" + std::to_string(target.n) + "x" +
                  std::to_string(target.k) + " by its blocks' waves";
  return out;
}

std::vector<PriorSource> priors_for_problem(const std::vector<PriorSource>& sources, const KernelTemplate& tmpl,
                                            const GemmProblem& target, const DeviceFacts& device) {
  std::vector<PriorSource> out;
  out.reserve(sources.size());
  for (const auto& s : sources)
    out.push_back(s.template_name == tmpl.name() ? rescaled_to_problem(s, tmpl, target, device) : s);
  return out;
}

}  // namespace tilesmith
