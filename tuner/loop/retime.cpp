#include "tuner/loop/retime.h"

#include <algorithm>
#include <set>

namespace tilesmith {

std::vector<const HistoryRow*> retime_finalists(const std::vector<HistoryRow>& rows, const std::string& template_name,
                                                int top) {
  std::vector<const HistoryRow*> ok;
  std::set<std::string> seen;
  for (const auto& r : rows)
    if (r.template_name == template_name && r.evaluated() && r.ok() && r.median_ms && seen.insert(r.key()).second)
      ok.push_back(&r);
  std::stable_sort(ok.begin(), ok.end(), [](const HistoryRow* a, const HistoryRow* b) { return *a->median_ms < *b->median_ms; });
  if (ok.size() > static_cast<std::size_t>(std::max(top, 0))) ok.resize(static_cast<std::size_t>(std::max(top, 0)));
  return ok;
}

std::vector<RetimeResult> retime(Evaluator& evaluator, const KernelTemplate& tmpl, const GemmProblem& problem,
                                 const std::vector<const HistoryRow*>& finalists, const std::function<bool()>& stop,
                                 const std::function<void(const RetimeResult&)>& after_each) {
  std::vector<RetimeResult> results;
  for (const HistoryRow* r : finalists) {
    if (stop && stop()) break;
    auto config = config_from_json_text(r->config);
    if (!config.ok()) continue;
    RetimeResult rr{tmpl.name(), *r, evaluator.evaluate(tmpl, problem, *config), false};
    if (after_each) after_each(rr);
    results.push_back(std::move(rr));
  }
  RetimeResult* best = nullptr;
  for (auto& rr : results)
    if (rr.retimed.ok() && (!best || rr.retimed.timing.median_ms < best->retimed.timing.median_ms)) best = &rr;
  if (best) best->winner = true;
  return results;
}

const RetimeResult* retime_winner(const std::vector<RetimeResult>& results) {
  for (const auto& r : results)
    if (r.winner) return &r;
  return nullptr;
}

}  // namespace tilesmith
