#pragma once
// What the generation-loop tests share: a small synthetic Kernel Tuner recording replayed
// by the real ReplayEvaluator, an evaluator that counts, an observer, a scripted
// proposer and the fixture that wires them into a GenerationLoop.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "base/format.h"
#include "runtime/replay/kernel_tuner_cache.h"
#include "runtime/replay/recorded_template.h"
#include "runtime/replay/replay_evaluator.h"
#include "tests/cli/process.h"
#include "tuner/loop/candidate_runner.h"
#include "tuner/records/journal.h"
#include "tuner/loop/loop.h"
#include "tuner/search/offline_proposers.h"


namespace tilesmith::loop_test {
namespace fs = std::filesystem;
using nlohmann::json;
using testing::fresh_dir;

// A x B x C = 5 x 5 x 3 configurations; time falls towards A=8, B=4, C=1; a few fail.
inline std::shared_ptr<const replay::Recording> synthetic(const std::string& device = "Synthetic GPU",
                                                   std::vector<int> a_values = {1, 2, 4, 8, 16},
                                                   const std::string& name = "synthetic") {
  json cache = json::object();
  for (int a : a_values)
    for (int b : {1, 2, 4, 8, 16})
      for (int c : {0, 1, 2}) {
        const std::string key = std::to_string(a) + "," + std::to_string(b) + "," + std::to_string(c);
        json rec{{"A", a}, {"B", b}, {"C", c}, {"compile_time", 100.0}};
        if (a == 16 && b == 16) {
          rec["time"] = "CompilationFailedConfig";
        } else {
          const double t = 1.0 + std::abs(std::log2(double(a)) - 3) + std::abs(std::log2(double(b)) - 2) * 0.7 +
                           std::abs(c - 1) * 0.3;
          rec["time"] = t;
          rec["times"] = json::array({t * 0.99, t, t * 1.01, t * 1.02});
        }
        cache[key] = rec;
      }
  json j{{"device_name", device},
         {"kernel_name", name},
         {"problem_size", {1024, 1024}},
         {"objective", "time"},
         {"tune_params_keys", {"A", "B", "C"}},
         {"tune_params", {{"A", a_values}, {"B", {1, 2, 4, 8, 16}}, {"C", {0, 1, 2}}}},
         {"cache", cache}};
  auto parsed = replay::parse_kernel_tuner_cache(j.dump(), "synthetic.json");
  EXPECT_TRUE(parsed.ok()) << parsed.status().to_string();
  replay::RecordingOptions o;
  o.find_space_file = false;
  auto rec = replay::Recording::from_cache(std::move(parsed).value(), name, name + ".json", o);
  EXPECT_TRUE(rec.ok()) << rec.status().to_string();
  return *rec;
}

// Around the real evaluator: counts evaluations per config and, when asked, takes time
// like a compiler (prepare) and a GPU (evaluate) would.
class CountingEvaluator final : public Evaluator {
 public:
  explicit CountingEvaluator(Evaluator& inner, int compile_ms = 0, int measure_ms = 0)
      : inner_(inner), compile_ms_(compile_ms), measure_ms_(measure_ms) {}
  const DeviceFacts& device() const override { return inner_.device(); }
  Evaluation prepare(const KernelTemplate& t, const GemmProblem& p, const Config& c) override {
    {
      std::lock_guard lock(mutex_);
      prepare_order_.push_back(config_hash(c));
    }
    ++compiling_;
    std::this_thread::sleep_for(std::chrono::milliseconds(compile_ms_for_ ? compile_ms_for_(c) : compile_ms_));
    {
      std::lock_guard lock(mutex_);
      compiled_.insert(config_hash(c));
    }
    --compiling_;
    return inner_.prepare(t, p, c);
  }
  // Compiles under way now.
  int compiling() const { return compiling_.load(); }
  // A compile time per config (instead of one for all), e.g. a few slow ones.
  void set_compile_ms(std::function<int(const Config&)> f) { compile_ms_for_ = std::move(f); }
  // The configs (hashes) in the order their compiles started, and in the order measured.
  std::vector<std::string> prepare_order() const {
    std::lock_guard lock(mutex_);
    return prepare_order_;
  }
  std::vector<std::string> evaluate_order() const {
    std::lock_guard lock(mutex_);
    return evaluate_order_;
  }
  Evaluation evaluate(const KernelTemplate& t, const GemmProblem& p, const Config& c) override {
    bool compiled;
    {
      std::lock_guard lock(mutex_);
      compiled = compiled_.count(config_hash(c)) > 0;
      ++evaluations_[config_hash(c)];
      evaluate_order_.push_back(config_hash(c));
    }
    if (!compiled) std::this_thread::sleep_for(std::chrono::milliseconds(compile_ms_));
    std::this_thread::sleep_for(std::chrono::milliseconds(measure_ms_));
    return inner_.evaluate(t, p, c);
  }
  Result<Evaluation> vendor_baseline(const GemmProblem& p) override { return inner_.vendor_baseline(p); }
  std::string vendor_name() const override { return inner_.vendor_name(); }
  std::map<std::string, int> evaluations() const {
    std::lock_guard lock(mutex_);
    return evaluations_;
  }

 private:
  Evaluator& inner_;
  int compile_ms_, measure_ms_;
  std::atomic<int> compiling_{0};
  mutable std::mutex mutex_;
  std::set<std::string> compiled_;
  std::map<std::string, int> evaluations_;
  std::function<int(const Config&)> compile_ms_for_;
  std::vector<std::string> prepare_order_, evaluate_order_;
};

class Observer final : public LoopObserver {
 public:
  std::vector<std::string> logs;
  std::int64_t rows = 0;
  std::int64_t stop_after = -1;
  std::atomic<bool> stop{false};
  void log(LogLevel, const std::string& m) override { logs.push_back(m); }
  void on_row(const HistoryRow&, const LoopProgress&) override {
    if (++rows == stop_after) stop = true;
  }
  void on_generation(const LoopProgress&) override {}
};

// Proposes what the script says for each generation; nothing once it runs out.
class ScriptedProposer final : public Proposer {
 public:
  std::map<int, ProposalBatch> script;
  std::string name() const override { return "scripted"; }
  ProposalBatch propose(const ProposalRequest& r) override {
    auto it = script.find(r.generation);
    if (it == script.end()) {
      ProposalBatch b;
      b.proposer = "scripted";
      b.status = Status::failed_precondition("script finished");
      return b;
    }
    return it->second;
  }
};

struct Fixture {
  std::shared_ptr<const replay::Recording> recording = synthetic();
  KernelTemplate tmpl = replay::recorded_template(*recording);
  replay::ReplayEvaluator replay{recording, 7};
  replay::ReplayEvaluator retimer{recording, 99};
  GemmProblem problem = recording->problem();

  LoopOptions options(const fs::path& dir, std::int64_t max_evals) const {
    LoopOptions o;
    o.results_dir = dir;
    o.problem = problem;
    o.candidates = 6;
    o.seed = 7;
    o.budget.max_evals = max_evals;
    o.compile_threads = 2;
    return o;
  }
};

inline std::vector<std::string> sequence(const std::vector<HistoryRow>& rows) {
  std::vector<std::string> s;
  for (const auto& r : rows)
    s.push_back(std::to_string(r.generation) + " " + r.stage + " " + r.config_hash + " " + outcome_name(r.outcome));
  return s;
}
}  // namespace tilesmith::loop_test
