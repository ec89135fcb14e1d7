#include "tuner/search/detail/forest.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <random>

namespace tilesmith::proposers::detail {
namespace {

// Splits are searched on binned features: each feature's distinct training values are
// its bins (quantiles past kMaxBins), so a node's best split costs O(rows + bins) per
// feature instead of a sort. Tuning parameters take few distinct values, so the bins
// are usually exact.
constexpr int kMaxBins = 256;

struct Binned {
  int rows = 0, features = 0;
  // Column-major (features * rows): a node's split search reads one feature of its rows
  // at a time, so a feature's bins sit together in cache.
  std::vector<std::uint8_t> bin;
  std::vector<std::vector<float>> upper;  // per feature: the largest value in each bin
  std::vector<char> exact;                // per feature: one bin per distinct value
};

Binned bin_features(const std::vector<float>& x, int features, int rows) {
  Binned b;
  b.rows = rows;
  b.features = features;
  b.bin.resize(static_cast<size_t>(rows) * features);
  b.upper.resize(static_cast<size_t>(features));
  b.exact.resize(static_cast<size_t>(features));
  std::vector<float> col;
  for (int f = 0; f < features; ++f) {
    col.resize(static_cast<size_t>(rows));  // the previous feature's unique() shrank it
    for (int r = 0; r < rows; ++r)
      col[static_cast<size_t>(r)] = x[static_cast<size_t>(r) * features + f];
    std::sort(col.begin(), col.end());
    col.erase(std::unique(col.begin(), col.end()), col.end());
    std::vector<float>& up = b.upper[static_cast<size_t>(f)];
    b.exact[static_cast<size_t>(f)] = static_cast<int>(col.size()) <= kMaxBins;
    if (b.exact[static_cast<size_t>(f)]) {
      up = col;
    } else {
      for (int k = 1; k <= kMaxBins; ++k)
        up.push_back(col[col.size() * static_cast<size_t>(k) / kMaxBins - 1]);
      up.erase(std::unique(up.begin(), up.end()), up.end());
    }
    for (int r = 0; r < rows; ++r) {
      const float v = x[static_cast<size_t>(r) * features + f];
      b.bin[static_cast<size_t>(f) * rows + r] =
          static_cast<std::uint8_t>(std::lower_bound(up.begin(), up.end(), v) - up.begin());
    }
  }
  return b;
}

struct Builder {
  const Binned& data;
  const std::vector<double>& y;
  const ForestOptions& options;
  std::mt19937_64& rng;
  std::vector<int> feature_order;
  double count[kMaxBins];
  double sum[kMaxBins];
  std::vector<double> node_y;  // y of rows[lo, hi) at node_y[lo, hi), gathered once per node

  int bin(int row, int f) const { return data.bin[static_cast<size_t>(f) * data.rows + row]; }

