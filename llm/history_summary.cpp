#include "llm/history_summary.h"

#include <algorithm>
#include <functional>
#include <set>

namespace tilesmith::llm {

HistorySummary summarize_history(std::span<const TrialView> history, const ParamSpace& space,
                                 std::size_t max_best, std::size_t max_failures_per_outcome) {
  HistorySummary s;
  s.total = history.size();
  const auto& params = space.parameters();
  s.per_parameter.resize(params.size());

  std::vector<std::size_t> scored;
  for (std::size_t i = 0; i < history.size(); ++i) {
    const TrialView& t = history[i];
    ++s.by_outcome[t.outcome];
    const bool ok = t.outcome == Outcome::kOk && t.score;
    if (ok) scored.push_back(i);
    for (std::size_t p = 0; p < params.size(); ++p) {
      auto it = t.config->find(params[p].name);
      if (it == t.config->end()) continue;
      ValueStats& v = s.per_parameter[p][it->second];
      ++v.tried;
      if (ok) {
        ++v.ok;
        if (!v.best_score || *t.score < *v.best_score) v.best_score = t.score;
      }
    }
  }

  // Stable: among equal scores the earlier trial ranks first, so prompts are reproducible.
  std::stable_sort(scored.begin(), scored.end(),
                   [&](std::size_t a, std::size_t b) { return *history[a].score < *history[b].score; });
  std::set<std::reference_wrapper<const Config>, std::less<Config>> shown;
  for (std::size_t i : scored) {
    if (s.best.size() >= max_best) break;
    if (shown.insert(std::cref(*history[i].config)).second) s.best.push_back(i);
  }

  std::map<Outcome, HistorySummary::Failures> failures;
  for (std::size_t i = history.size(); i-- > 0;) {
    Outcome o = history[i].outcome;
    if (o == Outcome::kOk) continue;
    auto& f = failures[o];
    f.outcome = o;
    ++f.total;
    if (f.recent.size() < max_failures_per_outcome) f.recent.push_back(i);
  }
  for (auto& [o, f] : failures) s.failures.push_back(std::move(f));
  return s;
}

}  // namespace tilesmith::llm
