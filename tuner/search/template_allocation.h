#pragma once
// How a generation's evaluations are split over the templates of one run.
//
// `kEven` gives every template the same count (the loop's `candidates` each), whatever
// they have shown. `kByGain` (the default) spends them where they can still gain: a bandit
// over templates in the manner of Streeter and Smith's ThresholdAscent for the "max
// k-armed bandit" (what matters is the best result any arm produces, not the mean):
//
//  - A template is *known* once it has `known_after` trials (every outcome counts: a
//    template whose candidates fail is learning nothing about speed either). Until then
//    it gets its floor each generation: what it still needs to be known, and at least its
//    author's seeds that are valid for the problem and untried (the shape's facts enter
//    there: a template's constraints and seeds say which schedules suit a skinny problem).
//    While no template is known a generation holds the floors only, so the first split
//    is made after a few measurements of each rather than a whole even generation. Where
//    the budget's end (a problem set's slice) does not cover the floors, they go one at a
//    time in turn, so no template is left out of the slice.
//  - A template whose fastest possible score (`fastest_possible`: for time, its work at the
//    peak of the units it computes on; KernelTemplate::fastest_possible_ms) is no better than
//    a success the run already has cannot win: it gets nothing, floor and all. While a
//    template that might be faster than that bound (one without a bound, or a lower one) is
//    not yet known, a bounded template waits: on Hopper at fp32 4096^3 the three FMA-pipe
//    templates (67 TFLOP/s at most) are never measured once a tensor-core one passes them.
//    A bound is a fact of the hardware, not an estimate, so nothing that could win is lost.
//  - The rest of the generation goes by a threshold: the `top` fastest successes of the
//    run over all templates (the fastest quarter while there are fewer than 4 x top). A template's
//    score is an upper confidence bound on the chance that its next measurement lands among them,
//    (h + a + sqrt(2ha + a^2)) / n for h of its n trials there, a = `confidence`. Slots are handed
//    out one at a time to the highest score, each counted as a trial that missed (so one generation
//    does not put everything on one template before it has answered). As the run's best improves
//    the threshold tightens; a template that no longer reaches it gets fewer evaluations but never
//    none for long: its bound falls only with its own trials while the leader's falls with the
//    leader's. A template with no success under the threshold, 3 x `known_after` trials or
//    more and its fastest more than 20% above the threshold has its bound's exploration term
//    scaled by how far that is, measured in the spacing of its own fastest successes (an
//    exponential lower tail): one whose best is 75% off while its fastest few lie within 5% of
//    each other stops drawing trials long before the leader does (on the bf16 4096^3 recording
//    the two losing templates got 12 and 13 of 150 instead of 18 each), down to `tail_weight`
//    of the term at most, so no template is dropped.
//
// Everything is a function of the trials, so a seed gives the same split every time and
// a resumed run splits as an uninterrupted one would. Generic: it sees outcomes and times,
// never a template's parameters. docs/search.md, "Budget across templates", has the
// figures on the recorded problem sets.

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "tuner/search/proposer.h"

namespace tilesmith {

enum class TemplateAllocation { kEven, kByGain };

// "even", "gain"; and back (invalid_argument naming the choices).
const char* template_allocation_name(TemplateAllocation a);
Result<TemplateAllocation> parse_template_allocation(std::string_view text);

struct AllocationOptions {
  int known_after = 4;      // trials before a template can be left out of a generation
  int top = 8;              // successes over all templates that set the threshold
  double confidence = 1.0;  // the bound's a: larger spreads the budget more evenly
  // A split generation holds this many evaluations per template in play (at most the loop's
  // `candidates`): the split is revised after every such generation, so smaller ones follow what
  // the templates show sooner. 0: the loop's `candidates`.
  int per_template = 4;
  // The least a template's exploration term is scaled to when its fastest successes lie more than
  // 20% above the threshold (exp(-gap / spacing) in log time, the gap from its fastest success to
  // the threshold, the spacing the mean distance of its fastest four below its fifth: an
  // exponential lower tail). 1: every template without a success under the threshold is explored
  // alike (the split before this option).
  double tail_weight = 0.1;
};

// One template as the allocation sees it.
struct TemplateArm {
  const std::vector<Trial>* trials = nullptr;  // its history, every outcome; not null
  int seeds = 0;                               // author's seeds valid for the problem and untried
  double fastest_possible = 0;                 // a bound no trial can beat (the trials' score unit); 0: none
  bool live = true;  // false: its space is exhausted; gets nothing, its trials still count for the run's best
};

// Which arms get nothing this generation (same order): exhausted, out by their bound, or
// waiting for an arm that might beat their bound to be known.
std::vector<bool> arms_left_out(const std::vector<TemplateArm>& arms, const AllocationOptions& options = {});

// Counts per arm (same order) for one generation of `total` evaluations (the loop passes
// `per_template` (at most its `candidates`) times the number of templates in play, not left
// out, or less where the budget ends). The
// counts add up to `total`, except while no arm is known, when they are the floors (at
// most `total`), and when every live arm is out by its bound (all 0). An empty `arms` gives an empty result.
std::vector<int> allocate_by_gain(const std::vector<TemplateArm>& arms, int total,
                                  const AllocationOptions& options = {});

}  // namespace tilesmith
