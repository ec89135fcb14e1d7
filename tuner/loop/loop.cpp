#include "tuner/loop/loop.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <ctime>
#include <fstream>
#include <limits>
#include <map>
#include <mutex>
#include <set>

#include <nlohmann/json.hpp>

#include "base/files.h"
#include "base/format.h"
#include "base/hash.h"
#include "tuner/loop/compile_ahead.h"
#include "tuner/loop/detail/loop_internal.h"
#include "tuner/loop/retime_record.h"

namespace tilesmith {
namespace fs = std::filesystem;
using nlohmann::json;
using namespace loop_detail;  // Clock, kMaxEmptyGenerations, seconds_since

const char* stop_reason_name(StopReason r) {
  switch (r) {
    case StopReason::kGenerations: return "generation budget reached";
    case StopReason::kMaxEvals: return "evaluation budget reached";
    case StopReason::kTime: return "time budget reached";
    case StopReason::kPlateau: return "plateau (no faster config within the patience)";
    case StopReason::kExhausted: return "every valid configuration has been tried";
    case StopReason::kNoProposals: return "the proposers produced nothing new";
    case StopReason::kConverged: return "converged (the best found is likely within the margin of the space's best)";
    case StopReason::kInterrupted: return "interrupted";
    case StopReason::kError: return "error";
  }
  return "?";
}

namespace {



std::string describe_row_problem(const HistoryRow& r) {
  return std::to_string(r.m) + "x" + std::to_string(r.n) + "x" + std::to_string(r.k) + " " + r.dtype + (r.c_dtype.empty() || r.c_dtype == r.dtype ? "" : "->" + r.c_dtype) + " " + r.layout;
}

// The folder lock: one loop per results folder. flock is dropped by the kernel when the
// process dies, so a kill -9 never leaves the folder locked.
Result<int> lock_folder(const fs::path& dir) {
  const fs::path path = dir / ".autotune-loop.lock";
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return Status::io_error("opening " + path.string() + ": " + std::strerror(errno));
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    char buf[32] = {0};
    ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
    ::close(fd);
    std::string pid = n > 0 ? std::string(buf, static_cast<size_t>(n)) : "?";
    while (!pid.empty() && (pid.back() == '\n' || pid.back() == ' ')) pid.pop_back();
    return Status::failed_precondition("another autotune-loop (pid " + pid + ") is using " + dir.string() +
                                       "; wait for it to end, or give this run another --results folder");
  }
  const std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd, 0) == 0) (void)!::pwrite(fd, pid.data(), pid.size(), 0);
  return fd;
}

std::string new_run_id() {
  std::string ts = utc_timestamp_now();  // 2026-01-02T03:04:05.678Z
  std::string compact;
  for (char c : ts.substr(0, 19))
    if (c != '-' && c != ':') compact.push_back(c);
  Hasher h;
  h.add_field(ts).add_field(std::to_string(::getpid())).add_field(std::to_string(Clock::now().time_since_epoch().count()));
  return compact + "Z-" + h.hex().substr(0, 6);
}

}  // namespace

void GenerationLoop::State::absorb(const HistoryRow& row, const Config* known_config) {
  State& s = *this;
  if (!row.config_hash.empty()) {
    const std::string key = row.key();
    const bool fresh = s.known.insert(key).second;
    if (TargetState* t = s.target(row.template_name); t && fresh) {
      auto config = known_config ? Result<Config>(*known_config) : config_from_json_text(row.config);
      if (config.ok()) {
        Trial trial;
        trial.config = std::move(config).value();
        trial.outcome = row.outcome;
        // The proposers rank by the objective; an ok row without its figure ranks as a failure.
        trial.score = s.value(row);
        if (row.ok()) trial.median_ms = row.median_ms;
        trial.proposer = row.model.empty() ? row.proposer : row.proposer + ":" + row.model;
        trial.message = row.message;
        // Rows arrive generation by generation; within the last generation, keep the
        // config-hash order (see TargetState::trials). With overlapped generations the
        // proposals depend on arrival anyway: rows go in in the order they came (the
        // history's), so what the proposers saw at their last call stays a prefix and
        // their history index is kept (tuner/search/detail/history_index.h).
        std::pair<int, std::string> key{row.generation, row.config_hash};
        std::size_t at = t->trials.size();
        if (!s.options.overlap_generations)
          while (at > 0 && t->trial_keys[at - 1] > key) --at;
        t->trials.insert(t->trials.begin() + static_cast<std::ptrdiff_t>(at), std::move(trial));
        t->trial_keys.insert(t->trial_keys.begin() + static_cast<std::ptrdiff_t>(at), std::move(key));
      }
    }
    if (row.evaluated()) s.evaluated.insert(key);
  }
  if (row.evaluated()) {
    ++s.evaluated_count;
    ++s.outcomes[outcome_name(row.outcome)];
  } else {
    ++s.rejected_count;
  }
  if (row.joules_per_launch) s.energy_seen = true;
  if (const auto value = s.value(row)) {
    if (!s.best_value || *value < *s.best_value) {
      s.best_value = value;
      s.best_ms = row.median_ms;
      s.best_tflops = row.tflops;
      s.best_template = row.template_name;
      s.last_improving_generation = row.generation;
    }
  }
}


