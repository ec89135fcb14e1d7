#pragma once
// Several recordings behind one Evaluator, so a problem set can run on the replay
// backend: each recording is its own source-less template (recorded_template.h), and a
// candidate is answered by the recording of its template's name and its problem. Every
// recording answers only for the problem it recorded (ReplayEvaluator), so a set problem
// is tuned on recorded measurements of its own shape or not at all.
//
// Template names: a recording is named after its file, except that recordings of one
// kernel (the cache's kernel_name) at several problems are all named after the kernel, as
// a GPU run names them: then what a problem set learned on one problem (the warm start
// from a tuned neighbour's winners) reaches the next problem's template of that kernel.
//
// All recordings must come from one device (the same device_name): a run compares its
// results with each other, as with several GPUs. Two recordings of one problem must have
// different names.
//
// Not thread-safe (like every Evaluator); the recordings are shared.

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "runtime/evaluator.h"
#include "runtime/replay/recording.h"
#include "runtime/replay/replay_evaluator.h"

namespace tilesmith::replay {

// The recordings a list of paths names: a file as it is, a folder as every *.json and
// *.json.gz directly in it, in name order. not_found for a missing path, invalid_argument
// for a folder that holds none.
Result<std::vector<std::filesystem::path>> expand_recording_paths(const std::vector<std::filesystem::path>& paths);

// Loads every file and names the templates (above); invalid_argument when two recordings
// of one problem share a name or the devices differ (naming both); the loader's errors,
// naming the file.
Result<std::vector<std::shared_ptr<const Recording>>> load_recordings(
    const std::vector<std::filesystem::path>& files, const RecordingOptions& options);

// The recordings whose problem is `problem`: the same M, N and K (the recordings do not
// record types or layouts; Recording::problem() says what they stand for: fp32 NN), and
// the same types and layouts as that.
// Whether `recording` answers for `problem` (the test recordings_for applies).
bool answers_for(const Recording& recording, const GemmProblem& problem);

std::vector<std::shared_ptr<const Recording>> recordings_for(
    const std::vector<std::shared_ptr<const Recording>>& recordings, const GemmProblem& problem);

class ReplaySetEvaluator final : public Evaluator {
 public:
  // `recordings` non-empty, as load_recordings returns them.
  ReplaySetEvaluator(std::vector<std::shared_ptr<const Recording>> recordings, std::uint64_t seed);

  const DeviceFacts& device() const override { return evaluators_.front()->device(); }
  // Both go to the recording of the template's name and the problem (a name with one
  // recording: that one, which refuses another problem itself); none is invalid.
  Evaluation prepare(const KernelTemplate& tmpl, const GemmProblem& problem, const Config& config) override;
  Evaluation evaluate(const KernelTemplate& tmpl, const GemmProblem& problem, const Config& config) override;
  // The first recording of `problem` that holds a vendor time answers.
  Result<Evaluation> vendor_baseline(const GemmProblem& problem) override;
  std::string vendor_name() const override { return evaluators_.front()->vendor_name(); }
  Result<ReadFloor> read_floor(const GemmProblem& problem) override { return evaluators_.front()->read_floor(problem); }

 private:
  ReplayEvaluator* find(const KernelTemplate& tmpl, const GemmProblem& problem, Evaluation* e);

  std::vector<std::unique_ptr<ReplayEvaluator>> evaluators_;
  std::vector<std::shared_ptr<const Recording>> recordings_;  // evaluators_'s, in order
};

}  // namespace tilesmith::replay
