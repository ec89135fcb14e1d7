#include "tuner/loop/problem_set_run.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <map>
#include <set>

#include "base/files.h"
#include "base/format.h"
#include "tuner/loop/problem_set_folder.h"
#include "tuner/loop/problem_set_scheduler.h"

namespace tilesmith {
namespace fs = std::filesystem;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

// One set per folder at a time (each problem's folder has the loop's own lock too; this
// one keeps a second set from interleaving its slices with ours). The kernel drops it
// when the process dies.
class SetLock {
 public:
  static Result<std::unique_ptr<SetLock>> take(const fs::path& dir) {
    const fs::path path = dir / ".problem-set.lock";
    int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return Status::io_error("opening " + path.string() + ": " + std::strerror(errno));
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      ::close(fd);
      return Status::failed_precondition("another autotune-loop is running the problem set in " + dir.string() +
                                         "; wait for it to end, or give this run another --results folder");
    }
    return std::unique_ptr<SetLock>(new SetLock(fd));
  }
  ~SetLock() { ::close(fd_); }

 private:
  explicit SetLock(int fd) : fd_(fd) {}
  int fd_;
};

// DIR/problem_set.json of a resumed set, checked against this one.
Status check_recorded_set(const fs::path& path, const ProblemSet& set) {
  TS_ASSIGN_OR_RETURN(std::string text, read_file(path));
  json recorded = json::parse(text, nullptr, false);
  if (recorded.is_discarded())
    return Status::failed_precondition(path.string() + " is not valid JSON; move it away or give this set another "
                                       "--results folder");
  return check_same_problem_set(recorded, set, path);
}

// Writes DIR/problem_set.json for a new set; checks it against the file for a resumed one.
Status record_set(const fs::path& dir, const ProblemSet& set) {
  const fs::path path = dir / kProblemSetFileName;
  std::error_code ec;
  if (fs::exists(path, ec)) return check_recorded_set(path, set);
  return write_file_atomic(path, problem_set_to_json(set).dump(2) + "\n");
}

}  // namespace

Status check_problem_set_folder(const fs::path& dir, const ProblemSet& set) {
  std::error_code ec;
  if (!fs::exists(dir, ec)) return {};
  if (fs::exists(dir / kHistoryFileName, ec))
    return Status::failed_precondition(dir.string() + " holds a single problem's run (history.csv), not a problem "
                                       "set's; give the set its own --results folder");
  const fs::path path = dir / kProblemSetFileName;
  if (!fs::exists(path, ec)) return {};
  return check_recorded_set(path, set);
}

namespace {

bool alike(const GemmProblem& a, const GemmProblem& b) {
  return a.a_type == b.a_type && a.b_type == b.b_type && a.c_type == b.c_type && a.accumulate == b.accumulate &&
         a.a_layout == b.a_layout && a.b_layout == b.b_layout && a.c_layout == b.c_layout && a.alpha == b.alpha &&
         a.beta == b.beta && a.epilogue == b.epilogue;
}

double log_distance(const GemmProblem& a, const GemmProblem& b) {
  auto d = [](std::int64_t x, std::int64_t y) { return std::log2(double(x)) - std::log2(double(y)); };
  return std::sqrt(d(a.m, b.m) * d(a.m, b.m) + d(a.n, b.n) * d(a.n, b.n) + d(a.k, b.k) * d(a.k, b.k));
}

std::string percent(double share) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%.0f%%", 100.0 * share);
  return buf;
}

class SetRun {
 public:
  SetRun(CandidateRunner& runner, const ProblemSetOptions& o, const ProblemTargetsFactory& make_targets,
         LoopObserver& observer, const std::atomic<bool>* stop, Evaluator* retimer)
      : runner_(runner), o_(o), make_targets_(make_targets), observer_(observer), stop_(stop), retimer_(retimer) {}

