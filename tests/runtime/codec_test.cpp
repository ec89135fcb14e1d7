// The one JSON codec of DeviceFacts and of Evaluation (the journal, best_config.json and
// the worker wire all use it): a fully populated struct survives a round trip through
// JSON text field by field. The structured bindings below name every field, so a field
// added to a struct fails to compile here until it is filled in, compared and carried
// by the codec.

#include <cmath>
#include <limits>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "registry/device_facts.h"
#include "runtime/evaluation.h"

namespace tilesmith {
namespace {

using nlohmann::json;

json through_text(const json& j) { return json::parse(j.dump()); }

TEST(Codec, DeviceFactsKeepsEveryField) {
  DeviceFacts d;
  {
    auto& [backend, ordinal, name, arch, multiprocessors, warp_size, max_threads_per_block, shared_per_block,
           shared_per_block_optin, registers_per_block, registers_per_multiprocessor, l2_bytes,
           global_memory_bytes, clock_khz, memory_clock_khz, memory_bus_bits, driver_version, runtime_version,
           fp32_lanes_per_multiprocessor] = d;
    backend = "hip";
    ordinal = 3;
    name = "AMD Instinct MI250X";
    arch = "gfx90a";
    multiprocessors = 110;
    warp_size = 64;
    max_threads_per_block = 512;
    shared_per_block = 60001;
    shared_per_block_optin = 60002;
    registers_per_block = 32769;
    registers_per_multiprocessor = 131071;
    l2_bytes = 8ll << 20;
    global_memory_bytes = 64ll << 30;
    clock_khz = 1700001;
    memory_clock_khz = 1600001;
    memory_bus_bits = 4096;
    driver_version = "50221153";
    runtime_version = "hiprtc (ROCm 5.2.3)";
    fp32_lanes_per_multiprocessor = 96;
  }
  json j = d;
  EXPECT_EQ(j.at("fingerprint"), d.fingerprint()) << "derived fields are written for readers";
  auto back = device_facts_from_json(through_text(j));
  ASSERT_TRUE(back.ok()) << back.status().to_string();
  const auto& [b0, b1, b2, b3, b4, b5, b6, b7, b8, b9, b10, b11, b12, b13, b14, b15, b16, b17, b18] = *back;
  const auto& [a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16, a17, a18] = d;
  EXPECT_EQ(b0, a0);
  EXPECT_EQ(b1, a1);
  EXPECT_EQ(b2, a2);
  EXPECT_EQ(b3, a3);
  EXPECT_EQ(b4, a4);
  EXPECT_EQ(b5, a5);
  EXPECT_EQ(b6, a6);
  EXPECT_EQ(b7, a7);
  EXPECT_EQ(b8, a8);
  EXPECT_EQ(b9, a9);
  EXPECT_EQ(b10, a10);
  EXPECT_EQ(b11, a11);
  EXPECT_EQ(b12, a12);
  EXPECT_EQ(b13, a13);
  EXPECT_EQ(b14, a14);
  EXPECT_EQ(b15, a15);
  EXPECT_EQ(b16, a16);
  EXPECT_EQ(b17, a17);
  EXPECT_EQ(b18, a18);
}

Evaluation full_evaluation() {
  Evaluation e;
  auto& [outcome, message, compile_log, compile_ms, compile_cache_hit, code_hash, resources, accuracy, timing,
         tflops, gbps, roofline_bound_tflops, roofline_pct, telemetry, telemetry_note] = e;
  outcome = Outcome::kWrongResult;
  message = "12 elements over tolerance";
  compile_log = "ptxas info: Used 96 registers\nptxas info: 8 bytes spill stores";
  compile_ms = 812.25;
  compile_cache_hit = true;
  code_hash = "0123456789abcdef";
  {
    auto& [registers, static_shared_bytes, dynamic_shared_bytes, local_bytes, spill_store_bytes, spill_load_bytes,
           max_threads_per_block] = resources;
    registers = 96;
    static_shared_bytes = 32768;
    dynamic_shared_bytes = 16384;
    local_bytes = 24;
    spill_store_bytes = 8;
    spill_load_bytes = 12;
    max_threads_per_block = 384;
  }
  {
    auto& [checked, max_abs_error, rel_error_norm, worst_tolerance_ratio, non_finite, over_tolerance,
           norm_tolerance] = accuracy;
    checked = true;
    max_abs_error = std::numeric_limits<double>::infinity();
    rel_error_norm = std::numeric_limits<double>::quiet_NaN();
    worst_tolerance_ratio = 3.5;
    non_finite = 7;
    over_tolerance = 12;
    norm_tolerance = 1e-5;
  }
  {
    auto& [samples, median_ms, min_ms, p20_ms, p80_ms, mean_ms, cv, warmup_ms, l2_flushed, steady_ms, raced_above_ms] =
        timing;
    samples = 31;
    median_ms = 0.125;
    min_ms = 0.120;
    p20_ms = 0.122;
    p80_ms = 0.130;
    mean_ms = 0.126;
    cv = 0.01;
    warmup_ms = -std::numeric_limits<double>::infinity();
    l2_flushed = true;
    steady_ms = 0.1234567890123;
    raced_above_ms = 0.1109876543211;
  }
  tflops = 123.5;
  gbps = 2048.25;
  roofline_bound_tflops = 400.5;
  roofline_pct = 30.75;
  {
    TelemetrySummary t;
    auto& [readings, sm_clock_mhz, mem_clock_mhz, power_w, max_temperature_c, throttle_reasons,
           throttled_readings, joules_per_launch] = t;
    readings = 4;
    sm_clock_mhz = 1980;
    mem_clock_mhz = 2619;
    power_w = 612.25;
    max_temperature_c = 71;
    throttle_reasons =
        throttle::kSwPowerCap | throttle::kHwThermal | 0x10000;  // one bit NVML may add later
    throttled_readings = 3;
    joules_per_launch = 0.4375;
    telemetry = t;
  }
  telemetry_note = "no energy counter on this GPU";
  return e;
}

// Equal, NaN included.
void expect_same(double got, double want, const char* what) {
  if (std::isnan(want))
    EXPECT_TRUE(std::isnan(got)) << what;
  else
    EXPECT_EQ(got, want) << what;
}
template <class T>
void expect_same(const T& got, const T& want, const char* what) {
  EXPECT_EQ(got, want) << what;
}

TEST(Codec, EvaluationKeepsEveryField) {
  const Evaluation e = full_evaluation();
  auto back = evaluation_from_json(through_text(json(e)));
  ASSERT_TRUE(back.ok()) << back.status().to_string();
  {
    const auto& [b0, b1, b2, b3, b4, bh, b5, b6, b7, b8, b9, b10, b11, b12, b13] = *back;
    const auto& [a0, a1, a2, a3, a4, ah, a5, a6, a7, a8, a9, a10, a11, a12, a13] = e;
    expect_same(b0, a0, "outcome");
    expect_same(b1, a1, "message");
    expect_same(b2, a2, "compile_log");
    expect_same(b3, a3, "compile_ms");
    expect_same(b4, a4, "compile_cache_hit");
    expect_same(bh, ah, "code_hash");
    expect_same(b8, a8, "tflops");
    expect_same(b9, a9, "gbps");
    expect_same(b10, a10, "roofline_bound_tflops");
    expect_same(b11, a11, "roofline_pct");
    expect_same(b13, a13, "telemetry_note");
    (void)b5, (void)b6, (void)b7, (void)b12, (void)a5, (void)a6, (void)a7,
        (void)a12;  // compared below, member by member
  }
  {
    const auto& [b0, b1, b2, b3, b4, b5, b6] = back->resources;
    const auto& [a0, a1, a2, a3, a4, a5, a6] = e.resources;
    expect_same(b0, a0, "resources.registers");
    expect_same(b1, a1, "resources.static_shared_bytes");
    expect_same(b2, a2, "resources.dynamic_shared_bytes");
    expect_same(b3, a3, "resources.local_bytes");
    expect_same(b4, a4, "resources.spill_store_bytes");
    expect_same(b5, a5, "resources.spill_load_bytes");
    expect_same(b6, a6, "resources.max_threads_per_block");
  }
  {
    const auto& [b0, b1, b2, b3, b4, b5, b6] = back->accuracy;
    const auto& [a0, a1, a2, a3, a4, a5, a6] = e.accuracy;
    expect_same(b0, a0, "accuracy.checked");
    expect_same(b1, a1, "accuracy.max_abs_error");
    expect_same(b2, a2, "accuracy.rel_error_norm");
    expect_same(b3, a3, "accuracy.worst_tolerance_ratio");
    expect_same(b4, a4, "accuracy.non_finite");
    expect_same(b5, a5, "accuracy.over_tolerance");
    expect_same(b6, a6, "accuracy.norm_tolerance");
  }
  {
    const auto& [b0, b1, b2, b3, b4, b5, b6, b7, b8, b9, b10] = back->timing;
    const auto& [a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10] = e.timing;
    expect_same(b0, a0, "timing.samples");
    expect_same(b1, a1, "timing.median_ms");
    expect_same(b2, a2, "timing.min_ms");
    expect_same(b3, a3, "timing.p20_ms");
    expect_same(b4, a4, "timing.p80_ms");
    expect_same(b5, a5, "timing.mean_ms");
    expect_same(b6, a6, "timing.cv");
    expect_same(b7, a7, "timing.warmup_ms");
    expect_same(b8, a8, "timing.l2_flushed");
    ASSERT_TRUE(b9.has_value());
    expect_same(*b9, *a9, "timing.steady_ms");
    ASSERT_TRUE(b10.has_value());
    expect_same(*b10, *a10, "timing.raced_above_ms");
  }
  {
    ASSERT_TRUE(back->telemetry.has_value());
    const auto& [b0, b1, b2, b3, b4, b5, b6, b7] = *back->telemetry;
    const auto& [a0, a1, a2, a3, a4, a5, a6, a7] = *e.telemetry;
    expect_same(b0, a0, "telemetry.readings");
    expect_same(b1, a1, "telemetry.sm_clock_mhz");
    expect_same(b2, a2, "telemetry.mem_clock_mhz");
    expect_same(b3, a3, "telemetry.power_w");
    expect_same(b4, a4, "telemetry.max_temperature_c");
    expect_same(b5, a5, "telemetry.throttle_reasons");
    expect_same(b6, a6, "telemetry.throttled_readings");
    expect_same(b7, a7, "telemetry.joules_per_launch");
  }
}

TEST(Codec, AnEvaluationWithoutTelemetryStaysAsBefore) {
  Evaluation e = full_evaluation();
  e.telemetry.reset();
  e.telemetry_note.clear();
  const json j = e;
  EXPECT_FALSE(j.contains("telemetry"));
  EXPECT_FALSE(j.contains("telemetry_note"));
  auto back = evaluation_from_json(j);
  ASSERT_TRUE(back.ok());
  EXPECT_FALSE(back->telemetry.has_value());
  // A telemetry object with some figures absent (a device without an energy counter).
  e.telemetry = TelemetrySummary{.readings = 2, .sm_clock_mhz = 1755};
  back = evaluation_from_json(json(e));
  ASSERT_TRUE(back.ok());
  ASSERT_TRUE(back->telemetry.has_value());
  EXPECT_EQ(back->telemetry->sm_clock_mhz, 1755);
  EXPECT_FALSE(back->telemetry->joules_per_launch.has_value());
  EXPECT_FALSE(back->telemetry->power_w.has_value());
}

TEST(Codec, WrongTypesAreParseErrors) {
  json j = full_evaluation();
  j["timing"]["samples"] = "many";
  EXPECT_EQ(evaluation_from_json(j).status().code(), StatusCode::kParseError);
  j = full_evaluation();
  j["telemetry"]["throttle_reasons"] = "sw_power_cap+too_hot";
  auto bad = evaluation_from_json(j);
  EXPECT_EQ(bad.status().code(), StatusCode::kParseError);
  EXPECT_NE(bad.status().message().find("too_hot"), std::string::npos) << bad.status().message();
  j = full_evaluation();
  j["telemetry"]["power_w"] = "hot";
  EXPECT_EQ(evaluation_from_json(j).status().code(), StatusCode::kParseError);
  json d = DeviceFacts{.backend = "cuda"};
  d["memory_bus_bits"] = 1.5;
  EXPECT_EQ(device_facts_from_json(d).status().code(), StatusCode::kParseError);
  EXPECT_EQ(device_facts_from_json(json::object()).status().code(), StatusCode::kParseError)
      << "the backend is required";
}

}  // namespace
}  // namespace tilesmith