Status GenerationLoop::State::check_energy(const Evaluation& e, const std::string& what) {
  if (!needs_energy(options.objective) || !e.ok() || energy_seen) return {};
  if (e.telemetry && e.telemetry->joules_per_launch) {
    energy_seen = true;
    return {};
  }
  const std::string why = e.telemetry_note.empty() ? "the evaluator reports no energy" : e.telemetry_note;
  return Status::failed_precondition(
      "--objective " + std::string(objective_name(options.objective)) + " needs the energy of each launch, and " +
      what + " came back without it (" + why + "), so no candidate could be ranked. The device needs an energy "
      "counter read through NVML (NVIDIA Volta or later; not the replay backend). Tune for --objective time "
      "instead" + (evaluated_session > 0 ? ", in another --results folder (this one's history.csv keeps what was "
                                           "measured)"
                                         : "; nothing was recorded, so the same --results folder will do"));
}

namespace {
// The objective the rows of a session were ranked by, from its journal event: "time" for
// journals written before the objective was recorded.
std::string session_objective(const nlohmann::json& e) { return e.value("objective", std::string("time")); }

// What the folder holds must be the same experiment: same problem, same device, same
// kernel sources, ranked by the same objective. Mixing them would make the history lie.
// A session that recorded no row (one stopped because the device has no energy counter)
// leaves no ranking behind, so its objective binds nobody.
Status check_same_experiment(const fs::path& dir, const std::vector<HistoryRow>& rows,
                             const std::vector<nlohmann::json>& events, const GemmProblem& problem,
                             const DeviceFacts& device, const std::vector<const KernelTemplate*>& templates,
                             Objective objective) {
  const std::string key = problem.key();
  for (const auto& r : rows) {
    if (r.problem_key != key)
      return Status::failed_precondition(
          dir.string() + " holds a run for another problem (" + describe_row_problem(r) + ", key " + r.problem_key +
          ") than this one (" + problem.describe() + "). Give this run its own --results folder, or run the same "
          "problem to continue that one.");
    if (r.evaluated() && (r.device_name != device.name || r.device_arch != device.arch))
      return Status::failed_precondition(dir.string() + " was recorded on " + r.device_name + " (" + r.device_arch +
                                         "); this is " + device.name + " (" + device.arch +
                                         "). Give this run its own --results folder.");
  }
  for (const auto& e : events)
    if (e.value("event", "") == "session" && e.value("problem_key", key) != key)
      return Status::failed_precondition(dir.string() + " holds a run for another problem (key " +
                                         e.value("problem_key", "") + ") than this one (" + problem.describe() +
                                         "). Give this run its own --results folder.");
  std::set<int> sessions_with_rows;
  for (const auto& r : rows)
    if (r.evaluated()) sessions_with_rows.insert(r.session);
  for (const auto& e : events) {
    if (e.value("event", "") != "session" || !sessions_with_rows.count(e.value("session", 0))) continue;
    const std::string then = session_objective(e);
    if (then != objective_name(objective))
      return Status::failed_precondition(
          dir.string() + " was tuned for --objective " + then + " (session " + std::to_string(e.value("session", 0)) +
          "); this run asks for --objective " + objective_name(objective) +
          ", and its best, finalists and proposals would be ranked by another measure than the rows already "
          "there. Resume with --objective " + then + ", or give this run its own --results folder.");
  }
  // A row of a template this run does not name, with the source hash of one it does: the
  // same template under another name (on replay: a recording named after its file then,
  // after its kernel now). Continuing would leave its rows behind under the old name.
  for (const auto& r : rows) {
    if (r.template_name.empty() || r.template_hash.empty()) continue;
    bool named = false;
    const KernelTemplate* same_source = nullptr;
    for (const KernelTemplate* t : templates) {
      named = named || t->name() == r.template_name;
      if (t->matches_source_hash(r.template_hash)) same_source = t;
    }
    if (!named && same_source)
      return Status::failed_precondition(
          (dir / kHistoryFileName).string() + " has rows of template " + r.template_name + ", which this run names " +
          same_source->name() + " (the same source" +
          (same_source->is_recorded() ? "; on replay, recordings of one kernel at several problems are named after "
                                        "the kernel"
                                      : "") +
          "): its rows would not be continued under the new name. Give this run its own --results folder.");
  }
  for (const auto& r : rows)
    for (const KernelTemplate* t : templates)
      if (t->name() == r.template_name && !t->matches_source_hash(r.template_hash))
        return Status::failed_precondition(
            "template " + r.template_name + " changed since " + (dir / kHistoryFileName).string() +
            " was recorded (source hash " + r.template_hash + " then, " + t->source_hash() +
            " now): its recorded results do not describe the new kernel. Give this run its own --results folder.");
  return {};
}
}  // namespace

