#include "tuner/search/fallback_proposer.h"

#include <algorithm>
#include <cmath>
#include <set>

namespace tilesmith {

FallbackProposer::FallbackProposer(std::unique_ptr<Proposer> primary, std::unique_ptr<Proposer> fallback,
                                   FallbackOptions options)
    : primary_(std::move(primary)), fallback_(std::move(fallback)), options_(std::move(options)) {}

std::string FallbackProposer::name() const { return primary_->name() + "|" + fallback_->name(); }

std::chrono::steady_clock::time_point FallbackProposer::now() const {
  return options_.clock ? options_.clock() : std::chrono::steady_clock::now();
}

void FallbackProposer::emit(const std::string& message) const {
  if (options_.on_event) options_.on_event(message);
}

void FallbackProposer::open_breaker(const std::string& why) {
  ++breaker_.consecutive_failures;
  breaker_.open = true;
  const int doublings = std::min(breaker_.consecutive_failures - 1, 30);
  const double factor = std::ldexp(1.0, doublings);
  breaker_.calls_until_retry = static_cast<int>(
      std::min<double>(options_.initial_backoff_calls * factor, options_.max_backoff_calls));
  auto wait = std::chrono::milliseconds(static_cast<long long>(std::min<double>(
      double(options_.initial_backoff_time.count()) * factor, double(options_.max_backoff_time.count()))));
  breaker_.retry_not_before = now() + wait;
  emit(primary_->name() + " failed (" + why + "); using " + fallback_->name() + " for at least " +
       std::to_string(breaker_.calls_until_retry) + " generation(s) and " +
       std::to_string(wait.count() / 1000) + " s");
}

ProposalBatch FallbackProposer::propose(const ProposalRequest& request) {
  const std::string primary_name = primary_->name();
  const std::string fallback_name = fallback_->name();
  // Each proposal and rejection keeps the name of the source that made it: the batch's
  // own name becomes "llm:gpt-5+evolve" when both contribute.
  auto tag = [](ProposalBatch& b) {
    for (auto& p : b.proposals)
      if (p.proposer.empty()) p.proposer = b.proposer;
    for (auto& r : b.rejected)
      if (r.proposer.empty()) r.proposer = b.proposer;
  };

  bool ask_primary = request.generation >= options_.offline_generations;
  if (ask_primary && breaker_.open) {
    if (breaker_.calls_until_retry > 0 || now() < breaker_.retry_not_before) {
      ask_primary = false;
      if (breaker_.calls_until_retry > 0) --breaker_.calls_until_retry;
    } else {
      emit("retrying " + primary_name + " after backoff");
    }
  }

  ProposalBatch out;
  Status primary_failure;
  if (ask_primary) {
    ProposalBatch primary = primary_->propose(request);
    tag(primary);
    breaker_.last_primary_status = primary.status;
    if (!primary.status.ok()) {
      breaker_.consecutive_empty = 0;
      primary_failure = primary.status;
      open_breaker(primary.status.message());
    } else if (primary.proposals.empty()) {
      if (++breaker_.consecutive_empty >= options_.max_empty_batches) {
        breaker_.consecutive_empty = 0;
        open_breaker(std::to_string(options_.max_empty_batches) + " replies in a row without a valid proposal");
      }
    } else {
      if (breaker_.open || breaker_.consecutive_failures > 0) emit(primary_name + " is back");
      breaker_.open = false;
      breaker_.consecutive_failures = 0;
      breaker_.consecutive_empty = 0;
      breaker_.calls_until_retry = 0;
    }
    out = std::move(primary);
    out.status = Status();
  }

  const int have = static_cast<int>(out.proposals.size());
  const bool need_fallback = !ask_primary || !primary_failure.ok() || (options_.fill_up && have < request.count);
  Status fallback_status;
  if (need_fallback && have < request.count) {
    // Ask for the full count: some may duplicate the primary's and are skipped.
    ProposalBatch extra = fallback_->propose(request);
    tag(extra);
    fallback_status = extra.status;
    std::set<Config> taken;
    for (const auto& p : out.proposals) taken.insert(p.config);
    bool used = false;
    for (auto& p : extra.proposals) {
      if (static_cast<int>(out.proposals.size()) >= request.count) break;
      if (!taken.insert(p.config).second) continue;
      out.proposals.push_back(std::move(p));
      used = true;
    }
    for (auto& r : extra.rejected) out.rejected.push_back(std::move(r));
    if (!ask_primary || have == 0) out.proposer = extra.proposer.empty() ? fallback_name : extra.proposer;
    else if (used) out.proposer = primary_name + "+" + fallback_name;
  }
  if (out.proposer.empty()) out.proposer = ask_primary ? primary_name : fallback_name;

  if (out.proposals.empty()) {
    if (!primary_failure.ok()) out.status = primary_failure;
    else if (!fallback_status.ok()) out.status = fallback_status;
  }
  return out;
}

}  // namespace tilesmith
