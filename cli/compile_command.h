#pragma once
// `autotune-loop compile`: render and compile one template+config for a named
// architecture, with no GPU; prints success, the compiler log and resource usage.

#include <CLI/CLI.hpp>

namespace tilesmith::cli {

// Registers the subcommand on `app`; the returned callback runs it and gives the exit code.
struct CompileCommand {
  std::string template_name = "gemm_tiled";
  std::string config_json;  // empty: the template's defaults
  std::string arch = "sm_90";
  std::string kernels_dir;
  std::string cache_dir;
  std::string ptx_path;     // write NVRTC's PTX here (NVIDIA targets)
  std::string binary_path;  // write the cubin / code object here
  int sms = 0;              // multiprocessors of the target (rules on NUM_SMS); 0: not known
  bool json = false;
  bool show_log = false;
  bool use_cache = false;
  bool code_hash_only = false;  // NVRTC: stop at the PTX (CompileOutput::kPtxOnly)
  bool input_hash_only = false;  // render only: the input hash (candidate_input_hash), nothing compiled
};

CLI::App* add_compile_command(CLI::App& app, int& exit_code);

}  // namespace tilesmith::cli