Status GenerationLoop::check_folder(const fs::path& dir, const GemmProblem& problem, const DeviceFacts& device,
                                    const std::vector<const KernelTemplate*>& templates, Objective objective) {
  std::error_code ec;
  if (!fs::exists(dir, ec)) return {};
  auto history = read_history(dir / kHistoryFileName);
  if (!history.ok())
    return Status(history.status().code(),
                  history.status().message() +
                      " (is --results the folder of a tilesmith run? give an empty or new folder otherwise)");
  // The journal read as it stands: a torn or foreign line is passed over (open() repairs it).
  std::vector<nlohmann::json> events;
  std::ifstream in(dir / kJournalFileName);
  for (std::string line; std::getline(in, line);) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (!j.is_discarded() && j.is_object()) events.push_back(std::move(j));
  }
  return check_same_experiment(dir, history->rows, events, problem, device, templates, objective);
}

GenerationLoop::~GenerationLoop() = default;

std::size_t GenerationLoop::repaired_journal_bytes() const { return s_->journal.repaired_bytes(); }

Result<std::unique_ptr<GenerationLoop>> GenerationLoop::open(Evaluator& evaluator, std::vector<LoopTarget> targets,
                                                             LoopOptions options) {
  auto runner = std::make_unique<InlineRunner>(evaluator);
  TS_ASSIGN_OR_RETURN(auto loop, open(*runner, std::move(targets), std::move(options)));
  loop->s_->owned_runner = std::move(runner);
  return loop;
}

