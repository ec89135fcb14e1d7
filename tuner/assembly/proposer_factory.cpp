#include "tuner/assembly/proposer_factory.h"

#include <cmath>

#include "tuner/search/fallback_proposer.h"
#include "tuner/search/llm_proposer.h"
#include "tuner/search/offline_proposers.h"
#include "tuner/search/warm_start_proposer.h"

namespace tilesmith {

namespace {
std::string known_names() {
  std::string s = "auto, llm";
  for (const auto& n : offline_proposer_names()) s += ", " + n;
  return s;
}

std::chrono::milliseconds ms(double seconds) {
  return std::chrono::milliseconds(static_cast<long long>(std::llround(seconds * 1000)));
}
}  // namespace

Result<std::string> resolve_proposer(const ProposerSettings& settings) {
  std::string name = settings.name.empty() ? "auto" : settings.name;
  if (name == "auto") name = (!settings.llm.url.empty() || !settings.llm.model.empty()) ? "llm" : default_offline_proposer();
  if (name == "llm") {
    if (settings.llm.model.empty())
      return Status::invalid("the llm proposer needs a model: give --llm-model (and --llm-url for a server other than " +
                             std::string(settings.llm.provider == "anthropic" ? "Anthropic's" : "OpenAI's") + ")");
    return name;
  }
  auto p = make_offline_proposer(name);
  if (!p.ok()) return Status::invalid("unknown proposer '" + name + "' (known: " + known_names() + ")");
  return (*p)->name();
}

Result<std::unique_ptr<ProposerFactory>> ProposerFactory::create(ProposerSettings settings) {
  auto f = std::unique_ptr<ProposerFactory>(new ProposerFactory());
  TS_ASSIGN_OR_RETURN(f->resolved_, resolve_proposer(settings));
  const std::string fallback = settings.fallback.empty() ? default_offline_proposer() : settings.fallback;
  {
    auto p = make_offline_proposer(fallback);
    if (!p.ok()) return Status::invalid("unknown fallback proposer '" + fallback + "' (known: " + known_names() + ")");
    f->fallback_ = (*p)->name();
  }
  if (f->resolved_ == "llm") {
    const LlmSettings& l = settings.llm;
    llm::ProviderOptions o;
    TS_ASSIGN_OR_RETURN(o.kind, llm::parse_provider_kind(l.provider));
    o.base_url = l.url;
    o.model = l.model;
    o.api_key_env = l.api_key_env;
    o.connect_timeout = ms(l.connect_timeout_s);
    o.request_timeout = ms(l.request_timeout_s);
    o.retry.max_retries = l.retries;
    o.retry.total_deadline = ms(l.total_deadline_s);
    o.log_path = l.log_path;
    if (!l.capabilities_path.empty()) o.capabilities = std::make_shared<llm::CapabilityCache>(l.capabilities_path);
    auto provider = llm::make_provider(std::move(o));
    if (!provider.ok()) return provider.status().with_context("LLM provider");
    f->provider_ = std::shared_ptr<llm::LlmProvider>(std::move(provider).value());
  }
  f->settings_ = std::move(settings);
  return f;
}

std::string ProposerFactory::describe() const {
  if (!provider_) return resolved_;
  return "llm:" + provider_->model() + " (" + provider_->provider_name() + " at " + provider_->endpoint() + "), " +
         fallback_ + " for generation 0 and whenever the endpoint fails";
}

Result<std::unique_ptr<Proposer>> ProposerFactory::make(const KernelTemplate& tmpl, const DeviceFacts& device,
                                                        const GemmProblem& problem,
                                                        const std::vector<WarmStartSeed>& first_seeds,
                                                        const std::vector<PriorMeasurement>& first_prior) const {
  TS_ASSIGN_OR_RETURN(auto proposer, make_search(tmpl, device, problem));
  std::vector<WarmStartSeed> seeds = first_seeds;
  if (auto given = settings_.warm_start.find(tmpl.name()); given != settings_.warm_start.end())
    seeds.insert(seeds.end(), given->second.begin(), given->second.end());
  WarmStartOptions wo;
  wo.prior = first_prior;
  if (auto given = settings_.prior.find(tmpl.name()); given != settings_.prior.end())
    wo.prior.insert(wo.prior.end(), given->second.begin(), given->second.end());
  if (seeds.empty() && wo.prior.empty()) return proposer;
  wo.label = tmpl.name();
  wo.on_event = settings_.on_event;
  return std::unique_ptr<Proposer>(new WarmStartProposer(std::move(seeds), std::move(proposer), std::move(wo)));
}

Result<std::unique_ptr<Proposer>> ProposerFactory::make_search(const KernelTemplate& tmpl, const DeviceFacts& device,
                                                               const GemmProblem& problem) const {
  if (!provider_) return make_offline_proposer(resolved_);
  LlmProposerOptions o;
  o.device = device;
  o.template_name = tmpl.name();
  o.template_description = tmpl.description();
  o.problem = problem;
  o.objective = settings_.objective;
  o.prompt_token_budget = settings_.llm.prompt_token_budget;
  o.max_output_tokens = settings_.llm.max_output_tokens;
  o.temperature = settings_.llm.temperature;
  auto primary = std::make_unique<LlmProposer>(provider_, std::move(o));
  TS_ASSIGN_OR_RETURN(auto fallback, make_offline_proposer(fallback_));
  FallbackOptions fo;
  fo.on_event = settings_.on_event;
  return std::unique_ptr<Proposer>(new FallbackProposer(std::move(primary), std::move(fallback), std::move(fo)));
}

}  // namespace tilesmith
