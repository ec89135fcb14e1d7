#pragma once
// A prior measured on another problem of the same template, carried over to the problem being
// tuned by what the template's launch geometry says about the two (docs/search.md, "Transfer").
//
// Why: between the problems of one template the order of the configurations changes mostly
// by how their blocks fill the GPU. A tile that gives 4096^3 many full waves gives
// 128x4096x4096 a few blocks on 132 SMs, and the skinny shape's best tiles are the ones that
// spread its little work over every SM. On the H200 recordings of gemm_wgmma_half the source's
// times rank the target's configurations no better than chance (Spearman -0.06 both ways);
// multiplied by the ratio of the rounds their blocks run in on the two problems they rank them
// at 0.63-0.67 (of the configurations both hold, the three within 5% of the fastest at 4096^3
// are the 1st, 3rd and 4th fastest of the 128x4096x4096 prior carried there; 277th on as measured).
//
// The wave model: a config's time on a problem is the rounds its blocks run in, ceil(work
// blocks / (SMs x blocks resident per SM)), times what one block does, which for the same
// config grows with K (the tile and the split along K are the config's). So a time measured on
// the source problem becomes time x rounds(target) x K(target) / (rounds(source) x K(source)).
// It leaves out what differs inside a block (edge tiles, L2 reuse, a memory-bound skinny
// problem's bytes): a first-order correction, which the run's own measurements then refine.
//
// Pure.

#include <cstdint>
#include <optional>
#include <vector>

#include "registry/config.h"
#include "registry/device_facts.h"
#include "registry/kernel_template.h"
#include "registry/problem.h"
#include "tuner/search/prior.h"

namespace tilesmith {

// The rounds the config's blocks run in on `problem`: ceil(work blocks / (SMs x resident)).
// Work blocks: the template's derived WORK_BLOCKS where it defines one (a persistent grid is
// launched with at most one block per SM and loops over its tiles: its work is the tiles, not
// the grid), else the launch grid's blocks. Resident: the blocks per SM that the block's shared
// memory (dynamic, plus the 1 KiB the GPU reserves per block, against the opt-in limit plus
// that 1 KiB) and its threads (2,048 per SM) leave room for, at least one; registers are
// not known before the compile. nullopt where the config does not render for the problem or
// the device does not say how many SMs it has.
std::optional<std::int64_t> wave_rounds(const KernelTemplate& tmpl, const Config& config,
                                        const GemmProblem& problem, const DeviceFacts& device);

// `source`'s rows with each time carried over from the source's problem to `target` by the
// wave model above (both on `device`), fastest first; rows whose config renders on only one of
// the two problems are left out (the target cannot run them, or the source's time cannot be
// carried). The source as it is where its problem is unknown (a Kernel Tuner file of its own)
// or equal to `target` in sizes, or where no row could be carried. `describe` says it was
// rescaled.
PriorSource rescaled_to_problem(const PriorSource& source, const KernelTemplate& tmpl,
                                const GemmProblem& target, const DeviceFacts& device);

// `sources` with those of `tmpl` carried to `target` (rescaled_to_problem), the others as they are.
std::vector<PriorSource> priors_for_problem(const std::vector<PriorSource>& sources, const KernelTemplate& tmpl,
                                            const GemmProblem& target, const DeviceFacts& device);

}  // namespace tilesmith
