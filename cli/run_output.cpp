#include "cli/run_output.h"

#include <iostream>

#include "base/files.h"
#include "base/format.h"
#include "cli/exit_codes.h"

namespace tilesmith::cli {
namespace fs = std::filesystem;

void ConsoleObserver::log(LogLevel level, const std::string& message) {
  // LogLevel's order: debug, info, warn, error.
  static constexpr spdlog::level::level_enum kLevels[] = {spdlog::level::debug, spdlog::level::info,
                                                          spdlog::level::warn, spdlog::level::err};
  spdlog::log(kLevels[static_cast<int>(level)], message);
}

int usage(const std::string& message) {
  std::cerr << "autotune-loop: " << message << "\n";
  return kExitUsage;
}

int status_exit(const Status& st) {
  switch (st.code()) {
    case StatusCode::kUnavailable:
      return kExitNoDevice;
    case StatusCode::kInvalidArgument:
    case StatusCode::kNotFound:
    case StatusCode::kParseError:
    case StatusCode::kFailedPrecondition:
      return kExitUsage;
    default:
      return kExitFailed;
  }
}

int refuse(const Status& st) {
  std::cerr << "autotune-loop: " << st.message() << "\n";
  return status_exit(st);
}

Status check_log_file(const RunFlags& f) {
  if (f.no_log_file || f.log_file.empty()) return Status::ok_status();
  const fs::path dir = fs::path(f.log_file).parent_path();
  return check_writable_directory(dir.empty() ? fs::path(".") : dir, "--log-file");
}

std::optional<int> open_output(const RunFlags& f, std::unique_ptr<Console>* console) {
  if (Status st = ensure_directory(f.results); !st.ok()) {
    std::cerr << "autotune-loop: --results: " << st.message() << "\n";
    return kExitFailed;
  }
  ConsoleOptions co;
  co.verbosity = f.quiet ? -1 : f.verbose;
  co.progress = f.progress;
  co.interval_s = f.status_interval_s;
  if (!f.no_log_file)
    co.log_file =
        f.log_file.empty() ? fs::path(f.results) / "autotune-loop.log" : fs::path(f.log_file);
  auto c = Console::create(co);
  if (!c.ok()) return usage(c.status().message());
  *console = std::move(c).value();
  return std::nullopt;
}

void log_run_start(const RunFlags& f, const SingleRun& run) {
  const GenerationLoop& loop = run.loop();
  const GemmProblem& problem = run.problem();
  const DeviceFacts& device = run.device();
  const std::string& proposer = run.proposer();
  const ResumePoint& rp = loop.resume_point();
  const std::size_t rows = loop.history().rows().size();
  if (rows > 0 || rp.session > 1) {
    spdlog::info(
        "resuming run {} in {}: session {}, {} rows, next generation {}{}", rp.run_id, f.results,
        rp.session, rows, rp.unfinished.empty() ? rp.next_generation : rp.unfinished.front().generation,
        rp.crashed.empty()
            ? ""
            : ", " + std::to_string(rp.crashed.size()) + " candidate(s) in flight at the stop");
  } else {
    spdlog::info("new run in {}", f.results);
  }
  if (loop.repaired_history_bytes())
    spdlog::warn(
        "history.csv ended in a torn row ({} bytes: \"{}\"), cut off; every complete row is kept",
        loop.repaired_history_bytes(), loop.history().repaired_excerpt());
  for (const auto& note : loop.notes()) spdlog::warn(note);
  if (loop.repaired_journal_bytes())
    spdlog::info("journal.jsonl ended in a torn line ({} bytes), cut off",
                 loop.repaired_journal_bytes());
  spdlog::info("problem {} on {} [{} {}], measured {}", problem.describe(), device.name,
               device.backend, device.arch, run.opened().description);
  if (f.evaluator.in_process && !run.replay())
    spdlog::warn(
        "--in-process: candidates run in this process; a kernel that faults or hangs ends the run "
        "(resume "
        "records it as crash)");
  std::string tnames;
  for (const auto* t : run.templates())
    tnames += (tnames.empty() ? "" : ", ") + t->name() + "@" + t->source_hash();
  spdlog::info("templates: {}; proposer: {}; {} candidates per generation; seed {}", tnames,
               proposer, f.candidates, f.seed);
  std::string budgets;
  if (f.generations) budgets += " --generations " + std::to_string(f.generations);
  if (f.max_evals) budgets += " --max-evals " + std::to_string(f.max_evals);
  if (f.hours > 0) budgets += " --hours " + format_number(f.hours);
  if (f.patience) budgets += " --patience " + std::to_string(f.patience);
  if (f.stop_when_converged)
    budgets += " --stop-when-converged " +
               (f.stop_when_converged->empty() ? "5%/0.95" : *f.stop_when_converged);
  spdlog::info("budget:{}",
               budgets.empty() ? " none (until the space is exhausted or Ctrl-C)" : budgets);
}

}  // namespace tilesmith::cli
