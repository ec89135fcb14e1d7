#pragma once
// A primary proposer (the LLM) backed by a fallback (an offline proposer: random,
// evolutionary, ...) behind a circuit breaker, so that a night of tuning goes on when the
// endpoint is down, slow or useless.
//
//  - Generations below `offline_generations` (default: generation 0) are seeded by the
//    fallback alone.
//  - When the primary fails (non-ok status: the endpoint is down after its retries, a
//    401, ...) or returns no valid proposal `max_empty_batches` times in a row, the
//    breaker opens: this generation is served by the fallback, and so are the next ones
//    until a backoff has passed, counted both in propose() calls and in time (both must
//    have passed). The backoff doubles with every consecutive failure up to a cap. Then
//    the primary is tried again (half-open): success closes the breaker, failure reopens it
//    with the next backoff.
//  - When the primary returns fewer valid proposals than requested, the fallback fills up
//    the rest (distinct from the primary's).
//  - Every Proposal says who produced it (Proposal::proposer); the batch's `proposer` is
//    the primary's name, the fallback's, or "<primary>+<fallback>" when mixed. Rejected
//    proposals of both are kept, each naming its source (RejectedProposal::proposer).
//  - Status is ok whenever the batch has proposals; otherwise the primary's error (or the
//    fallback's when the primary was not asked or did not fail).
//
// The GPU never waits on the network longer than one primary call, and with the breaker
// open not at all; the loop can also run propose() for the next generation on its own
// thread while the current one is measured (docs/llm.md). Not thread-safe: one propose()
// at a time.

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "tuner/search/proposer.h"

namespace tilesmith {

struct FallbackOptions {
  int offline_generations = 1;  // request.generation below this: fallback only
  bool fill_up = true;
  int max_empty_batches = 3;  // consecutive primary batches with no valid proposal that count as a failure
  int initial_backoff_calls = 1;  // propose() calls served by the fallback before a retry
  int max_backoff_calls = 32;
  std::chrono::milliseconds initial_backoff_time{std::chrono::seconds(30)};
  std::chrono::milliseconds max_backoff_time{std::chrono::minutes(15)};
  // Time source for the time backoff; empty: std::chrono::steady_clock::now.
  std::function<std::chrono::steady_clock::time_point()> clock;
  // Called with a one-line description when the breaker opens, closes or skips the
  // primary (for the loop's log). May be empty.
  std::function<void(const std::string&)> on_event;
};

class FallbackProposer final : public Proposer {
 public:
  FallbackProposer(std::unique_ptr<Proposer> primary, std::unique_ptr<Proposer> fallback,
                   FallbackOptions options = {});

  std::string name() const override;  // "<primary>|<fallback>"
  ProposalBatch propose(const ProposalRequest& request) override;

  struct BreakerState {
    bool open = false;
    int consecutive_failures = 0;  // failures (and empty-batch streaks) since the last success
    int consecutive_empty = 0;     // primary batches in a row with no valid proposal
    int calls_until_retry = 0;     // propose() calls still to be served by the fallback
    std::chrono::steady_clock::time_point retry_not_before{};
    Status last_primary_status;    // of the last primary call
  };
  const BreakerState& breaker() const { return breaker_; }

 private:
  std::chrono::steady_clock::time_point now() const;
  void open_breaker(const std::string& why);
  void emit(const std::string& message) const;

  std::unique_ptr<Proposer> primary_;
  std::unique_ptr<Proposer> fallback_;
  FallbackOptions options_;
  BreakerState breaker_;
};

}  // namespace tilesmith