Result<std::unique_ptr<GenerationLoop>> GenerationLoop::open(CandidateRunner& runner, std::vector<LoopTarget> targets,
                                                             LoopOptions options) {
  if (targets.empty()) return Status::invalid("no template to tune");
  if (options.candidates < 1) return Status::invalid("--candidates must be at least 1");
  const fs::path dir = options.results_dir;
  TS_RETURN_IF_ERROR(ensure_directory(dir));
  std::unique_ptr<GenerationLoop> loop(new GenerationLoop());
  loop->s_ = std::make_unique<State>();
  State& s = *loop->s_;
  s.runner = &runner;
  s.evaluator = &runner.evaluator();
  Evaluator& evaluator = *s.evaluator;
  s.options = std::move(options);
  TS_ASSIGN_OR_RETURN(s.lock_fd, lock_folder(dir));

  auto history = HistoryFile::open(dir / kHistoryFileName);
  if (!history.ok()) return history.status();
  loop->history_ = std::make_unique<HistoryFile>(std::move(history).value());
  TS_ASSIGN_OR_RETURN(s.journal, RunJournal::open(dir / kJournalFileName));
  loop->best_path_ = dir / "best_config.json";
  // The journal describes this history only if every plan in it was made when the history
  // was at most as long as it is now. A history moved away or replaced by hand leaves a
  // journal whose markers would all look like crashes: set it aside instead.
  std::int64_t planned_rows = 0;
  for (const auto& e : s.journal.events())
    if (e.value("event", "") == "plan") planned_rows = std::max(planned_rows, e.value("rows_before", std::int64_t{0}));
  if (planned_rows > static_cast<std::int64_t>(loop->history_->rows().size())) {
    fs::path aside = dir / kJournalFileName;
    aside += ".stale-" + std::to_string(::time(nullptr));
    std::error_code ec;
    fs::rename(dir / kJournalFileName, aside, ec);
    if (ec) return Status::io_error("moving the stale journal aside: " + ec.message());
    loop->notes_.push_back("journal.jsonl describes a longer history than history.csv holds (" +
                           std::to_string(planned_rows) + " rows then, " +
                           std::to_string(loop->history_->rows().size()) + " now); moved it to " + aside.string() +
                           " and resumed from history.csv alone");
    TS_ASSIGN_OR_RETURN(s.journal, RunJournal::open(dir / kJournalFileName));
  }

  const GemmProblem& problem = s.options.problem;
  const DeviceFacts& device = evaluator.device();
  for (const auto& t : targets) {
    TargetState ts;
    ts.target = t;
    ts.context = t.tmpl->context(problem, &device);
    s.targets.push_back(std::move(ts));
  }
  std::vector<const KernelTemplate*> templates;
  for (const auto& t : targets) templates.push_back(t.tmpl);
  TS_RETURN_IF_ERROR(check_same_experiment(dir, loop->history_->rows(), s.journal.events(), problem, device, templates,
                                           s.options.objective));

  loop->resume_ = find_resume_point(loop->history_->rows(), s.journal.events());
  s.run_id = loop->resume_.run_id.empty() ? new_run_id() : loop->resume_.run_id;
  s.session = loop->resume_.session;
  s.next_generation = loop->resume_.next_generation;
  for (const auto& r : loop->history_->rows()) s.absorb(r);
  const auto& rows = loop->history_->rows();
  for (auto& t : s.targets) {
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const HistoryRow& r = rows[i];
      const auto value = s.value(r);
      if (r.template_name == t.target.tmpl->name() && value && (!t.best || *value < *s.value(rows[*t.best])))
        t.best = i;
    }
  }
  return loop;
}

Status GenerationLoop::Runner::run() {
  TS_RETURN_IF_ERROR(start_session());
  TS_RETURN_IF_ERROR(record_crashes());
  TS_RETURN_IF_ERROR(ensure_best_written());
  // A resumed run's best scales the workers' run deadlines until the vendor's or a new
  // measurement does.
  if (s_.best_ms) s_.runner->expect_kernel_ms(s_.options.problem, *s_.best_ms);
  TS_RETURN_IF_ERROR(measure_vendor());
  for (const GenerationPlan& unfinished : resume_.unfinished) {
    if (stopped_) break;
    s_.current_generation = unfinished.generation;
    s_.log(LogLevel::kInfo, "finishing generation " + std::to_string(unfinished.generation) +
                                " as planned: " + std::to_string(unfinished.items.size()) + " candidate(s) left");
    TS_RETURN_IF_ERROR(execute(unfinished));
  }
  // With a runner that measures on threads of its own, the next generation is planned
  // while the last candidates of one are measured (execute's leave_in_flight). One in
  // this process (replay, --in-process) measures on this thread: nothing to overlap.
  const bool overlap = s_.runner->depth() > 1 && s_.options.overlap_generations;
  int empty_generations = 0;
  while (!stopped_) {
    if (check_budgets(/*between_generations=*/true)) break;
    GenerationPlan plan;
    TS_RETURN_IF_ERROR(make_plan(s_.next_generation, &plan));
    if (stopped_) break;
    // The estimate describes the history before this plan: a converged run ends here,
    // without spending the plan's evaluations.
    if (check_converged()) break;
    s_.current_generation = plan.generation;
    ++s_.next_generation;
    if (all_exhausted() && plan.items.empty()) {
      TS_RETURN_IF_ERROR(write_plan(plan));
      TS_RETURN_IF_ERROR(execute(plan));
      TS_RETURN_IF_ERROR(collect_in_flight());
      stop(StopReason::kExhausted, "every valid configuration of the space has been tried (" +
                                       std::to_string(s_.evaluated.size()) + " evaluated)");
      break;
    }
    TS_RETURN_IF_ERROR(write_plan(plan));
    TS_RETURN_IF_ERROR(execute(plan, overlap));
    if (stopped_) break;
    if (plan.items.empty() && anything_in_flight()) {
      // Everything proposed is still being measured (a proposer that has not seen those
      // results proposes them again): wait for them instead of planning in a spin, and
      // do not count it as a generation without proposals.
      TS_RETURN_IF_ERROR(collect_in_flight());
      continue;
    }
    empty_generations = plan.items.empty() ? empty_generations + 1 : 0;
    if (empty_generations >= kMaxEmptyGenerations)
      stop(StopReason::kNoProposals, "no new candidate in " + std::to_string(empty_generations) +
                                         " generations in a row");
  }
  TS_RETURN_IF_ERROR(collect_in_flight());
  // Compiles still under way (for candidates a stop dropped) end here, their journal
  // markers before the session's end.
  ahead_.reset();
  if (s_.report.reason != StopReason::kInterrupted && !s_.stop_requested()) TS_RETURN_IF_ERROR(retime());
  else collect_search_winners();
  finish_session();
  return {};
}