  // Builds the subtree for rows[lo, hi) and returns its node index.
  template <typename Tree>
  int build(Tree& tree, std::vector<int>& rows, int lo, int hi, int depth) {
    const int n = hi - lo;
    double total = 0, total_sq = 0;
    for (int i = lo; i < hi; ++i) {
      node_y[i] = y[rows[i]];
      total += node_y[i];
      total_sq += node_y[i] * node_y[i];
    }
    const int index = static_cast<int>(tree.size());
    tree.emplace_back();
    tree[index].value = total / n;
    const double sse = total_sq - total * total / n;
    if (n < 2 * options.min_leaf || depth >= options.max_depth || sse <= 1e-12 * n) return index;

    const int features = data.features;
    const int tries =
        std::max(1, static_cast<int>(std::lround(options.feature_fraction * features)));
    std::shuffle(feature_order.begin(), feature_order.end(), rng);
    double best_gain = 1e-12;
    int best_feature = -1, best_bin = -1;
    int tried = 0;
    // Keep drawing features past `tries` while none splits the node (constant ones).
    for (int fi = 0; fi < features && (tried < tries || best_feature < 0); ++fi) {
      const int f = feature_order[fi];
      const int bins = static_cast<int>(data.upper[static_cast<size_t>(f)].size());
      std::fill(count, count + bins, 0.0);
      std::fill(sum, sum + bins, 0.0);
      int lo_bin = bins, hi_bin = -1;
      for (int i = lo; i < hi; ++i) {
        const int b = bin(rows[i], f);
        count[b] += 1;
        sum[b] += node_y[i];
        lo_bin = std::min(lo_bin, b);
        hi_bin = std::max(hi_bin, b);
      }
      if (lo_bin == hi_bin) continue;
      ++tried;
      double left_n = 0, left_sum = 0;
      for (int b = lo_bin; b < hi_bin; ++b) {
        left_n += count[b];
        left_sum += sum[b];
        if (count[b] == 0) continue;
        const double right_n = n - left_n;
        if (left_n < options.min_leaf || right_n < options.min_leaf) continue;
        const double right_sum = total - left_sum;
        // Reduction of the squared error: sum_l^2/n_l + sum_r^2/n_r - sum^2/n.
        const double gain =
            left_sum * left_sum / left_n + right_sum * right_sum / right_n - total * total / n;
        if (gain > best_gain) {
          best_gain = gain;
          best_feature = f;
          best_bin = b;
        }
      }
    }
    if (best_feature < 0) return index;
    auto mid_it = std::partition(rows.begin() + lo, rows.begin() + hi,
                                 [&](int r) { return bin(r, best_feature) <= best_bin; });
    const int mid = static_cast<int>(mid_it - rows.begin());
    // Exact bins: threshold halfway to the next value seen, so unseen values in between
    // go to the nearer side. Quantile bins: just above the bin, as the rows were split.
    const auto& up = data.upper[static_cast<size_t>(best_feature)];
    const float below = up[static_cast<size_t>(best_bin)];
    tree[index].feature = best_feature;
    tree[index].threshold = data.exact[static_cast<size_t>(best_feature)]
                                ? 0.5f * (below + up[static_cast<size_t>(best_bin) + 1])
                                : std::nextafter(below, std::numeric_limits<float>::infinity());
    const int left = build(tree, rows, lo, mid, depth + 1);
    const int right = build(tree, rows, mid, hi, depth + 1);
    tree[index].left = left;
    tree[index].right = right;
    return index;
  }
};

}  // namespace

void Forest::fit(const std::vector<float>& x, int features, const std::vector<double>& y,
                 const ForestOptions& options, std::uint64_t seed) {
  features_ = features;
  trees_.clear();
  const int n = static_cast<int>(y.size());
  if (n == 0) return;
  std::mt19937_64 rng(seed);
  const Binned data = bin_features(x, features, n);
  Builder b{data, y, options, rng, {}, {}, {}, std::vector<double>(static_cast<size_t>(n))};
  b.feature_order.resize(static_cast<size_t>(features));
  std::iota(b.feature_order.begin(), b.feature_order.end(), 0);
  std::uniform_int_distribution<int> pick(0, n - 1);
  trees_.resize(static_cast<size_t>(std::max(1, options.trees)));
  std::vector<int> rows(static_cast<size_t>(n));
  for (Tree& tree : trees_) {
    if (options.bootstrap) {
      for (int& r : rows) r = pick(rng);
    } else {
      std::iota(rows.begin(), rows.end(), 0);
    }
    tree.reserve(static_cast<size_t>(2 * n));
    b.build(tree, rows, 0, n, 0);
  }
}

void Forest::predict_trees(const float* row, double* out) const {
  for (const Tree& tree : trees_) {
    int i = 0;
    while (tree[static_cast<size_t>(i)].feature >= 0) {
      const Node& node = tree[static_cast<size_t>(i)];
      i = row[node.feature] < node.threshold ? node.left : node.right;
    }
    *out++ = tree[static_cast<size_t>(i)].value;
  }
}

void Forest::predict(const float* row, double* mean, double* stddev) const {
  double sum = 0, sum_sq = 0;
  for (const Tree& tree : trees_) {
    int i = 0;
    while (tree[static_cast<size_t>(i)].feature >= 0) {
      const Node& node = tree[static_cast<size_t>(i)];
      i = row[node.feature] < node.threshold ? node.left : node.right;
    }
    const double v = tree[static_cast<size_t>(i)].value;
    sum += v;
    sum_sq += v * v;
  }
  const double k = static_cast<double>(trees_.size());
  *mean = sum / k;
  *stddev = std::sqrt(std::max(0.0, sum_sq / k - (*mean) * (*mean)));
}

}  // namespace tilesmith::proposers::detail
