#include "cli/cli_common.h"

#include <iostream>

#include <nlohmann/json.hpp>

#include "cli/exit_codes.h"
#include "cli/flag_checks.h"
#include "registry/dtype.h"
#include "runtime/backend.h"
#include "runtime/worker/worker_evaluator.h"

namespace tilesmith::cli {

namespace {

// The names a mistyped word on `app`'s command line may have meant: its flags and, where
// it has any, its subcommands.
std::vector<std::string> names_on(const CLI::App& app, bool flags) {
  std::vector<std::string> names;
  if (flags) {
    for (const CLI::Option* op : app.get_options()) {
      for (const auto& l : op->get_lnames()) names.push_back("--" + l);
      for (const auto& s : op->get_snames()) names.push_back("-" + s);
    }
  } else {
    for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; }))
      names.push_back(sub->get_name());
  }
  return names;
}

// CLI11's message, made to name the input and what to give where it does not.
std::string usage_message(const CLI::ParseError& e, const CLI::App& app, const CLI::App& where,
                          const std::string& command) {
  const std::string help = " (" + command + " --help lists the flags)";
  if (dynamic_cast<const CLI::ExtrasError*>(&e)) {
    std::vector<std::string> extras = where.remaining(true);
    if (extras.empty()) extras = app.remaining(true);  // before the subcommand's name
    if (!extras.empty()) {
      const std::string& word = extras.front();
      if (word.size() > 1 && word[0] == '-') {
        std::string flag = word.substr(0, word.find('='));
        if (flag.find_first_not_of('-') == std::string::npos) flag = word;
        const std::string near = nearest_name(flag, names_on(where, true));
        return "unknown flag " + flag + (near.empty() ? help : "; did you mean " + near + "?");
      }
      const std::string near = nearest_name(word, names_on(where, false));
      return "unexpected argument '" + word + "'" + (near.empty() ? help : "; did you mean " + near + "?");
    }
  }
  std::string message = e.what();
  // A value no check ran on: "Could not convert: --flag = value".
  const std::string raw = "Could not convert: ";
  if (dynamic_cast<const CLI::ConversionError*>(&e) && message.rfind(raw, 0) == 0) {
    const std::string rest = message.substr(raw.size());
    const auto eq = rest.find(" = ");
    if (eq != std::string::npos) {
      const std::string name = rest.substr(0, eq), value = rest.substr(eq + 3);
      const CLI::Option* op = where.get_option_no_throw(name);
      const bool flag = op && op->get_expected_max() == 0;
      message = name + ": '" + value + "' is not " + (flag ? "true or false" : "a valid value" + help);
    }
  }
  // "--config excludes --results": two flags that do not go together.
  const std::string excludes = " excludes ";
  if (const auto at = message.find(excludes); dynamic_cast<const CLI::ExcludesError*>(&e) && at != std::string::npos)
    message = "give " + message.substr(0, at) + " or " + message.substr(at + excludes.size()) + ", not both";
  // "--m: At Most 1 required but received 2": a flag that takes one value, given twice.
  const std::string twice = ": At Most 1 required but received ";
  if (const auto at = message.find(twice); dynamic_cast<const CLI::ArgumentMismatch*>(&e) && at != std::string::npos)
    message = message.substr(0, at) + ": given " + message.substr(at + twice.size()) + " times; give it once";
  for (char& c : message)
    if (c == '\n') c = ' ';
  return message;
}

}  // namespace

std::optional<int> parse_command_line(CLI::App& app, int argc, char** argv, const std::string& program) {
  try {
    app.parse(argc, argv);
    return std::nullopt;
  } catch (const CLI::Success& e) {  // --help, --version, or a rank that leaves a subcommand to rank 0
    return app.exit(e) == 0 ? kExitOk : kExitUsage;
  } catch (const CLI::ParseError& e) {
    const CLI::App* where = &app;
    std::string command = program;
    const auto subs = app.get_subcommands();
    if (!subs.empty()) {
      where = subs.front();
      command += " " + where->get_name();
    }
    std::cerr << command << ": " << usage_message(e, app, *where, command) << "\n";
    return kExitUsage;
  }
}

