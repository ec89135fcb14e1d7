#include "cli/cli_common.h"

#include <iostream>

#include <nlohmann/json.hpp>

#include "cli/exit_codes.h"
#include "runtime/worker/worker_evaluator.h"

namespace tilesmith::cli {

void add_problem_flags(CLI::App& app, ProblemFlags& f, bool required) {
  auto* m = app.add_option("--m", f.m, "rows of A and C")->check(CLI::PositiveNumber);
  auto* n = app.add_option("--n", f.n, "columns of B and C")->check(CLI::PositiveNumber);
  auto* k = app.add_option("--k", f.k, "columns of A, rows of B")->check(CLI::PositiveNumber);
  if (required) {
    m->required();
    n->required();
    k->required();
  }
  app.add_option("--dtype", f.dtype, "element type of A and B (and of C unless --c-dtype); accumulation is fp32")
      ->check(CLI::IsMember({"fp32", "fp16", "bf16"}))
      ->capture_default_str();
  app.add_option("--c-dtype", f.c_dtype, "element type of C and the bias (default: --dtype), e.g. bf16 inputs with fp32 C")
      ->check(CLI::IsMember({"fp32", "fp16", "bf16"}));
  app.add_option("--layout", f.layout, "A and B storage: N = row-major, T = column-major")
      ->check(CLI::IsMember({"NN", "NT", "TN", "TT"}))
      ->capture_default_str();
  app.add_option("--c-layout", f.c_layout, "C storage")->check(CLI::IsMember({"row", "col"}))->capture_default_str();
  app.add_option("--alpha", f.alpha, "C = alpha*A*B + beta*C")->capture_default_str();
  app.add_option("--beta", f.beta, "beta != 0 reads C")->capture_default_str();
  app.add_option("--epilogue", f.epilogue, "fused into the store")
      ->check(CLI::IsMember({"none", "bias_row", "bias_col", "relu", "leaky_relu", "gelu"}))
      ->capture_default_str();
  app.add_option("--leaky-slope", f.slope, "negative slope of leaky_relu")->capture_default_str();
}

bool problem_given(const ProblemFlags& f) { return f.m > 0 && f.n > 0 && f.k > 0; }

Result<GemmProblem> to_problem(const ProblemFlags& f) {
  GemmProblem p;
  p.m = f.m;
  p.n = f.n;
  p.k = f.k;
  TS_ASSIGN_OR_RETURN(p.a_type, parse_dtype(f.dtype));
  p.b_type = p.c_type = p.a_type;
  if (!f.c_dtype.empty()) {
    TS_ASSIGN_OR_RETURN(p.c_type, parse_dtype(f.c_dtype));
  }
  TS_RETURN_IF_ERROR(apply_layout_code(f.layout, p));
  p.c_layout = f.c_layout == "col" ? Layout::kColMajor : Layout::kRowMajor;
  p.alpha = f.alpha;
  p.beta = f.beta;
  TS_ASSIGN_OR_RETURN(p.epilogue, parse_epilogue(f.epilogue));
  p.epilogue_slope = f.slope;
  TS_RETURN_IF_ERROR(p.validate());
  return p;
}

Result<TemplateLibrary> load_templates(const std::string& dir) {
  if (dir.empty()) return TemplateLibrary::embedded();
  return TemplateLibrary::from_directory(dir);
}

Result<std::unique_ptr<Backend>> choose_backend(const std::string& name) {
  if (name != "auto") {
    TS_ASSIGN_OR_RETURN(auto b, make_backend(name));
    auto devs = b->devices();
    if (!devs.ok()) return Status::unavailable(name + ": " + devs.status().message());
    return b;
  }
  std::string reasons;
  for (const char* n : {"cuda", "hip"}) {
    auto b = make_backend(n);
    auto devs = (*b)->devices();
    if (devs.ok()) return std::move(b).value();
    reasons += std::string(reasons.empty() ? "" : "; ") + n + ": " + devs.status().message();
  }
  return Status::unavailable("no GPU found (" + reasons + ")");
}

int list_devices(std::ostream& out, const ListDevicesOptions& options) {
  const bool as_json = options.as_json;
  nlohmann::json j = nlohmann::json::array();
  int gpus = 0;
  for (const char* name : {"cuda", "hip"}) {
    auto backend = std::move(make_backend(name)).value();
    nlohmann::json b{{"backend", name}};
    auto compiler = backend->compiler();
    b["compiler"] = compiler.ok() ? (*compiler)->version() : "unavailable: " + compiler.status().message();
    Result<std::vector<DeviceFacts>> devs = Status::internal("not listed");
    if (options.in_process) {
      devs = backend->devices();
    } else {
      worker::WorkerSpec spec;
      spec.executable = options.worker_exe;
      spec.backend = name;
      devs = worker::list_devices(spec);
      // A backend that finds no GPU answers with its reason; an empty list is the same.
      if (devs.ok() && devs->empty()) devs = Status::unavailable("no GPU found");
    }
    if (devs.ok()) {
      b["devices"] = nlohmann::json::array();
      for (const auto& d : *devs) {
        nlohmann::json dj;
        to_json(dj, d);
        b["devices"].push_back(dj);
        ++gpus;
      }
    } else {
      b["devices"] = nlohmann::json::array();
      b["unavailable"] = devs.status().message();
    }
    j.push_back(b);
  }
  if (as_json) {
    out << nlohmann::json{{"backends", j}, {"gpus", gpus}}.dump(2) << "\n";
  } else {
    for (const auto& b : j) {
      out << b["backend"].get<std::string>() << ": compiler " << b["compiler"].get<std::string>() << "\n";
      if (b.contains("unavailable")) out << "  no devices: " << b["unavailable"].get<std::string>() << "\n";
      for (const auto& d : b["devices"]) {
        char line[512];
        std::snprintf(line, sizeof line,
                      "  [%d] %s  arch %s  %d SMs/CUs  warp %d  shared/block %lld (opt-in %lld) B  L2 %lld B  clock "
                      "%d MHz  FP32 peak %.1f TFLOP/s  %s",
                      d["ordinal"].get<int>(), d["name"].get<std::string>().c_str(), d["arch"].get<std::string>().c_str(),
                      d["multiprocessors"].get<int>(), d["warp_size"].get<int>(),
                      (long long)d["shared_per_block"].get<std::int64_t>(),
                      (long long)d["shared_per_block_optin"].get<std::int64_t>(),
                      (long long)d["l2_bytes"].get<std::int64_t>(), d["clock_khz"].get<int>() / 1000,
                      d["fp32_peak_tflops"].get<double>(), d["driver_version"].get<std::string>().c_str());
        out << line << "\n";
      }
    }
    if (gpus == 0)
      out << "No GPU found: tilesmith can compile kernels here (autotune-loop compile) and replay recorded "
             "measurements (--backend replay), but not measure. Exit code "
          << kExitNoDevice << ".\n";
  }
  return gpus > 0 ? kExitOk : kExitNoDevice;
}

}  // namespace tilesmith::cli