Status GenerationLoop::Runner::start_session() {
  const DeviceFacts& d = s_.evaluator->device();
  json device, problem;
  to_json(device, d);
  to_json(problem, s_.options.problem);
  json templates = json::array();
  for (const auto& t : s_.targets)
    templates.push_back({{"name", t.target.tmpl->name()}, {"source_hash", t.target.tmpl->source_hash()},
                         {"proposer", t.target.proposer->name()}});
  s_.report.run_id = s_.run_id;
  s_.report.session = s_.session;
  s_.report.objective = s_.options.objective;
  s_.report.rows_at_start = static_cast<std::int64_t>(history_.rows().size());
  return s_.journal.append(json{{"event", "session"},
                                {"run_id", s_.run_id},
                                {"session", s_.session},
                                {"time", utc_timestamp_now()},
                                {"pid", ::getpid()},
                                {"problem_key", s_.options.problem.key()},
                                {"objective", objective_name(s_.options.objective)},
                                {"problem", problem},
                                {"device", device},
                                {"templates", templates},
                                {"settings", s_.options.settings},
                                {"tilesmith_version", TILESMITH_VERSION}});
}

Status GenerationLoop::Runner::record_crashes() {
  for (const auto& c : resume_.crashed) {
    if (s_.evaluated.count(c.item.key())) continue;
    Evaluation e;
    e.outcome = Outcome::kCrash;
    e.message = c.message;
    s_.log(LogLevel::kWarn, "candidate " + c.item.template_name + " " + config_to_json_text(c.item.config) + ": " +
                                c.message);
    TS_RETURN_IF_ERROR(append(evaluation_row(c.item, c.generation, e, std::nullopt, c.host, c.device)));
  }
  return {};
}

Status GenerationLoop::Runner::measure_vendor() {
  s_.vendor_name = s_.evaluator->vendor_name();
  if (!s_.options.vendor_baseline) {
    s_.vendor_note = "not measured (--no-vendor)";
    return {};
  }
  if (s_.options.vendor_known && s_.options.vendor_known->ok()) {
    // Measured by an earlier session, perhaps before energy was asked for: it proves a
    // counter when it has a figure, and proves nothing when it has none.
    s_.vendor = *s_.options.vendor_known;
    if (s_.vendor->telemetry && s_.vendor->telemetry->joules_per_launch) s_.energy_seen = true;
    s_.runner->expect_kernel_ms(s_.options.problem, s_.vendor->timing.median_ms);
    return {};
  }
  const auto t0 = Clock::now();
  auto v = s_.evaluator->vendor_baseline(s_.options.problem);
  const double took = seconds_since(t0);
  s_.vendor_name = s_.evaluator->vendor_name();  // knows the library's version once it has run
  add_measure(took, false);
  if (v.ok() && v->ok()) {
    s_.vendor = *v;
    if (Status st = s_.check_energy(*v, "the vendor baseline (" + s_.vendor_name + ")"); !st.ok()) return st;
    s_.runner->expect_kernel_ms(s_.options.problem, v->timing.median_ms);
    char buf[160];
    std::snprintf(buf, sizeof buf, "vendor baseline %s: %.4g ms, %.2f TFLOP/s", s_.vendor_name.c_str(),
                  v->timing.median_ms, v->tflops);
    s_.log(LogLevel::kInfo, buf);
    json ev{{"event", "vendor"}, {"session", s_.session}, {"name", s_.vendor_name}};
    to_json(ev["evaluation"], *v);
    note_journal(s_.journal.append(ev, false));
  } else {
    s_.vendor_note = v.ok() ? std::string(outcome_name(v->outcome)) + ": " + v->message : v.status().message();
    s_.log(LogLevel::kInfo, "no vendor baseline: " + s_.vendor_note);
  }
  return {};
}