void add_problem_flags(CLI::App& app, ProblemFlags& f, bool required) {
  auto* m = app.add_option("--m", f.m, "rows of A and C")->check(integer_at_least<std::int64_t>(1));
  auto* n = app.add_option("--n", f.n, "columns of B and C")->check(integer_at_least<std::int64_t>(1));
  auto* k = app.add_option("--k", f.k, "columns of A, rows of B")->check(integer_at_least<std::int64_t>(1));
  if (required) {
    m->required();
    n->required();
    k->required();
  }
  app.add_option("--dtype", f.dtype,
                 "element type of A and B (and of C unless --c-dtype; bf16 for the FP8 types e4m3 and e5m2, "
                 "which are input types only); accumulation is fp32")
      ->check(CLI::IsMember(dtype_names()))
      ->capture_default_str();
  app.add_option("--b-dtype", f.b_dtype,
                 "element type of B where it differs from A's (--dtype): FP8 only, e4m3 with e5m2 either way round")
      ->check(CLI::IsMember(dtype_names()));
  app.add_option("--c-dtype", f.c_dtype,
                 "element type of C and the bias (default: --dtype), e.g. bf16 inputs with fp32 C; not an FP8 type")
      ->check(CLI::IsMember(dtype_names()));
  app.add_option("--layout", f.layout, "A and B storage: N = row-major, T = column-major")
      ->check(CLI::IsMember({"NN", "NT", "TN", "TT"}))
      ->capture_default_str();
  app.add_option("--c-layout", f.c_layout, "C storage")->check(CLI::IsMember({"row", "col"}))->capture_default_str();
  app.add_option("--alpha", f.alpha, "C = alpha*A*B + beta*C")->check(any_number())->capture_default_str();
  app.add_option("--beta", f.beta, "beta != 0 reads C")->check(any_number())->capture_default_str();
  app.add_option("--epilogue", f.epilogue, "fused into the store")
      ->check(CLI::IsMember({"none", "bias_row", "bias_col", "relu", "leaky_relu", "gelu", "bias_gelu"}))
      ->capture_default_str();
  app.add_option("--leaky-slope", f.slope, "negative slope of leaky_relu")->check(any_number())->capture_default_str();
  app.add_option("--scaling", f.scaling,
                 "FP8 input scaling: per_tensor (--scale-a, --scale-b) or block (1x128 of A along K, 128x128 of B, "
                 "generated with the inputs)")
      ->check(CLI::IsMember({"none", "per_tensor", "block"}))
      ->capture_default_str();
  app.add_option("--scale-a", f.scale_a, "per-tensor scale of A: an element stored as q stands for q * scale")
      ->check(any_number())
      ->capture_default_str();
  app.add_option("--scale-b", f.scale_b, "per-tensor scale of B")->check(any_number())->capture_default_str();
}

bool problem_given(const ProblemFlags& f) { return f.m > 0 && f.n > 0 && f.k > 0; }

Result<GemmProblem> to_problem(const ProblemFlags& f) {
  GemmProblem p;
  p.m = f.m;
  p.n = f.n;
  p.k = f.k;
  TS_ASSIGN_OR_RETURN(p.a_type, parse_dtype(f.dtype));
  p.b_type = p.a_type;
  if (!f.b_dtype.empty()) {
    TS_ASSIGN_OR_RETURN(p.b_type, parse_dtype(f.b_dtype));
  }
  p.c_type = default_c_dtype(p.a_type);
  if (!f.c_dtype.empty()) {
    TS_ASSIGN_OR_RETURN(p.c_type, parse_dtype(f.c_dtype));
  }
  TS_RETURN_IF_ERROR(apply_layout_code(f.layout, p));
  p.c_layout = f.c_layout == "col" ? Layout::kColMajor : Layout::kRowMajor;
  p.alpha = f.alpha;
  p.beta = f.beta;
  TS_ASSIGN_OR_RETURN(p.epilogue, parse_epilogue(f.epilogue));
  p.epilogue_slope = f.slope;
  TS_ASSIGN_OR_RETURN(p.scaling, parse_scaling(f.scaling));
  p.scale_a = f.scale_a;
  p.scale_b = f.scale_b;
  TS_RETURN_IF_ERROR(p.validate());
  return p;
}

Result<Config> config_over_defaults(const KernelTemplate& t, const std::string& json_text,
                                    std::vector<std::string>* filled) {
  Config config = t.defaults();
  if (json_text.empty()) return config;
  TS_ASSIGN_OR_RETURN(Config given, config_from_json_text(json_text));
  for (const auto& [name, value] : config)
    if (!given.count(name) && filled) filled->push_back(name + "=" + std::to_string(value));
  for (const auto& [name, value] : given) config[name] = value;
  return config;
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
