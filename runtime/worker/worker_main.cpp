// tilesmith-worker: one GPU (or a compile-only helper, or a replay of recorded
// measurements) behind the framed protocol on stdin/stdout; logs go to stderr. Started
// by WorkerEvaluator, never by hand (see docs/reliability.md).

#include <cstdio>
#include <memory>

#include <CLI/CLI.hpp>

#include "runtime/backend.h"
#include "runtime/worker/frame.h"
#include "runtime/worker/wire.h"
#include "runtime/worker/worker_hosts.h"
#include "runtime/worker/worker_server.h"

namespace {

using namespace tilesmith;
using namespace tilesmith::worker;

// One frame with the backend's devices (or why there are none), then exit.
int list_devices(const std::string& backend_name, int out_fd) {
  nlohmann::json reply;
  auto backend = make_backend(backend_name);
  Result<std::vector<DeviceFacts>> devices =
      backend.ok() ? (*backend)->devices() : Result<std::vector<DeviceFacts>>(backend.status());
  if (devices.ok()) {
    nlohmann::json list = nlohmann::json::array();
    for (const auto& d : *devices) list.push_back(nlohmann::json(d));
    reply = {{"type", kDevices}, {"devices", list}};
  } else {
    reply = error_message(devices.status());
  }
  return write_frame(out_fd, reply.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace))
                 .ok()
             ? 0
             : 1;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "tilesmith-worker: evaluates candidates for an orchestrator over a framed protocol on "
      "stdin/stdout"};
  std::string backend = "cuda";
  int device = 0;
  bool compile_only = false, list = false, no_space_file = false, no_l2_flush = false;
  std::string space_file, spaces_dir, cache_dir;
  std::vector<std::string> recordings;
  std::vector<std::string> template_dirs;
  GpuEvaluatorOptions gpu;
  app.add_option("--backend", backend, "cuda, hip or replay")->required();
  app.add_option("--device", device, "device ordinal within the backend");
  app.add_flag("--compile-only", compile_only,
               "compile for the device named at hello; open no device");
  app.add_flag("--list-devices", list, "reply with the backend's devices and exit");
  app.add_option("--recording", recordings, "replay: Kernel Tuner cache file (repeatable: one per problem)");
  app.add_option("--space-file", space_file, "replay: the recording's space file");
  app.add_option("--spaces-dir", spaces_dir,
                 "replay: where to look for space files by kernel name");
  app.add_flag("--no-space-file", no_space_file, "replay: validity is membership in the recording");
  app.add_option("--templates", template_dirs, "folder of kernel templates (repeatable)");
  app.add_option("--cache-dir", cache_dir, "compile cache folder");
  app.add_option("--cache-max-bytes", gpu.cache_max_bytes, "compile cache bound");
  app.add_option("--seed", gpu.seed, "input data seed (replay: bootstrap seed)");
  app.add_option("--warmup-ms", gpu.timing.warmup_ms);
  app.add_option("--min-samples", gpu.timing.min_samples);
  app.add_option("--max-samples", gpu.timing.max_samples);
  app.add_option("--target-cv", gpu.timing.target_cv);
  app.add_option("--max-sampling-ms", gpu.timing.max_sampling_ms);
  app.add_option("--energy-ms", gpu.timing.energy_ms);
  app.add_option("--steady-ms", gpu.timing.steady_ms);
  app.add_flag("--no-l2-flush", no_l2_flush);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  gpu.timing.flush_l2 = !no_l2_flush;
  gpu.cache_dir = cache_dir;

  auto fds = claim_stdio_for_protocol();
  if (!fds.ok()) {
    std::fprintf(stderr, "tilesmith-worker: %s\n", fds.status().message().c_str());
    return kWorkerExitProtocol;
  }
  if (list) return list_devices(backend, fds->out);

  std::unique_ptr<WorkerHost> host;
  if (backend == "replay") {
    replay::RecordingOptions ro;
    ro.space_file = space_file;
    ro.spaces_dir = spaces_dir;
    ro.find_space_file = !no_space_file;
    host = make_replay_host({recordings.begin(), recordings.end()}, ro, gpu.seed, compile_only);
  } else if (compile_only) {
    host = make_compile_host(backend, gpu.cache_dir, gpu.cache_max_bytes);
  } else {
    host = make_gpu_host(backend, device, gpu);
  }
  ServeOptions so;
  for (const auto& d : template_dirs) so.template_dirs.emplace_back(d);
  return serve(fds->in, fds->out, *host, so);
}