void GenerationLoop::Runner::note_journal(const Status& st) {
  if (st.ok()) return;
  std::lock_guard lock(s_.journal_error_mutex);
  if (s_.journal_error.empty()) s_.journal_error = st.message();
  s_.journal_failed = true;
}

void GenerationLoop::Runner::collect_search_winner(TargetState& t) {
  if (t.best) s_.report.winners.push_back(entry_for(t, history_.rows()[*t.best], nullptr));
}

void GenerationLoop::Runner::collect_search_winners() {
  for (auto& t : s_.targets) collect_search_winner(t);
}

std::set<std::string> GenerationLoop::Runner::templates_out_of_retime_reach() {
  std::set<std::string> behind;
  if (!s_.options.retime_within) return behind;
  std::optional<double> fastest;
  for (auto& t : s_.targets)
    if (t.best)
      if (auto v = s_.value(history_.rows()[*t.best]); v && (!fastest || *v < *fastest)) fastest = v;
  if (!fastest) return behind;
  const double reach = *fastest * (1 + *s_.options.retime_within);
  for (auto& t : s_.targets) {
    if (!t.best) continue;
    const auto v = s_.value(history_.rows()[*t.best]);
    if (!v || *v <= reach) continue;
    behind.insert(t.target.tmpl->name());
    char buf[240];
    std::snprintf(buf, sizeof buf,
                  "%s: not re-timed: its best (%.4g %s) is %.2fx the fastest template's (%.4g), beyond "
                  "--retime-within %.0f%%; best_config.json keeps its search measurement",
                  t.target.tmpl->name().c_str(), *v, objective_unit(s_.options.objective), *v / *fastest, *fastest,
                  *s_.options.retime_within * 100);
    s_.log(LogLevel::kInfo, buf);
  }
  return behind;
}

