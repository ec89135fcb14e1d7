#pragma once
// A small random-forest regressor for surrogate models: bootstrap samples, a random
// subset of features per split, exhaustive best split by squared error. The spread of
// the trees' predictions is the model's uncertainty. Sized for hundreds to a few
// thousand training rows and tens of features.
//
// Deterministic for a given seed and training data. fit() is not thread-safe; predict()
// is const and thread-safe.

#include <cstdint>
#include <vector>

namespace tilesmith::proposers::detail {

struct ForestOptions {
  int trees = 48;
  int min_leaf = 1;               // fewest training rows in a leaf
  double feature_fraction = 0.6;  // features tried per split (at least one)
  bool bootstrap = true;
  int max_depth = 40;
};

class Forest {
 public:
  // x: rows * features values, row-major; y: one target per row. rows >= 1.
  void fit(const std::vector<float>& x, int features, const std::vector<double>& y,
           const ForestOptions& options, std::uint64_t seed);
  bool fitted() const { return !trees_.empty(); }
  // Mean and standard deviation over the trees at one row of `features` values.
  void predict(const float* row, double* mean, double* stddev) const;
  // Each tree's prediction at one row: tree_count() values.
  void predict_trees(const float* row, double* out) const;
  int tree_count() const { return static_cast<int>(trees_.size()); }

 private:
  struct Node {
    int feature = -1;  // -1: leaf
    float threshold = 0;
    int left = -1, right = -1;
    double value = 0;
  };
  using Tree = std::vector<Node>;

  int features_ = 0;
  std::vector<Tree> trees_;
};

}  // namespace tilesmith::proposers::detail
