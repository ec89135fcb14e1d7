#pragma once
// Building a run's proposers from its settings: an offline proposer by name, or the LLM
// proposer wrapped by the circuit-breaker fallback (tuner/search/fallback_proposer.h) with the
// default offline proposer behind it; either one behind the warm start
// (tuner/search/warm_start_proposer.h) for a template with seeds. One provider (one HTTP client,
// one llm_log.jsonl) serves every template; each template gets its own proposers (they
// keep per-space state). Not thread-safe.

#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "llm/provider.h"
#include "registry/device_facts.h"
#include "registry/kernel_template.h"
#include "registry/problem.h"
#include "tuner/records/objective.h"
#include "tuner/search/proposer.h"
#include "tuner/search/warm_start.h"

namespace tilesmith {

struct LlmSettings {
  std::string url;            // base URL; empty: the provider's default (OpenAI, Anthropic)
  std::string model;
  std::string api_key_env;    // empty: OPENAI_API_KEY / ANTHROPIC_API_KEY
  std::string provider = "openai";  // openai (and compatible servers) or anthropic
  double request_timeout_s = 600;
  double connect_timeout_s = 10;
  double total_deadline_s = 40 * 60;  // one proposal, all retries included
  int retries = 4;
  std::optional<double> temperature;
  int max_output_tokens = 16384;
  int prompt_token_budget = 12000;
  std::filesystem::path log_path;           // llm_log.jsonl; empty: none
  std::filesystem::path capabilities_path;  // remembered fallbacks; empty: this process only
};

struct ProposerSettings {
  // "auto": the LLM when an endpoint or a model is configured, else the default offline
  // proposer. "llm", or an offline name (offline_proposer_names(), and their aliases).
  std::string name = "auto";
  LlmSettings llm;
  // The offline proposer behind the LLM (seeds generation 0, fills in while the
  // endpoint is down); empty: default_offline_proposer().
  std::string fallback;
  // Earlier winners to evaluate first, by template name (tuner/search/warm_start.h); a template
  // without seeds starts as it would without a warm start.
  std::map<std::string, std::vector<WarmStartSeed>> warm_start;
  // `--prior`'s measurements, by template name (tuner/search/prior.h), for the search's model.
  std::map<std::string, std::vector<PriorMeasurement>> prior;
  // What the run minimises: the LLM's prompt names it (the offline proposers only see the
  // scores the loop gives them).
  Objective objective = Objective::kTime;
  // Lines for the loop's log from the circuit breaker and the warm start.
  std::function<void(const std::string&)> on_event;
};

// "llm" or the canonical offline name that `settings` selects; invalid_argument naming
// the known names for an unknown one, and for "llm" without a model.
Result<std::string> resolve_proposer(const ProposerSettings& settings);

class ProposerFactory {
 public:
  // Resolves the name and, for the LLM, builds the provider (reads the API key now).
  static Result<std::unique_ptr<ProposerFactory>> create(ProposerSettings settings);

  const std::string& resolved() const { return resolved_; }
  // "evolve", or "llm:<model> (openai at URL) with evolve as fallback".
  std::string describe() const;
  // A new proposer for one template; behind the warm start when it has seeds.
  // `first_seeds` (a problem set's winners of related problems) go before the settings'
  // seeds; `first_prior` (their histories' measurements) before the settings' prior.
  Result<std::unique_ptr<Proposer>> make(const KernelTemplate& tmpl, const DeviceFacts& device,
                                         const GemmProblem& problem,
                                         const std::vector<WarmStartSeed>& first_seeds = {},
                                         const std::vector<PriorMeasurement>& first_prior = {}) const;

 private:
  // The offline proposer, or the LLM behind the fallback: what the warm start hands over to.
  Result<std::unique_ptr<Proposer>> make_search(const KernelTemplate& tmpl, const DeviceFacts& device,
                                                const GemmProblem& problem) const;

  ProposerSettings settings_;
  std::string resolved_, fallback_;
  std::shared_ptr<llm::LlmProvider> provider_;
};

}  // namespace tilesmith
