#include "runtime/read_floor.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <nlohmann/json.hpp>

#include "base/json_fields.h"
#include "runtime/candidate_compiler.h"
#include "runtime/compiler.h"
#include "runtime/gpu_device.h"
#include "runtime/gpu_error.h"
#include "runtime/gpu_evaluator.h"

namespace tilesmith {
namespace {
using nlohmann::json;
}  // namespace

ReadBytes read_floor_bytes(const GemmProblem& p) {
  ReadBytes r;
  r.a = std::uint64_t(p.m) * std::uint64_t(p.k) * std::uint64_t(dtype_bytes(p.a_type));
  r.b = std::uint64_t(p.k) * std::uint64_t(p.n) * std::uint64_t(dtype_bytes(p.b_type));
  if (p.beta != 0.0) r.c = std::uint64_t(p.m) * std::uint64_t(p.n) * std::uint64_t(dtype_bytes(p.c_type));
  return r;
}

std::uint32_t read_floor_checksum(const void* bytes, std::uint64_t count) {
  const auto* p = static_cast<const unsigned char*>(bytes);
  std::uint32_t sum = 0;
  std::uint64_t i = 0;
  for (; i + 4 <= count; i += 4) {
    sum += std::uint32_t(p[i]) | std::uint32_t(p[i + 1]) << 8 | std::uint32_t(p[i + 2]) << 16 |
           std::uint32_t(p[i + 3]) << 24;
  }
  for (; i < count; ++i) sum += std::uint32_t(p[i]) << (8 * (i & 3));
  return sum;
}

double percent_of_floor(double floor_ms, double kernel_ms) {
  if (!(floor_ms > 0) || !(kernel_ms > 0)) return 0;
  return 100.0 * floor_ms / kernel_ms;
}

void to_json(json& j, const ReadFloor& f) {
  json variants = json::array();
  for (const auto& v : f.variants) {
    json x{{"name", v.name}, {"outcome", outcome_name(v.outcome)}, {"screen_ms", exact_double(v.screen_ms)},
           {"final_ms", exact_double(v.final_ms)}};
    if (!v.message.empty()) x["message"] = v.message;
    variants.push_back(x);
  }
  const TimingStats& t = f.timing;
  j = json{{"bytes", f.bytes.total()},
           {"bytes_a", f.bytes.a},
           {"bytes_b", f.bytes.b},
           {"bytes_c", f.bytes.c},
           {"variant", f.variant},
           {"median_ms", exact_double(t.median_ms)},
           {"gbps", exact_double(f.gbps)},
           {"timing", timing_to_json(t)},
           {"compile_ms", exact_double(f.compile_ms)},
           {"compile_cache_hit", f.compile_cache_hit},
           {"variants", variants}};
}

Result<ReadFloor> read_floor_from_json(const json& j) {
  ReadFloor f;
  FieldReader r(j, "read_floor");
  std::int64_t a = 0, b = 0, c = 0;
  r.get("bytes_a", a);
  r.get("bytes_b", b);
  r.get("bytes_c", c);
  if (a < 0 || b < 0 || c < 0) r.fail("negative byte count");
  f.bytes = ReadBytes{std::uint64_t(a), std::uint64_t(b), std::uint64_t(c)};
  r.get("variant", f.variant);
  r.get("gbps", f.gbps);
  r.get("compile_ms", f.compile_ms);
  r.get("compile_cache_hit", f.compile_cache_hit);
  if (const json* t = r.object("timing")) r.merge(timing_from_json(*t, "read_floor.timing", &f.timing));
  if (auto it = j.find("variants"); it != j.end()) {
    if (!it->is_array()) {
      r.fail("variants is not an array");
    } else {
      for (const auto& x : *it) {
        if (!x.is_object()) {
          r.fail("a variant is not an object");
          break;
        }
        ReadFloorVariantResult v;
        FieldReader g(x, "read_floor.variants[]");
        std::string outcome = "ok";
        g.get("name", v.name);
        g.get("outcome", outcome);
        g.get("message", v.message);
        g.get("screen_ms", v.screen_ms);
        g.get("final_ms", v.final_ms);
        if (auto o = parse_outcome(outcome); o.ok())
          v.outcome = *o;
        else
          g.fail("unknown outcome '" + outcome + "'");
        r.merge(g.status());
        f.variants.push_back(std::move(v));
      }
    }
  }
  if (!r.status().ok()) return r.status();
  return f;
}

Result<ReadFloor> measure_read_floor(GpuDevice& device, Compiler& compiler, const ReadTarget& target,
                                     const TimingOptions& full, const TimeLaunches& time,
                                     const ReadFloorOptions& options) {
  const DeviceFacts& facts = device.facts();
  const std::vector<ReadFloorVariant> variants = read_floor_variants(facts);
  if (target.bytes.total() == 0) return Status::invalid("the problem has nothing to read");
  CompileRequest req{"read_floor.hip", read_floor_source(variants), read_floor_compile_options(facts), facts.arch,
                     variants.front().entry(), {}};
  const CompileResult compiled = compiler.compile(req);
  if (!compiled.ok)
    return Status::internal("the read-floor kernels do not compile for " + facts.arch + ": " +
                            compile_log_excerpt(compiled.log));
  ReadFloor out;
  out.bytes = target.bytes;
  out.compile_ms = compiled.compile_ms;
  out.compile_cache_hit = compiled.cache_hit;

  std::unique_ptr<GpuModule> module;
  try {
    module = device.load_module(compiled.binary);
  } catch (const GpuError& e) {
    if (e.sticky()) throw;
    return Status::internal(std::string("loading the read-floor kernels: ") + e.what());
  }
  DeviceBuffer words(device, 4 * sizeof(std::uint32_t));
  // The kernel ABI (kBody): three segments, out, check, magic.
  std::uint64_t p0 = target.ptr[0], p1 = target.ptr[1], p2 = target.ptr[2];
  std::uint64_t b0 = target.bytes.a, b1 = target.bytes.b, b2 = target.bytes.c;
  std::uint64_t pout = words.get();
  int check = 0;
  std::uint32_t magic = 0x9e3779b9u;
  if (magic == target.checksum) ++magic;
  void* args[] = {&p0, &b0, &p1, &b1, &p2, &b2, &pout, &check, &magic};

  // Each variant's launch, once its function is ready (nullptr: it could not be).
  std::vector<GpuFunction*> functions(variants.size(), nullptr);
  auto launcher = [&](std::size_t i) {
    const ReadFloorVariant& v = variants[i];
    const std::uint64_t grid = v.grid(target.bytes, facts.multiprocessors);
    GpuFunction* fn = functions[i];
    return [&device, fn, grid, threads = v.threads, smem = v.dynamic_shared_bytes(), &args] {
      device.launch(*fn, {std::uint32_t(grid), 1, 1}, {std::uint32_t(threads), 1, 1}, smem, args);
    };
  };

  TimingOptions screen = full;
  screen.warmup_ms = options.screen_warmup_ms;
  screen.min_samples = options.screen_min_samples;
  screen.max_samples = options.screen_max_samples;
  screen.max_sampling_ms = options.screen_max_sampling_ms;

  for (std::size_t i = 0; i < variants.size(); ++i) {
    const ReadFloorVariant& v = variants[i];
    ReadFloorVariantResult r;
    r.name = v.name();
    try {
      if (v.grid(target.bytes, facts.multiprocessors) > 0x7fffffffu) {
        r.outcome = Outcome::kResourceError;
        r.message = "the grid would exceed 2^31 - 1 blocks";
        out.variants.push_back(r);
        continue;
      }
      GpuFunction& fn = module->function(v.entry());
      if (auto why = allow_dynamic_shared(fn, std::int64_t(v.dynamic_shared_bytes()), facts.shared_per_block_optin)) {
        r.outcome = Outcome::kResourceError;
        r.message = *why;
        out.variants.push_back(r);
        continue;
      }
      functions[i] = &fn;
      const auto launch = launcher(i);
      // The check: every word read, summed, against the sum of the operands.
      device.fill_u32(pout, 0, 4);
      check = 1;
      launch();
      device.synchronize();
      check = 0;
      std::uint32_t got[4] = {0, 0, 0, 0};
      device.copy_to_host(got, pout, sizeof got);
      if (got[2] != 0) {
        r.outcome = Outcome::kWrongResult;
        r.message = "a bulk copy did not land (its barrier wait gave up)";
      } else if (got[0] != target.checksum) {
        char buf[160];
        std::snprintf(buf, sizeof buf,
                      "the words read sum to 0x%08x, the operands to 0x%08x: the variant skips or repeats data",
                      unsigned(got[0]), unsigned(target.checksum));
        r.outcome = Outcome::kWrongResult;
        r.message = buf;
      } else {
        r.screen_ms = time(launch, screen).median_ms;
      }
    } catch (const GpuError& e) {
      check = 0;
      if (e.sticky()) throw;
      r.outcome = e.resource() ? Outcome::kResourceError : Outcome::kLaunchError;
      r.message = e.what();
    }
    if (r.outcome != Outcome::kOk) functions[i] = nullptr;
    out.variants.push_back(r);
  }

  std::vector<std::size_t> ok;
  for (std::size_t i = 0; i < out.variants.size(); ++i)
    if (out.variants[i].outcome == Outcome::kOk && out.variants[i].screen_ms > 0) ok.push_back(i);
  if (ok.empty()) {
    std::string why;
    for (const auto& r : out.variants)
      why += "; " + r.name + ": " + outcome_name(r.outcome) + (r.message.empty() ? "" : " (" + r.message + ")");
    return Status::internal("no way of reading the operands passed its check" + why);
  }
  std::sort(ok.begin(), ok.end(),
            [&](std::size_t x, std::size_t y) { return out.variants[x].screen_ms < out.variants[y].screen_ms; });
  const std::size_t finalists = std::min<std::size_t>(ok.size(), std::size_t(std::max(options.finalists, 1)));
  bool have = false;
  for (std::size_t f = 0; f < finalists; ++f) {
    const std::size_t i = ok[f];
    TimingStats t;
    try {
      t = time(launcher(i), full);
    } catch (const GpuError& e) {
      if (e.sticky()) throw;
      out.variants[i].message = std::string("full timing failed: ") + e.what();
      continue;
    }
    out.variants[i].final_ms = t.median_ms;
    if (!have || t.median_ms < out.timing.median_ms) {
      have = true;
      out.timing = t;
      out.variant = out.variants[i].name;
    }
  }
  if (!have) return Status::internal("every finalist of the read floor failed its full timing");
  if (out.timing.median_ms > 0) out.gbps = double(out.bytes.total()) / (out.timing.median_ms * 1e-3) / 1e9;
  return out;
}

}  // namespace tilesmith