  Result<ProblemSetReport> run() {
    const ProblemSet& set = o_.set;
    TS_RETURN_IF_ERROR(ensure_directory(o_.results_dir));
    TS_ASSIGN_OR_RETURN(lock_, SetLock::take(o_.results_dir));
    TS_RETURN_IF_ERROR(record_set(o_.results_dir, set));
    folders_.resize(set.entries.size());
    for (std::size_t i = 0; i < set.entries.size(); ++i) TS_RETURN_IF_ERROR(reread(i));
    started_ = Clock::now();
    report_.reason = StopReason::kMaxEvals;

    SchedulerOptions so;
    so.total_evals = o_.max_evals;
    so.min_slice = o_.min_slice;
    so.slice = o_.slice;
    bool interrupted = false;
    for (;;) {
      if (stop_ && stop_->load()) {
        end(StopReason::kInterrupted, "stopped by a signal");
        interrupted = true;
        break;
      }
      const double left_s = o_.hours > 0 ? o_.hours * 3600 - seconds() : 0;
      if (o_.hours > 0 && left_s <= 0) {
        end(StopReason::kTime, "ran for " + format_duration(seconds()) + " (--hours " + format_number(o_.hours) + ")");
        break;
      }
      auto slice = next_slice(standings(so.slice), so);
      if (!slice) {
        if (o_.max_evals > 0 && total_evals() >= o_.max_evals)
          end(StopReason::kMaxEvals, std::to_string(total_evals()) + " candidates evaluated over the set (--max-evals " +
                                         std::to_string(o_.max_evals) + ")");
        else
          end(StopReason::kExhausted, "every problem's search has ended (plateau, exhausted space or nothing new)");
        break;
      }
      TS_ASSIGN_OR_RETURN(LoopReport r, run_slice(*slice, left_s));
      if (r.reason == StopReason::kInterrupted) {
        end(StopReason::kInterrupted, "stopped by a signal");
        interrupted = true;
        break;
      }
      if (r.reason == StopReason::kTime) {
        end(StopReason::kTime, "ran for " + format_duration(seconds()) + " (--hours " + format_number(o_.hours) + ")");
        break;
      }
    }
    if (!interrupted && o_.loop.retime_top > 0) TS_RETURN_IF_ERROR(retime_all());
    return finish();
  }

 private:
  Status reread(std::size_t i) {
    auto f = read_problem_folder(folder(i), o_.loop.objective);
    if (!f.ok()) return f.status().with_context(folder(i).string());
    folders_[i] = std::move(f).value();
    return {};
  }

  fs::path folder(std::size_t i) const { return o_.results_dir / o_.set.entries[i].name; }
  double seconds() const { return std::chrono::duration<double>(Clock::now() - started_).count(); }
  std::int64_t total_evals() const {
    std::int64_t n = 0;
    for (const auto& f : folders_) n += f.evals;
    return n;
  }

  std::vector<ProblemStanding> standings(std::int64_t window) const {
    std::vector<ProblemStanding> s;
    for (std::size_t i = 0; i < folders_.size(); ++i) {
      ProblemStanding p;
      p.evals = folders_[i].evals;
      p.flops = o_.set.entries[i].problem.flops();
      p.count = o_.set.entries[i].count;
      if (folders_[i].vendor) p.vendor_ms = folders_[i].vendor->timing.median_ms;
      p.recent_gain = recent_gain(folders_[i].evaluated, window);
      p.done = folders_[i].done;
      s.push_back(p);
    }
    return s;
  }

  std::vector<bool> tuned() const {
    std::vector<bool> t;
    for (const auto& f : folders_) t.push_back(f.search_best.has_value());
    return t;
  }

  // The winners of the related problems, nearest first, for the proposers.
  std::vector<RelatedResult> related(std::size_t i) const {
    std::vector<RelatedResult> out;
    for (std::size_t j : nearest_tuned(o_.set, i, tuned(), 4)) {
      const BestEntry* w = best_winner(folders_[j]);
      if (!w) continue;
      RelatedResult r;
      r.name = o_.set.entries[j].name;
      r.problem = o_.set.entries[j].problem.describe();
      r.template_name = w->template_name;
      r.config = config_to_json_text(w->config);
      r.ms = winner_ms(*w).value_or(0);
      if (folders_[j].vendor && r.ms > 0) r.vendor_ratio = folders_[j].vendor->timing.median_ms / r.ms;
      out.push_back(std::move(r));
    }
    return out;
  }

