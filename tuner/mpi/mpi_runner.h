#pragma once
// Rank 0's CandidateRunner in a run over several hosts (docs/scale-out.md): the devices
// of every other rank are more slots beside rank 0's own (`local`, the runner the
// command opened on this host). Candidates wait in one queue and go to whichever has
// room (its runner's depth: twice its devices), so a fast host takes more; results come
// back in completion order, each naming its host and device.
//
// One communication thread does every MPI call after start(); the loop's calls only
// touch the queue and the results under a mutex.
//
// A rank is lost when MPI reports an error for it, when it says it cannot serve
// (an error message), or when it is silent longer than `silence_limit` (it sends a heartbeat
// every second). Its candidates that had started become crash results (as a worker
// that died with its candidate: never run again); those that had not started go back
// to the front of the queue. The run goes on on the other ranks where the MPI library
// lets it (OpenMPI's mpirun ends the whole job when a process dies, by default: then
// rank 0 is stopped too, and the same command resumes, docs/scale-out.md).
//
// Compiles (the loop's compile-ahead, Evaluator::prepare) are spread over the hosts'
// compile slots (`local_compile_slots` here, each rank's from its hello): a compile goes
// to the host with the most free slots for its count, rank 0 first on a tie, and a
// candidate compiled on a rank is measured there when that rank has room (its binary is
// in that host's cache). So every host compiles what it measures, instead of rank 0's
// helpers compiling for all of them. A rank lost while compiling: the compile is done
// again on rank 0. What rank 0 does besides candidates and compiles (the vendor
// baseline, the re-timing) stays on `local`. Candidates already sent to a rank are not cancelled by
// cancel_queued(): at most its depth of them finish and are recorded.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tuner/loop/candidate_runner.h"
#include "tuner/mpi/mpi_world.h"

namespace tilesmith::mpi {

struct MpiRunnerOptions {
  std::chrono::milliseconds hello_deadline{std::chrono::minutes(10)};  // ranks open their devices
  std::chrono::milliseconds silence_limit{std::chrono::seconds(60)};
  // Lost ranks and other news, for the log (called on the communication thread).
  std::function<void(const std::string&)> on_event;
  // Compiles rank 0's own evaluator runs at once (its compile helpers); 0: every compile
  // stays on rank 0, whatever the ranks offer.
  std::size_t local_compile_slots = 0;
};

// Candidates per minute of one host, and of the whole run.
struct HostRate {
  std::string host;  // the host column's name for it
  int rank = 0;
  std::size_t devices = 0;
  std::uint64_t results = 0;
  double per_minute = 0;
  bool lost = false;
  std::uint64_t compiles = 0;  // compiles done on this host for the run
};

class MpiRunner final : public CandidateRunner {
 public:
  // Waits for every other rank's hello (options.hello_deadline), checks that every
  // device is the same model as rank 0's (failed_precondition naming the rank
  // otherwise: a run compares its results with each other), and starts the
  // communication thread. `world` and `local` must outlive the runner. On an error the
  // other ranks are told to shut down.
  static Result<std::unique_ptr<MpiRunner>> start(MpiWorld& world, CandidateRunner& local,
                                                   MpiRunnerOptions options = {});
  // Ends the communication thread and tells every rank, lost ones included, to shut down.
  ~MpiRunner() override;

  // `local`'s evaluator, with prepare() spread over the hosts (above).
  Evaluator& evaluator() override { return spread_; }
  std::size_t width() const override { return width_; }
  std::size_t depth() const override { return depth_; }
  std::vector<std::string> devices() const override { return labels_; }
  bool compiles_isolated() const override { return local_.compiles_isolated(); }
  void submit(RunnerCandidate candidate, OnSend on_send) override;
  std::optional<RunnerResult> next(std::chrono::milliseconds wait) override;
  std::size_t outstanding() const override;
  std::vector<std::uint64_t> cancel_queued() override;
  void expect_kernel_ms(const GemmProblem& problem, double ms) override;
  void watch_stop(const std::atomic<bool>* stop) override { local_.watch_stop(stop); }
  // The local devices' state, then candidates per minute per host, in all, and the
  // ratio of all to rank 0's host alone.
  std::string status_line() const override;
  bool degraded() const override;  // rank 0's own devices (lost ranks: on_event, status_line)
  std::vector<std::string> device_summaries() const override;

