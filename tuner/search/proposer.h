#pragma once
// Proposers suggest configurations to evaluate: the LLM, evolutionary/surrogate
// search, random, exhaustive. Generic: a proposer sees only the parameter space, the
// context constants and the history, never a particular kernel's parameter names.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "registry/config.h"
#include "registry/outcome.h"
#include "registry/space.h"

namespace tilesmith {

// One evaluated (or rejected) config, as proposers see the history.
struct Trial {
  Config config;
  Outcome outcome = Outcome::kInvalid;
  // What the search minimises, for an ok trial: the run's objective
  // (tuner/records/objective.h), the median time in ms unless the run tunes for energy or
  // edp. Proposers rank by it alone, so an ok trial without it (no energy figure) ranks as
  // a failure.
  std::optional<double> score;
  std::string proposer;
  std::string message;  // reason or compile-log excerpt for failures
  // The median time of an ok trial, shown beside a score that is not the time (the LLM's
  // prompt gives the throughput from it).
  std::optional<double> median_ms;
};

// What won on another problem of the same problem set (docs/problem-sets.md), for
// proposers that can learn from it: the LLM's prompt cites these.
struct RelatedResult {
  std::string name;           // the problem's name in the set
  std::string problem;        // "16x6144x4096 bf16 NN"
  std::string template_name;
  std::string config;         // the winning config, JSON text
  double ms = 0;
  std::optional<double> vendor_ratio;  // vendor ms / ours: above 1 is faster than the vendor library
};

// One configuration measured by an earlier search of the same template on another device or
// problem (`--prior`, tuner/search/prior.h): what the new search may learn the shape of the
// space from. Only the order of the times matters to a proposer (another GPU's times differ by
// a scale), lower being better.
struct PriorMeasurement {
  Config config;
  double time_ms = 0;
};

struct ProposalRequest {
  const ParamSpace* space = nullptr;
  SpaceContext context;             // problem/device constants and limits
  const std::vector<Trial>* history = nullptr;  // everything tried so far, all outcomes
  int count = 8;                    // how many distinct new configs are wanted
  std::uint64_t seed = 0;           // per generation; same seed + history => same proposals
  int generation = 0;
  // Winners of related problems of the same set, nearest first; nullptr or empty: none.
  const std::vector<RelatedResult>* related = nullptr;
  // The template's seeds (KernelTemplate::seeds: schedules its author knows to be good on
  // its hardware), for a search's first generation; nullptr or empty: none. Starting
  // points, not answers: each is measured like any other candidate.
  const std::vector<Config>* seeds = nullptr;
  // When set, the proposer is asked how likely it is that the best configuration found
  // is within this fraction of the best in the space (0.05: 5%), i.e. that no untried
  // valid configuration is faster than best / (1 + margin). See ProposalBatch::converged.
  std::optional<double> convergence_margin;
  // Configs being measured (overlapped generations): not in `history` yet, and proposing
  // one again is a wasted slot (the loop drops it). nullptr or empty: none.
  const std::vector<Config>* pending = nullptr;
  // An earlier search's measurements of this template elsewhere (`--prior`), the same
  // pointer on every call of a run; nullptr or empty: none. evolve models the space with it.
  const std::vector<PriorMeasurement>* prior = nullptr;
};

struct Proposal {
  Config config;
  std::string rationale;
  // Who produced this one ("llm:gpt-5", "random"): set where a batch can mix sources
  // (FallbackProposer, and LlmProposer for uniformity); "" means the batch's proposer.
  std::string proposer;
};

// A candidate the proposer produced but that failed validation (LLM replies): kept so
// the history and the next prompt can say why.
struct RejectedProposal {
  std::string raw;     // what was proposed, as text
  std::string reason;
  // Who proposed it ("llm:gpt-5"): set where a batch can mix sources (FallbackProposer,
  // and LlmProposer for uniformity); "" means the batch's proposer. The loop attributes
  // the history row by it, so a mixed batch's rejections are not all blamed on its first
  // source.
  std::string proposer;
};

struct ProposalBatch {
  std::string proposer;  // name (and model) that produced these
  std::vector<Proposal> proposals;       // valid, distinct, not in history
  std::vector<RejectedProposal> rejected;
  Status status;  // non-ok when the proposer could not produce anything (endpoint down ...)
  // The proposer's estimate of that probability, from the history it was given (before
  // this batch), when the request asked and the proposer can tell; nullopt otherwise
  // (the LLM, random, exhaustive, a model still in its initial design).
  std::optional<double> converged;
};

class Proposer {
 public:
  virtual ~Proposer() = default;
  virtual std::string name() const = 0;
  virtual ProposalBatch propose(const ProposalRequest& request) = 0;
  // True when propose() shares nothing with other proposers' calls (no client, file or
  // counter of the run, only its own state and the request's immutable space): the loop
  // then asks every template's proposer at once, one thread each. A generation of six
  // templates' evolve costs the slowest template's time instead of the sum.
  virtual bool independent() const { return false; }
};

}  // namespace tilesmith
