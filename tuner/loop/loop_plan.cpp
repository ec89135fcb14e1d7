// GenerationLoop: planning a generation (proposals, validation, dedup, the plan in the journal), budgets and stops.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>

#include "base/format.h"
#include "base/hash.h"
#include "tuner/loop/compile_ahead.h"
#include "tuner/loop/detail/loop_internal.h"

namespace tilesmith {
namespace fs = std::filesystem;
using nlohmann::json;
using namespace loop_detail;  // Clock, kMaxEmptyGenerations, seconds_since

std::uint64_t GenerationLoop::Runner::request_seed(const std::string& template_name, int generation) const {
  Hasher h;
  h.add_field(std::to_string(s_.options.seed)).add_field(template_name).add_field(std::to_string(generation));
  return h.low64();
}

Status GenerationLoop::Runner::make_plan(int generation, GenerationPlan* plan) {
  plan->generation = generation;
  plan->rows_before = static_cast<std::int64_t>(history_.rows().size());
  std::int64_t remaining = std::numeric_limits<std::int64_t>::max();
  // Candidates still in flight count against the budget: their rows are coming.
  if (s_.options.budget.max_evals > 0)
    remaining = s_.options.budget.max_evals - s_.evaluated_count -
                static_cast<std::int64_t>(in_flight_.size() + unfed_.size());
  std::set<std::string> planned;
  const std::vector<int> counts = split_generation(remaining);
  s_.split.clear();
  if (s_.targets.size() > 1)
    for (std::size_t i = 0; i < s_.targets.size(); ++i) {
      const int n = counts.empty() ? (s_.targets[i].exhausted ? 0 : s_.options.candidates) : counts[i];
      if (n > 0) s_.split += (s_.split.empty() ? "" : ", ") + s_.targets[i].target.tmpl->name() + " " + std::to_string(n);
    }

  struct Ask {
    std::size_t target = 0;
    int wanted = 0;
    std::vector<Config> pending;  // the template's candidates in flight (req.pending)
    ProposalRequest req;
    ProposalBatch batch;
  };
  // A template's request. Without a split its count is what the budget leaves after the
  // templates before it, so those are asked one after the other.
  auto request_for = [&](std::size_t ti) {
    TargetState& t = s_.targets[ti];
    const KernelTemplate& tmpl = *t.target.tmpl;
    Ask a;
    a.target = ti;
    a.wanted = counts.empty() ? static_cast<int>(std::min<std::int64_t>(s_.options.candidates,
                                                                        std::max<std::int64_t>(remaining, 1)))
                              : counts[ti];
    a.req.space = &tmpl.space();
    a.req.context = t.context;
    a.req.history = &t.trials;
    // Overlapped generations: the proposer has not seen the results of what is in flight.
    // It is told what they are (req.pending), and, for a proposer that may propose them
    // again all the same (the plan drops those), asked for that many more; the plan keeps
    // `wanted`. Nothing is in flight without overlap: as before.
    for (const auto& [tag, f] : in_flight_)
      if (f.item.template_name == tmpl.name()) a.pending.push_back(f.item.config);
    for (const Unfed& u : unfed_)
      if (u.item.template_name == tmpl.name()) a.pending.push_back(u.item.config);
    a.req.count = a.wanted + static_cast<int>(a.pending.size());
    a.req.seed = request_seed(tmpl.name(), generation);
    a.req.generation = generation;
    a.req.related = &s_.options.related;
    a.req.seeds = &tmpl.seeds();
    a.req.convergence_margin = convergence_margin();
    return a;
  };
  // A template's proposals into the plan; returns how many it added.
  auto add_to_plan = [&](const Ask& a) {
    TargetState& t = s_.targets[a.target];
    const KernelTemplate& tmpl = *t.target.tmpl;
    const ProposalBatch& batch = a.batch;
    t.converged = batch.converged;
    for (const auto& r : batch.rejected) {
      PlanRejection pr = plan_rejection(tmpl.name(), batch.proposer, r);
      // Known configs proposed again are not new rows; their first outcome stands.
      if (!pr.config_hash.empty() && s_.known.count(candidate_key(tmpl.name(), pr.config_hash))) {
        ++s_.report.dropped_known;
        continue;
      }
      plan->rejected.push_back(std::move(pr));
    }
    int valid = 0;
    for (const auto& p : batch.proposals) {
      if (valid >= a.wanted) break;  // the extra asked for in-flight candidates was not needed
      PlanItem item;
      item.template_name = tmpl.name();
      item.config = p.config;
      item.config_hash = config_hash(p.config);
      split_proposer_name(p.proposer.empty() ? batch.proposer : p.proposer, &item.proposer, &item.model);
      item.rationale = p.rationale;
      const std::string key = item.key();
      // In flight: a candidate of the generation before, still being measured.
      if (s_.known.count(key) || planned.count(key) || in_flight_keys_.count(key)) {
        ++s_.report.dropped_known;
        continue;
      }
      // Proposers validate too, but only what passes here reaches the compiler.
      if (Status st = tmpl.space().validate(p.config, t.context); !st.ok()) {
        PlanRejection pr;
        pr.template_name = tmpl.name();
        pr.proposer = item.proposer;
        pr.model = item.model;
        pr.config = config_to_json_text(p.config);
        pr.config_hash = item.config_hash;
        pr.reason = st.message();
        planned.insert(key);
        plan->rejected.push_back(std::move(pr));
        continue;
      }
      planned.insert(key);
      plan->items.push_back(std::move(item));
      ++valid;
    }
    if (batch.proposals.empty() && !batch.status.ok()) {
      if (batch.status.code() == StatusCode::kFailedPrecondition) {
        t.exhausted = true;
        t.converged = 1.0;  // nothing untried can be faster
        s_.log(LogLevel::kInfo, tmpl.name() + ": " + batch.proposer + " has nothing left to propose (" +
                                    batch.status.message() + ")");
      } else {
        s_.log(LogLevel::kWarn, tmpl.name() + ": " + batch.proposer + " failed: " + batch.status.message());
      }
    }
    return valid;
  };

  std::vector<std::size_t> live;
  for (std::size_t ti = 0; ti < s_.targets.size(); ++ti)
    if (!s_.targets[ti].exhausted && (counts.empty() || counts[ti] > 0)) live.push_back(ti);
  // With a split every count is known before any proposal: independent proposers are
  // asked at once, one thread each, and the plan is the one asking them in turn makes
  // (each answer depends on its request alone; they join the plan in template order).
  // One proposer serving two templates is never called twice at once.
  std::set<const Proposer*> distinct;
  for (std::size_t ti : live) distinct.insert(s_.targets[ti].target.proposer);
  const bool at_once = !counts.empty() && live.size() > 1 && distinct.size() == live.size() &&
                       std::all_of(live.begin(), live.end(),
                                   [&](std::size_t ti) { return s_.targets[ti].target.proposer->independent(); });
  if (at_once) {
    if (s_.stop_requested()) {
      stop(StopReason::kInterrupted, "stopped by a signal");
      return {};
    }
    std::vector<Ask> asks;
    for (std::size_t ti : live) asks.push_back(request_for(ti));
    for (Ask& a : asks) a.req.pending = &a.pending;  // once the asks stay where they are
    const auto t0 = Clock::now();
    {
      std::vector<std::jthread> threads;
      for (Ask& a : asks)
        threads.emplace_back([&a, proposer = s_.targets[a.target].target.proposer] { a.batch = proposer->propose(a.req); });
    }
    s_.report.propose_s += seconds_since(t0);
    for (const Ask& a : asks) remaining -= add_to_plan(a);
  } else {
    for (std::size_t ti : live) {
      if (s_.stop_requested()) {
        stop(StopReason::kInterrupted, "stopped by a signal");
        return {};
      }
      Ask a = request_for(ti);
      a.req.pending = &a.pending;
      const auto t0 = Clock::now();
      a.batch = s_.targets[ti].target.proposer->propose(a.req);
      s_.report.propose_s += seconds_since(t0);
      remaining -= add_to_plan(a);
    }
  }
  // The templates given most are measured first: where the run stops mid-generation (time,
  // a signal) it has measured what the split rated highest. Proposals do not depend on
  // this order (each template sees its trials by config hash within a generation).
  if (!counts.empty()) {
    std::map<std::string, int> share;
    for (std::size_t i = 0; i < s_.targets.size(); ++i)
      share[s_.targets[i].target.tmpl->name()] = counts[i];
    std::stable_sort(plan->items.begin(), plan->items.end(),
                     [&](const PlanItem& a, const PlanItem& b) {
                       return share[a.template_name] > share[b.template_name];
                     });
  }
  return {};
}

std::vector<int> GenerationLoop::Runner::split_generation(std::int64_t remaining) const {
  std::size_t live = 0;
  for (const auto& t : s_.targets) live += !t.exhausted;
  // One template, or the even split: every live template is asked for `candidates` (the
  // budget's end trims them in make_plan, in order, as it always has), so a single
  // template's run is exactly what it was before there was a split.
  if (live <= 1 || s_.options.allocation == TemplateAllocation::kEven) return {};
  // One arm per target, in the targets' order (an exhausted one too: see `live`).
  std::vector<TemplateArm> arms;
  for (const TargetState& t : s_.targets) {
    TemplateArm arm;
    arm.trials = &t.trials;
    // An exhausted template gets nothing; its results still say what the others must beat.
    arm.live = !t.exhausted;
    // The author's seeds valid for this problem and not yet tried: part of the template's
    // floor, so they are measured before the split can pass it over.
    if (t.trials.empty())
      for (const Config& seed : t.target.tmpl->seeds())
        arm.seeds += t.target.tmpl->space().validate(seed, t.context).ok();
    // What the hardware allows the template at best; scores are times only under --objective time.
    if (s_.options.objective == Objective::kTime)
      arm.fastest_possible = t.target.tmpl->fastest_possible_ms(s_.options.problem, s_.evaluator->device());
    arms.push_back(arm);
  }
  // A share for each template in play (AllocationOptions::per_template, at most `candidates`): one left
  // out by its bound (or exhausted) does not make the others' generation larger, and small generations
  // let the split follow what the templates show sooner.
  const AllocationOptions& ao = s_.options.allocation_options;
  const std::vector<bool> left_out = arms_left_out(arms, ao);
  const auto in_play = std::max<std::int64_t>(1, std::count(left_out.begin(), left_out.end(), false));
  const std::int64_t per_template =
      ao.per_template > 0 ? std::min(ao.per_template, s_.options.candidates) : s_.options.candidates;
  const std::int64_t total = std::min<std::int64_t>(per_template * in_play, std::max<std::int64_t>(remaining, 1));
  return allocate_by_gain(arms, static_cast<int>(total), ao);
}

Status GenerationLoop::Runner::write_plan(const GenerationPlan& plan) {
  json j = plan_to_json(plan);
  j["session"] = s_.session;
  if (!s_.split.empty()) j["split"] = s_.split;
  // The estimate the plan was made with, for `autotune-loop history` (history.csv's
  // columns stay as they are).
  if (s_.report.converged) {
    j["converged"] = *s_.report.converged;
    j["convergence_margin"] = s_.report.convergence_margin;
    j["evaluated"] = s_.report.converged_at;
  }
  return s_.journal.append(j);
}

double GenerationLoop::Runner::convergence_margin() const {
  return s_.options.stop_when_converged ? s_.options.stop_when_converged->margin : s_.options.convergence_margin;
}

bool GenerationLoop::Runner::check_converged() {
  std::optional<double> p = 1.0;
  for (const auto& t : s_.targets) {
    if (!t.converged) {
      p.reset();
      break;
    }
    *p *= *t.converged;
  }
  s_.report.converged = p;
  s_.report.convergence_margin = convergence_margin();
  s_.report.converged_at = s_.evaluated_count;
  const auto& want = s_.options.stop_when_converged;
  if (!want || !p || *p < want->probability) return false;
  char buf[200];
  std::snprintf(buf, sizeof buf,
                "P(best within %s of the space's best) = %.3f >= %.3g after %lld evaluations (--stop-when-converged)",
                format_margin(want->margin).c_str(), *p, want->probability,
                static_cast<long long>(s_.evaluated_count));
  stop(StopReason::kConverged, buf);
  return true;
}

bool GenerationLoop::Runner::all_exhausted() const {
  return std::all_of(s_.targets.begin(), s_.targets.end(), [](const TargetState& t) { return t.exhausted; });
}

void GenerationLoop::Runner::stop(StopReason reason, std::string detail) {
  if (stopped_) return;
  stopped_ = true;
  s_.report.reason = reason;
  s_.report.detail = std::move(detail);
}

bool GenerationLoop::Runner::check_budgets(bool between_generations) {
  if (stopped_) return true;
  const LoopBudget& b = s_.options.budget;
  if (s_.stop_requested()) {
    stop(StopReason::kInterrupted, "stopped by a signal");
  } else if (b.hours > 0 && seconds_since(s_.started) >= b.hours * 3600) {
    stop(StopReason::kTime, "ran for " + format_duration(seconds_since(s_.started)) + " (--hours " +
                                format_number(b.hours) + ")");
  } else if (b.max_evals > 0 && s_.evaluated_count >= b.max_evals) {
    stop(StopReason::kMaxEvals, std::to_string(s_.evaluated_count) + " candidates evaluated (--max-evals " +
                                    std::to_string(b.max_evals) + ")");
  } else if (between_generations && b.generations > 0 && s_.next_generation >= b.generations) {
    stop(StopReason::kGenerations, std::to_string(s_.next_generation) + " generations (--generations " +
                                       std::to_string(b.generations) + ")");
  } else if (between_generations && b.patience > 0 &&
             (s_.next_generation - 1) - s_.last_improving_generation >= b.patience) {
    stop(StopReason::kPlateau,
         s_.last_improving_generation < 0
             ? "no valid config in " + std::to_string(s_.next_generation) + " generations (--patience " +
                   std::to_string(b.patience) + ")"
             : std::string(s_.options.objective == Objective::kTime ? "no faster" : "no better") +
                   " config since generation " + std::to_string(s_.last_improving_generation) + " (" +
                   std::to_string(s_.next_generation - 1 - s_.last_improving_generation) +
                   " generations, --patience " + std::to_string(b.patience) + ")");
  }
  return stopped_;
}

void GenerationLoop::Runner::generation_done(int generation, std::int64_t from_row) {
  std::int64_t n = 0;
  std::map<std::string, int> outcomes;
  // From the plan's first row on: with generations overlapping, the rows of the next one
  // may come between this one's.
  const auto& rows = history_.rows();
  for (std::size_t i = static_cast<std::size_t>(std::clamp<std::int64_t>(from_row, 0, std::int64_t(rows.size())));
       i < rows.size(); ++i) {
    const HistoryRow& r = rows[i];
    if (r.generation == generation && r.evaluated() && r.session == s_.session) {
      ++n;
      ++outcomes[outcome_name(r.outcome)];
    }
  }
  std::string parts;
  for (const auto& [name, c] : outcomes) parts += (parts.empty() ? "" : ", ") + std::to_string(c) + " " + name;
  char buf[160] = "";
  if (s_.best_ms)
    std::snprintf(buf, sizeof buf, "; best %.4g ms, %.2f TFLOP/s%s%s", *s_.best_ms, s_.best_tflops.value_or(0),
                  best_objective().empty() ? "" : ", ", best_objective().c_str());
  s_.log(LogLevel::kInfo, "generation " + std::to_string(generation) + ": " + std::to_string(n) + " evaluated" +
                              (parts.empty() ? "" : " (" + parts + ")") + buf);
  if (s_.observer) s_.observer->on_generation(progress());
}

std::string GenerationLoop::Runner::best_objective() const {
  if (s_.options.objective == Objective::kTime || !s_.best_value) return {};
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.4g %s", *s_.best_value, objective_unit(s_.options.objective));
  return buf;
}

LoopProgress GenerationLoop::Runner::progress() const {
  LoopProgress p;
  p.label = s_.options.progress_label;
  p.generation = s_.current_generation;
  p.evaluated = s_.evaluated_count;
  p.evaluated_session = s_.evaluated_session;
  p.rejected = s_.rejected_count;
  p.outcomes = s_.outcomes;
  p.best_ms = s_.best_ms;
  p.best_tflops = s_.best_tflops;
  p.best_objective = best_objective();
  p.best_template = s_.best_template;
  p.split = s_.split;
  p.converged = s_.report.converged;
  p.convergence_margin = s_.report.convergence_margin;
  if (s_.vendor && s_.best_ms && *s_.best_ms > 0) p.best_vendor_ratio = s_.vendor->timing.median_ms / *s_.best_ms;
  p.elapsed_s = seconds_since(s_.started);
  p.measure_s = s_.report.measure_s;
  if (p.elapsed_s > 0) p.per_minute = 60.0 * static_cast<double>(s_.evaluated_session) / p.elapsed_s;
  p.workers = s_.runner->status_line();
  const LoopBudget& b = s_.options.budget;
  std::string left;
  auto add = [&](const std::string& part) { left += (left.empty() ? "" : ", ") + part; };
  if (b.generations > 0) add(std::to_string(std::max(0, b.generations - s_.current_generation - 1)) + " generations");
  if (b.max_evals > 0) add(std::to_string(std::max<std::int64_t>(0, b.max_evals - s_.evaluated_count)) + " evaluations");
  if (b.hours > 0) add(format_duration(std::max(0.0, b.hours * 3600 - p.elapsed_s)));
  if (b.patience > 0) {
    const int since = s_.current_generation - s_.last_improving_generation;
    add("plateau in " + std::to_string(std::max(0, b.patience - since)) + " generations");
  }
  p.budget_left = left;
  return p;
}

}  // namespace tilesmith
