#include "tuner/mpi/rank_server.h"

#include <signal.h>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "runtime/worker/wire.h"
#include "tuner/mpi/rank_messages.h"

namespace tilesmith::mpi {
namespace {
using nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr auto kHeartbeatEvery = std::chrono::seconds(1);

// Compiles for rank 0 on threads of their own (Evaluator::prepare is thread-safe), so the
// serving thread keeps answering rank 0 and handing out measurements meanwhile. Each
// outcome goes to `post` as a prepared message. The destructor drops what has not started
// and waits for the compiles under way.
class CompilePool {
 public:
  CompilePool(Evaluator& evaluator, std::size_t threads, std::function<void(json)> post)
      : evaluator_(evaluator), post_(std::move(post)) {
    for (std::size_t i = 0; i < threads; ++i) threads_.emplace_back([this] { work(); });
  }
  ~CompilePool() {
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
      jobs_.clear();
    }
    cv_.notify_all();
    for (auto& t : threads_) t.join();
  }
  CompilePool(const CompilePool&) = delete;
  CompilePool& operator=(const CompilePool&) = delete;

  bool accepts() const { return !threads_.empty(); }
  void submit(const KernelTemplate* tmpl, GemmProblem problem, Config config, std::uint64_t id) {
    {
      std::lock_guard lock(mu_);
      jobs_.push_back(Job{tmpl, std::move(problem), std::move(config), id});
    }
    cv_.notify_one();
  }

 private:
  struct Job {
    const KernelTemplate* tmpl;
    GemmProblem problem;
    Config config;
    std::uint64_t id;
  };
  void work() {
    for (;;) {
      Job job;
      {
        std::unique_lock lock(mu_);
        cv_.wait(lock, [&] { return stopping_ || !jobs_.empty(); });
        if (stopping_) return;
        job = std::move(jobs_.front());
        jobs_.pop_front();
      }
      RankResult done{job.id, "", evaluator_.prepare(*job.tmpl, job.problem, job.config), 0};
      post_(to_json(done, kPrepared));
    }
  }

