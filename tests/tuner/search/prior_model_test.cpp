// A prior's measurements in the search (ProposalRequest::prior): the space view's model of
// them, evolve's shorter initial design while they agree with the run's own measurements (and
// not when they disagree) and its half batches just after it, the warm start handing them on,
// and their pooling over sources.

#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/tuner/search/evolve_parts_fixtures.h"
#include "tuner/search/detail/space_view.h"
#include "tuner/search/evolve_proposer.h"
#include "tuner/search/prior.h"
#include "tuner/search/warm_start_proposer.h"

namespace tilesmith {
namespace {

using proposers::detail::SpaceView;

using proposers::detail::fixtures::tiled_ctx;
using proposers::detail::fixtures::tiled_ms;  // the target's times
using proposers::detail::fixtures::tiled_space;

// A prior measured everywhere: `agree` the target's order on another, 3x slower device; else
// the opposite order (a prior that misleads).
std::vector<PriorMeasurement> prior_of(const ParamSpace& space, bool agree) {
  std::vector<PriorMeasurement> out;
  for (const auto& p : space.enumerate_valid(tiled_ctx())) {
    const Config c = space.to_config(p);
    out.push_back({c, agree ? 3 * tiled_ms(c) : 100 - tiled_ms(c)});
  }
  return out;
}

std::vector<Trial> measured(const ParamSpace& space, const std::vector<PointValues>& points) {
  std::vector<Trial> out;
  for (const auto& p : points) {
    Trial t;
    t.config = space.to_config(p);
    t.outcome = Outcome::kOk;
    t.score = tiled_ms(t.config);
    out.push_back(std::move(t));
  }
  return out;
}

ProposalRequest request(const ParamSpace& space, const std::vector<Trial>& history, int count,
                        const std::vector<PriorMeasurement>* prior) {
  ProposalRequest r;
  r.space = &space;
  r.context = tiled_ctx();
  r.history = &history;
  r.count = count;
  r.seed = 7;
  r.prior = prior;
  return r;
}

bool from_initial_design(const ProposalBatch& b) {
  for (const auto& p : b.proposals)
    if (p.rationale.find("initial design") == std::string::npos) return false;
  return !b.proposals.empty();
}

TEST(PriorModel, TheViewRanksWhatThePriorMeasuredAndPredictsTheRest) {
  const ParamSpace space = tiled_space();
  const auto prior = prior_of(space, true);
  auto plain = SpaceView::build(space, tiled_ctx());
  auto with = SpaceView::build(space, tiled_ctx(), {}, &prior, /*prior_feature=*/false);
  auto featured = SpaceView::build(space, tiled_ctx(), {}, &prior, /*prior_feature=*/true);
  EXPECT_FALSE(plain->has_prior());
  ASSERT_TRUE(with->has_prior());
  EXPECT_EQ(with->feature_count(), plain->feature_count());
  EXPECT_EQ(featured->feature_count(), plain->feature_count() + 1);

  size_t fastest = 0, slowest = 0;
  for (size_t i = 0; i < prior.size(); ++i) {
    if (prior[i].time_ms < prior[fastest].time_ms) fastest = i;
    if (prior[i].time_ms > prior[slowest].time_ms) slowest = i;
  }
  const auto best = space.from_config(prior[fastest].config);
  const auto slow = space.from_config(prior[slowest].config);
  ASSERT_TRUE(best.ok() && slow.ok());
  EXPECT_EQ(with->prior_rank(*best), 0.0);
  EXPECT_GT(*with->prior_rank(*slow), 0.95);  // (ties share the last places)
  EXPECT_LT(*with->prior_prediction(*best), *with->prior_prediction(*slow));
  // The last feature is the prediction.
  std::vector<float> f(static_cast<size_t>(featured->feature_count()));
  featured->encode(*best, f.data());
  EXPECT_FLOAT_EQ(f.back(), static_cast<float>(*featured->prior_prediction(*best)));

  // Too few measurements that map onto the space: no prior at all.
  std::vector<PriorMeasurement> few(prior.begin(), prior.begin() + 5);
  few.push_back({{{"BM", 96}, {"BN", 64}, {"TM", 1}, {"TN", 1}, {"BK", 8}, {"DB", 0}, {"VEC", 1}}, 1.0});  // off the domain
  EXPECT_FALSE(SpaceView::build(space, tiled_ctx(), {}, &few)->has_prior());
}

TEST(PriorModel, AnAgreeingPriorEndsTheInitialDesignSoonerAndAMisleadingOneDoesNot) {
  const ParamSpace space = tiled_space();
  const auto agree = prior_of(space, true), mislead = prior_of(space, false);
  const auto all = space.enumerate_valid(tiled_ctx());
  std::vector<PointValues> spread;  // ten points across the space
  for (size_t i = 0; i < 10; ++i) spread.push_back(all[i * all.size() / 10]);
  const std::vector<Trial> four = measured(space, {spread.begin(), spread.begin() + 4});
  const std::vector<Trial> ten = measured(space, spread);

  EvolveOptions o;
  ASSERT_LT(o.initial_design_prior, o.initial_design);
  ASSERT_EQ(o.initial_design_prior, 10);
  // Before the agreement can be judged the design runs to the shorter length, no further.
  auto first = EvolveProposer(o).propose(request(space, four, 8, &agree));
  ASSERT_TRUE(first.status.ok()) << first.status.to_string();
  EXPECT_EQ(first.proposals.size(), 6u);
  EXPECT_TRUE(from_initial_design(first));
  // At ten measurements that agree with it, the model takes over, in half batches for the
  // next prior_quick_evaluations evaluations (refitted sooner), then whole ones.
  auto agreeing = EvolveProposer(o).propose(request(space, ten, 8, &agree));
  ASSERT_TRUE(agreeing.status.ok());
  ASSERT_EQ(o.prior_quick_evaluations, 8);
  EXPECT_EQ(agreeing.proposals.size(), 4u);
  EXPECT_FALSE(from_initial_design(agreeing)) << agreeing.proposals.front().rationale;
  std::vector<PointValues> more;  // measurements past the quick evaluations
  for (size_t i = 0; i < 18; ++i) more.push_back(all[i * all.size() / 18]);
  auto later = EvolveProposer(o).propose(request(space, measured(space, more), 8, &agree));
  ASSERT_TRUE(later.status.ok());
  EXPECT_EQ(later.proposals.size(), 8u);
  EvolveOptions whole_batches = o;
  whole_batches.prior_quick_evaluations = 0;
  auto whole = EvolveProposer(whole_batches).propose(request(space, ten, 8, &agree));
  ASSERT_TRUE(whole.status.ok());
  EXPECT_EQ(whole.proposals.size(), 8u);
  // One that contradicts them leaves the design as long as without a prior; so does none.
  for (const auto* prior : {&mislead, static_cast<const std::vector<PriorMeasurement>*>(nullptr)}) {
    auto batch = EvolveProposer(o).propose(request(space, ten, 8, prior));
    ASSERT_TRUE(batch.status.ok());
    EXPECT_EQ(batch.proposals.size(), 8u);
    EXPECT_TRUE(from_initial_design(batch)) << batch.proposals.front().rationale;
  }
}

// Records what the warm start hands on.
class Recorder final : public Proposer {
 public:
  std::string name() const override { return "recorder"; }
  ProposalBatch propose(const ProposalRequest& r) override {
    seen = r.prior;
    ProposalBatch b;
    b.status = Status::failed_precondition("nothing to propose");
    return b;
  }
  const std::vector<PriorMeasurement>* seen = nullptr;
};

TEST(PriorModel, TheWarmStartHandsThePriorToTheSearchBehindIt) {
  const ParamSpace space = tiled_space();
  auto inner = std::make_unique<Recorder>();
  Recorder* rec = inner.get();
  WarmStartOptions wo;
  wo.prior = {{{{"BM", 64}, {"BN", 64}, {"TM", 2}, {"TN", 2}, {"BK", 8}, {"DB", 1}, {"VEC", 1}}, 1.0}};
  WarmStartProposer p({}, std::move(inner), wo);
  std::vector<Trial> none;
  p.propose(request(space, none, 4, nullptr));
  ASSERT_NE(rec->seen, nullptr);
  EXPECT_EQ(rec->seen->size(), 1u);
  // A request that brings its own keeps it.
  const std::vector<PriorMeasurement> own = prior_of(space, true);
  p.propose(request(space, none, 4, &own));
  EXPECT_EQ(rec->seen, &own);
}

TEST(PriorModel, SourcesPoolWithTheirTimesRelativeToTheirOwnFastest) {
  PriorSource a, b, other;
  a.template_name = b.template_name = "t";
  other.template_name = "u";
  a.rows = {{{{"X", 1}}, 2.0}, {{{"X", 2}}, 3.0}};
  b.rows = {{{{"X", 1}}, 10.0}, {{{"X", 3}}, 40.0}};
  other.rows = {{{{"X", 9}}, 1.0}};
  const auto rows = prior_measurements_for({a, other, b}, "t");
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_DOUBLE_EQ(rows[0].time_ms, 1.0);
  EXPECT_DOUBLE_EQ(rows[1].time_ms, 1.5);
  EXPECT_DOUBLE_EQ(rows[2].time_ms, 1.0);
  EXPECT_DOUBLE_EQ(rows[3].time_ms, 4.0);
  EXPECT_TRUE(prior_measurements_for({other}, "t").empty());
}

}  // namespace
}  // namespace tilesmith
