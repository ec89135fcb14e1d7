#include "tuner/loop.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <ctime>
#include <limits>
#include <map>
#include <mutex>
#include <set>

#include <nlohmann/json.hpp>

#include "base/format.h"
#include "base/files.h"
#include "base/hash.h"
#include "tuner/best_entry.h"
#include "tuner/compile_ahead.h"
#include "tuner/generation.h"
#include "tuner/journal.h"
#include "tuner/loop_rows.h"
#include "tuner/retime.h"

namespace tilesmith {
namespace fs = std::filesystem;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

const char* stop_reason_name(StopReason r) {
  switch (r) {
    case StopReason::kGenerations: return "generation budget reached";
    case StopReason::kMaxEvals: return "evaluation budget reached";
    case StopReason::kTime: return "time budget reached";
    case StopReason::kPlateau: return "plateau (no faster config within the patience)";
    case StopReason::kExhausted: return "every valid configuration has been tried";
    case StopReason::kNoProposals: return "the proposers produced nothing new";
    case StopReason::kInterrupted: return "interrupted";
    case StopReason::kError: return "error";
  }
  return "?";
}

namespace {

constexpr int kMaxEmptyGenerations = 3;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

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

struct TargetState {
  LoopTarget target;
  SpaceContext context;
  std::vector<Trial> trials;   // one per known config of this template
  bool exhausted = false;
  std::optional<std::size_t> best;  // index of the fastest ok evaluation row in the history
};

struct GenerationLoop::State {
  CandidateRunner* runner = nullptr;
  std::unique_ptr<CandidateRunner> owned_runner;  // open(Evaluator&): an InlineRunner
  Evaluator* evaluator = nullptr;                 // runner->evaluator()
  LoopOptions options;
  std::vector<TargetState> targets;
  RunJournal journal;
  int lock_fd = -1;
  std::string run_id;
  int session = 1;
  int next_generation = 0;
  int current_generation = 0;

  std::set<std::string> known;      // keys of every row with a config hash
  std::set<std::string> evaluated;  // keys of evaluation rows
  std::int64_t evaluated_count = 0, evaluated_session = 0, rejected_count = 0;
  std::map<std::string, std::int64_t> outcomes;
  std::optional<double> best_ms, best_tflops;
  std::string best_template;
  int last_improving_generation = -1;
  // A journal write that failed on a compile-ahead thread; the loop's thread ends the run.
  std::atomic<bool> journal_failed{false};
  std::mutex journal_error_mutex;
  std::string journal_error;

  std::optional<Evaluation> vendor;
  std::string vendor_name, vendor_note;
  Clock::time_point started = Clock::now();
  LoopReport report;
  LoopObserver* observer = nullptr;
  const std::atomic<bool>* stop = nullptr;

  ~State() {
    if (lock_fd >= 0) ::close(lock_fd);
  }