  std::vector<HostRate> host_rates() const;
  // True once a rank was lost (MPI_Finalize is then skipped: it may wait for the dead).
  bool lost_any() const;

 private:
  struct Job {
    RunnerCandidate candidate;
    OnSend on_send;
    bool started = false;
  };
  // A compile sent to a rank, waited for by a compile-ahead thread.
  struct PendingCompile {
    bool done = false;
    bool lost = false;  // the rank went away first: compile on rank 0
    Evaluation evaluation;
  };
  // Evaluator facade: prepare() spread over the hosts, everything else `local`'s.
  class SpreadCompiles final : public Evaluator {
   public:
    explicit SpreadCompiles(MpiRunner& m) : m_(m) {}
    const DeviceFacts& device() const override { return m_.local_.evaluator().device(); }
    Evaluation prepare(const KernelTemplate& tmpl, const GemmProblem& problem, const Config& config) override {
      return m_.prepare(tmpl, problem, config);
    }
    Evaluation evaluate(const KernelTemplate& tmpl, const GemmProblem& problem, const Config& config) override {
      return m_.local_.evaluator().evaluate(tmpl, problem, config);
    }
    Result<Evaluation> vendor_baseline(const GemmProblem& problem) override {
      return m_.local_.evaluator().vendor_baseline(problem);
    }
    std::string vendor_name() const override { return m_.local_.evaluator().vendor_name(); }
    bool renew_process() override { return m_.local_.evaluator().renew_process(); }
    Result<ReadFloor> read_floor(const GemmProblem& problem) override {
      return m_.local_.evaluator().read_floor(problem);
    }

   private:
    MpiRunner& m_;
  };
  Evaluation prepare(const KernelTemplate& tmpl, const GemmProblem& problem, const Config& config);
  static std::string compile_key(const KernelTemplate& tmpl, const GemmProblem& problem, const Config& config);
  struct Rank {
    int rank = 0;
    std::string host;  // label
    std::vector<std::string> devices;
    std::size_t width = 0, depth = 0;
    std::map<std::uint64_t, Job> in_flight;  // by message id
    std::chrono::steady_clock::time_point last_heard;
    std::uint64_t results = 0;
    bool lost = false;
    std::size_t compile_slots = 0;
    std::map<std::uint64_t, std::shared_ptr<PendingCompile>> compiling;  // by message id
    std::uint64_t compiles = 0;
  };
  MpiRunner(MpiWorld& world, CandidateRunner& local, MpiRunnerOptions options)
      : world_(world), local_(local), options_(std::move(options)), spread_(*this) {}
  void communicate();
  bool handle(int source, const std::string& payload);
  void dispatch();
  void lose(Rank& rank, const std::string& why);  // mu_ held
  Rank* rank_of(int source);
  void note(const std::string& event) const;

  MpiWorld& world_;
  CandidateRunner& local_;
  MpiRunnerOptions options_;
  std::size_t width_ = 0, depth_ = 0;
  std::vector<std::string> labels_;
  std::string local_host_;

  mutable std::mutex mu_;
  std::condition_variable done_cv_;
  std::deque<Job> queue_;
  std::deque<RunnerResult> done_;
  std::vector<Rank> ranks_;  // ranks 1..size-1
  std::vector<std::string> outbox_all_;  // for every rank (expect_kernel)
  std::size_t outstanding_ = 0;
  std::size_t local_out_ = 0;  // handed to `local` and not yet back
  std::size_t local_compiling_ = 0;
  std::uint64_t local_compiles_ = 0;
  std::condition_variable compiled_cv_;
  std::deque<std::pair<int, std::string>> compile_out_;  // prepare requests for the communication thread
  std::map<std::string, int> compiled_on_;  // compile_key -> the rank that compiled it (not rank 0)
  std::uint64_t local_results_ = 0;
  std::uint64_t next_id_ = 1;
  std::optional<std::chrono::steady_clock::time_point> first_submit_;
  bool lost_any_ = false;
  bool stopping_ = false;

  std::mutex local_mu_;  // calls into `local` (the communication thread and cancel_queued)
  SpreadCompiles spread_;
  std::thread thread_;
};

// Tells every other rank to shut down and waits (a bounded time) for the messages to
// leave: for rank 0 when the run ends before an MpiRunner exists or after it is gone.
void shutdown_ranks(MpiWorld& world);

}  // namespace tilesmith::mpi
