#include "cli/run_flags.h"

#include <tuple>

#include "cli/config_file.h"
#include "base/format.h"
#include "cli/flag_checks.h"
#include "tuner/search/offline_proposers.h"

namespace tilesmith::cli {

namespace {

// A margin as 25% or 0.25 (at most 10); `word` is the flag's other choice, for the message.
Result<double> parse_margin(const std::string& text, const std::string& word) {
  double v = 0;
  bool percent = false;
  if (!parse_fraction(trimmed(text), &v, &percent) || v < 0)
    return Status::invalid("'" + text + "' is not a margin; give one as 25% or 0.25, or " + word);
  if (v > 10) return Status::invalid("'" + text + "' is too large a margin; give at most 1000% (10), or " + word);
  return v;
}

}  // namespace

Result<double> parse_race_margin(const std::string& text) {
  if (trimmed(text) == "off") return 0.0;
  return parse_margin(text, "off");
}

Result<std::optional<double>> parse_retime_within(const std::string& text) {
  if (trimmed(text) == "all") return std::optional<double>();
  TS_ASSIGN_OR_RETURN(double v, parse_margin(text, "all"));
  return std::optional<double>(v);
}

void add_run_flags(CLI::App& app, RunFlags& f) {
  add_config_flag(app, "read settings from this TOML or INI file: one key = value a line, the keys exactly the long "
                       "flag names (candidates = 16, max-evals = 400, llm-url = \"http://127.0.0.1:8000/v1\"); "
                       "an unknown key, a line that is not a setting or a bad value is refused with its line. "
                       "Flags given on the command line win");
  // Each section's options go into its group of the help: the group is set as the default
  // of the options made after it, and put back at the end (the subcommands made later copy
  // the defaults).
  const std::string problem_group = "Problem";
  app.option_defaults()->group(problem_group);
  add_problem_flags(app, f.problem_flags, /*required=*/false);
  app.add_option("--problem-file", f.problem_file,
                 "the problem as JSON instead of flags: {\"m\":4096,\"n\":4096,\"k\":4096,\"dtype\":\"fp32\",\"layout\":\"NN\"}")
      ->check(CLI::ExistingFile);
  app.add_option("--problems", f.problems,
                 "tune a whole set of problems under one budget (--max-evals and/or --hours, shared; not "
                 "--generations): a JSON file {\"name\": ..., \"problems\": [{\"name\": \"qkv_t16\", \"count\": 32, "
                 "\"m\": 16, \"n\": 6144, \"k\": 4096, \"dtype\": \"bf16\"}, ...]}, e.g. "
                 "data/problems/llama3_8b_bf16_decode.json. --results DIR gets problem_set.json, a folder per "
                 "problem and summary.json (docs/problem-sets.md)")
      ->check(CLI::ExistingFile);

  const std::string kernel_group = "Kernels and where they run";
  app.option_defaults()->group(kernel_group);
  app.add_option("--template", f.templates, "tune only this template (repeat for several; default: every template). "
                                            "One that cannot serve the problem on this GPU (layout, epilogue, no "
                                            "valid config) is left out with the reason");
  app.add_option("--kernels-dir", f.kernels_dir, "load templates (NAME.hip + NAME.json) from this folder instead of "
                                                 "the built-in ones");
  add_evaluator_flags(app, f.evaluator, /*several_devices=*/true);
  const std::string worker_group = "Worker processes (docs/reliability.md)";
  for (const char* name : {"--in-process", "--worker-exe", "--run-deadline", "--compile-deadline", "--replay-workers"})
    app.get_option(name)->group(worker_group);
  app.add_flag("--no-vendor", f.no_vendor, "do not time the vendor library (cuBLAS/hipBLAS) for the ratio column");

  const std::string search_group = "Search";
  app.option_defaults()->group(search_group);
  std::string names = "auto, llm";
  for (const auto& n : offline_proposer_names()) names += ", " + n;
  app.add_option("--proposer", f.proposer,
                 "who proposes configs: " + names +
                     ". auto = the LLM when --llm-url or --llm-model is given, otherwise " +
                     default_offline_proposer() + " (built-in surrogate-guided search)")
      ->capture_default_str();
  app.add_option("--fallback-proposer", f.fallback_proposer,
                 "offline proposer behind the LLM: seeds generation 0, fills in while the endpoint fails (default: " +
                     default_offline_proposer() + ")");
  app.add_option("--candidates", f.candidates, "configs proposed per generation (per template)")
      ->check(integer_from_to(1, 1000))
      ->capture_default_str();
  app.add_option("--allocation", f.allocation,
                 "how a generation's evaluations are split over several templates: gain (4, at most candidates, "
                 "per template in play, by what each can still gain; a floor until each is known; none to a "
                 "template that the device's peak for its units keeps slower than what the run measured) or even "
                 "(candidates each)")
      ->check(CLI::IsMember({"gain", "even"}))
      ->capture_default_str();
  app.add_option_function<std::string>(
         "--objective",
         [&f](const std::string& name) { f.objective = parse_objective(name).value_or(Objective::kTime); },
         "what the search minimises and the winner is picked by: time (median time), energy (joules per "
         "launch) or edp (joules x seconds). energy and edp read the GPU's energy counter after every "
         "measurement, which costs at least 100 ms more per candidate, and need a GPU that has one (NVML on "
         "NVIDIA, Volta and later): without it the run stops at its first measurement with exit code 2 and "
         "says so. A results folder keeps the objective it was tuned with "
         "(docs/timing-and-tolerances.md)")
      ->check(CLI::IsMember(objective_names()))
      ->default_str(objective_name(f.objective));
  app.add_option("--seed", f.seed, "seed of the proposals (and of the replay draws); same seed, same run")
      ->check(integer_at_least<std::uint64_t>(0))
      ->capture_default_str();
  app.add_option("--warm-start", f.warm_start,
                 "measure earlier winners before the search: PATH is a best_config.json or a results folder "
                 "holding one (repeatable). Every entry of the same template counts, whatever its problem (this "
                 "GPU's entries first); configs not valid for this problem are skipped. E.g. 4096^3's winners when "
                 "tuning 8192^3")
      ->type_name("PATH")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  app.add_option("--prior", f.prior,
                 "start each template's search with a few of the fastest configurations (spread over their good "
                 "regions) that an earlier search of the same template measured on another GPU or problem: PATH is "
                 "a results folder, a history.csv or a Kernel Tuner cache file (repeatable; docs/search.md, "
                 "\"Transfer\"). Times measured on another problem are first carried to this run's by how many "
                 "waves each configuration's blocks take on the two (docs/autotune-loop.md, \"Priors\"); evolve also models all of its measurements and, while they agree with the "
                 "run's own, hands over from its space-filling start sooner. Where --warm-start re-measures "
                 "winners, a prior says where the good region is")
      ->type_name("PATH")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  app.add_option_function<std::string>(
         "--race",
         [&f](const std::string& text) { f.race_margin = parse_race_margin(text).value_or(f.race_margin); },
         "racing: a candidate whose samples are clearly slower than the best so far stops sampling early and is "
         "recorded with the samples it has (its message says so): once its 20th percentile is above the best's "
         "80th percentile times 1 + MARGIN, after at least 10 samples. MARGIN as 25% or 0.25; off (or 0) samples "
         "every candidate in full. Only with --objective time; the re-timing of the finalists is never raced")
      ->check([](const std::string& text) {
        auto m = parse_race_margin(text);
        return m.ok() ? std::string() : m.status().message();
      })
      ->type_name("MARGIN")
      ->default_str("25%");
  app.add_option("--overlap", f.overlap,
                 "plan and compile the next generation while the queued candidates of one are measured (on), or after its last "
                 "result (off). on keeps the GPUs busy while the proposer works; off makes a run reproducible "
                 "from its seed on any number of devices. auto: on, except with --backend replay")
      ->check(CLI::IsMember({"auto", "on", "off"}))
      ->capture_default_str();
  app.add_option("--retime", f.retime, "re-time this many of the best configs (by --objective: the fastest for "
                                       "time) at the end before naming the winner (0: keep the search's measurement)")
      ->check(integer_from_to(0, 100))
      ->capture_default_str();
  app.add_option_function<std::string>(
         "--retime-within",
         [&f](const std::string& text) { f.retime_within = parse_retime_within(text).value_or(f.retime_within); },
         "re-time only the templates whose best search measurement (by --objective) is within MARGIN of the "
         "fastest template's (25% or 0.25): one further behind cannot win the re-timing, and its "
         "best_config.json entry keeps its search measurement (the log says so). all: every template")
      ->check([](const std::string& text) {
        auto m = parse_retime_within(text);
        return m.ok() ? std::string() : m.status().message();
      })
      ->type_name("MARGIN")
      ->default_str("25%");
  app.add_option(
         "--retime-rounds", f.retime_rounds,
         "the re-timing's budget: at most this many interleaved rounds of the finalists, stopping early once the "
         "best by --objective is certified better than the others at 95% (looks after 8 rounds, then every 4); "
         "otherwise the winner is reported as a tie, broken toward the steadier finalist. A fresh worker process "
         "measures every 4 rounds, so the interval holds what differs between processes "
         "(docs/timing-and-tolerances.md)")
      ->check(integer_from_to(1, 1000))
      ->capture_default_str();
  app.add_option("--compile-threads", f.compile_threads,
                 "compiles running ahead of the GPUs, all devices together (default: min(8, half the cores) per "
                 "device; 0: compile just before measuring)")
      ->check(integer_from_to(-1, 64));

  const std::string budget_group = "Budgets (the run ends at the first one reached; 0 = no limit)";
  app.option_defaults()->group(budget_group);
  app.add_option("--generations", f.generations, "generations of the whole run (a resumed run counts its earlier ones)")
      ->check(integer_at_least(0))
      ->capture_default_str();
  app.add_option("--max-evals", f.max_evals, "candidates evaluated in the whole run (rejected proposals do not count)")
      ->check(integer_at_least<std::int64_t>(0))
      ->capture_default_str();
  app.add_option("--hours", f.hours, "wall-clock hours of this session, e.g. 7.5")
      ->check(number_at_least(0))
      ->capture_default_str();
  app.add_option("--patience", f.patience,
                 "plateau: stop after this many generations without a better config (faster, for --objective time)")
      ->check(integer_at_least(0))
      ->capture_default_str();

  app.add_option("--stop-when-converged", f.stop_when_converged,
                 "stop once the search estimates that its best is within MARGIN of the space's best with at least "
                 "PROBABILITY: [MARGIN[/PROBABILITY]], default 5%/0.95, e.g. --stop-when-converged 2%/0.95. The "
                 "estimate (from the evolve proposer's model over the untried configs) is shown in the progress "
                 "line and the summary either way; proposers that cannot estimate (llm, random) never stop on it")
      ->expected(0, 1)
      ->type_name("[MARGIN[/P]]");

  const std::string llm_group = "LLM endpoint (docs/llm.md)";
  app.option_defaults()->group(llm_group);
  app.add_option("--llm-url", f.llm.url,
                 "base URL: https://api.openai.com/v1 (default for openai), http://127.0.0.1:8000/v1 (vLLM), "
                 "http://127.0.0.1:11434/v1 (Ollama), https://api.anthropic.com (default for anthropic)");
  app.add_option("--llm-model", f.llm.model, "model name as the server knows it, e.g. gpt-5, Qwen/Qwen2.5-Coder-32B-Instruct");
  app.add_option("--llm-api-key-env", f.llm.api_key_env,
                 "environment variable holding the API key (default OPENAI_API_KEY or ANTHROPIC_API_KEY; unset: no "
                 "key is sent). The key itself is never written anywhere");
  app.add_option("--provider", f.llm.provider, "API kind: openai (also vLLM, SGLang, llama.cpp, Ollama, LM Studio, proxies) or anthropic")
      ->check(CLI::IsMember({"openai", "anthropic", "openai-compatible", "vllm", "llamacpp", "llama.cpp", "ollama"}))
      ->capture_default_str();
  // The endpoint's time limits, in seconds.
  const std::tuple<const char*, double*, const char*> seconds[] = {
      {"--llm-timeout", &f.llm.request_timeout_s, "seconds one request may take (reasoning models are slow)"},
      {"--llm-connect-timeout", &f.llm.connect_timeout_s, "seconds to connect"},
      {"--llm-deadline", &f.llm.total_deadline_s, "seconds one proposal may take, retries included"}};
  for (const auto& [name, value, help] : seconds)
    app.add_option(name, *value, help)->check(number_above(0))->capture_default_str();
  app.add_option("--llm-retries", f.llm.retries, "retries of a failed request (429, 5xx, timeouts)")
      ->check(integer_from_to(0, 20))
      ->capture_default_str();
  app.add_option("--llm-temperature", f.llm.temperature, "sampling temperature (not sent unless given)")
      ->check(number_at_least(0));
  // The token budgets of a reply and of a prompt.
  const std::tuple<const char*, int*, const char*> tokens[] = {
      {"--llm-max-tokens", &f.llm.max_output_tokens, "reply cap, reasoning included"},
      {"--llm-prompt-tokens", &f.llm.prompt_token_budget, "prompt budget; the history is condensed to fit"}};
  for (const auto& [name, value, help] : tokens)
    app.add_option(name, *value, help)->check(integer_at_least(1))->capture_default_str();

  const std::string out_group = "Output";
  app.option_defaults()->group(out_group);
  app.add_option("--results", f.results,
                 "folder for history.csv, best_config.json, journal.jsonl, llm_log.jsonl and the log; running again "
                 "with the same folder and problem resumes the run")
      ->capture_default_str();
  app.add_flag("-v,--verbose", f.verbose, "log every candidate");
  app.add_flag("-q,--quiet", f.quiet, "warnings and the summary only");
  app.add_option("--log-file", f.log_file, "detailed log (default: <results>/autotune-loop.log)");
  app.add_flag("--no-log-file", f.no_log_file, "write no log file");
  app.add_option("--progress", f.progress,
                 "auto: a live status line on a terminal, plain periodic lines otherwise; tty, plain, none")
      ->check(CLI::IsMember({"auto", "tty", "plain", "none"}))
      ->capture_default_str();
  app.add_option("--status-interval", f.status_interval_s, "seconds between plain progress lines")
      ->check(number_above(0))
      ->capture_default_str();
  app.option_defaults()->group("Options");
}

}  // namespace tilesmith::cli