  Result<ProblemTargets*> targets(std::size_t i) {
    auto it = targets_.find(i);
    if (it != targets_.end()) return &it->second;
    std::vector<fs::path> warm;
    for (std::size_t j : nearest_tuned(o_.set, i, tuned(), 3))
      if (!folders_[j].winners.empty()) warm.push_back(folder(j) / "best_config.json");
    auto made = make_targets_(o_.set.entries[i], warm);
    if (!made.ok()) return made.status().with_context(o_.set.entries[i].name);
    if (!warm.empty())
      observer_.log(LogLevel::kInfo, o_.set.entries[i].name + ": warm start from " + std::to_string(warm.size()) +
                                         " related problem(s) of the set");
    return &targets_.emplace(i, std::move(made).value()).first->second;
  }

  LoopOptions slice_options(std::size_t i) const {
    LoopOptions lo = o_.loop;
    lo.results_dir = folder(i);
    lo.problem = o_.set.entries[i].problem;
    lo.budget = LoopBudget{};
    lo.budget.patience = o_.loop.budget.patience;
    lo.retime_top = 0;  // once per problem, at the end of the set
    lo.vendor_known = folders_[i].vendor;
    if (!folders_[i].vendor && no_vendor_.count(i)) lo.vendor_baseline = false;  // tried this process: none
    lo.related = related(i);
    return lo;
  }

  Result<LoopReport> run_slice(const Slice& slice, double left_s) {
    const std::size_t i = slice.problem;
    const ProblemSetEntry& e = o_.set.entries[i];
    TS_ASSIGN_OR_RETURN(ProblemTargets * t, targets(i));
    LoopOptions lo = slice_options(i);
    lo.budget.max_evals = folders_[i].evals + slice.evals;
    if (o_.hours > 0) lo.budget.hours = left_s / 3600;
    const std::int64_t spent = total_evals();
    std::string evals = std::to_string(spent);
    if (o_.max_evals > 0) evals.append("/").append(std::to_string(o_.max_evals));
    lo.progress_label = std::to_string(i + 1) + "/" + std::to_string(o_.set.entries.size()) + " " + e.name + " · " +
                        evals + " evals, share " + percent(spent ? double(folders_[i].evals) / double(spent) : 0);
    observer_.log(LogLevel::kInfo, "problem " + std::to_string(i + 1) + "/" + std::to_string(o_.set.entries.size()) +
                                       " " + e.name + " (" + e.problem.describe() + ", x" + std::to_string(e.count) +
                                       "): " + (slice.minimum ? "minimum slice of " : "slice of ") +
                                       std::to_string(slice.evals) + " evaluations (" +
                                       std::to_string(folders_[i].evals) + " so far)");
    auto loop = GenerationLoop::open(runner_, t->targets, std::move(lo));
    if (!loop.ok()) return loop.status().with_context(e.name);
    for (const auto& note : (*loop)->notes()) observer_.log(LogLevel::kWarn, e.name + ": " + note);
    auto r = (*loop)->run(observer_, stop_, retimer_);
    if (!r.ok()) return r.status().with_context(e.name);
    if (!r->vendor) no_vendor_.insert(i);
    loop->reset();  // the folder's lock is released before it is read
    TS_RETURN_IF_ERROR(reread(i));
    return r;
  }

