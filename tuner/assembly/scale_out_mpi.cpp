// The build with MPI (tuner/mpi): rank 0 drives an MpiRunner, the other ranks serve.
#include <cstdio>
#include <cstdlib>

#include <spdlog/spdlog.h>

#include "base/cpu_affinity.h"
#include "base/host_name.h"
#include "tuner/assembly/scale_out.h"
#include "tuner/mpi/mpi_runner.h"
#include "tuner/mpi/rank_server.h"

namespace tilesmith {
namespace {

// TILESMITH_MPI_TEST_KILL=RANK:N — the kill test's hook (tests/cli/mpi_run_test.cpp):
// that rank kills itself after sending N results. 0 for every other rank.
std::uint64_t kill_after_results(int rank) {
  const char* v = std::getenv("TILESMITH_MPI_TEST_KILL");
  if (!v) return 0;
  int r = -1;
  unsigned long long n = 0;
  if (std::sscanf(v, "%d:%llu", &r, &n) != 2 || r != rank) return 0;
  return n;
}

std::string rate(double per_minute) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f/min", per_minute);
  return buf;
}

// The launcher's binding (OpenMPI binds each of two ranks to one core) would hold this
// rank's compile helpers and workers, which inherit it, on that core; they are widened to
// every CPU the process's cpuset allows (base/cpu_affinity.h). TILESMITH_KEEP_BINDING=1
// keeps the launcher's binding.
void widen_launcher_binding(int rank) {
  if (const char* keep = std::getenv("TILESMITH_KEEP_BINDING"); keep && *keep && std::string(keep) != "0") return;
  const CpuAffinity before = current_cpu_affinity();
  if (before.allowed <= 0 || before.allowed >= before.online) return;
  const CpuAffinity after = widen_cpu_affinity();
  if (after.allowed > before.allowed)
    spdlog::info("rank {}: the launcher bound this process to CPU(s) {}; widened to {} so its compile helpers and "
                 "workers do not share {} (TILESMITH_KEEP_BINDING=1 keeps the binding)",
                 rank, before.list, after.list, before.allowed == 1 ? "one core" : "those cores");
  else
    spdlog::warn("rank {}: bound to CPU(s) {} of {} online, and the binding could not be widened: its compile "
                 "helpers and workers share them (mpirun --bind-to none avoids it)",
                 rank, before.list, before.online);
}

class MpiScaleOut final : public ScaleOut {
 public:
  explicit MpiScaleOut(std::unique_ptr<mpi::MpiWorld> world) : world_(std::move(world)) {}
  ~MpiScaleOut() override { end(); }

  int rank() const override { return world_->rank(); }
  int size() const override { return world_->size(); }

  Result<CandidateRunner*> connect(CandidateRunner& local, std::size_t compile_slots) override {
    mpi::MpiRunnerOptions o;
    o.local_compile_slots = compile_slots;
    o.on_event = [](const std::string& e) { spdlog::warn(e); };
    // How long a silent rank is waited for before it counts as lost (docs/scale-out.md).
    if (const char* s = std::getenv("TILESMITH_MPI_SILENCE_S"); s && std::atof(s) > 0)
      o.silence_limit = std::chrono::milliseconds(static_cast<long long>(std::atof(s) * 1000));
    auto r = mpi::MpiRunner::start(*world_, local, std::move(o));
    told_ = true;  // start() told the ranks to shut down when it failed
    if (!r.ok()) return r.status();
    runner_ = std::move(r).value();
    std::string ranks;
    for (const auto& h : runner_->host_rates())
      ranks += (ranks.empty() ? "" : ", ") + std::string("rank ") + std::to_string(h.rank) + " " + h.host + " (" +
               std::to_string(h.devices) + " device" + (h.devices == 1 ? "" : "s") + ")";
    spdlog::info("{} MPI ranks: {}; {} devices in all", world_->size(), ranks, runner_->width());
    return runner_.get();
  }

  std::string host_summary() const override {
    if (!runner_) return summary_;
    const auto rates = runner_->host_rates();
    double total = 0;
    std::uint64_t results = 0;
    std::string out;
    for (const auto& h : rates) {
      total += h.per_minute;
      results += h.results;
      out += "host " + h.host + " (rank " + std::to_string(h.rank) + ", " + std::to_string(h.devices) +
             " device" + (h.devices == 1 ? "" : "s") + "): " + std::to_string(h.results) + " candidates, " +
             rate(h.per_minute) + ", " + std::to_string(h.compiles) + " compiles" + (h.lost ? " (LOST)" : "") + "\n";
    }
    // Rank 0's share, not a speed-up: rank 0 beside the others is not rank 0 alone, and the
    // speed-up over one host needs a one-host run to compare with.
    char buf[320];
    std::snprintf(buf, sizeof buf,
                  "all %zu hosts: %llu candidates, %s; %s measured %.0f%% of them (the speed-up over one host needs a "
                  "one-host run of the same problem to compare with: scripts/device/mpi_scaling.sh)\n",
                  rates.size(), static_cast<unsigned long long>(results), rate(total).c_str(),
                  rates.front().host.c_str(), results > 0 ? 100.0 * double(rates.front().results) / double(results) : 0.0);
    return out + buf;
  }

  int serve(CandidateRunner& runner, const RankTemplateFinder& find, std::size_t compile_slots) override {
    mpi::RankServerOptions o;
    o.compile_slots = compile_slots;
    o.host = local_host_name();
    o.kill_after_results = kill_after_results(world_->rank());
    const mpi::ServeEnd end = mpi::serve_rank(*world_, runner, find, o);
    if (end.skip_finalize) world_->abandon();
    return end.exit_code;
  }

  int refuse(const std::string& message) override {
    const mpi::ServeEnd end = mpi::refuse_rank(*world_, message);
    if (end.skip_finalize) world_->abandon();
    return end.exit_code;
  }

  void end() override {
    if (ended_) return;
    ended_ = true;
    if (world_->rank() != 0) return;
    if (runner_) {
      summary_ = host_summary();
      runner_.reset();  // tells the ranks, skips MPI_Finalize after a lost rank
    } else if (!told_) {
      mpi::shutdown_ranks(*world_);
    }
    world_.reset();
  }

 private:
  std::unique_ptr<mpi::MpiWorld> world_;
  std::unique_ptr<mpi::MpiRunner> runner_;
  std::string summary_;
  bool told_ = false;
  bool ended_ = false;
};

}  // namespace

Result<std::unique_ptr<ScaleOut>> join_scale_out(EvaluatorSettings* flags) {
  const LaunchInfo launch = launched_ranks();
  if (launch.ranks <= 1) {
    if (flags->devices == "local-rank") flags->devices = "0";
    return std::unique_ptr<ScaleOut>();
  }
  TS_ASSIGN_OR_RETURN(auto world, mpi::MpiWorld::init());
  if (world->size() != launch.ranks)
    spdlog::warn("{} says {} ranks, MPI says {}", launch.launcher, launch.ranks, world->size());
  if (flags->devices == "local-rank") flags->devices = std::to_string(world->local_rank());
  if (world->size() == 1) return std::unique_ptr<ScaleOut>();
  widen_launcher_binding(world->rank());
  return std::unique_ptr<ScaleOut>(new MpiScaleOut(std::move(world)));
}

}  // namespace tilesmith