  Evaluator& evaluator_;
  std::function<void(json)> post_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> jobs_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

Status send(MpiWorld& world, const json& message) { return world.send(0, message.dump()); }

// The next message from rank 0, if any. Messages from other ranks do not happen (only
// rank 0 talks to the others) and are ignored.
Result<std::optional<json>> next_message(MpiWorld& world) {
  TS_ASSIGN_OR_RETURN(std::optional<Incoming> in, world.poll());
  if (!in || in->source != 0) return std::optional<json>();
  auto j = worker::parse_message(in->payload);
  if (!j.ok()) return j.status().with_context("a message from rank 0");
  return std::optional<json>(std::move(j).value());
}

}  // namespace

ServeEnd refuse_rank(MpiWorld& world, const std::string& message) {
  const ServeEnd lost{1, true};
  if (!send(world, worker::error_message(Status::unavailable(message))).ok()) return lost;
  for (;;) {
    if (!world.progress().ok()) return lost;
    auto m = next_message(world);
    if (!m.ok()) return lost;
    if (*m && worker::message_type(**m) == worker::kShutdown)
      return ServeEnd{0, (**m).value("skip_finalize", false)};
    if (!*m) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

ServeEnd serve_rank(MpiWorld& world, CandidateRunner& runner, const TemplateFinder& find,
                    const RankServerOptions& options) {
  const ServeEnd lost{1, true};
  RankHello hello;
  hello.host = options.host;
  hello.devices = runner.devices();
  hello.width = runner.width();
  hello.depth = runner.depth();
  hello.fingerprint = runner.evaluator().device().fingerprint();
  hello.device_name = runner.evaluator().device().name;
  hello.compile_slots = options.compile_slots;
  if (!send(world, to_json(hello)).ok()) return lost;

  // The runner reports a start from a device thread; MPI is this thread's. Shared with
  // the callbacks, which may outlive this frame when it returns early (rank 0 gone).
  struct Outbox {
    std::mutex mu;
    std::deque<json> messages;
  };
  auto box = std::make_shared<Outbox>();
  auto take = [&box] {
    std::deque<json> out;
    std::lock_guard lock(box->mu);
    out.swap(box->messages);
    return out;
  };
  // Declared after the outbox it posts to, so it stops (and its threads stop posting)
  // before the outbox goes.
  CompilePool compiles(runner.evaluator(), options.compile_slots, [box](json m) {
    std::lock_guard lock(box->mu);
    box->messages.push_back(std::move(m));
  });
  std::uint64_t results = 0;
  bool refused = false;
  ServeEnd end;
  auto last_beat = Clock::now();
  for (;;) {
    bool busy = false;
    auto m = next_message(world);
    if (!m.ok()) return lost;
    if (*m) {
      busy = true;
      const json& msg = **m;
      const std::string type = worker::message_type(msg);
      if (type == worker::kShutdown) {
        end.skip_finalize = msg.value("skip_finalize", false);
        break;
      }
      if ((type == worker::kEvaluate || (type == kPrepare && compiles.accepts())) && !refused) {
        auto req = worker::parse_candidate_request(msg);
        const KernelTemplate* tmpl = req.ok() ? find(req->tmpl.name, req->tmpl.source_hash) : nullptr;
        if (!tmpl) {
          // Measuring another template than rank 0 means would record wrong results:
          // this rank stops serving, and rank 0 gives its candidates to the others.
          const std::string why =
              !req.ok() ? "a request did not decode: " + req.status().message()
                        : "this rank has no template " + req->tmpl.name + " with source hash " + req->tmpl.source_hash +
                              " (start every rank with the same --kernels-dir or --replay-file, and the same build)";
          refused = true;
          if (!send(world, worker::error_message(Status::unavailable(options.host + ": " + why)))
                   .ok())
            return lost;
        } else if (type == kPrepare) {
          compiles.submit(tmpl, req->problem, req->config, req->id);
        } else {
          RunnerCandidate c{tmpl, req->problem, req->config, req->id, req->race_ms};
          runner.submit(std::move(c), [box](std::uint64_t id, const std::string&, const std::string& device) {
            std::lock_guard lock(box->mu);
            box->messages.push_back(started_message(id, device));
          });
        }
      } else if (type == kExpectKernel) {
        auto p = problem_from_json(msg.value("problem", json()));
        if (p.ok()) runner.expect_kernel_ms(*p, msg.value("ms", 0.0));
      }
    }
    for (const auto& o : take())
      if (!send(world, o).ok()) return lost;
    // A short wait while candidates run: the loop also answers rank 0's messages.
    auto r = runner.next(std::chrono::milliseconds(busy || runner.outstanding() == 0 ? 0 : 5));
    if (r) {
      busy = true;
      // Its start first: the runner reported it before the result came back.
      for (const auto& o : take())
        if (!send(world, o).ok()) return lost;
      RankResult rr{r->tag, r->device, std::move(r->evaluation), r->eval_ms};
      if (!send(world, to_json(rr)).ok()) return lost;
      ++results;
      if (options.kill_after_results && results >= options.kill_after_results) {
        // Let the result leave before the process vanishes: it was measured.
        while (world.sending() && world.progress().ok()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
        ::raise(SIGKILL);
      }
    }
    if (Clock::now() - last_beat >= kHeartbeatEvery) {
      last_beat = Clock::now();
      if (!send(world, simple_message(kHeartbeat)).ok()) return lost;
    }
    if (!world.progress().ok()) return lost;
    if (!busy && runner.outstanding() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  // Rank 0 sends shutdown once it has every result it waits for; anything still here (it
  // gave up on this rank as lost) is dropped: its results would have no reader.
  runner.cancel_queued();
  while (runner.outstanding() > 0) runner.next(std::chrono::milliseconds(100));
  while (world.sending() && world.progress().ok()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return end;
}

}  // namespace tilesmith::mpi
