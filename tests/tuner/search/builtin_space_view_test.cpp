// The search's view of every built-in template's space is walked, not sampled, on the
// problems each template serves (tuner/search/detail/space_view.h), unless its valid points
// are too many to keep and a uniform draw is often valid. Otherwise a sampled view draws
// each of a generation's 20,000 candidates by a randomised walk of its own: when tile
// widths took gemm_tma_half's Cartesian product past the view's old bound on it (20
// million points), its view went over to sampling and evolve spent 20 s of an H200 host's
// CPU on every generation at M = 128, where the pruned walk takes a tenth of a second.
// Adding a parameter's values must not do that again unnoticed.

#include <chrono>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "registry/device_facts.h"
#include "registry/problem.h"
#include "registry/template_library.h"
#include "tests/problem_maker.h"
#include "tuner/search/detail/space_view.h"

namespace tilesmith::proposers::detail {
namespace {

GemmProblem problem(std::int64_t m, std::int64_t n, std::int64_t k, DType type, const char* layout) {
  GemmProblem p = testing::make_problem(m, n, k, layout);
  p.a_type = p.b_type = p.c_type = type;
  return p;
}

DeviceFacts device(const char* arch, int multiprocessors) {
  DeviceFacts d = nominal_facts_for_arch(arch);
  d.multiprocessors = multiprocessors;
  return d;
}

TEST(BuiltInSpaceViews, EveryTemplateServingAProblemIsWalkedOrCheapToSample) {
  auto library = TemplateLibrary::embedded();
  ASSERT_TRUE(library.ok()) << library.status().message();
  const std::vector<GemmProblem> problems = {
      problem(4096, 4096, 4096, DType::kF32, "NN"),  problem(4096, 4096, 4096, DType::kBF16, "NT"),
      problem(128, 6144, 4096, DType::kBF16, "NT"),  problem(16, 6144, 4096, DType::kBF16, "NT"),
      problem(512, 1280, 8192, DType::kF16, "NT"),   problem(1, 4096, 4096, DType::kBF16, "NT"),
      problem(128, 4096, 4096, DType::kF32, "NN"),   problem(4096, 4096, 4096, DType::kE4M3, "NT"),
  };
  // An H100/H200, an A100 and an MI200.
  const std::vector<DeviceFacts> devices = {device("sm_90", 132), device("sm_80", 108), device("gfx90a", 104)};
  int walked = 0;
  for (const DeviceFacts& dev : devices) {
    for (const GemmProblem& p : problems) {
      for (const KernelTemplate* t : library->supporting(p)) {
        if (!t->can_serve(p, dev).ok()) continue;
        const auto start = std::chrono::steady_clock::now();
        const SpaceContext ctx = t->context(p, &dev);
        auto view = SpaceView::build(t->space(), ctx);
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        const std::string what = t->name() + " on " + dev.arch + " for " + p.describe();
        if (view->enumerated()) {
          EXPECT_FALSE(view->points().empty()) << what;
          ++walked;
          continue;
        }
        // Too many valid points to keep (gemm_async's 8 million of 28 million): the view
        // samples, which is cheap only where a uniform draw of the domains is often valid
        // (SpaceView::sample tries 256 before its randomised walk).
        std::mt19937_64 rng(1);
        int valid = 0;
        for (int draw = 0; draw < 1000; ++draw) {
          PointValues point;
          for (const auto& parameter : t->space().parameters()) {
            std::uniform_int_distribution<size_t> pick(0, parameter.values.size() - 1);
            point.push_back(parameter.values[pick(rng)]);
          }
          valid += t->space().is_valid(point, ctx);
        }
        EXPECT_GE(valid, 50) << what << ": the view samples (its walk took " << seconds
                             << " s), and only " << valid << " of 1,000 uniform draws are valid";
      }
    }
  }
  EXPECT_GE(walked, 30);  // the templates and problems above, not an empty loop
}

}  // namespace
}  // namespace tilesmith::proposers::detail
