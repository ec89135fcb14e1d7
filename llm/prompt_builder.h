#pragma once
// The proposal prompt: device facts, the kernel template, its parameters (meaning and
// domain), derived values and constraints, the GEMM problem, and a compact history
// (counts per outcome, the fastest configs with times and throughput, recent failures by
// outcome with compile-log excerpts, per-parameter value statistics, the problems with the
// model's previous reply), then the request for N new distinct configs and the reply
// format.
//
// The prompt stays within a token budget however long the history grows: tokens are
// estimated as ceil(bytes / 4), and the history sections are rendered at successively
// shorter detail levels until system + user + reserved_tokens fits. Text from the history
// (compile logs, rejection reasons) is sanitised and cut, and the system message tells the
// model it is data, not instructions.

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "llm/history_summary.h"
#include "registry/device_facts.h"
#include "registry/problem.h"
#include "registry/space.h"

namespace tilesmith::llm {

// What won on another problem of the same problem set (docs/problem-sets.md).
struct RelatedProblem {
  std::string name;      // the problem's name in the set
  std::string problem;   // "16x6144x4096 bf16 NN"
  std::string template_name;
  std::string config;    // JSON text
  double ms = 0;
  std::optional<double> vendor_ratio;  // vendor ms / ours
};

struct PromptInputs {
  DeviceFacts device;
  std::string template_name;
  std::string template_description;
  const ParamSpace* space = nullptr;  // required; not owned
  GemmProblem problem;
  std::span<const TrialView> history;
  // Winners of related problems of the same set, nearest first; a short section when any.
  std::vector<RelatedProblem> related;
  // Reasons the model's previous reply was (partly) rejected, as given to the next prompt.
  std::vector<std::string> previous_rejections;
  // Configs proposed before and being measured now (overlapped generations): listed so
  // the model does not propose them again. Empty: the section and its words are left out.
  std::span<const Config> pending;
  // What the run minimises when it is not the time (autotune-loop --objective energy|edp):
  // its words and unit ("energy per launch", "J"). The history's scores are in that unit
  // and the prompt asks for the lowest of it. Empty: the median time, in ms.
  std::string objective;
  std::string objective_unit;
  int count = 8;              // configs wanted
  int token_budget = 12000;   // for system + user + reserved_tokens
  int reserved_tokens = 0;    // what the provider may add (the schema in text modes)
};

struct Prompt {
  std::string system;
  std::string user;
  int estimated_tokens = 0;  // of system + user (reserved_tokens not included)
  int detail_level = 0;      // 0 = fullest history; higher = shrunk to fit
};

// ceil(bytes / 4): a deliberately simple estimate (English and JSON run 3.5-4.5 bytes a
// token with current tokenizers).
int estimate_tokens(std::string_view text);

// failed_precondition when even the shortest history does not fit the budget (the
// message says how many tokens are needed); invalid_argument without a space or count.
Result<Prompt> build_prompt(const PromptInputs& inputs);

}  // namespace tilesmith::llm
