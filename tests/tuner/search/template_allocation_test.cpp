// The split of a generation over templates (tuner/search/template_allocation.h): floors
// until a template is known, then by how often each template reaches the run's fastest.

#include <numeric>

#include <gtest/gtest.h>

#include "tuner/search/template_allocation.h"

namespace tilesmith {
namespace {

std::vector<Trial> trials(std::initializer_list<double> ms, int failures = 0) {
  std::vector<Trial> out;
  for (double t : ms) {
    Trial tr;
    tr.outcome = Outcome::kOk;
    tr.score = t;
    out.push_back(tr);
  }
  for (int i = 0; i < failures; ++i) out.push_back(Trial{});  // kInvalid, no time
  return out;
}

int sum(const std::vector<int>& v) { return std::accumulate(v.begin(), v.end(), 0); }

TEST(TemplateAllocation, NamesParse) {
  EXPECT_EQ(*parse_template_allocation("even"), TemplateAllocation::kEven);
  EXPECT_EQ(*parse_template_allocation("gain"), TemplateAllocation::kByGain);
  EXPECT_FALSE(parse_template_allocation("bandit").ok());
  EXPECT_STREQ(template_allocation_name(TemplateAllocation::kByGain), "gain");
}

TEST(TemplateAllocation, NothingKnownGivesTheFloorsOnly) {
  const std::vector<Trial> none;
  std::vector<TemplateArm> arms(3, TemplateArm{&none, 0});
  arms[1].seeds = 6;  // the author's seeds are measured within the floor
  AllocationOptions o;
  o.known_after = 4;
  EXPECT_EQ(allocate_by_gain(arms, 24, o), (std::vector<int>{4, 6, 4}));
  // Where the budget's end (the run's last generation, a problem set's slice) does not cover the
  // floors, they go one at a time in turn: every template gets part of its floor, none is left out
  // until a later slice (which made a problem tuned in slices of 16 reach 5% of its best after a
  // median 27.5 evaluations instead of the uninterrupted run's 20, on the decode recordings).
  EXPECT_EQ(allocate_by_gain(arms, 7, o), (std::vector<int>{3, 2, 2}));
  std::vector<TemplateArm> five(5, TemplateArm{&none, 0});
  EXPECT_EQ(allocate_by_gain(five, 16, o), (std::vector<int>{4, 3, 3, 3, 3}));
}

TEST(TemplateAllocation, TheTemplateThatReachesTheFastestGetsMost) {
  // A is 2x slower everywhere; B holds every one of the run's fastest.
  const auto a = trials({2.0, 2.2, 2.5, 3.0, 2.1, 2.4, 2.6, 2.8});
  const auto b = trials({1.0, 1.1, 1.3, 1.5, 1.05, 1.2, 1.25, 1.4});
  const std::vector<TemplateArm> arms = {{&a, 0}, {&b, 0}};
  const auto counts = allocate_by_gain(arms, 16);
  EXPECT_EQ(sum(counts), 16);
  EXPECT_GT(counts[1], 3 * counts[0]) << counts[0] << " " << counts[1];
  // The slow one is not dropped for good: its bound falls only with its own trials.
  const auto a_more = trials({2.0, 2.2, 2.5, 3.0});
  std::vector<Trial> b_many;
  for (int i = 0; i < 200; ++i) b_many.push_back(trials({1.0 + 0.001 * i})[0]);
  const std::vector<TemplateArm> later = {{&a_more, 0}, {&b_many, 0}};
  EXPECT_GT(allocate_by_gain(later, 16)[0], 0);
}

// A template with no success under the threshold, whose fastest successes lie close together far above
// it (more than 20% off), is explored less the farther it is, in units of that spacing; one within 20%,
// one with fewer than 3 x known_after trials, and tail_weight 1 leave the split as it was.
TEST(TemplateAllocation, ATemplateFarFromTheFastestInUnitsOfItsOwnSpreadIsExploredLess) {
  std::vector<Trial> lead;
  for (int i = 0; i < 120; ++i) lead.push_back(trials({1.0 + 0.002 * i})[0]);
  // 12 trials 1.75x off and tightly packed (1.75 .. 1.86): hopeless on its own evidence.
  const auto far = trials({1.75, 1.76, 1.77, 1.78, 1.79, 1.80, 1.81, 1.82, 1.83, 1.84, 1.85, 1.86});
  // 12 trials 1.1x off: near enough that a search of its own may still get there.
  const auto near = trials({1.10, 1.11, 1.12, 1.13, 1.14, 1.15, 1.16, 1.17, 1.18, 1.19, 1.20, 1.21});
  AllocationOptions off;
  off.tail_weight = 1;
  const int total = 400;  // enough slots that the losers' share shows
  const std::vector<TemplateArm> with_far = {{&lead, 0}, {&far, 0}};
  const std::vector<TemplateArm> with_near = {{&lead, 0}, {&near, 0}};
  const int far_on = allocate_by_gain(with_far, total)[1], far_off = allocate_by_gain(with_far, total, off)[1];
  EXPECT_GT(far_off, 0);
  EXPECT_LT(far_on, far_off / 2) << far_on << " against " << far_off;
  EXPECT_GT(allocate_by_gain(with_far, 1000)[1], 0) << "reduced, never dropped: the leader's bound falls with its trials";
  EXPECT_EQ(allocate_by_gain(with_near, total)[1], allocate_by_gain(with_near, total, off)[1]);
  // Too few trials to say: unchanged.
  const auto far_few = trials({1.75, 1.76, 1.77, 1.78, 1.79, 1.80});
  const std::vector<TemplateArm> early = {{&lead, 0}, {&far_few, 0}};
  EXPECT_EQ(allocate_by_gain(early, total)[1], allocate_by_gain(early, total, off)[1]);
}

// A template with a hardware bound on its speed (fastest_possible: an FMA-pipe template's work
// at the pipe's peak) waits while a template that might beat the bound is unknown, gets
// nothing once the run has measured something at or under its bound, and is measured as
// any other when the unbounded templates turn out slower than its bound.
TEST(TemplateAllocation, ATemplateThatCannotBeatWhatIsMeasuredGetsNothing) {
  const std::vector<Trial> none;
  AllocationOptions o;
  o.known_after = 4;
  // Nothing measured: the bounded one (2.0 ms at best) waits for the unbounded ones.
  std::vector<TemplateArm> arms = {{&none, 0, 2.0}, {&none, 0, 0}, {&none, 0, 0}};
  EXPECT_EQ(allocate_by_gain(arms, 24, o), (std::vector<int>{0, 4, 4}));
  // A lower bound than the bounded one's does not hold it back; a higher one does not either.
  std::vector<TemplateArm> bounded = {{&none, 0, 2.0}, {&none, 0, 3.0}};
  EXPECT_EQ(allocate_by_gain(bounded, 16, o), (std::vector<int>{4, 0}));
  // The unbounded ones known, one of them under 2.0 ms: out, floor and all.
  const auto fast = trials({1.2, 1.5, 1.9, 2.5});
  const auto slow = trials({3.0, 3.1, 3.2, 3.3});
  arms = {{&none, 0, 2.0}, {&fast, 0, 0}, {&slow, 0, 0}};
  auto counts = allocate_by_gain(arms, 24, o);
  EXPECT_EQ(counts[0], 0);
  EXPECT_EQ(sum(counts), 24) << "its share goes to the others";
  // Both slower than the bound: the bounded one is measured after all, from its floor on.
  const auto slow2 = trials({2.4, 2.6, 2.8, 3.0});
  arms = {{&none, 0, 2.0}, {&slow2, 0, 0}, {&slow, 0, 0}};
  counts = allocate_by_gain(arms, 24, o);
  EXPECT_GE(counts[0], 4);
  EXPECT_EQ(sum(counts), 24);
  // Its own success under the run's others does not put it out (2.1 > its bound 2.0).
  const auto own = trials({2.1, 2.2, 2.3, 2.4});
  arms = {{&own, 0, 2.0}, {&slow2, 0, 0}};
  EXPECT_GT(allocate_by_gain(arms, 16, o)[0], 0);
  // Two bounds and nothing measured: the lower one is measured first.
  const std::vector<TemplateArm> only_bounded = {{&none, 0, 2.0}, {&none, 0, 2.5}};
  EXPECT_EQ(allocate_by_gain(only_bounded, 16, o), (std::vector<int>{4, 0}));
  // The fastest template's space is exhausted (not live): it gets nothing, but what it
  // measured still puts the bounded ones out; with nothing else live, nothing is measured.
  const auto faster = trials({1.0, 1.1, 1.2, 1.3});
  TemplateArm done{&faster, 0, 0};
  done.live = false;
  EXPECT_EQ(allocate_by_gain({{&none, 0, 2.0}, {&none, 0, 2.5}, done}, 16, o), (std::vector<int>{0, 0, 0}));
}

TEST(TemplateAllocation, FailuresCountAsTrialsThatMissed) {
  const auto a = trials({1.0, 1.1}, 6);         // 2 fast of 8
  const auto b = trials({1.0, 1.1, 1.2, 1.3});  // 4 fast of 4
  const std::vector<TemplateArm> arms = {{&a, 0}, {&b, 0}};
  AllocationOptions o;
  o.top = 6;
  const auto counts = allocate_by_gain(arms, 10, o);
  EXPECT_GT(counts[1], counts[0]);
}

TEST(TemplateAllocation, AnUnknownTemplateKeepsItsFloorBesideKnownOnes) {
  const auto known = trials({1.0, 1.1, 1.2, 1.3, 1.4});
  const auto little = trials({5.0});
  const std::vector<TemplateArm> arms = {{&known, 0}, {&little, 0}};
  AllocationOptions o;
  o.known_after = 4;
  const auto counts = allocate_by_gain(arms, 16, o);
  EXPECT_GE(counts[1], 3);
  EXPECT_EQ(sum(counts), 16);
}

TEST(TemplateAllocation, SameTrialsSameSplit) {
  const auto a = trials({1.5, 1.7, 1.2, 2.0, 1.1});
  const auto b = trials({1.0, 1.9, 1.3, 1.6, 1.4, 1.8});
  const auto c = trials({3.0, 2.9, 3.1, 4.0}, 2);
  const std::vector<TemplateArm> arms = {{&a, 0}, {&b, 0}, {&c, 0}};
  EXPECT_EQ(allocate_by_gain(arms, 24), allocate_by_gain(arms, 24));
  EXPECT_TRUE(allocate_by_gain({}, 8).empty());
}

}  // namespace
}  // namespace tilesmith