  // The finalists of every problem, re-timed once: a session that stops at once on its
  // budget and re-times (GenerationLoop's own end), skipped where that is done already.
  Status retime_all() {
    for (std::size_t i = 0; i < o_.set.entries.size(); ++i) {
      if (stop_ && stop_->load()) return {};
      if (!folders_[i].search_best || folders_[i].retimed) continue;
      TS_ASSIGN_OR_RETURN(ProblemTargets * t, targets(i));
      LoopOptions lo = slice_options(i);
      lo.budget.max_evals = std::max<std::int64_t>(1, folders_[i].evals);
      lo.retime_top = o_.loop.retime_top;
      lo.progress_label = o_.set.entries[i].name + " · re-timing";
      auto loop = GenerationLoop::open(runner_, t->targets, std::move(lo));
      if (!loop.ok()) return loop.status().with_context(o_.set.entries[i].name);
      auto r = (*loop)->run(observer_, stop_, retimer_);
      if (!r.ok()) return r.status().with_context(o_.set.entries[i].name);
      loop->reset();
      TS_RETURN_IF_ERROR(reread(i));
    }
    return {};
  }

  void end(StopReason reason, std::string detail) {
    report_.reason = reason;
    report_.detail = std::move(detail);
  }

  Result<ProblemSetReport> finish() {
    report_.name = o_.set.name;
    report_.source = o_.set.source;
    report_.evals = total_evals();
    for (std::size_t i = 0; i < o_.set.entries.size(); ++i) {
      const auto& e = o_.set.entries[i];
      ProblemResult p;
      p.name = e.name;
      p.problem = e.problem;
      p.count = e.count;
      p.evals = folders_[i].evals;
      if (const BestEntry* w = best_winner(folders_[i])) {
        p.ours_ms = winner_ms(*w);
        p.template_name = w->template_name;
        auto metric = [&](const char* key) -> std::optional<double> {
          if (w->metrics.contains(key) && w->metrics[key].is_number()) return w->metrics[key].get<double>();
          return std::nullopt;
        };
        if (p.ours_ms)
          p.ours_spread = analysis::relative_spread(*p.ours_ms, metric("p20_ms"), metric("p80_ms"), metric("cv"));
      }
      if (folders_[i].vendor) {
        const TimingStats& v = folders_[i].vendor->timing;
        p.vendor_ms = v.median_ms;
        p.vendor_spread = analysis::relative_spread(v.median_ms, v.p20_ms, v.p80_ms, v.cv);
      }
      p.stop = folders_[i].last_stop;
      report_.problems.push_back(std::move(p));
    }
    report_.summary = problem_set_summary_json(report_);
    TS_RETURN_IF_ERROR(write_file_atomic(o_.results_dir / "summary.json", report_.summary.dump(2) + "\n")
                           .with_context("writing summary.json"));
    return report_;
  }

  CandidateRunner& runner_;
  const ProblemSetOptions& o_;
  const ProblemTargetsFactory& make_targets_;
  LoopObserver& observer_;
  const std::atomic<bool>* stop_;
  Evaluator* retimer_;
  std::unique_ptr<SetLock> lock_;
  std::vector<ProblemFolder> folders_;
  std::map<std::size_t, ProblemTargets> targets_;
  std::set<std::size_t> no_vendor_;
  Clock::time_point started_;
  ProblemSetReport report_;
};

}  // namespace

std::vector<std::size_t> nearest_tuned(const ProblemSet& set, std::size_t problem, const std::vector<bool>& tuned,
                                       std::size_t limit) {
  std::vector<std::pair<double, std::size_t>> near;
  const GemmProblem& p = set.entries[problem].problem;
  for (std::size_t j = 0; j < set.entries.size(); ++j)
    if (j != problem && j < tuned.size() && tuned[j] && alike(p, set.entries[j].problem))
      near.emplace_back(log_distance(p, set.entries[j].problem), j);
  std::stable_sort(near.begin(), near.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::size_t> out;
  for (std::size_t k = 0; k < near.size() && k < limit; ++k) out.push_back(near[k].second);
  return out;
}

Result<ProblemSetReport> run_problem_set(CandidateRunner& runner, const ProblemSetOptions& options,
                                         const ProblemTargetsFactory& make_targets, LoopObserver& observer,
                                         const std::atomic<bool>* stop, Evaluator* retimer) {
  if (options.set.entries.empty()) return Status::invalid("the problem set has no problems");
  SetRun run(runner, options, make_targets, observer, stop, retimer);
  return run.run();
}

}  // namespace tilesmith
