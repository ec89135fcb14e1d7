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
  // The budget's end trims the floors in order.
  EXPECT_EQ(allocate_by_gain(arms, 7, o), (std::vector<int>{4, 3, 0}));
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
