#include "tuner/bench/recorded_history.h"

#include <algorithm>
#include <numeric>
#include <random>
#include <set>

#include "runtime/replay/recorded_template.h"

namespace tilesmith::bench {

Trial replay_trial(const replay::Recording& recording, replay::ReplayEvaluator& evaluator,
                   const Config& config, const std::string& proposer) {
  const Evaluation e =
      evaluator.evaluate(replay::recorded_template(recording), recording.problem(), config);
  Trial t;
  t.config = config;
  t.outcome = e.outcome;
  if (e.ok()) t.score = t.median_ms = e.timing.median_ms;  // these benchmarks tune for time
  t.proposer = proposer;
  t.message = e.message;
  return t;
}

Result<std::vector<Trial>> recorded_history(const replay::Recording& recording,
                                            replay::ReplayEvaluator& evaluator,
                                            const RecordedHistoryOptions& options) {
  const size_t failures =
      static_cast<size_t>(options.failure_share * static_cast<double>(options.rows) + 0.5);
  const size_t successes = options.rows - std::min(failures, options.rows);
  if (successes > recording.size())
    return Status::invalid("a history of " + std::to_string(options.rows) + " rows with " +
                           std::to_string(successes) +
                           " measurements needs that many recorded "
                           "configurations; " +
                           recording.name() + " has " + std::to_string(recording.size()));
  std::mt19937_64 rng(options.seed);
  std::vector<size_t> order(recording.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::shuffle(order.begin(), order.end(), rng);

  // Failures: uniform draws from the Cartesian product that the space rejects, distinct.
  const ParamSpace& space = recording.space();
  std::vector<std::vector<std::int64_t>> domains;
  for (const auto& p : space.parameters()) domains.push_back(p.values);
  std::vector<PointValues> invalid;
  std::set<PointValues> drawn;
  for (std::uint64_t tries = 0; invalid.size() < failures && tries < 200 * failures + 1000;
       ++tries) {
    PointValues p(domains.size());
    for (size_t d = 0; d < domains.size(); ++d)
      p[d] = domains[d][std::uniform_int_distribution<size_t>(0, domains[d].size() - 1)(rng)];
    if (space.is_valid(p, recording.context()) || !drawn.insert(p).second) continue;
    invalid.push_back(std::move(p));
  }
  if (invalid.size() < failures)
    return Status::invalid("could not draw " + std::to_string(failures) +
                           " distinct invalid configurations of " + recording.name());

  // Interleave: row i is a failure when the failures' running share falls behind.
  std::vector<Trial> rows;
  rows.reserve(options.rows);
  size_t next_ok = 0, next_bad = 0;
  for (size_t i = 0; i < options.rows; ++i) {
    const bool failure = next_bad < failures &&
                         (next_ok >= successes || next_bad * options.rows < failures * (i + 1));
    if (failure) {
      rows.push_back(
          replay_trial(recording, evaluator, space.to_config(invalid[next_bad++]), "history"));
    } else {
      const auto& rec = recording.records()[order[next_ok++]];
      rows.push_back(replay_trial(recording, evaluator, space.to_config(rec.point), "history"));
    }
  }
  return rows;
}

}  // namespace tilesmith::bench
