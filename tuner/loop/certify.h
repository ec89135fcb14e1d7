#pragma once
// Whether the best of a template's finalists is really better than the others, from
// their re-measurements taken in interleaved rounds (A B C, C B A, A B C, ...): one
// sample per finalist per round, each sample a whole evaluation's median (and energy).
// "Better" is the run's objective (tuner/records/objective.h): faster for time, less
// energy per launch for energy, a lower energy-delay product for edp; below, "the
// fastest" and "t" stand for the best and the objective's value of a round. Pure: the
// caller runs the rounds (tuner/loop/retime.h) and asks after each one.
//
// The method (docs/timing-and-tolerances.md, "The certified winner"):
// - The fastest finalist is the one with the lowest median over its rounds.
// - It is compared with every other finalist through their paired ratios, round by round
//   (t_other / t_fastest in the same round). Both were measured seconds apart, so a clock
//   or temperature drift over the rounds divides out of each ratio instead of widening
//   both finalists' spreads; the alternating order cancels what drift there is within a
//   round.
// - The interval of the median ratio is the order-statistic (sign test) interval of
//   analysis/median_interval.h: distribution-free, and one outlying round cannot move it
//   once there are enough rounds. The fastest is certified when every other finalist's
//   interval lies above 1.
// - The contest is looked at after min_rounds and then every look_every rounds up to
//   max_rounds; each of those looks and each comparison gets an equal share of the
//   error rate 1 - confidence (Bonferroni), so stopping at the first separation does not
//   make a certificate more likely than the confidence level says.
// - At max_rounds, a finalist not separated from the fastest is tied with it. A tie is
//   broken among the tied finalists whose paired median ratio to the fastest is within
//   median_alike of 1 (one whose rounds were a few percent slower is tied only because its
//   interval is wide: trading its expected loss for steadiness would cost the user time;
//   on an H200 at its power cap such a pick was 3.3% slower in paired rounds), toward the
//   lowest spread (relative MAD of its rounds); spreads within spread_alike of the lowest
//   count as alike, and among those the other figure decides: under time, the lowest
//   energy per launch when every one of them has a figure (else the lowest median); under
//   energy or edp, the lowest median time.

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "analysis/median_interval.h"
#include "tuner/records/objective.h"

namespace tilesmith {

struct CertifyOptions {
  int min_rounds = 8;   // the first look (8 rounds certify 3 finalists at 95%)
  int look_every = 4;   // later looks; <= 0: only min_rounds and max_rounds
  int max_rounds = 16;  // the budget: at most this many rounds
  double confidence = 0.95;
  double spread_alike = 1.5;  // a relative MAD of ~10 rounds is itself uncertain by ~40%
  double median_alike = 0.01;  // paired median ratios up to 1 + this count as the fastest's equal
  // The re-timing (tuner/loop/retime.h) starts a fresh measuring process after every this
  // many rounds (<= 0: one process), so that the rounds, their interval and their range
  // hold what differs between processes as well as between rounds.
  int rounds_per_process = 4;
  // What the rounds are compared by. Every sample must have its value (objective_value();
  // energy needs the joules): the caller leaves out a finalist whose round has none.
  Objective objective = Objective::kTime;
};

// One finalist's measurement in one round.
struct RoundSample {
  double ms = 0;
  std::optional<double> joules;  // energy per launch, where the device reports it
};

enum class Verdict {
  kCertified,     // the fastest's paired intervals all lie above 1
  kTie,           // the budget is spent and some finalist is not separated from the fastest
  kSingle,        // one finalist: nothing to compare it with
  kTooFewRounds,  // the budget allows no interval at the level asked (max_rounds too small)
  kUndecided,     // not separated yet, and rounds remain (asked before the budget is spent)
};
const char* verdict_name(Verdict v);

struct Standing {
  double median_ms = 0;
  std::optional<analysis::MedianInterval> interval;  // its own median time, at `confidence`
  // Its objective's median over the rounds and that median's interval (for time, the same
  // as median_ms and interval).
  double median_value = 0;
  std::optional<analysis::MedianInterval> value_interval;
  double spread = 0;                                 // relative MAD of its rounds' values
  std::optional<double> median_joules;               // when every round has a figure
  // t_this / t_fastest per round (values of the objective): its median, and its interval
  // at the per-test level (the fastest's own: 1, no interval).
  double ratio_median = 1;
  std::optional<analysis::MedianInterval> ratio;
  bool tied = false;  // not separated from the fastest (the fastest itself: true)
};

struct Certification {
  Verdict verdict = Verdict::kUndecided;
  Objective objective = Objective::kTime;  // what the rounds were compared by (the options')
  std::size_t fastest = 0;  // lowest median value of the objective
  std::size_t winner = 0;   // the fastest, or the tie rule's pick
  int rounds = 0;
  double test_level = 0;            // each paired interval's confidence after the Bonferroni split
  // tie only: what decided it: "ratio" (the others' paired medians were more than median_alike
  // slower), "spread", "energy", "time" or "median"
  std::string tie_rule;
  std::vector<Standing> standings;  // in the order of the input
};

// Whether the contest may end after `rounds` rounds (a look), and how many looks the
// options allow in all.
bool is_look(int rounds, const CertifyOptions& o);
int look_count(const CertifyOptions& o);

// The standings of the finalists after the rounds so far: samples[i] holds finalist i's
// samples in round order, every finalist the same count (a finalist that failed a round
// is left out by the caller). kUndecided only while rounds < max_rounds. Empty input,
// unequal counts or a sample without the objective's value are a programmer error
// (std::invalid_argument).
Certification certify(const std::vector<std::vector<RoundSample>>& samples,
                      const CertifyOptions& o);

}  // namespace tilesmith
