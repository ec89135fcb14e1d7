#pragma once
// journal.jsonl: the run's own bookkeeping beside history.csv, one JSON object a line,
// appended. It holds what history.csv cannot: each generation's plan (the candidates
// chosen, before any is evaluated), "started" markers written before a candidate is
// compiled or evaluated, sessions, vendor baselines, re-timings and ends. With it a
// resumed run finishes an interrupted generation exactly as it would have gone and
// records the candidate that was in flight when the process or the machine died as a
// crash instead of running it again (tuner/records/resume.h). Event kinds: docs/autotune-loop.md.
//
// Thread-safe: append() may be called from the compile-ahead threads and the loop's.

#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/status.h"
#include "registry/device_facts.h"

namespace tilesmith {

inline constexpr const char* kJournalFileName = "journal.jsonl";

class RunJournal {
 public:
  // Reads the journal (a missing file is an empty one). A torn last line (no newline, or
  // not JSON) is truncated away and fsync'd; a line that is not JSON before the last one
  // is skipped and counted in skipped_lines(). io_error when it cannot be read or fixed.
  static Result<RunJournal> open(const std::filesystem::path& path);

  const std::filesystem::path& path() const { return path_; }
  // Events read at open (not those appended since).
  const std::vector<nlohmann::json>& events() const { return events_; }
  std::size_t repaired_bytes() const { return repaired_bytes_; }
  std::size_t skipped_lines() const { return skipped_lines_; }

  // Appends one event as one line with one write(). `durable`: fsync before returning
  // (markers that must survive a machine crash). Without it the line reaches the disk
  // with the next durable append, which is enough for facts a crash may lose.
  Status append(const nlohmann::json& event, bool durable = true);

 private:
  std::filesystem::path path_;
  std::vector<nlohmann::json> events_;
  std::size_t repaired_bytes_ = 0;
  std::size_t skipped_lines_ = 0;
  std::unique_ptr<std::mutex> mutex_ = std::make_unique<std::mutex>();
};

// The last convergence estimate a run recorded: plan events carry "converged" (the
// probability that the best found is within "convergence_margin" of the space's best)
// and "evaluated" (evaluations before the plan) when the proposers gave one; end events
// the last one, with "converged_at". Read-only
// (a torn line is skipped, not repaired); nullopt for a missing file or no estimate.
struct ConvergenceRecord {
  double probability = 0;
  double margin = 0.05;
  std::int64_t evaluated = 0;
};
std::optional<ConvergenceRecord> read_last_convergence(const std::filesystem::path& journal);

// The device as the run's first session recorded it (its "session" event), read-only like
// read_last_convergence; nullopt for a missing file or no such event.
std::optional<DeviceFacts> read_first_device(const std::filesystem::path& journal);

}  // namespace tilesmith
