#include "tuner/mpi/mpi_runner.h"

#include <algorithm>
#include <cstdio>
#include <set>

#include "base/host_name.h"
#include "runtime/worker/wire.h"
#include "tuner/mpi/rank_messages.h"

namespace tilesmith::mpi {
namespace {
using nlohmann::json;
using Clock = std::chrono::steady_clock;

// Waits, a bounded time, for the sends in flight to leave.
void flush(MpiWorld& world, std::chrono::milliseconds limit) {
  const auto until = Clock::now() + limit;
  while (world.sending() && Clock::now() < until) {
    if (!world.progress().ok()) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

std::string rate_text(double per_minute) {
  char buf[32];
  std::snprintf(buf, sizeof buf, per_minute >= 100 ? "%.0f/min" : "%.3g/min", per_minute);
  return buf;
}

}  // namespace

void shutdown_ranks(MpiWorld& world) {
  for (int r = 1; r < world.size(); ++r) (void)world.send(r, shutdown_message(false).dump());
  flush(world, std::chrono::seconds(10));
}

Result<std::unique_ptr<MpiRunner>> MpiRunner::start(MpiWorld& world, CandidateRunner& local,
                                                     MpiRunnerOptions options) {
  std::unique_ptr<MpiRunner> m(new MpiRunner(world, local, std::move(options)));
  const int size = world.size();
  std::map<int, RankHello> hellos;
  const auto deadline = Clock::now() + m->options_.hello_deadline;
  Status failure;
  while (static_cast<int>(hellos.size()) < size - 1 && failure.ok()) {
    auto in = world.poll();
    if (!in.ok()) {
      failure = in.status();
      break;
    }
    if (!*in) {
      if (Clock::now() > deadline) {
        std::string missing;
        for (int r = 1; r < size; ++r)
          if (!hellos.count(r)) missing += (missing.empty() ? "" : ", ") + std::to_string(r);
        failure = Status::unavailable("rank(s) " + missing + " did not say hello within " +
                                      std::to_string(m->options_.hello_deadline.count() / 1000) +
                                      " s (their devices did not open?)");
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      continue;
    }
    auto j = worker::parse_message((*in)->payload);
    const std::string type = j.ok() ? worker::message_type(*j) : "";
    if (type == worker::kError) {
      failure = Status::unavailable("rank " + std::to_string((*in)->source) +
                                    " cannot serve: " + worker::error_status(*j, "").message());
    } else if (type == kRankHello) {
      auto h = rank_hello_from_json(*j);
      if (!h.ok()) failure = h.status().with_context("rank " + std::to_string((*in)->source));
      else hellos[(*in)->source] = std::move(h).value();
    }
  }
  const std::string fingerprint = local.evaluator().device().fingerprint();
  for (const auto& [r, h] : hellos) {
    if (!failure.ok()) break;
    if (h.fingerprint != fingerprint)
      failure = Status::failed_precondition(
          "rank " + std::to_string(r) + " on " + h.host + " measures on " + h.fingerprint + ", rank 0 on " +
          fingerprint + "; tune on one device model at a time (the history compares their results with each other)");
  }
  if (!failure.ok()) {
    shutdown_ranks(world);
    return failure;
  }

  // Host names label the rows; ranks that share a host are told apart by their rank.
  m->local_host_ = local_host_name();
  std::map<std::string, int> count{{m->local_host_, 1}};
  for (const auto& [r, h] : hellos) ++count[h.host];
  auto label = [&](const std::string& host, int rank) {
    return count[host] > 1 ? host + "/rank" + std::to_string(rank) : host;
  };
  const std::string local_label = label(m->local_host_, 0);
  m->local_host_ = local_label;
  for (const auto& d : local.devices()) m->labels_.push_back(local_label + "/" + d);
  m->width_ = local.width();
  m->depth_ = local.depth();
  for (const auto& [r, h] : hellos) {
    Rank rank;
    rank.rank = r;
    rank.host = label(h.host, r);
    rank.devices = h.devices;
    rank.width = h.width;
    rank.depth = std::max(h.depth, h.width);
    rank.compile_slots = h.compile_slots;
    rank.last_heard = Clock::now();
    for (const auto& d : h.devices) m->labels_.push_back(rank.host + "/" + d);
    m->width_ += rank.width;
    m->depth_ += rank.depth;
    m->ranks_.push_back(std::move(rank));
  }
  m->thread_ = std::thread([p = m.get()] { p->communicate(); });
  return m;
}

MpiRunner::~MpiRunner() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  compiled_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  // MPI is this thread's again: tell every rank that the run is over — the lost ones
  // too: one only thought lost (silent too long, but alive) must not wait forever; to a
  // dead one the send fails or is dropped, and the wait for it is bounded.
  for (const auto& r : ranks_) (void)world_.send(r.rank, shutdown_message(lost_any_).dump());
  flush(world_, std::chrono::seconds(10));
  if (lost_any_) world_.abandon();
}

void MpiRunner::note(const std::string& event) const {
  if (options_.on_event) options_.on_event(event);
}

void MpiRunner::submit(RunnerCandidate candidate, OnSend on_send) {
  std::lock_guard lock(mu_);
  if (!first_submit_) first_submit_ = Clock::now();
  queue_.push_back(Job{std::move(candidate), std::move(on_send), false});
  ++outstanding_;
}

std::optional<RunnerResult> MpiRunner::next(std::chrono::milliseconds wait) {
  std::unique_lock lock(mu_);
  if (outstanding_ == 0) return std::nullopt;
  done_cv_.wait_for(lock, wait, [&] { return !done_.empty(); });
  if (done_.empty()) return std::nullopt;
  RunnerResult r = std::move(done_.front());
  done_.pop_front();
  --outstanding_;
  return r;
}

std::size_t MpiRunner::outstanding() const {
  std::lock_guard lock(mu_);
  return outstanding_;
}

std::vector<std::uint64_t> MpiRunner::cancel_queued() {
  std::vector<std::uint64_t> tags;
  // local_mu_ before mu_, as the communication thread takes them.
  std::lock_guard local_lock(local_mu_);
  std::lock_guard lock(mu_);
  for (const auto& j : queue_) tags.push_back(j.candidate.tag);
  queue_.clear();
  for (std::uint64_t t : local_.cancel_queued()) {
    tags.push_back(t);
    --local_out_;
  }
  outstanding_ -= tags.size();
  return tags;
}

void MpiRunner::expect_kernel_ms(const GemmProblem& problem, double ms) {
  local_.expect_kernel_ms(problem, ms);
  std::lock_guard lock(mu_);
  outbox_all_.push_back(expect_kernel_message(problem, ms).dump());
}

std::string MpiRunner::compile_key(const KernelTemplate& tmpl, const GemmProblem& problem, const Config& config) {
  return tmpl.name() + "\n" + problem.key() + "\n" + config_to_json_text(config);
}

Evaluation MpiRunner::prepare(const KernelTemplate& tmpl, const GemmProblem& problem, const Config& config) {
  std::shared_ptr<PendingCompile> pending;
  int target = 0;
  {
    std::lock_guard lock(mu_);
    if (options_.local_compile_slots > 0 && !stopping_) {
      // The host with the most free slots for its count; rank 0 on a tie.
      double best = double(local_compiling_) / double(options_.local_compile_slots);
      Rank* chosen = nullptr;
      for (auto& r : ranks_) {
        if (r.lost || r.compile_slots == 0) continue;
        const double load = double(r.compiling.size()) / double(r.compile_slots);
        if (load < best) {
          best = load;
          chosen = &r;
        }
      }
      if (chosen) {
        const std::uint64_t id = next_id_++;
        pending = std::make_shared<PendingCompile>();
        chosen->compiling.emplace(id, pending);
        compile_out_.emplace_back(chosen->rank,
                                  worker::make_candidate_request(kPrepare, id, tmpl, problem, config).dump());
        target = chosen->rank;
      }
    }
    if (!pending) ++local_compiling_;
  }
  if (pending) {
    std::unique_lock lock(mu_);
    compiled_cv_.wait(lock, [&] { return pending->done || pending->lost || stopping_; });
    if (pending->done) {
      // Measured on that rank when it has room: the binary is in its host's cache.
      if (compiled_on_.size() > 100000) compiled_on_.clear();  // cancelled ones are never taken out
      compiled_on_[compile_key(tmpl, problem, config)] = target;
      return std::move(pending->evaluation);
    }
    ++local_compiling_;  // the rank went away: compile here
  }
  Evaluation e = local_.evaluator().prepare(tmpl, problem, config);
  std::lock_guard lock(mu_);
  --local_compiling_;
  ++local_compiles_;
  return e;
}

MpiRunner::Rank* MpiRunner::rank_of(int source) {
  for (auto& r : ranks_)
    if (r.rank == source) return &r;
  return nullptr;
}

void MpiRunner::lose(Rank& rank, const std::string& why) {
  if (rank.lost) return;
  rank.lost = true;
  lost_any_ = true;
  std::size_t crashed = 0, requeued = 0;
  // Back to the front in the order they were sent.
  std::vector<Job> back;
  for (auto& [id, job] : rank.in_flight) {
    if (job.started) {
      RunnerResult r;
      r.tag = job.candidate.tag;
      r.host = rank.host;
      r.evaluation.outcome = Outcome::kCrash;
      r.evaluation.message = "lost with rank " + std::to_string(rank.rank) + " (" + rank.host + "): " + why;
      done_.push_back(std::move(r));
      ++crashed;
    } else {
      back.push_back(std::move(job));
      ++requeued;
    }
  }
  rank.in_flight.clear();
  for (auto it = back.rbegin(); it != back.rend(); ++it) queue_.push_front(std::move(*it));
  done_cv_.notify_all();
  for (auto& [id, c] : rank.compiling) c->lost = true;
  rank.compiling.clear();
  compiled_cv_.notify_all();
  note("rank " + std::to_string(rank.rank) + " (" + rank.host + ") is lost: " + why + "; " +
       std::to_string(crashed) + " candidate(s) it was measuring recorded as crash, " + std::to_string(requeued) +
       " not yet started given to the others");
}

bool MpiRunner::handle(int source, const std::string& payload) {
  std::vector<std::pair<OnSend, std::pair<std::uint64_t, std::string>>> starts;
  std::string host;
  {
    std::lock_guard lock(mu_);
    Rank* rank = rank_of(source);
    if (!rank || rank->lost) return false;
    rank->last_heard = Clock::now();
    auto j = worker::parse_message(payload);
    if (!j.ok()) {
      lose(*rank, "sent a message that is not the protocol (" + j.status().message() + ")");
      return true;
    }
    const std::string type = worker::message_type(*j);
    if (type == kStarted) {
      auto it = rank->in_flight.find(worker::message_id(*j));
      if (it != rank->in_flight.end() && !it->second.started) {
        it->second.started = true;
        if (it->second.on_send)
          starts.push_back({it->second.on_send, {it->second.candidate.tag, j->value("device", std::string())}});
      }
      host = rank->host;
    } else if (type == worker::kResult) {
      auto rr = rank_result_from_json(*j);
      if (!rr.ok()) {
        lose(*rank, rr.status().message());
        return true;
      }
      auto it = rank->in_flight.find(rr->id);
      if (it == rank->in_flight.end()) return true;  // lost and re-queued meanwhile: the queue's copy counts
      RunnerResult r;
      r.tag = it->second.candidate.tag;
      r.host = rank->host;
      r.device = rr->device;
      r.evaluation = std::move(rr->evaluation);
      r.eval_ms = rr->eval_ms;
      rank->in_flight.erase(it);
      ++rank->results;
      done_.push_back(std::move(r));
      done_cv_.notify_all();
    } else if (type == kPrepared) {
      auto p = rank_result_from_json(*j);
      if (!p.ok()) {
        lose(*rank, p.status().message());
        return true;
      }
      auto it = rank->compiling.find(p->id);
      if (it == rank->compiling.end()) return true;
      it->second->evaluation = std::move(p->evaluation);
      it->second->done = true;
      rank->compiling.erase(it);
      ++rank->compiles;
      compiled_cv_.notify_all();
    } else if (type == worker::kError) {
      lose(*rank, worker::error_status(*j, "it cannot serve").message());
    }
  }
  // The journal's fsync happens outside the lock.
  for (auto& [on_send, what] : starts) on_send(what.first, host, what.second);
  return true;
}

void MpiRunner::dispatch() {
  for (;;) {
    Job job;
    Rank* target = nullptr;
    bool to_local = false;
    {
      std::lock_guard lock(mu_);
      if (queue_.empty()) return;
      // A candidate compiled on a rank goes there while it has room.
      const auto& front = queue_.front().candidate;
      if (auto it = compiled_on_.find(compile_key(*front.tmpl, front.problem, front.config));
          it != compiled_on_.end()) {
        if (Rank* r = rank_of(it->second); r && !r->lost && r->in_flight.size() < r->depth) target = r;
        compiled_on_.erase(it);
      }
      if (target) {
      } else if (local_out_ < local_.depth()) {
        to_local = true;
      } else {
        // The rank with the most room for its size takes it.
        double best = 1;
        for (auto& r : ranks_) {
          if (r.lost || r.in_flight.size() >= r.depth) continue;
          const double load = double(r.in_flight.size()) / double(r.depth);
          if (load < best) {
            best = load;
            target = &r;
          }
        }
        if (!target) return;
      }
      job = std::move(queue_.front());
      queue_.pop_front();
      if (to_local) ++local_out_;
    }
    if (to_local) {
      OnSend on_send = job.on_send;
      const std::string host = local_host_;
      std::lock_guard local_lock(local_mu_);
      local_.submit(std::move(job.candidate),
                    [on_send, host](std::uint64_t tag, const std::string&, const std::string& device) {
                      if (on_send) on_send(tag, host, device);
                    });
      continue;
    }
    std::lock_guard lock(mu_);
    const std::uint64_t id = next_id_++;
    const auto& c = job.candidate;
    Status st = world_.send(target->rank, worker::make_candidate_request(worker::kEvaluate, id, *c.tmpl, c.problem,
                                                                         c.config, c.race_ms)
                                              .dump());
    target->in_flight.emplace(id, std::move(job));
    if (!st.ok()) lose(*target, st.message());
  }
}

void MpiRunner::communicate() {
  for (;;) {
    bool busy = false;
    {
      std::lock_guard lock(mu_);
      if (stopping_) return;
    }
    for (int i = 0; i < 256; ++i) {
      auto in = world_.poll();
      if (!in.ok()) {
        // Not attributable to a rank: say it once in a while; the silence check finds the dead.
        break;
      }
      if (!*in) break;
      busy = handle((*in)->source, (*in)->payload) || busy;
    }
    {
      std::lock_guard local_lock(local_mu_);
      while (auto r = local_.next(std::chrono::milliseconds(0))) {
        r->host = local_host_;
        std::lock_guard lock(mu_);
        --local_out_;
        ++local_results_;
        done_.push_back(std::move(*r));
        done_cv_.notify_all();
        busy = true;
      }
    }
    dispatch();
    {
      std::lock_guard lock(mu_);
      for (const auto& m : outbox_all_)
        for (auto& r : ranks_)
          if (!r.lost) (void)world_.send(r.rank, m);
      outbox_all_.clear();
      for (auto& [dest, m] : compile_out_) {
        Rank* r = rank_of(dest);
        if (!r || r->lost) continue;  // lose() already gave its compiles back
        if (Status st = world_.send(dest, std::move(m)); !st.ok()) lose(*r, st.message());
      }
      compile_out_.clear();
      int failed = -1;
      if (Status st = world_.progress(&failed); !st.ok())
        if (Rank* r = rank_of(failed)) lose(*r, st.message());
      const auto now = Clock::now();
      for (auto& r : ranks_)
        if (!r.lost && now - r.last_heard > options_.silence_limit)
          lose(r, "nothing heard from it for " +
                      std::to_string(std::chrono::duration_cast<std::chrono::seconds>(now - r.last_heard).count()) +
                      " s");
    }
    if (!busy) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

std::vector<HostRate> MpiRunner::host_rates() const {
  std::lock_guard lock(mu_);
  const double minutes =
      first_submit_ ? std::chrono::duration<double>(Clock::now() - *first_submit_).count() / 60.0 : 0;
  std::vector<HostRate> out;
  HostRate local{local_host_, 0, local_.width(), local_results_, 0, false, local_compiles_};
  out.push_back(local);
  for (const auto& r : ranks_) out.push_back(HostRate{r.host, r.rank, r.width, r.results, 0, r.lost, r.compiles});
  for (auto& h : out) h.per_minute = minutes > 0 ? double(h.results) / minutes : 0;
  return out;
}

bool MpiRunner::lost_any() const {
  std::lock_guard lock(mu_);
  return lost_any_;
}

std::string MpiRunner::status_line() const {
  std::string local = local_.status_line();
  const auto rates = host_rates();
  double total = 0;
  std::string hosts;
  for (const auto& h : rates) {
    total += h.per_minute;
    hosts += (hosts.empty() ? "" : ", ") + h.host + " " + (h.lost ? "LOST" : rate_text(h.per_minute));
  }
  std::string out = (local.empty() ? "" : local + " | ") + "hosts: " + hosts + "; " + rate_text(total) + " in all";
  // Rank 0's share, not a speed-up: rank 0 beside the others is not rank 0 alone (it can
  // slow down beside them), and no one-host run was measured here to compare with.
  if (total > 0) {
    char buf[96];
    std::snprintf(buf, sizeof buf, ", %s %.0f%% of it", rates.front().host.c_str(),
                  100.0 * rates.front().per_minute / total);
    out += buf;
  }
  return out;
}

// A lost rank is said once when it happens (on_event) and shown in the status line;
// "degraded" is the local devices' health-check backoff, as the loop's message says.
bool MpiRunner::degraded() const { return local_.degraded(); }

std::vector<std::string> MpiRunner::device_summaries() const {
  // The summary prints each after "worker ": rank 0's own workers as on one host, named
  // by host too; the other ranks' as one line each (their crashes and timeouts are in
  // their rows, and in their own log on stderr).
  std::vector<std::string> out = local_.device_summaries();
  for (auto& line : out) line = "on " + local_host_ + " " + line;
  for (const auto& h : host_rates()) {
    if (h.rank == 0) continue;
    out.push_back("pool of rank " + std::to_string(h.rank) + " on " + h.host + ": " + std::to_string(h.devices) +
                  (h.devices == 1 ? " device, " : " devices, ") + std::to_string(h.results) + " evaluated, " +
                  std::to_string(h.compiles) + " compiled for the run" +
                  (h.lost ? ", LOST" : ""));
  }
  return out;
}

}  // namespace tilesmith::mpi
