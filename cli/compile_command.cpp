#include "cli/compile_command.h"

#include <regex>

#include <iostream>
#include <memory>

#include <nlohmann/json.hpp>

#include "base/files.h"
#include "cli/cli_common.h"
#include "cli/exit_codes.h"
#include "runtime/backend.h"
#include "runtime/candidate_compiler.h"
#include "runtime/compile_cache.h"

namespace tilesmith::cli {

CLI::App* add_compile_command(CLI::App& app, int& exit_code) {
  auto opts = std::make_shared<CompileCommand>();
  auto problem = std::make_shared<ProblemFlags>();
  problem->m = problem->n = problem->k = 1024;
  CLI::App* sub = app.add_subcommand(
      "compile",
      "Compile one template and config for a named architecture, without a GPU, and report the compiler's log and "
      "resource usage.\n  Example: autotune-loop compile --arch gfx90a --config "
      "'{\"BLOCK_M\":128,\"BLOCK_N\":64,\"BLOCK_K\":8,\"THREAD_M\":8,\"THREAD_N\":4}'");
  sub->add_option("--template", opts->template_name, "template name")->capture_default_str();
  sub->add_option("--config", opts->config_json,
                  "config as a JSON object of integers; parameters it leaves out take the template's defaults");
  sub->add_option("--arch", opts->arch, "target: sm_XX (NVRTC) or gfxXXX (hipRTC)")->capture_default_str();
  sub->add_option("--kernels-dir", opts->kernels_dir, "load templates from this folder instead of the built-in ones");
  sub->add_flag("--json", opts->json, "print one JSON object");
  sub->add_flag("--show-log", opts->show_log, "print the whole compiler log");
  sub->add_flag("--use-cache", opts->use_cache, "go through the compiled-kernel cache");
  sub->add_option("--cache-dir", opts->cache_dir, "compiled-kernel cache folder (with --use-cache)");
  sub->add_option("--ptx", opts->ptx_path, "write the PTX NVRTC generated to this file (sm_XX targets; compiles past the cache)");
  CLI::Option* binary =
      sub->add_option("--binary", opts->binary_path, "write the compiled code (cubin or AMD code object) to this file");
  CLI::Option* code_hash_only =
      sub->add_flag("--code-hash-only", opts->code_hash_only,
                    "sm_XX targets: stop at NVRTC's PTX (no ptxas), enough for the code hash (--json's code_hash), "
                    "without a binary or resource usage; gfx targets compile as usual")
          ->excludes(binary);
  sub->add_flag("--input-hash-only", opts->input_hash_only,
                "render only, compile nothing: the hash of what the compiler would be given and the kernel launched "
                "with (--json's input_hash, which every compile also reports); under one compiler equal input hashes "
                "mean equal code hashes")
      ->excludes(binary)
      ->excludes(code_hash_only);
  sub->add_option("--sms", opts->sms, "multiprocessors of the target GPU, for the rules that read NUM_SMS (132 on an "
                                      "H100 SXM or H200); default: not known")
      ->check(CLI::NonNegativeNumber);
  add_problem_flags(*sub, *problem, /*required=*/false);

  sub->callback([opts, problem, &exit_code] {
    auto fail = [&](int code, const std::string& msg) {
      std::cerr << "autotune-loop compile: " << msg << "\n";
      exit_code = code;
    };
    auto lib = load_templates(opts->kernels_dir);
    if (!lib.ok()) return fail(kExitUsage, lib.status().message());
    const KernelTemplate* tmpl = lib->find(opts->template_name);
    if (!tmpl) {
      std::string names;
      for (const auto& n : lib->names()) names += " " + n;
      return fail(kExitUsage, "no template named '" + opts->template_name + "' (available:" + names + ")");
    }
    auto p = to_problem(*problem);
    if (!p.ok()) return fail(kExitUsage, p.status().message());
    // Parameters --config leaves out take the template's defaults (as bench-best and warm
    // starts fill them); an unknown name stays in, so validation names it.
    std::vector<std::string> filled;
    auto given = config_over_defaults(*tmpl, opts->config_json, &filled);
    if (!given.ok()) return fail(kExitUsage, "--config: " + given.status().message());
    const Config& config = *given;
    // The target's form is checked here; whether this compiler knows it, by the compiler.
    static const std::regex kArch("sm_[0-9]{2,3}[af]?|gfx[0-9a-f]{3,5}");
    if (!std::regex_match(opts->arch, kArch))
      return fail(kExitUsage, "--arch " + opts->arch + " is not a GPU architecture: give sm_XX for NVIDIA (sm_80, "
                              "sm_90a) or gfxNNN for AMD (gfx90a, gfx942)");
    DeviceFacts facts = nominal_facts_for_arch(opts->arch);
    facts.multiprocessors = opts->sms;
    if (opts->input_hash_only && !opts->ptx_path.empty())
      return fail(kExitUsage, "--input-hash-only compiles nothing: no --ptx");
    if (!opts->ptx_path.empty() && facts.backend != "cuda")
      return fail(kExitUsage, "--ptx: only NVRTC (sm_XX targets) makes PTX; --binary writes the code object");
    auto backend = make_backend(facts.backend);
    auto compiler = (*backend)->compiler();
    if (!compiler.ok()) return fail(kExitNoDevice, facts.backend + " compiler unavailable: " + compiler.status().message());
    std::shared_ptr<Compiler> c = *compiler;
    if (opts->use_cache)
      c = std::make_shared<CompileCache>(c, opts->cache_dir.empty() ? default_cache_dir() / "kernels" : std::filesystem::path(opts->cache_dir),
                                         CompileCache::kDefaultMaxBytes);
    const CompileOutput output = opts->code_hash_only       ? CompileOutput::kPtxOnly
                                 : !opts->ptx_path.empty() ? CompileOutput::kBinaryAndPtx
                                                           : CompileOutput::kBinary;
    CompiledCandidate cc = opts->input_hash_only ? render_candidate(*tmpl, *p, config, facts)
                                                 : compile_candidate(*c, *tmpl, *p, config, facts, output);
    const std::string input_hash =
        cc.evaluation.outcome == Outcome::kInvalid ? "" : candidate_input_hash(*c, *tmpl, cc.rendered);
    // A rule that reads NUM_SMS saw 0 where --sms was not given: say so, not only "NUM_SMS=0".
    if (cc.evaluation.outcome == Outcome::kInvalid && opts->sms == 0 &&
        cc.evaluation.message.find("NUM_SMS=0") != std::string::npos)
      cc.evaluation.message += " (NUM_SMS is 0 because the target's multiprocessors are not known: give --sms, "
                               "e.g. 132 for an H100 SXM or H200)";
    const Evaluation& e = cc.evaluation;
    if (e.outcome == Outcome::kCompileError &&
        (e.compile_log.find("--gpu-architecture") != std::string::npos ||
         e.message.find("--gpu-architecture") != std::string::npos || e.message.find("--offload-arch") != std::string::npos))
      return fail(kExitUsage, "--arch " + opts->arch + ": " + c->version() + " does not compile for this architecture");
    // A config or problem the template refuses is the user's input: one line on stderr.
    if (e.outcome == Outcome::kInvalid && !opts->json)
      return fail(kExitUsage, tmpl->name() + " " + config_to_json_text(config) + ": " + e.message);
    if (e.outcome == Outcome::kOk) {
      if (!opts->ptx_path.empty()) {
        if (cc.compiled.ptx.empty()) return fail(kExitFailed, "--ptx: " + c->version() + " handed back no PTX");
        if (Status s = write_file_atomic(opts->ptx_path, cc.compiled.ptx); !s.ok()) return fail(kExitFailed, s.message());
      }
      if (!opts->binary_path.empty())
        if (Status s = write_file_atomic(opts->binary_path, cc.compiled.binary); !s.ok())
          return fail(kExitFailed, s.message());
    }
    if (opts->json) {
      nlohmann::json j;
      to_json(j, e);
      j["compile_log"] = e.compile_log;
      j["template"] = tmpl->name();
      j["arch"] = cc.rendered.arch.empty() ? opts->arch : cc.rendered.arch;
      j["compiler"] = c->version();
      j["config"] = config_to_json(config);
      j["defaults_filled"] = filled;
      j["options"] = cc.rendered.options;
      j["input_hash"] = input_hash;
      std::cout << j.dump(2) << "\n";
    } else {
      std::cout << tmpl->name() << " " << config_to_json_text(config) << " for " << opts->arch << " with "
                << c->version() << ": " << outcome_name(e.outcome) << "\n";
      if (!filled.empty()) {
        std::cout << "  defaults filled in:";
        for (const auto& f : filled) std::cout << " " << f;
        std::cout << "\n";
      }
      if (e.outcome == Outcome::kOk && opts->input_hash_only) {
        std::cout << "  not compiled (--input-hash-only), input hash " << input_hash << "\n";
      } else if (e.outcome == Outcome::kOk) {
        std::cout << "  compile " << e.compile_ms << " ms" << (e.compile_cache_hit ? " (cache hit)" : "");
        if (output == CompileOutput::kPtxOnly && cc.compiled.binary.empty())
          std::cout << ", PTX only, code hash " << e.code_hash << "\n";
        else
          std::cout << ", binary " << cc.compiled.binary.size() << " bytes\n";
        const auto& r = e.resources;
        if (r.registers >= 0)
          std::cout << "  registers/thread " << r.registers << ", static shared " << r.static_shared_bytes
                    << " B, stack " << r.local_bytes << " B, spill stores " << r.spill_store_bytes << " B, spill loads "
                    << r.spill_load_bytes << " B\n";
        else if (output != CompileOutput::kPtxOnly)
          std::cout << "  (this compiler reports no resource usage; it is read from the loaded kernel on a GPU)\n";
        std::cout << "  launch grid " << cc.rendered.grid[0] << "x" << cc.rendered.grid[1] << "x" << cc.rendered.grid[2]
                  << ", block " << cc.rendered.threads() << " threads\n";
      } else {
        std::cout << "  " << e.message << "\n";
      }
      if (opts->show_log && !e.compile_log.empty()) std::cout << "--- compiler log ---\n" << e.compile_log << "\n";
    }
    exit_code = e.outcome == Outcome::kOk ? kExitOk : (e.outcome == Outcome::kInvalid ? kExitUsage : kExitFailed);
  });
  return sub;
}

}  // namespace tilesmith::cli
