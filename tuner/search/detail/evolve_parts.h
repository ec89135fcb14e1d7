#pragma once
// How EvolveProposer::propose() sets up its parts from EvolveOptions, for whatever else
// composes them the same way: the proposal-cost benchmark times each part on its own
// (tilesmith_proposal_cost_bench --parts) with exactly the settings a proposal uses.
// Defined in evolve_proposer.cpp.

#include <cstddef>

#include "tuner/search/detail/acquisition.h"
#include "tuner/search/detail/candidate_generator.h"
#include "tuner/search/detail/history_index.h"
#include "tuner/search/detail/pick_policies.h"
#include "tuner/search/detail/surrogate.h"
#include "tuner/search/evolve_proposer.h"

namespace tilesmith::proposers::detail {

SurrogateOptions surrogate_options(const EvolveOptions& o);
CandidateOptions candidate_options(const EvolveOptions& o);
AcquisitionOptions acquisition_options(const EvolveOptions& o);
PickOptions pick_options(const EvolveOptions& o);
// The history as the surrogate reads it (view: the history's view).
TrainingData training_data(const HistoryIndex& history, const SpaceView& view);
// How many of the best distinct points the candidates and local picks centre on.
size_t elite_count(const EvolveOptions& o);
// Evaluations since the best last improved by stall_gain.
size_t since_gain(const HistoryIndex& history);
// Has the search stalled: no gain in stall_generations batches of `want`.
bool stalled(const EvolveOptions& o, const HistoryIndex& history, size_t want);
// Distances with the parameters of no measured effect left out (none once stalled, with
// no_effect_until_stall).
Distance distance(const EvolveOptions& o, const HistoryIndex& history, bool stalled);

}  // namespace tilesmith::proposers::detail
