// bench-best: evaluate one config (from --config or best_config.json) on this GPU and
// print it next to the vendor library, timed the same way in the same process.

#include <cstdio>
#include <iostream>
#include <optional>

#include <nlohmann/json.hpp>

#include "cli/cli_common.h"
#include "cli/exit_codes.h"
#include "runtime/gpu_evaluator.h"
#include "tuner/best_config.h"

namespace {
using namespace tilesmith;
using namespace tilesmith::cli;

struct Row {
  std::string label;
  Evaluation e;
};

void print_table(const DeviceFacts& dev, double bandwidth, const GemmProblem& p, const std::vector<Row>& rows,
                 const std::optional<double>& ratio) {
  std::printf("device   %s (%s, %d SMs, FP32 peak %.1f TFLOP/s, measured copy bandwidth %.2f TB/s)\n",
              dev.name.c_str(), dev.arch.c_str(), dev.multiprocessors, dev.fp32_peak_flops() / 1e12, bandwidth / 1e12);
  std::printf("problem  %s  (%.3g GFLOP, %.1f MB minimum traffic)\n\n", p.describe().c_str(), p.flops() / 1e9,
              p.min_bytes() / 1e6);
  std::printf("%-34s %-13s %9s %9s %9s %9s %6s %5s %8s %8s %7s %10s %10s\n", "kernel", "outcome", "median_ms", "min_ms",
              "p20_ms", "p80_ms", "cv%", "n", "TFLOP/s", "GB/s", "roof%", "max_err", "rel_err");
  for (const auto& r : rows) {
    const auto& e = r.e;
    std::printf("%-34s %-13s %9.4f %9.4f %9.4f %9.4f %6.2f %5d %8.2f %8.1f %7.1f %10.3g %10.3g\n", r.label.c_str(),
                outcome_name(e.outcome), e.timing.median_ms, e.timing.min_ms, e.timing.p20_ms, e.timing.p80_ms,
                e.timing.cv * 100, e.timing.samples, e.tflops, e.gbps, e.roofline_pct, e.accuracy.max_abs_error,
                e.accuracy.rel_error_norm);
    if (e.outcome != Outcome::kOk && !e.message.empty()) std::printf("    %s\n", e.message.c_str());
  }
  if (ratio) std::printf("\nratio (ours / vendor throughput): %.3f\n", *ratio);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "bench-best: evaluate a kernel config on this GPU (validated against the CPU reference, timed with warm-up, L2 "
      "flush and median) next to the vendor library.\n"
      "  bench-best --m 4096 --n 4096 --k 4096 --config "
      "'{\"BLOCK_M\":128,\"BLOCK_N\":128,\"BLOCK_K\":8,\"THREAD_M\":8,\"THREAD_N\":8}'\n"
      "  bench-best --m 4096 --n 4096 --k 4096 --best-config results/best_config.json\n"
      "Exit codes: 0 ok, 1 validation or evaluation failed, 2 bad usage, 3 no GPU, 4 no matching best_config entry."};
  app.set_version_flag("--version", std::string("tilesmith ") + TILESMITH_VERSION);
  ProblemFlags pf;
  DeviceFlags df;
  std::string template_name, config_json, best_path, kernels_dir;
  bool json = false, no_vendor = false;
  std::uint64_t seed = 1;
  add_problem_flags(app, pf, /*required=*/true);
  add_device_flags(app, df);
  app.add_option("--template", template_name, "template name (default: the only one that supports the problem, or the best_config entry's)");
  auto* cfg = app.add_option("--config", config_json, "config as a JSON object of integers");
  auto* best = app.add_option("--best-config", best_path, "take the config from this best_config.json (docs/best_config.md)");
  cfg->excludes(best);
  app.add_option("--kernels-dir", kernels_dir, "load templates from this folder instead of the built-in ones");
  app.add_option("--seed", seed, "input data seed")->capture_default_str();
  app.add_flag("--no-vendor", no_vendor, "skip the vendor library");
  app.add_flag("--json", json, "print one JSON object instead of the table");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? kExitOk : kExitUsage;
  }
  auto usage = [](const std::string& msg) {
    std::cerr << "bench-best: " << msg << "\n";
    return kExitUsage;
  };

  auto problem = to_problem(pf);
  if (!problem.ok()) return usage(problem.status().message());
  auto lib = load_templates(kernels_dir);
  if (!lib.ok()) return usage(lib.status().message());

  Config config;
  std::optional<BestEntry> recorded;
  if (!best_path.empty()) {
    auto entries = read_best_config(best_path);
    if (!entries.ok()) return usage(entries.status().message());
    for (const auto& e : *entries)
      if (e.problem.key() == problem->key() && (template_name.empty() || e.template_name == template_name)) recorded = e;
    if (!recorded) {
      std::cerr << "bench-best: " << best_path << " has no entry for " << problem->describe()
                << (template_name.empty() ? "" : " with template " + template_name) << "\n";
      return kExitMismatch;
    }
    template_name = recorded->template_name;
    config = recorded->config;
  }
  std::vector<std::string> reasons;
  auto supporting = lib->supporting(*problem, &reasons);
  if (template_name.empty()) {
    if (supporting.size() != 1) {
      std::string names;
      for (auto* t : supporting) names += " " + t->name();
      return usage(supporting.empty() ? "no template supports " + problem->describe()
                                      : "several templates support the problem; pick one with --template:" + names);
    }
    template_name = supporting.front()->name();
  }
  const KernelTemplate* tmpl = lib->find(template_name);
  if (!tmpl) return usage("no template named '" + template_name + "'");
  if (Status st = tmpl->supports(*problem); !st.ok()) return usage(st.message());
  if (!recorded) {
    if (config_json.empty()) return usage("give a config: --config '{...}' or --best-config FILE");
    auto c = config_from_json_text(config_json);
    if (!c.ok()) return usage("--config: " + c.status().message());
    config = *c;
  }
  if (recorded && recorded->template_hash != tmpl->source_hash())
    std::cerr << "bench-best: warning: template " << template_name << " changed since the entry was recorded (hash "
              << recorded->template_hash << " then, " << tmpl->source_hash() << " now)\n";

  auto backend = choose_backend(df.backend);
  if (!backend.ok()) {
    std::cerr << "bench-best: " << backend.status().message() << "\n";
    return kExitNoDevice;
  }
  GpuEvaluatorOptions options;
  options.cache_dir = df.cache_dir;
  options.seed = seed;
  auto evaluator = GpuEvaluator::open(**backend, df.device, options);
  if (!evaluator.ok()) {
    std::cerr << "bench-best: " << evaluator.status().message() << "\n";
    return kExitNoDevice;
  }
  GpuEvaluator& ev = **evaluator;
  if (recorded && recorded->device_fingerprint != ev.device().fingerprint())
    std::cerr << "bench-best: warning: the entry was recorded on " << recorded->device_fingerprint << "; this is "
              << ev.device().fingerprint() << "\n";

  std::vector<Row> rows;
  Evaluation ours = ev.evaluate(*tmpl, *problem, config);
  rows.push_back({tmpl->name(), ours});
  std::optional<Evaluation> vendor;
  std::string vendor_note;
  if (!no_vendor) {
    auto v = ev.vendor_baseline(*problem);
    if (v.ok()) {
      vendor = *v;
      rows.push_back({ev.vendor_name().substr(0, 34), *v});
    } else {
      vendor_note = v.status().message();
    }
  }
  std::optional<double> ratio;
  if (ours.ok() && vendor && vendor->ok() && ours.timing.median_ms > 0)
    ratio = vendor->timing.median_ms / ours.timing.median_ms;

  if (json) {
    nlohmann::json j, dev, prob, o;
    to_json(dev, ev.device());
    to_json(prob, *problem);
    to_json(o, ours);
    j = {{"device", dev},
         {"measured_bandwidth_gbps", ev.measured_bandwidth() / 1e9},
         {"problem", prob},
         {"template", {{"name", tmpl->name()}, {"source_hash", tmpl->source_hash()}}},
         {"config", config_to_json(config)},
         {"ours", o},
         {"vendor_name", ev.vendor_name()}};
    if (vendor) to_json(j["vendor"], *vendor);
    if (!vendor_note.empty()) j["vendor_unavailable"] = vendor_note;
    j["ratio"] = ratio ? nlohmann::json(*ratio) : nlohmann::json(nullptr);
    if (recorded) j["recorded_metrics"] = recorded->metrics;
    std::cout << j.dump(2) << "\n";
  } else {
    std::printf("config   %s %s\n", tmpl->name().c_str(), config_to_json_text(config).c_str());
    if (recorded && recorded->metrics.contains("median_ms"))
      std::printf("recorded median %.4f ms (%s)\n", recorded->metrics["median_ms"].get<double>(),
                  recorded->provenance.value("timestamp", std::string("?")).c_str());
    print_table(ev.device(), ev.measured_bandwidth(), *problem, rows, ratio);
    if (!vendor_note.empty()) std::printf("vendor library: %s\n", vendor_note.c_str());
  }
  return ours.ok() ? kExitOk : kExitFailed;
}
