// GenerationLoop: running a plan's candidates and recording what happened (history rows, best_config.json).

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <mutex>
#include <set>
#include <utility>

#include <nlohmann/json.hpp>

#include "analysis/race.h"
#include "base/format.h"
#include "base/hash.h"
#include "tuner/loop/compile_ahead.h"
#include "tuner/loop/detail/loop_internal.h"

namespace tilesmith {
namespace fs = std::filesystem;
using nlohmann::json;
using namespace loop_detail;  // Clock, kMaxEmptyGenerations, seconds_since

namespace {
// How long idle devices wait for the next compile in plan order before a finished one behind
// it goes first: longer than a typical compile's jitter (so fast compiles keep the order),
// far shorter than a slow one (a large Hopper config: seconds).
constexpr std::chrono::milliseconds kPassOverSlowCompileAfter{200};
}  // namespace

const std::string& GenerationLoop::Runner::template_hash(const std::string& template_name) const {
  static const std::string none;
  const TargetState* t = s_.target(template_name);
  return t ? t->target.tmpl->source_hash() : none;
}

std::optional<double> GenerationLoop::Runner::vendor_ms() const {
  return s_.vendor ? std::optional<double>(s_.vendor->timing.median_ms) : std::nullopt;
}

void GenerationLoop::Runner::add_measure(double device_seconds, bool candidate) {
  const double share = device_seconds / static_cast<double>(std::max<std::size_t>(1, s_.runner->width()));
  s_.report.measure_s += share;
  if (candidate) s_.report.candidate_measure_s += share;
}

HistoryRow GenerationLoop::Runner::rejection_row(const PlanRejection& rej, int generation) {
  return rows_.rejection(rej, generation, template_hash(rej.template_name));
}

Status GenerationLoop::Runner::append(HistoryRow row, const Config* config) {
  TS_RETURN_IF_ERROR(history_.append(std::move(row)));
  const HistoryRow& stored = history_.rows().back();
  s_.absorb(stored, config);
  if (stored.evaluated()) ++s_.evaluated_session;
  TS_RETURN_IF_ERROR(update_best(stored));
  if (s_.observer) s_.observer->on_row(stored, progress());
  if (s_.journal_failed.load()) {
    std::lock_guard lock(s_.journal_error_mutex);
    return Status::io_error("writing the journal failed: " + s_.journal_error);
  }
  return {};
}

BestEntry GenerationLoop::Runner::entry_for(const TargetState& t, const HistoryRow& row, const Evaluation* retimed,
                                            const Evaluation* vendor) const {
  BestEntryContext ctx;
  ctx.device = s_.evaluator->device();
  ctx.problem = s_.options.problem;
  ctx.run_id = s_.run_id;
  ctx.results_dir = s_.options.results_dir.string();
  ctx.vendor_library = s_.vendor_name;
  ctx.vendor = vendor ? std::optional<Evaluation>(*vendor) : s_.vendor;
  ctx.objective = s_.options.objective;
  BestEntry e = make_best_entry(ctx, *t.target.tmpl, row, retimed);
  if (e.code_hash.empty())
    if (auto it = code_hashes_.find(candidate_key(row.template_name, row.config_hash)); it != code_hashes_.end())
      e.code_hash = it->second;
  return e;
}

Status GenerationLoop::Runner::update_best(const HistoryRow& row) {
  const auto value = s_.value(row);
  if (!value) return {};
  TargetState* t = s_.target(row.template_name);
  if (!t || (t->best && *s_.value(history_.rows()[*t->best]) <= *value)) return {};
  t->best = history_.rows().size() - 1;  // `row` is the last one appended
  char buf[200];
  std::string energy;
  if (row.joules_per_launch) {
    std::snprintf(buf, sizeof buf, ", %.4g J/launch", *row.joules_per_launch);
    energy = buf;
  }
  std::snprintf(buf, sizeof buf, "new best for %s: %.4g ms, %.2f TFLOP/s%s (row %lld, generation %d, %s)",
                row.template_name.c_str(), *row.median_ms, row.tflops.value_or(0), energy.c_str(),
                (long long)row.row, row.generation, row.proposer.c_str());
  s_.log(LogLevel::kInfo, std::string(buf) + " " + row.config);
  return upsert_best_config(best_path_, entry_for(*t, row, nullptr)).with_context("updating best_config.json");
}

Status GenerationLoop::Runner::ensure_best_written() {
  std::vector<BestEntry> existing;
  std::error_code ec;
  if (fs::exists(best_path_, ec)) {
    auto r = read_best_config(best_path_);
    if (!r.ok()) return r.status();
    existing = std::move(r).value();
  }
  for (auto& t : s_.targets) {
    if (!t.best) continue;
    BestEntry e = entry_for(t, history_.rows()[*t.best], nullptr);
    const bool present = std::any_of(existing.begin(), existing.end(), [&](const BestEntry& x) { return x.key() == e.key(); });
    if (!present) TS_RETURN_IF_ERROR(upsert_best_config(best_path_, e));
  }
  return {};
}

void GenerationLoop::Runner::plan_fed(int generation) {
  if (generation < 0) return;
  unfed_count_.erase(generation);
  fed_.insert(generation);
  if (pending_[generation] == 0) result_recorded(generation);
}

Status GenerationLoop::Runner::execute(const GenerationPlan& plan, bool leave_in_flight) {
  for (const auto& r : plan.rejected) {
    TS_RETURN_IF_ERROR(append(rejection_row(r, plan.generation)));
  }
  std::vector<const PlanItem*> items;
  for (const auto& item : plan.items) {
    if (s_.evaluated.count(item.key()) || in_flight_keys_.count(item.key())) continue;
    if (!s_.target(item.template_name)) {
      s_.log(LogLevel::kWarn, "skipping planned candidate of template " + item.template_name +
                                  ", which this run does not tune");
      continue;
    }
    items.push_back(&item);
  }
  CandidateRunner& runner = *s_.runner;
  if (!ahead_) {
    CompileAhead::Marker compile_marker;
    // The compile markers find a compiler that takes this process down (resume.h). In
    // worker processes a compiler crash costs its candidate instead, so there is
    // nothing to find and no marker to write.
    if (!runner.compiles_isolated())
      compile_marker = [this](const std::string& key, bool started) {
        json ev{{"event", started ? "compile" : "compiled"}, {"session", s_.session}, {"key", key}};
        // The start must survive a machine crash; the end may ride on the next fsync.
        note_journal(s_.journal.append(ev, started));
      };
    ahead_ = std::make_unique<CompileAhead>(*s_.evaluator, s_.options.problem, s_.options.compile_threads,
                                            compile_marker);
  }
  // A plan of generation -1 only collects what is in flight (the run's end).
  if (plan.generation >= 0) {
    rows_before_.emplace(plan.generation, plan.rows_before);
    if (items.empty()) plan_fed(plan.generation);
    else unfed_count_[plan.generation] += static_cast<int>(items.size());
  }
  for (const auto* item : items) {
    unfed_.push_back(Unfed{ahead_->submit(*s_.target(item->template_name)->target.tmpl, item->config, item->key()),
                           *item, plan.generation});
    ++in_flight_keys_[item->key()];
  }
  largest_plan_ = std::max(largest_plan_, items.size());
  if (unfed_.empty() && (leave_in_flight || in_flight_.empty())) return {};

  // Compiled candidates go to the runner, results come back in completion order and each
  // becomes its row at once. Nothing is handed over while a budget or a stop says so; what
  // is in flight then is finished and recorded.
  // Without overlap: in plan order, a few more than the devices measure at once, until
  // nothing is in flight. A compile that keeps the devices idle for more than a moment is
  // passed over for the first one behind it that is done: one slow compile (a large Hopper
  // config takes seconds) does not hold up the binaries that are ready, while fast compiles
  // keep the plan's order (and a run's rows the same from run to run).
  // Overlapped (leave_in_flight): every compiled candidate, of this plan or an earlier
  // one, goes to the runner's queue as soon as it is compiled, oldest first. The call
  // returns, to plan the next generation, once no compile waits for a thread (the threads
  // are about to run out of work) and what is queued or compiling is about one plan: the
  // next plan is proposed and compiled while the queue is measured, and a slow compile
  // holds up neither the devices nor the next plan. Candidates queued or compiled but not
  // started when the run is killed are finished on resume (find_resume_point carries every
  // plan's unstarted candidates).
  const std::size_t depth = leave_in_flight ? std::numeric_limits<std::size_t>::max() : runner.depth();
  const std::size_t low_water = runner.depth() + std::max<std::size_t>(largest_plan_, 1);
  bool feeding = true;
  auto stop_feeding = [&] {
    if (!feeding) return;
    feeding = false;
    ahead_->cancel_pending();
    std::set<int> generations;
    for (std::uint64_t tag : runner.cancel_queued()) {
      // Never started: not in flight any more, and not a result to wait for.
      auto it = in_flight_.find(tag);
      if (it == in_flight_.end()) continue;
      forget_in_flight(it->second.item.key());
      --pending_[it->second.generation];
      generations.insert(it->second.generation);
      in_flight_.erase(it);
    }
    // Nor is what was compiling or compiled for any plan. Their plans are fed as far as
    // they go; a queued candidate of an earlier plan may have been its last: that
    // generation is done now.
    std::set<int> unfed_generations;
    for (const Unfed& u : unfed_) {
      forget_in_flight(u.item.key());
      unfed_generations.insert(u.generation);
    }
    unfed_.clear();
    for (int g : unfed_generations) plan_fed(g);
    for (int g : generations) result_recorded(g);
  };
  // On an error return nothing may be left with the runner: its device threads would
  // still call the markers' callbacks, which use this Runner. Queued candidates are
  // dropped (they never started) and those in flight are waited for; their results are
  // lost with the run's error, and their markers make the next session record them as
  // crashes.
  struct Drain {
    CandidateRunner& runner;
    bool armed = true;
    ~Drain() {
      if (!armed) return;
      runner.cancel_queued();
      while (runner.outstanding() > 0) runner.next(std::chrono::milliseconds(250));
    }
  } drain{runner};
  // Waits for any of unfed_'s compiles to be done; its position in unfed_.
  auto wait_for_a_compile = [&] {
    std::vector<std::size_t> tickets;
    for (const Unfed& u : unfed_) tickets.push_back(u.ticket);
    const std::size_t done = ahead_->wait_any(tickets);
    std::size_t at = 0;
    while (unfed_[at].ticket != done) ++at;
    return at;
  };
  auto last_idle = Clock::now();
  for (;;) {
    while (feeding && !unfed_.empty() && runner.outstanding() < depth) {
      if (check_budgets(/*between_generations=*/false) || s_.journal_failed.load()) {
        stop_feeding();
        break;
      }
      // Candidates in flight count against --max-evals already: their rows may end the run.
      const std::int64_t max_evals = s_.options.budget.max_evals;
      if (max_evals > 0 && s_.evaluated_count + static_cast<std::int64_t>(runner.outstanding()) >= max_evals) break;
      const bool idle = runner.outstanding() == 0;
      const auto wait_start = Clock::now();
      std::size_t pick = 0;  // position in unfed_
      if (leave_in_flight) {
        while (pick < unfed_.size() && !ahead_->ready(unfed_[pick].ticket)) ++pick;
        if (pick == unfed_.size()) {
          if (!idle) break;  // results may come in meanwhile
          pick = wait_for_a_compile();
        }
      } else {
        if (!idle && !ahead_->ready(unfed_.front().ticket)) break;  // results may come in meanwhile
        if (idle && !ahead_->wait_ready(unfed_.front().ticket, kPassOverSlowCompileAfter)) pick = wait_for_a_compile();
      }
      std::optional<Evaluation> prepared = ahead_->take(unfed_[pick].ticket);  // without threads it compiles here
      if (idle) s_.report.compile_wait_s += seconds_since(wait_start);
      if (!prepared) {
        stop_feeding();
        break;
      }
      if (s_.stop_requested()) {
        check_budgets(false);
        stop_feeding();
        break;
      }
      const Unfed u = std::move(unfed_[pick]);
      unfed_.erase(unfed_.begin() + static_cast<std::ptrdiff_t>(pick));
      const bool plan_done = u.generation >= 0 && --unfed_count_[u.generation] == 0;
      const PlanItem& item = u.item;
      if (!prepared->ok()) {
        // The compile step decided it (a compile error, or a compiler that crashed or
        // hung in its helper process): nothing to measure.
        forget_in_flight(item.key());
        TS_RETURN_IF_ERROR(record(item, u.generation, std::move(*prepared), std::nullopt, "", ""));
        if (plan_done) plan_fed(u.generation);
        continue;
      }
      const std::uint64_t tag = next_tag_++;
      in_flight_.emplace(tag, InFlight{item, u.generation, prepared->compile_ms, prepared->compile_cache_hit});
      ++pending_[u.generation];
      RunnerCandidate candidate{s_.target(item.template_name)->target.tmpl, s_.options.problem, item.config, tag,
                                race_bound_ms()};
      // Runs on the thread that sends the candidate (a device thread with workers), just
      // before it goes: the "started" marker a resumed run turns into a crash row when
      // no result follows. Copies, not references: it may run after this frame has
      // moved on to other candidates.
      json marker = plan_item_to_json(item);
      marker["event"] = "evaluate";
      marker["session"] = s_.session;
      marker["generation"] = u.generation;
      runner.submit(std::move(candidate),
                    [this, marker = std::move(marker)](std::uint64_t, const std::string& host,
                                                       const std::string& device) {
                      json m = marker;
                      m["host"] = host;
                      m["device"] = device;
                      note_journal(s_.journal.append(m));
                    });
      if (plan_done) plan_fed(u.generation);
    }
    if (!feeding || unfed_.empty()) {
      if (runner.outstanding() == 0) break;
    }
    // Plan the next generation while these are measured. Not after a stop or a budget (the
    // run ends: wait for them).
    if (leave_in_flight && feeding && ahead_->waiting() == 0 && runner.outstanding() + unfed_.size() <= low_water &&
        std::none_of(unfed_.begin(), unfed_.end(), [&](const Unfed& u) { return ahead_->ready(u.ticket); }))
      break;
    const bool compile_pending = feeding && !unfed_.empty() && runner.outstanding() < depth;
    std::optional<RunnerResult> r = runner.next(std::chrono::milliseconds(compile_pending ? 20 : 250));
    if (r) {
      auto it = in_flight_.find(r->tag);
      if (it == in_flight_.end()) continue;  // not one of this loop's: cannot happen
      InFlight done = std::move(it->second);
      in_flight_.erase(it);
      forget_in_flight(done.item.key());
      Evaluation e = std::move(r->evaluation);
      // The compile happened ahead, in prepare(); evaluate() found it in the cache. The
      // candidate's compile cost is prepare's.
      e.compile_ms = done.compile_ms;
      e.compile_cache_hit = done.compile_cache_hit;
      if (e.timing.raced_above_ms) ++s_.report.raced;
      add_measure(r->eval_ms / 1000, true);
      TS_RETURN_IF_ERROR(record(done.item, done.generation, std::move(e), r->eval_ms, r->host, r->device));
      --pending_[done.generation];
      result_recorded(done.generation);
    } else if (seconds_since(last_idle) >= 1.0) {
      last_idle = Clock::now();
      note_device_health();
      if (s_.observer) s_.observer->on_idle(progress());
    }
  }
  drain.armed = false;  // nothing in flight, or left in flight on purpose
  return {};
}

void GenerationLoop::Runner::result_recorded(int generation) {
  auto p = pending_.find(generation);
  if (p == pending_.end() || p->second > 0 || !fed_.count(generation)) return;
  pending_.erase(p);
  fed_.erase(generation);
  auto from = rows_before_.find(generation);
  generation_done(generation, from == rows_before_.end() ? 0 : from->second);
  if (from != rows_before_.end()) rows_before_.erase(from);
}

double GenerationLoop::Runner::race_bound_ms() const {
  if (s_.options.objective != Objective::kTime || !(s_.options.race_margin > 0)) return 0;
  // The run's best so far, over every template it tunes.
  const HistoryRow* best = nullptr;
  for (const auto& t : s_.targets) {
    if (!t.best) continue;
    const HistoryRow& r = history_.rows()[*t.best];
    if (r.median_ms && (!best || *r.median_ms < *best->median_ms)) best = &r;
  }
  if (!best) return 0;
  return analysis::race_bound_ms(best->p80_ms.value_or(0), best->median_ms.value_or(0), s_.options.race_margin);
}

void GenerationLoop::Runner::note_device_health() {
  const bool degraded = s_.runner->degraded();
  if (degraded == degraded_) return;
  degraded_ = degraded;
  if (degraded)
    s_.log(LogLevel::kWarn, "a device failed its health check and backs off; the others go on (" +
                                s_.runner->status_line() + ")");
  else
    s_.log(LogLevel::kInfo, "every device is healthy again");
}

}  // namespace tilesmith
