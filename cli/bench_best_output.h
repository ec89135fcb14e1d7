#pragma once
// bench-best's output: the table of one config (--config) and, over best_config.json
// files, the per-entry tables or one JSON object. What is measured is bench_best.cpp's;
// this file only says it.

#include <filesystem>
#include <optional>
#include <utility>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/paired_ratio.h"
#include "tuner/loop/certify.h"
#include "cli/bench_best.h"
#include "tuner/assembly/open_evaluator.h"
#include "runtime/evaluation.h"
#include "runtime/read_floor.h"
#include "tuner/records/best_config.h"
#include "registry/kernel_template.h"

namespace tilesmith::cli {

// One line of the --config table: ours or the vendor.
struct Row {
  std::string label;
  Evaluation e;
};

// One best_config.json entry measured now, with what it is compared with and its status.
struct EntryResult {
  const BestEntry* entry = nullptr;
  std::filesystem::path file;  // the best_config.json it came from
  std::string status;  // ok, DRIFT, FAILED, MISMATCH
  std::vector<std::string> notes;
  ConfigUpdate update;  // the recorded config brought up to date with the template
  std::optional<Evaluation> now;
  std::optional<Evaluation> vendor;
  std::string vendor_note;
  std::optional<double> drift;  // now / recorded - 1
  std::optional<ReadFloor> floor;
  std::string floor_note;
  std::optional<analysis::PairedRatio> paired;  // --rounds: ours and the vendor alternating
  std::string paired_note;                      // why there is no paired ratio
  std::optional<analysis::PairedRatio> paired_steady;  // the same, back to back (steady_ms)
  const KernelTemplate* tmpl = nullptr;         // the template it ran with (nullptr: none)
};

// --rounds: the entries benched for one problem, measured against each other in the rounds.
struct ProblemContest {
  std::string problem;               // its description
  std::vector<std::size_t> entries;  // indices into the results, in the contest's order
  Certification certification;       // over those entries (tuner/loop/certify.h)
};

// The entries of the files, split by whether this device and the filters keep them.
struct Selection {
  std::vector<const BestEntry*> selected;      // for this device, through the filters
  std::vector<const BestEntry*> other_device;  // the rest
  std::size_t slower_left_out = 0;             // --fastest-only: this device's entries not kept
};

// The best_config.json files read, and problem-set folders with no result yet.
struct Sources {
  std::vector<std::filesystem::path> files;
  std::vector<std::string> missing;  // problem-set folders without a result yet
  std::string label() const {
    return files.size() == 1 ? files.front().string() : std::to_string(files.size()) + " best_config.json files";
  }
};

// printf with one number, as a string.
std::string fmt(const char* f, double v);

// "[n]": how the tables and the rounds name the entry at `index` (n = index + 1).
std::string entry_tag(std::size_t index);

// A number of a metrics object; nullopt when absent or not a number.
std::optional<double> metric(const nlohmann::json& m, const char* name);

// Which of ours and the vendor ran faster than the floor (then it is no floor).
std::vector<std::string> floor_beaten_by(const std::optional<ReadFloor>& floor, const std::optional<Evaluation>& ours,
                                         const std::optional<Evaluation>& vendor);
// One line: the floor, and ours and the vendor as a share of it (a note when one beat it).
std::string floor_line(const std::optional<ReadFloor>& floor, const std::string& note,
                       const std::optional<Evaluation>& ours, const std::optional<Evaluation>& vendor);

// What the device did while `e` was timed: "SM 1980 MHz, mem 2619 MHz, 612.3 W, max 71 C,
// 0.4375 J/launch (2.51 TFLOP/s per W), throttled (sw_power_cap) in 3 of 4 readings".
// `flops`: one launch's work, for the per-watt figure. "" when nothing was read.
std::string telemetry_line(const Evaluation& e, double flops);

// The paired comparison: "ratio 1.032 [1.011, 1.047] (95.0%, 8 rounds alternating ours and
// the vendor; medians ... ms): ours faster", or the note saying why there is none.
std::string paired_text(const std::optional<analysis::PairedRatio>& p, const std::string& note);
nlohmann::json to_json(const analysis::PairedRatio& p);

// Two versions of one template on one config (bench-best --versus-kernels-dir), from the same
// alternating rounds, as a PairedRatio of `first` against `second` (paired_ratio(first_ms,
// second_ms): above 1, `first` is faster): "ratio 1.032 [1.011, 1.047] (95.0%, 8 rounds
// alternating them; medians 0.1346 / 0.1389 ms): FIRST faster", or the note.
std::string versus_text(const std::optional<analysis::PairedRatio>& p, const std::string& note,
                        const std::string& first, const std::string& second);
// The same in --json: rounds, ratio, interval, coverage, first_median_ms, second_median_ms and
// the verdict ("FIRST faster", "SECOND faster", "tie" or "too few rounds").
nlohmann::json versus_json(const analysis::PairedRatio& p, const std::string& first, const std::string& second);

// For an entry tuned for energy or edp (BestEntry::objective), what it was tuned for and
// ours beside the vendor in the figures that matter for it: "energy (energy per launch):
// ours 0.5123 ms, 0.4375 J/GEMM, 2.51 TFLOP/s per W; vendor 0.4981 ms, 0.4710 J/GEMM,
// 2.33 TFLOP/s per W; ours 0.929x the vendor's energy per launch". "" for an entry tuned for
// time. A figure that was not measured is named as missing.
std::string objective_line(const BestEntry& e, const std::optional<Evaluation>& ours,
                           const std::optional<Evaluation>& vendor);

// The recorded re-timing's verdict and interval, for the "recorded" line: "certified after
// 12 rounds, 95% interval of the median [0.5101, 0.5140] ms"; "" for an entry without one.
std::string certification_text(const BestEntry& e);
// Whether `median_ms` lies in the entry's recorded interval of the median (a statement
// about the median), and in the recorded range of the winner's rounds (where one more
// measurement is expected, with the recorded range_coverage); nullopt when the entry
// records none.
std::optional<bool> within_recorded_interval(const BestEntry& e, double median_ms);
std::optional<bool> within_recorded_range(const BestEntry& e, double median_ms);

// --epilogue-cost: the same config and the vendor library timed on the problem without its fused
// epilogue, beside the fused figures, all in one process, in alternating rounds (fused and plain
// of each side, forward then backward): the cost is the median of the rounds' fused / plain
// ratios, so a clock that moves between rounds (an H200 at its power cap) biases neither side.
struct SideCost {
  int rounds = 0;
  double fused_ms = 0, plain_ms = 0;  // medians over the rounds
  double pct = 0;                     // median over the rounds of (fused / plain - 1), in percent
  std::optional<std::pair<double, double>> interval_pct;  // its 95% interval (6 rounds or more)
};
// From one fused and one plain time per round (round order, equal counts, all > 0).
std::optional<SideCost> side_cost(const std::vector<double>& fused_ms, const std::vector<double>& plain_ms);
struct EpilogueCost {
  std::optional<SideCost> ours, vendor;
  std::string note;  // why a figure is missing
};
nlohmann::json to_json(const EpilogueCost& c);
// "epilogue gelu over the plain GEMM: ours +1.2% (0.1850 -> 0.1872 ms), vendor +7.0% (...)".
std::string epilogue_cost_line(const EpilogueCost& c, const GemmProblem& fused);

// bench-best --config: the device, the problem, one line per kernel (ours, the vendor) and the ratio.
void print_table(const DeviceFacts& dev, double bandwidth, const GemmProblem& p, const std::vector<Row>& rows,
                 const std::optional<double>& ratio);

// bench-best over best_config.json files: one JSON object (--json).
void print_json(const Sources& src, const OpenedEvaluator& opened, const DeviceFacts& device, const Selection& sel,
                const std::vector<EntryResult>& results, const std::vector<ProblemContest>& contests, int code);

// The same as tables for people.
void print_text(const Sources& src, Evaluator& ev, const DeviceFacts& device, const Selection& sel,
                const std::vector<EntryResult>& results, const std::vector<ProblemContest>& contests,
                const BenchBestOptions& o, bool drift);

// A contest in words: "4096x4096x4096 bf16 NT: [2] certified faster than the others after 8
// rounds; [1]/[2] 1.021 [1.010, 1.035]", or the tie and the rule that named one.
std::string contest_text(const ProblemContest& c);
nlohmann::json to_json(const ProblemContest& c);

}  // namespace tilesmith::cli
