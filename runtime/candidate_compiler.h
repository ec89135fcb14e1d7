#pragma once
// Render + compile one candidate: the step shared by the GPU evaluator, the compile-only
// command and compile-ahead. Needs no GPU.

#include "registry/config.h"
#include "registry/device_facts.h"
#include "registry/kernel_template.h"
#include "runtime/compiler.h"
#include "runtime/evaluation.h"

namespace tilesmith {

struct CompiledCandidate {
  Evaluation evaluation;    // outcome ok, invalid or compile_error, with compile figures
  RenderedKernel rendered;  // valid when the outcome is not invalid
  CompileResult compiled;   // binary valid when the outcome is ok
};

// Outcome invalid: the render was refused (message says why). compile_error: the
// compiler refused the target or the source (message: the log's first lines; the
// full log in evaluation.compile_log). `output`: what comes back in `compiled`
// (runtime/compiler.h); the evaluation's code hash comes with each.
CompiledCandidate compile_candidate(Compiler& compiler, const KernelTemplate& tmpl, const GemmProblem& problem,
                                    const Config& config, const DeviceFacts& device,
                                    CompileOutput output = CompileOutput::kBinary);

// The render alone, nothing compiled: outcome invalid as compile_candidate's, else ok with
// `rendered` and no code hash.
CompiledCandidate render_candidate(const KernelTemplate& tmpl, const GemmProblem& problem, const Config& config,
                                   const DeviceFacts& device);

// The compile step of compile_candidate, for a render_candidate result (an invalid one comes back
// as it is): for callers that look at the render first (the input hash) before compiling it.
CompiledCandidate compile_rendered(Compiler& compiler, const KernelTemplate& tmpl, CompiledCandidate rendered,
                                   CompileOutput output = CompileOutput::kBinary);

// What a compile of `rendered` is given and the kernel is launched with: compile_input_key's hash
// (source, headers, options, target, the compiler's version and base options) with the launch, as
// kernel_code_hash takes it. Under one compiler equal input hashes mean equal code hashes, so a
// check of the generated code need compile only where the inputs moved
// (tests/cli/kernel_code_hashes_test.cpp).
std::string candidate_input_hash(const Compiler& compiler, const KernelTemplate& tmpl, const RenderedKernel& rendered);

// The first `max_lines` lines of a compiler log that say "error" (or the log's start):
// short enough for history.csv and the LLM prompt.
std::string compile_log_excerpt(const std::string& log, int max_lines = 6);

}  // namespace tilesmith
