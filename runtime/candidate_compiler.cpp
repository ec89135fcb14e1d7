#include "runtime/candidate_compiler.h"

#include <sstream>

#include "runtime/code_identity.h"
#include "runtime/compile_cache.h"

namespace tilesmith {

std::string compile_log_excerpt(const std::string& log, int max_lines) {
  std::istringstream in(log);
  std::string line, errors, head;
  int n_err = 0, n_head = 0;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    if (n_head < max_lines) {
      head += line + "\n";
      ++n_head;
    }
    if (n_err < max_lines && line.find("error") != std::string::npos) {
      errors += line + "\n";
      ++n_err;
    }
  }
  std::string out = n_err ? errors : head;
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

namespace {

CompileRequest request_for(const KernelTemplate& tmpl, const RenderedKernel& rendered, CompileOutput output) {
  CompileRequest req{tmpl.name() + ".hip", rendered.source, rendered.options, rendered.arch, rendered.entry, {}};
  if (rendered.headers) req.headers = *rendered.headers;
  req.output = output;
  return req;
}

}  // namespace

CompiledCandidate render_candidate(const KernelTemplate& tmpl, const GemmProblem& problem, const Config& config,
                                   const DeviceFacts& device) {
  CompiledCandidate c;
  auto rendered = tmpl.render(problem, config, device);
  if (!rendered.ok()) {
    c.evaluation.outcome = Outcome::kInvalid;
    c.evaluation.message = rendered.status().message();
    return c;
  }
  c.rendered = std::move(rendered).value();
  c.evaluation.outcome = Outcome::kOk;
  return c;
}

std::string candidate_input_hash(const Compiler& compiler, const KernelTemplate& tmpl, const RenderedKernel& rendered) {
  return kernel_code_hash(rendered,
                          "inputs\n" + compile_input_key(compiler, request_for(tmpl, rendered, CompileOutput::kBinary)));
}

CompiledCandidate compile_candidate(Compiler& compiler, const KernelTemplate& tmpl, const GemmProblem& problem,
                                    const Config& config, const DeviceFacts& device, CompileOutput output) {
  return compile_rendered(compiler, tmpl, render_candidate(tmpl, problem, config, device), output);
}

CompiledCandidate compile_rendered(Compiler& compiler, const KernelTemplate& tmpl, CompiledCandidate c,
                                   CompileOutput output) {
  if (c.evaluation.outcome == Outcome::kInvalid) return c;
  c.compiled = compiler.compile(request_for(tmpl, c.rendered, output));
  c.evaluation.compile_ms = c.compiled.compile_ms;
  c.evaluation.compile_cache_hit = c.compiled.cache_hit;
  c.evaluation.compile_log = c.compiled.log;
  c.evaluation.resources = c.compiled.resources;
  c.evaluation.resources.dynamic_shared_bytes = std::int64_t(c.rendered.dynamic_shared_bytes);
  if (!c.compiled.ok) {
    c.evaluation.outcome = Outcome::kCompileError;
    c.evaluation.message = compile_log_excerpt(c.compiled.log);
    if (c.evaluation.message.empty()) c.evaluation.message = "the compiler failed without a log";
    return c;
  }
  c.evaluation.outcome = Outcome::kOk;
  c.evaluation.code_hash = kernel_code_hash(c.rendered, c.compiled.code_digest);
  return c;
}

}  // namespace tilesmith