Status GenerationLoop::Runner::retime() {
  if (s_.options.retime_top <= 0) {
    collect_search_winners();
    return {};
  }
  const Objective objective = s_.options.objective;
  CertifyOptions rounds = s_.options.retime_rounds;
  rounds.objective = objective;
  const std::set<std::string> behind = templates_out_of_retime_reach();
  // One line for the whole re-timing (a problem set runs it once per problem).
  std::string plan;
  for (auto& t : s_.targets) {
    const std::string name = t.target.tmpl->name();
    if (behind.count(name)) continue;
    const std::size_t n = retime_finalists(history_.rows(), name, s_.options.retime_top, objective).size();
    if (n > 0) plan += (plan.empty() ? "" : ", ") + name + " " + std::to_string(n);
  }
  if (!plan.empty())
    s_.log(LogLevel::kInfo, std::string("re-timing the ") +
                                (objective == Objective::kTime ? "fastest configs"
                                                               : std::string("best configs by ") +
                                                                     objective_description(objective)) +
                                ": " + plan);
  for (auto& t : s_.targets) {
    const std::string name = t.target.tmpl->name();
    if (behind.count(name)) {
      collect_search_winner(t);
      continue;
    }
    auto finalists = retime_finalists(history_.rows(), name, s_.options.retime_top, objective);
    if (finalists.empty()) continue;
    const auto t0 = Clock::now();
    RetimeReport report = tilesmith::retime(
        retimer_, *t.target.tmpl, s_.options.problem, finalists, rounds,
        [this] { return s_.stop_requested(); },
        [this, objective](const RetimeResult& rr, const Evaluation& e, int round) {
          json ev{{"event", "retime"},
                  {"session", s_.session},
                  {"template", rr.template_name},
                  {"config_hash", rr.row.config_hash},
                  {"history_row", rr.row.row},
                  {"round", round},
                  {"outcome", outcome_name(e.outcome)}};
          if (e.ok()) ev["median_ms"] = e.timing.median_ms;
          if (e.ok() && e.telemetry && e.telemetry->joules_per_launch)
            ev["joules_per_launch"] = *e.telemetry->joules_per_launch;
          note_journal(s_.journal.append(ev, false));
          if (!e.ok())
            s_.log(LogLevel::kWarn, "finalist row " + std::to_string(rr.row.row) + " of " +
                                        rr.template_name + " failed its re-timing in round " +
                                        std::to_string(round) + ": " + outcome_name(e.outcome) +
                                        (e.message.empty() ? "" : " (" + e.message + ")"));
          else if (!objective_value(objective, e))
            s_.log(LogLevel::kWarn, "finalist row " + std::to_string(rr.row.row) + " of " + rr.template_name +
                                        " is out of the re-timing: round " + std::to_string(round) +
                                        " came back without its " + objective_description(objective) +
                                        (e.telemetry_note.empty() ? "" : " (" + e.telemetry_note + ")"));
        },
        /*with_vendor=*/s_.vendor.has_value());
    add_measure(seconds_since(t0), false);
    if (s_.stop_requested() || report.stopped) {
      s_.log(LogLevel::kWarn, "re-timing abandoned (stop requested); best_config.json keeps the search's best");
      s_.report.winners.clear();
      collect_search_winners();
      return {};
    }
    const RetimeResult* winner = retime_winner(report.finalists);
    if (!winner) {
      s_.log(LogLevel::kError, "no finalist of " + name +
                                   " passed its re-timing; its best_config.json entry is removed rather than "
                                   "left unconfirmed");
      TS_RETURN_IF_ERROR(remove_best_config_entry(best_path_, entry_for(t, *finalists.front(), nullptr).key()));
    } else {
      // Beside the vendor measured in the same rounds where it was: the ratio of measurements
      // seconds apart, not of the winner's end-of-run rounds to the start-of-run baseline.
      const bool vendor_rounds = report.vendor && report.vendor->retimed;
      BestEntry entry = entry_for(t, winner->row, &winner->retimed, vendor_rounds ? &*report.vendor->retimed : nullptr);
      for (const auto& rr : report.finalists) entry.retime.push_back(retime_finalist_json(rr, objective));
      entry.certification = certification_json(report, rounds);
      if (vendor_rounds)
        if (auto ratio = paired_vendor_ratio(winner->rounds, *report.vendor, rounds.confidence)) {
          entry.vendor_ratio = ratio->median;
          entry.vendor_median_ms = ratio->vendor_median_ms;
          entry.certification["vendor"] = vendor_ratio_json(*ratio);
        }
      if (report.vendor && !report.vendor->note.empty())
        s_.log(LogLevel::kWarn, "the vendor library failed in the re-timing (" + report.vendor->note +
                                    "); the ratio to it compares with the run's first measurement");
      s_.log(LogLevel::kInfo, name + ": " + certification_line(report));
      json ev{{"event", "certification"}, {"session", s_.session}, {"template", name}};
      ev.update(entry.certification);
      note_journal(s_.journal.append(ev, false));
      TS_RETURN_IF_ERROR(upsert_best_config(best_path_, entry).with_context("writing best_config.json"));
      s_.report.winners.push_back(entry);
    }
    for (auto& rr : report.finalists) s_.report.retimes.push_back(std::move(rr));
  }
  return {};
}

void GenerationLoop::Runner::finish_session() {
  s_.report.wall_s = seconds_since(s_.started);
  s_.report.devices = s_.runner->width();
  s_.report.device_summaries = s_.runner->device_summaries();
  s_.report.vendor = s_.vendor;
  s_.report.vendor_name = s_.vendor_name;
  s_.report.vendor_note = s_.vendor_note;
  s_.report.rows = history_.rows();
  json end{{"event", "end"},
           {"session", s_.session},
           {"time", utc_timestamp_now()},
           {"reason", stop_reason_name(s_.report.reason)},
           {"detail", s_.report.detail},
           {"evaluated", s_.evaluated_session}};
  // The last estimate, also when it ended the run before its plan was written.
  if (s_.report.converged) {
    end["converged"] = *s_.report.converged;
    end["convergence_margin"] = s_.report.convergence_margin;
    end["converged_at"] = s_.report.converged_at;
  }
  note_journal(s_.journal.append(end));
}

Result<LoopReport> GenerationLoop::run(LoopObserver& observer, const std::atomic<bool>* stop, Evaluator* retimer) {
  State& s = *s_;
  s.observer = &observer;
  s.stop = stop;
  s.started = Clock::now();
  s.report = LoopReport{};
  s.runner->watch_stop(stop);
  Runner runner(s, *history_, best_path_, retimer);
  runner.set_resume(resume_);
  Status st = runner.run();
  s.observer = nullptr;
  s.runner->watch_stop(nullptr);  // the flag is the caller's; it may not outlive this call
  if (!st.ok()) return st;
  return s.report;
}

}  // namespace tilesmith
