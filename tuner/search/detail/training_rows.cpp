#include "tuner/search/detail/training_rows.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace tilesmith::proposers::detail {

std::vector<size_t> training_rows(size_t rows, const std::vector<size_t>& best_first,
                                  const TrainingBound& bound) {
  std::vector<size_t> out;
  if (bound.max_rows == 0 || rows <= bound.max_rows) {
    out.resize(rows);
    std::iota(out.begin(), out.end(), size_t{0});
    return out;
  }
  const size_t max_rows = bound.max_rows;
  std::vector<char> chosen(rows, 0);
  auto choose = [&](size_t i) {
    if (i >= rows || chosen[i]) return;
    chosen[i] = 1;
    out.push_back(i);
  };
  const auto share = [&](double s) {
    return std::min(max_rows,
                    static_cast<size_t>(std::llround(std::clamp(s, 0.0, 1.0) * double(max_rows))));
  };
  const size_t best = share(bound.best_share);
  for (size_t k = 0; k < best_first.size() && out.size() < best; ++k) choose(best_first[k]);
  const size_t recent = std::min(max_rows, out.size() + share(bound.recent_share));
  for (size_t i = rows; i > 0 && out.size() < recent; --i) choose(i - 1);
  // The rest: evenly spaced over the rows not chosen yet, in history order.
  std::vector<size_t> rest;
  rest.reserve(rows - out.size());
  for (size_t i = 0; i < rows; ++i)
    if (!chosen[i]) rest.push_back(i);
  const size_t spread = std::min(rest.size(), max_rows - out.size());
  for (size_t k = 0; k < spread; ++k) out.push_back(rest[k * rest.size() / spread]);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace tilesmith::proposers::detail