  TargetState* target(const std::string& name) {
    for (auto& t : targets)
      if (t.target.tmpl->name() == name) return &t;
    return nullptr;
  }
  bool stop_requested() const { return stop && stop->load(); }
  void log(LogLevel level, const std::string& m) {
    if (observer) observer->log(level, m);
  }
};

namespace {

// Keeps the counters, the per-template trials and bests in step with one row.
void absorb_row(GenerationLoop::State& s, const HistoryRow& row) {
  if (!row.config_hash.empty()) {
    const std::string key = row.key();
    const bool fresh = s.known.insert(key).second;
    if (TargetState* t = s.target(row.template_name); t && fresh) {
      auto config = config_from_json_text(row.config);
      if (config.ok()) {
        Trial trial;
        trial.config = *config;
        trial.outcome = row.outcome;
        if (row.ok() && row.median_ms) trial.time_ms = *row.median_ms;
        trial.proposer = row.model.empty() ? row.proposer : row.proposer + ":" + row.model;
        trial.message = row.message;
        t->trials.push_back(std::move(trial));
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
  if (row.evaluated() && row.ok() && row.median_ms && *row.median_ms > 0) {
    if (!s.best_ms || *row.median_ms < *s.best_ms) {
      s.best_ms = row.median_ms;
      s.best_tflops = row.tflops;
      s.best_template = row.template_name;
      s.last_improving_generation = row.generation;
    }
  }
}

}  // namespace

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

  // What the folder holds must be the same experiment: same problem, same device, same
  // kernel sources. Mixing them would make the history lie.
  const GemmProblem& problem = s.options.problem;
  const DeviceFacts& device = evaluator.device();
  const std::string key = problem.key();
  for (const auto& r : loop->history_->rows()) {
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
  for (const auto& e : s.journal.events())
    if (e.value("event", "") == "session" && e.value("problem_key", key) != key)
      return Status::failed_precondition(dir.string() + " holds a run for another problem (key " +
                                         e.value("problem_key", "") + ") than this one (" + problem.describe() +
                                         "). Give this run its own --results folder.");

  for (const auto& t : targets) {
    TargetState ts;
    ts.target = t;
    ts.context = t.tmpl->context(problem, &device);
    s.targets.push_back(std::move(ts));
  }
  for (const auto& r : loop->history_->rows()) {
    TargetState* t = s.target(r.template_name);
    if (t && r.template_hash != t->target.tmpl->source_hash())
      return Status::failed_precondition(
          "template " + r.template_name + " changed since " + (dir / kHistoryFileName).string() +
          " was recorded (source hash " + r.template_hash + " then, " + t->target.tmpl->source_hash() +
          " now): its recorded results do not describe the new kernel. Give this run its own --results folder.");
  }

  loop->resume_ = find_resume_point(loop->history_->rows(), s.journal.events());
  s.run_id = loop->resume_.run_id.empty() ? new_run_id() : loop->resume_.run_id;
  s.session = loop->resume_.session;
  s.next_generation = loop->resume_.next_generation;
  for (const auto& r : loop->history_->rows()) absorb_row(s, r);
  const auto& rows = loop->history_->rows();
  for (auto& t : s.targets) {
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const HistoryRow& r = rows[i];
      if (r.template_name == t.target.tmpl->name() && r.evaluated() && r.ok() && r.median_ms &&
          (!t.best || *r.median_ms < *rows[*t.best].median_ms))
        t.best = i;
    }
  }
  return loop;
}

namespace {

class Runner {
 public:
  Runner(GenerationLoop::State& s, HistoryFile& history, const fs::path& best_path, Evaluator* retimer)
      : s_(s),
        history_(history),
        best_path_(best_path),
        retimer_(retimer ? *retimer : *s.evaluator),
        rows_(s.run_id, s.session, s.options.problem, s.evaluator->device()) {}

  Status run() {
    TS_RETURN_IF_ERROR(start_session());
    TS_RETURN_IF_ERROR(record_crashes());
    TS_RETURN_IF_ERROR(ensure_best_written());
    // A resumed run's best scales the workers' run deadlines until the vendor's or a new
    // measurement does.
    if (s_.best_ms) s_.runner->expect_kernel_ms(s_.options.problem, *s_.best_ms);
    measure_vendor();
    if (resume_.unfinished) {
      s_.current_generation = resume_.unfinished->generation;
      s_.log(LogLevel::kInfo, "finishing generation " + std::to_string(resume_.unfinished->generation) +
                                  " as planned: " + std::to_string(resume_.unfinished->items.size()) +
                                  " candidate(s) left");
      TS_RETURN_IF_ERROR(execute(*resume_.unfinished));
      if (!stopped_) generation_done(resume_.unfinished->generation);
    }
    int empty_generations = 0;
    while (!stopped_) {
      if (check_budgets(/*between_generations=*/true)) break;
      GenerationPlan plan;
      TS_RETURN_IF_ERROR(make_plan(s_.next_generation, &plan));
      if (stopped_) break;
      s_.current_generation = plan.generation;
      ++s_.next_generation;
      if (all_exhausted() && plan.items.empty()) {
        TS_RETURN_IF_ERROR(write_plan(plan));
        TS_RETURN_IF_ERROR(execute(plan));
        stop(StopReason::kExhausted, "every valid configuration of the space has been tried (" +
                                         std::to_string(s_.evaluated.size()) + " evaluated)");
        break;
      }
      TS_RETURN_IF_ERROR(write_plan(plan));
      TS_RETURN_IF_ERROR(execute(plan));
      if (stopped_) break;
      generation_done(plan.generation);
      empty_generations = plan.items.empty() ? empty_generations + 1 : 0;
      if (empty_generations >= kMaxEmptyGenerations)
        stop(StopReason::kNoProposals, "no new candidate in " + std::to_string(empty_generations) +
                                           " generations in a row");
    }
    if (s_.report.reason != StopReason::kInterrupted && !s_.stop_requested()) TS_RETURN_IF_ERROR(retime());
    else collect_search_winners();
    finish_session();
    return {};
  }

  void set_resume(const ResumePoint& rp) { resume_ = rp; }

 private:
  // --- rows -------------------------------------------------------------------------

  const std::string& template_hash(const std::string& template_name) const {
    static const std::string none;
    const TargetState* t = s_.target(template_name);
    return t ? t->target.tmpl->source_hash() : none;
  }

  std::optional<double> vendor_ms() const {
    return s_.vendor ? std::optional<double>(s_.vendor->timing.median_ms) : std::nullopt;
  }

  HistoryRow evaluation_row(const PlanItem& item, int generation, const Evaluation& e, std::optional<double> eval_ms,
                            const std::string& device) {
    return rows_.evaluation(item, generation, template_hash(item.template_name), e, eval_ms, vendor_ms(), device);
  }

  // Measuring time as a share of the devices: with several, each second of one device is
  // 1/width of the whole.
  void add_measure(double device_seconds, bool candidate) {
    const double share = device_seconds / static_cast<double>(std::max<std::size_t>(1, s_.runner->width()));
    s_.report.measure_s += share;
    if (candidate) s_.report.candidate_measure_s += share;
  }

  HistoryRow rejection_row(const PlanRejection& rej, int generation) {
    return rows_.rejection(rej, generation, template_hash(rej.template_name));
  }

  Status append(HistoryRow row) {
    TS_RETURN_IF_ERROR(history_.append(std::move(row)));
    const HistoryRow& stored = history_.rows().back();
    absorb_row(s_, stored);
    if (stored.evaluated()) ++s_.evaluated_session;
    TS_RETURN_IF_ERROR(update_best(stored));
    if (s_.observer) s_.observer->on_row(stored, progress());
    if (s_.journal_failed.load()) {
      std::lock_guard lock(s_.journal_error_mutex);
      return Status::io_error("writing the journal failed: " + s_.journal_error);
    }
    return {};
  }

  // --- best_config.json -----------------------------------------------------------

  BestEntry entry_for(const TargetState& t, const HistoryRow& row, const Evaluation* retimed) const {
    BestEntryContext ctx;
    ctx.device = s_.evaluator->device();
    ctx.problem = s_.options.problem;
    ctx.run_id = s_.run_id;
    ctx.results_dir = s_.options.results_dir.string();
    ctx.vendor_library = s_.vendor_name;
    ctx.vendor = s_.vendor;
    return make_best_entry(ctx, *t.target.tmpl, row, retimed);
  }

  Status update_best(const HistoryRow& row) {
    if (!row.evaluated() || !row.ok() || !row.median_ms) return {};
    TargetState* t = s_.target(row.template_name);
    if (!t || (t->best && *history_.rows()[*t->best].median_ms <= *row.median_ms)) return {};
    t->best = history_.rows().size() - 1;  // `row` is the last one appended
    char buf[160];
    std::snprintf(buf, sizeof buf, "new best for %s: %.4g ms, %.2f TFLOP/s (row %lld, generation %d, %s)",
                  row.template_name.c_str(), *row.median_ms, row.tflops.value_or(0), (long long)row.row,
                  row.generation, row.proposer.c_str());
    s_.log(LogLevel::kInfo, std::string(buf) + " " + row.config);
    return upsert_best_config(best_path_, entry_for(*t, row, nullptr)).with_context("updating best_config.json");
  }

  // After a crash between a row and its best_config update, the file lags the history.
  Status ensure_best_written() {
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

  // --- sessions, vendor, crashes ------------------------------------------------------

  Status start_session() {
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
    s_.report.rows_at_start = static_cast<std::int64_t>(history_.rows().size());
    return s_.journal.append(json{{"event", "session"},
                                  {"run_id", s_.run_id},
                                  {"session", s_.session},
                                  {"time", utc_timestamp_now()},
                                  {"pid", ::getpid()},
                                  {"problem_key", s_.options.problem.key()},
                                  {"problem", problem},
                                  {"device", device},
                                  {"templates", templates},
                                  {"settings", s_.options.settings},
                                  {"tilesmith_version", TILESMITH_VERSION}});
  }

  Status record_crashes() {
    for (const auto& c : resume_.crashed) {
      if (s_.evaluated.count(c.item.key())) continue;
      Evaluation e;
      e.outcome = Outcome::kCrash;
      e.message = c.message;
      s_.log(LogLevel::kWarn, "candidate " + c.item.template_name + " " + config_to_json_text(c.item.config) + ": " +
                                  c.message);
      TS_RETURN_IF_ERROR(append(evaluation_row(c.item, c.generation, e, std::nullopt, c.device)));
    }
    return {};
  }

  void measure_vendor() {
    s_.vendor_name = s_.evaluator->vendor_name();
    if (!s_.options.vendor_baseline) {
      s_.vendor_note = "not measured (--no-vendor)";
      return;
    }
    const auto t0 = Clock::now();
    auto v = s_.evaluator->vendor_baseline(s_.options.problem);
    const double took = seconds_since(t0);
    s_.vendor_name = s_.evaluator->vendor_name();  // knows the library's version once it has run
    add_measure(took, false);
    if (v.ok() && v->ok()) {
      s_.vendor = *v;
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
  }

  void note_journal(const Status& st) {
    if (st.ok()) return;
    std::lock_guard lock(s_.journal_error_mutex);
    if (s_.journal_error.empty()) s_.journal_error = st.message();
    s_.journal_failed = true;
  }

  // --- planning ---------------------------------------------------------------------

  std::uint64_t request_seed(const std::string& template_name, int generation) const {
    Hasher h;
    h.add_field(std::to_string(s_.options.seed)).add_field(template_name).add_field(std::to_string(generation));
    return h.low64();
  }

  Status make_plan(int generation, GenerationPlan* plan) {
    plan->generation = generation;
    plan->rows_before = static_cast<std::int64_t>(history_.rows().size());
    std::int64_t remaining = std::numeric_limits<std::int64_t>::max();
    if (s_.options.budget.max_evals > 0) remaining = s_.options.budget.max_evals - s_.evaluated_count;
    std::set<std::string> planned;
    for (auto& t : s_.targets) {
      if (t.exhausted) continue;
      if (s_.stop_requested()) {
        stop(StopReason::kInterrupted, "stopped by a signal");
        return {};
      }
      const KernelTemplate& tmpl = *t.target.tmpl;
      ProposalRequest req;
      req.space = &tmpl.space();
      req.context = t.context;
      req.history = &t.trials;
      req.count = static_cast<int>(std::min<std::int64_t>(s_.options.candidates, std::max<std::int64_t>(remaining, 1)));
      req.seed = request_seed(tmpl.name(), generation);
      req.generation = generation;
      const auto t0 = Clock::now();
      ProposalBatch batch = t.target.proposer->propose(req);
      s_.report.propose_s += seconds_since(t0);
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
        PlanItem item;
        item.template_name = tmpl.name();
        item.config = p.config;
        item.config_hash = config_hash(p.config);
        split_proposer_name(p.proposer.empty() ? batch.proposer : p.proposer, &item.proposer, &item.model);
        item.rationale = p.rationale;
        const std::string key = item.key();
        if (s_.known.count(key) || planned.count(key)) {
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
          s_.log(LogLevel::kInfo, tmpl.name() + ": " + batch.proposer + " has nothing left to propose (" +
                                      batch.status.message() + ")");
        } else {
          s_.log(LogLevel::kWarn, tmpl.name() + ": " + batch.proposer + " failed: " + batch.status.message());
        }
      }
      remaining -= valid;
    }
    return {};
  }

  Status write_plan(const GenerationPlan& plan) {
    json j = plan_to_json(plan);
    j["session"] = s_.session;
    return s_.journal.append(j);
  }

  bool all_exhausted() const {
    return std::all_of(s_.targets.begin(), s_.targets.end(), [](const TargetState& t) { return t.exhausted; });
  }

  // --- executing a plan ---------------------------------------------------------------

  Status execute(const GenerationPlan& plan) {
    for (const auto& r : plan.rejected) {
      TS_RETURN_IF_ERROR(append(rejection_row(r, plan.generation)));
    }
    std::vector<const PlanItem*> items;
    for (const auto& item : plan.items) {
      if (s_.evaluated.count(item.key())) continue;
      if (!s_.target(item.template_name)) {
        s_.log(LogLevel::kWarn, "skipping planned candidate of template " + item.template_name +
                                    ", which this run does not tune");
        continue;
      }
      items.push_back(&item);
    }
    if (items.empty()) return {};
    CandidateRunner& runner = *s_.runner;
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
    CompileAhead ahead(*s_.evaluator, s_.options.problem, s_.options.compile_threads, compile_marker);
    std::vector<std::size_t> tickets;
    for (const auto* item : items)
      tickets.push_back(ahead.submit(*s_.target(item->template_name)->target.tmpl, item->config, item->key()));

    // Compiled candidates go to the runner in plan order, a few more than it measures at
    // once so no device waits for the loop; results come back in completion order and
    // each becomes its row at once. Nothing is handed over while a budget or a stop says
    // so; what is in flight then is finished and recorded.
    std::vector<Evaluation> compiled(items.size());
    const std::size_t depth = runner.depth();
    std::size_t next = 0;
    bool feeding = true;
    auto stop_feeding = [&] {
      if (!feeding) return;
      feeding = false;
      ahead.cancel_pending();
      runner.cancel_queued();
    };
    // On an error return nothing may be left with the runner: its device threads would
    // still call the markers' callbacks, which use this Runner. Queued candidates are
    // dropped (they never started) and those in flight are waited for; their results are
    // lost with the run's error, and their markers make the next session record them as
    // crashes.
    struct Drain {
      CandidateRunner& runner;
      ~Drain() {
        runner.cancel_queued();
        while (runner.outstanding() > 0) runner.next(std::chrono::milliseconds(250));
      }
    } drain{runner};
    auto last_idle = Clock::now();
    for (;;) {
      while (feeding && next < items.size() && runner.outstanding() < depth) {
        if (check_budgets(/*between_generations=*/false) || s_.journal_failed.load()) {
          stop_feeding();
          break;
        }
        // Candidates in flight count against --max-evals already: their rows may end the run.
        const std::int64_t max_evals = s_.options.budget.max_evals;
        if (max_evals > 0 && s_.evaluated_count + static_cast<std::int64_t>(runner.outstanding()) >= max_evals) break;
        const bool idle = runner.outstanding() == 0;
        if (!idle && !ahead.ready(tickets[next])) break;  // results may come in meanwhile
        double waited_ms = 0;
        std::optional<Evaluation> prepared = ahead.take(tickets[next], &waited_ms);
        if (idle) s_.report.compile_wait_s += waited_ms / 1000;
        if (!prepared) {
          stop_feeding();
          break;
        }
        if (s_.stop_requested()) {
          check_budgets(false);
          stop_feeding();
          break;
        }
        const std::size_t i = next++;
        const PlanItem& item = *items[i];
        if (!prepared->ok()) {
          // The compile step decided it (a compile error, or a compiler that crashed or
          // hung in its helper process): nothing to measure.
          TS_RETURN_IF_ERROR(record(item, plan.generation, std::move(*prepared), std::nullopt, ""));
          continue;
        }
        compiled[i] = std::move(*prepared);
        RunnerCandidate candidate{s_.target(item.template_name)->target.tmpl, s_.options.problem, item.config, i};
        // Runs on the thread that sends the candidate (a device thread with workers), just
        // before it goes: the "started" marker a resumed run turns into a crash row when
        // no result follows. Copies, not references: it may run after this frame has
        // moved on to other candidates.
        json marker = plan_item_to_json(item);
        marker["event"] = "evaluate";
        marker["session"] = s_.session;
        marker["generation"] = plan.generation;
        runner.submit(std::move(candidate),
                      [this, marker = std::move(marker)](std::uint64_t, const std::string& device) {
                        json m = marker;
                        m["device"] = device;
                        note_journal(s_.journal.append(m));
                      });
      }
      if (runner.outstanding() == 0 && (!feeding || next >= items.size())) break;
      const bool compile_pending = feeding && next < items.size() && runner.outstanding() < depth;
      std::optional<RunnerResult> r = runner.next(std::chrono::milliseconds(compile_pending ? 20 : 250));
      if (r) {
        const std::size_t i = static_cast<std::size_t>(r->tag);
        Evaluation e = std::move(r->evaluation);
        // The compile happened ahead, in prepare(); evaluate() found it in the cache. The
        // candidate's compile cost is prepare's.
        e.compile_ms = compiled[i].compile_ms;
        e.compile_cache_hit = compiled[i].compile_cache_hit;
        add_measure(r->eval_ms / 1000, true);
        TS_RETURN_IF_ERROR(record(*items[i], plan.generation, std::move(e), r->eval_ms, r->device));
      } else if (seconds_since(last_idle) >= 1.0) {
        last_idle = Clock::now();
        note_device_health();
        if (s_.observer) s_.observer->on_idle(progress());
      }
    }
    return {};
  }

  // One candidate's row, and its line in the log.
  Status record(const PlanItem& item, int generation, Evaluation e, std::optional<double> eval_ms,
                const std::string& device) {
    HistoryRow row = evaluation_row(item, generation, e, eval_ms, device);
    char buf[200];
    if (e.ok())
      std::snprintf(buf, sizeof buf, "gen %d %s [%s] ok %.4g ms %.2f TFLOP/s", generation, item.template_name.c_str(),
                    item.proposer.c_str(), e.timing.median_ms, e.tflops);
    else
      std::snprintf(buf, sizeof buf, "gen %d %s [%s] %s", generation, item.template_name.c_str(),
                    item.proposer.c_str(), outcome_name(e.outcome));
    std::string line = std::string(buf) + (device.empty() ? "" : " on " + device) + " " +
                       config_to_json_text(item.config) +
                       (e.ok() || e.message.empty() ? "" : ": " + e.message.substr(0, 200));
    // A candidate that cost its worker is worth a look; the run goes on without it.
    const bool lost = e.outcome == Outcome::kCrash || e.outcome == Outcome::kTimeout;
    s_.log(lost ? LogLevel::kWarn : LogLevel::kDebug, line);
    TS_RETURN_IF_ERROR(append(std::move(row)));
    note_device_health();
    return {};
  }

  // Says so when a device turns unhealthy (a failed health check: it backs off) and when
  // every device is healthy again.
  void note_device_health() {
    const bool degraded = s_.runner->degraded();
    if (degraded == degraded_) return;
    degraded_ = degraded;
    if (degraded)
      s_.log(LogLevel::kWarn, "a device failed its health check and backs off; the others go on (" +
                                  s_.runner->status_line() + ")");
    else
      s_.log(LogLevel::kInfo, "every device is healthy again");
  }

  // --- budgets and ends ---------------------------------------------------------------

  void stop(StopReason reason, std::string detail) {
    if (stopped_) return;
    stopped_ = true;
    s_.report.reason = reason;
    s_.report.detail = std::move(detail);
  }

  // True (and stopped) when the run must end before the next candidate, or before the
  // next generation when `between_generations`.
  bool check_budgets(bool between_generations) {
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
               : "no faster config since generation " + std::to_string(s_.last_improving_generation) + " (" +
                     std::to_string(s_.next_generation - 1 - s_.last_improving_generation) +
                     " generations, --patience " + std::to_string(b.patience) + ")");
    }
    return stopped_;
  }

  void generation_done(int generation) {
    std::int64_t n = 0;
    std::map<std::string, int> outcomes;
    for (auto it = history_.rows().rbegin(); it != history_.rows().rend() && it->generation == generation; ++it)
      if (it->evaluated() && it->session == s_.session) {
        ++n;
        ++outcomes[outcome_name(it->outcome)];
      }
    std::string parts;
    for (const auto& [name, c] : outcomes) parts += (parts.empty() ? "" : ", ") + std::to_string(c) + " " + name;
    char buf[120] = "";
    if (s_.best_ms)
      std::snprintf(buf, sizeof buf, "; best %.4g ms, %.2f TFLOP/s", *s_.best_ms, s_.best_tflops.value_or(0));
    s_.log(LogLevel::kInfo, "generation " + std::to_string(generation) + ": " + std::to_string(n) + " evaluated" +
                                (parts.empty() ? "" : " (" + parts + ")") + buf);
    if (s_.observer) s_.observer->on_generation(progress());
  }

  LoopProgress progress() const {
    LoopProgress p;
    p.generation = s_.current_generation;
    p.evaluated = s_.evaluated_count;
    p.evaluated_session = s_.evaluated_session;
    p.rejected = s_.rejected_count;
    p.outcomes = s_.outcomes;
    p.best_ms = s_.best_ms;
    p.best_tflops = s_.best_tflops;
    p.best_template = s_.best_template;
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

  // --- the end: re-timing the finalists -------------------------------------------------

  void collect_search_winners() {
    for (auto& t : s_.targets)
      if (t.best) s_.report.winners.push_back(entry_for(t, history_.rows()[*t.best], nullptr));
  }

  Status retime() {
    if (s_.options.retime_top <= 0) {
      collect_search_winners();
      return {};
    }
    for (auto& t : s_.targets) {
      const std::string name = t.target.tmpl->name();
      auto finalists = retime_finalists(history_.rows(), name, s_.options.retime_top);
      if (finalists.empty()) continue;
      s_.log(LogLevel::kInfo, "re-timing the " + std::to_string(finalists.size()) + " fastest configs of " + name);
      const auto t0 = Clock::now();
      auto results = tilesmith::retime(
          retimer_, *t.target.tmpl, s_.options.problem, finalists, [this] { return s_.stop_requested(); },
          [this](const RetimeResult& rr) {
            json ev{{"event", "retime"},
                    {"session", s_.session},
                    {"template", rr.template_name},
                    {"config_hash", rr.row.config_hash},
                    {"history_row", rr.row.row},
                    {"outcome", outcome_name(rr.retimed.outcome)}};
            if (rr.retimed.ok()) ev["median_ms"] = rr.retimed.timing.median_ms;
            note_journal(s_.journal.append(ev, false));
            if (!rr.retimed.ok())
              s_.log(LogLevel::kWarn, "finalist row " + std::to_string(rr.row.row) + " of " + rr.template_name +
                                          " failed its re-timing: " + outcome_name(rr.retimed.outcome) +
                                          (rr.retimed.message.empty() ? "" : " (" + rr.retimed.message + ")"));
          });
      add_measure(seconds_since(t0), false);
      if (s_.stop_requested()) {
        s_.log(LogLevel::kWarn, "re-timing abandoned (stop requested); best_config.json keeps the search's best");
        s_.report.winners.clear();
        collect_search_winners();
        return {};
      }
      const RetimeResult* winner = retime_winner(results);
      if (!winner) {
        s_.log(LogLevel::kError, "no finalist of " + name +
                                     " passed its re-timing; its best_config.json entry is removed rather than "
                                     "left unconfirmed");
        TS_RETURN_IF_ERROR(remove_best_config_entry(best_path_, entry_for(t, *finalists.front(), nullptr).key()));
      } else {
        BestEntry entry = entry_for(t, winner->row, &winner->retimed);
        for (const auto& rr : results) {
          json f{{"config_hash", rr.row.config_hash},
                 {"history_row", rr.row.row},
                 {"search_median_ms", rr.row.median_ms.value_or(0)},
                 {"outcome", outcome_name(rr.retimed.outcome)},
                 {"winner", rr.winner}};
          if (rr.retimed.ok()) f["retime_median_ms"] = rr.retimed.timing.median_ms;
          entry.retime.push_back(f);
        }
        TS_RETURN_IF_ERROR(upsert_best_config(best_path_, entry).with_context("writing best_config.json"));
        s_.report.winners.push_back(entry);
      }
      for (auto& rr : results) s_.report.retimes.push_back(std::move(rr));
    }
    return {};
  }

  void finish_session() {
    s_.report.wall_s = seconds_since(s_.started);
    s_.report.devices = s_.runner->width();
    s_.report.device_summaries = s_.runner->device_summaries();
    s_.report.vendor = s_.vendor;
    s_.report.vendor_name = s_.vendor_name;
    s_.report.vendor_note = s_.vendor_note;
    s_.report.rows = history_.rows();
    note_journal(s_.journal.append(json{{"event", "end"},
                                        {"session", s_.session},
                                        {"time", utc_timestamp_now()},
                                        {"reason", stop_reason_name(s_.report.reason)},
                                        {"detail", s_.report.detail},
                                        {"evaluated", s_.evaluated_session}}));
  }

  GenerationLoop::State& s_;
  HistoryFile& history_;
  fs::path best_path_;
  Evaluator& retimer_;
  RowMaker rows_;
  ResumePoint resume_;
  bool stopped_ = false;
  bool degraded_ = false;  // a device was unhealthy when last looked at
};

}  // namespace

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
