// Runs every problem of a tuned package through libtilesmith_gemm on GPU 0: inputs filled
// with deterministic values, C checked against a CPU reference in double precision with
// the tolerance of docs/timing-and-tolerances.md, timed with events the way the tuner and
// bench-best time (warm-up, then the median of 30 runs, the L2 cache flushed before each
// by writing a buffer twice its size, so a weight matrix that fits in L2 is still read from
// memory as it would be in a model's forward pass), printed next to the times tuned.json
// recorded. Then one untuned shape (MxNxK, default: the first problem with M + 7) shows
// the fallback's decision. Exits non-zero when any result is wrong.
//
//   gemm_package PKG [MxNxK] [--json FILE]     FILE: the table's rows as JSON

#include <cuda_runtime.h>

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "tilesmith/gemm.hpp"

namespace {

#define CUDA_CHECK(call)                                                               \
  do {                                                                                 \
    cudaError_t e_ = (call);                                                           \
    if (e_ != cudaSuccess) {                                                           \
      std::fprintf(stderr, "%s failed: %s\n", #call, cudaGetErrorString(e_));          \
      std::exit(2);                                                                    \
    }                                                                                  \
  } while (0)

// ---- element types, converted by hand (round to nearest even) ----
std::uint32_t bits(float f) { std::uint32_t u; std::memcpy(&u, &f, 4); return u; }
float from_bits(std::uint32_t u) { float f; std::memcpy(&f, &u, 4); return f; }

std::uint16_t to_bf16(float f) {
  std::uint32_t u = bits(f);
  return static_cast<std::uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
float from_bf16(std::uint16_t h) { return from_bits(std::uint32_t(h) << 16); }

std::uint16_t to_fp16(float f) {
  std::uint32_t u = bits(f);
  std::uint32_t sign = (u >> 16) & 0x8000u;
  float a = std::fabs(f);
  if (a >= 65520.0f) return static_cast<std::uint16_t>(sign | 0x7c00u);  // inf (inputs here never get there)
  if (a < 6.103515625e-05f) {  // subnormal: a multiple of 2^-24
    return static_cast<std::uint16_t>(sign | static_cast<std::uint32_t>(std::nearbyint(a * 16777216.0f)));
  }
  std::uint32_t m = u & 0x7fffffu, e = ((u >> 23) & 0xffu) - 127 + 15;
  std::uint32_t h = (e << 10) | (m >> 13);
  std::uint32_t rest = m & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;  // may carry into the exponent: correct
  return static_cast<std::uint16_t>(sign | h);
}
float from_fp16(std::uint16_t h) {
  std::uint32_t sign = (h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  if (e == 0) return (sign ? -1.0f : 1.0f) * float(m) / 16777216.0f;
  if (e == 31) return from_bits(sign | 0x7f800000u | (m << 13));
  return from_bits(sign | ((e - 15 + 127) << 23) | (m << 13));
}

int dtype_bytes(ts_dtype t) { return t == TS_DTYPE_FP32 ? 4 : 2; }
double unit_roundoff(ts_dtype t) { return t == TS_DTYPE_FP32 ? std::ldexp(1.0, -24) : t == TS_DTYPE_FP16 ? std::ldexp(1.0, -11) : std::ldexp(1.0, -8); }
const char* dtype_name(ts_dtype t) { return t == TS_DTYPE_FP32 ? "fp32" : t == TS_DTYPE_FP16 ? "fp16" : "bf16"; }

// The value the element type holds for f, and its bytes appended to `out`.
float store(ts_dtype t, float f, std::vector<unsigned char>& out) {
  if (t == TS_DTYPE_FP32) {
    out.insert(out.end(), reinterpret_cast<unsigned char*>(&f), reinterpret_cast<unsigned char*>(&f) + 4);
    return f;
  }
  std::uint16_t h = t == TS_DTYPE_BF16 ? to_bf16(f) : to_fp16(f);
  out.push_back(static_cast<unsigned char>(h & 0xff));
  out.push_back(static_cast<unsigned char>(h >> 8));
  return t == TS_DTYPE_BF16 ? from_bf16(h) : from_fp16(h);
}
float load(ts_dtype t, const unsigned char* p) {
  if (t == TS_DTYPE_FP32) { float f; std::memcpy(&f, p, 4); return f; }
  std::uint16_t h = static_cast<std::uint16_t>(p[0] | (p[1] << 8));
  return t == TS_DTYPE_BF16 ? from_bf16(h) : from_fp16(h);
}

// ---- problems from tuned.json ----
ts_dtype parse_dtype(const std::string& s) { return s == "fp16" ? TS_DTYPE_FP16 : s == "bf16" ? TS_DTYPE_BF16 : TS_DTYPE_FP32; }
ts_epilogue parse_epilogue(const std::string& s) {
  const char* names[] = {"none", "bias_row", "bias_col", "relu", "leaky_relu", "gelu", "bias_gelu"};
  for (int i = 0; i < int(sizeof names / sizeof names[0]); ++i)
    if (s == names[i]) return static_cast<ts_epilogue>(i);
  return TS_EPILOGUE_NONE;
}

ts_gemm_problem problem_from(const nlohmann::json& j) {
  ts_gemm_problem p = tilesmith::problem(j.at("m"), j.at("n"), j.at("k"), parse_dtype(j.value("dtype", "fp32")));
  p.c_dtype = parse_dtype(j.value("c_dtype", j.value("dtype", "fp32")));
  const std::string layout = j.value("layout", "NN");
  p.a_layout = layout[0] == 'T' ? TS_COL_MAJOR : TS_ROW_MAJOR;
  p.b_layout = layout[1] == 'T' ? TS_COL_MAJOR : TS_ROW_MAJOR;
  p.c_layout = j.value("c_layout", "row") == "col" ? TS_COL_MAJOR : TS_ROW_MAJOR;
  p.alpha = j.value("alpha", 1.0);
  p.beta = j.value("beta", 0.0);
  p.epilogue = parse_epilogue(j.value("epilogue", "none"));
  p.epilogue_slope = j.value("epilogue_slope", 0.01);
  return p;
}

// ---- inputs and the CPU reference ----
struct Matrix {
  std::vector<float> values;           // what the element type holds
  std::vector<unsigned char> bytes;    // what the GPU reads
};

// Deterministic values in [-1, 1) with 24 random bits, rounded to the element type.
Matrix fill(std::size_t count, ts_dtype t, std::uint64_t seed) {
  Matrix m;
  std::uint64_t s = seed * 6364136223846793005ull + 1442695040888963407ull;
  for (std::size_t i = 0; i < count; ++i) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    float f = float(std::int64_t(s >> 40) - (1 << 23)) / float(1 << 23);
    m.values.push_back(store(t, f, m.bytes));
  }
  return m;
}

// GELU's tanh form, the one the library and cuBLASLt compute.
double gelu(double v) { return 0.5 * v * (1 + std::tanh(0.7978845608028654 * (v + 0.044715 * v * v * v))); }

double epilogue(const ts_gemm_problem& p, double v, double bias) {
  switch (p.epilogue) {
    case TS_EPILOGUE_BIAS_ROW:
    case TS_EPILOGUE_BIAS_COL: return v + bias;
    case TS_EPILOGUE_RELU: return v > 0 ? v : 0;
    case TS_EPILOGUE_LEAKY_RELU: return v > 0 ? v : v * p.epilogue_slope;
    case TS_EPILOGUE_GELU: return gelu(v);
    case TS_EPILOGUE_BIAS_GELU: return gelu(v + bias);
    default: return v;
  }
}

bool bias_per_column(const ts_gemm_problem& p) {
  return p.epilogue == TS_EPILOGUE_BIAS_COL || p.epilogue == TS_EPILOGUE_BIAS_GELU;
}

struct Check {
  bool pass = true;
  double worst_ratio = 0, norm_error = 0;
};

// docs/timing-and-tolerances.md: per element
//   16 u_acc sqrt(K) (|alpha| (|A||B|) + |beta| |C0| + |bias|) 1.13 + 8 u_out (|ref| + |pre|)
// and ||C - ref|| / ||ref|| <= 8 u_acc sqrt(K) + 4 u_out.
Check check(const ts_gemm_problem& p, const Matrix& a, const Matrix& b, const Matrix& c0, const Matrix& bias,
            const std::vector<unsigned char>& c_bytes) {
  const double u_acc = std::ldexp(1.0, -24), u_out = unit_roundoff(p.c_dtype), sk = std::sqrt(double(p.k));
  // Every element of C in double; the elements are split over the host's cores (the large
  // decode shapes take minutes on one), each part summed on its own and then in order.
  struct Part {
    bool pass = true;
    double worst_ratio = 0, err2 = 0, ref2 = 0;
  };
  const std::int64_t total = p.m * p.n;
  const unsigned workers = std::max(1u, std::min<unsigned>(std::thread::hardware_concurrency(), 64));
  std::vector<Part> parts(workers);
  auto run = [&](unsigned w) {
    Part& out = parts[w];
    for (std::int64_t e_idx = total * w / workers; e_idx < total * (w + 1) / workers; ++e_idx) {
      const std::int64_t i = e_idx / p.n, j = e_idx % p.n;
      double dot = 0, mag = 0;
      for (std::int64_t l = 0; l < p.k; ++l) {
        double x = a.values[p.a_layout == TS_ROW_MAJOR ? i * p.k + l : l * p.m + i];
        double y = b.values[p.b_layout == TS_ROW_MAJOR ? l * p.n + j : j * p.k + l];
        dot += x * y;
        mag += std::fabs(x * y);
      }
      const std::int64_t ci = p.c_layout == TS_ROW_MAJOR ? i * p.n + j : j * p.m + i;
      const double c_in = p.beta != 0 ? c0.values[ci] : 0.0;
      const double bv = p.epilogue == TS_EPILOGUE_BIAS_ROW ? bias.values[i] : bias_per_column(p) ? bias.values[j] : 0.0;
      const double pre = p.alpha * dot + p.beta * c_in;
      const double ref = epilogue(p, pre, bv);
      const double got = load(p.c_dtype, &c_bytes[std::size_t(ci) * dtype_bytes(p.c_dtype)]);
      const double tol = 16 * u_acc * sk * (std::fabs(p.alpha) * mag + std::fabs(p.beta * c_in) + std::fabs(bv)) * 1.13 +
                         8 * u_out * (std::fabs(ref) + std::fabs(pre));
      const double e = std::fabs(got - ref);
      if (!std::isfinite(got) || e > tol) out.pass = false;
      if (tol > 0) out.worst_ratio = std::max(out.worst_ratio, e / tol);
      out.err2 += e * e;
      out.ref2 += ref * ref;
    }
  };
  std::vector<std::thread> threads;
  for (unsigned w = 1; w < workers; ++w) threads.emplace_back(run, w);
  run(0);
  for (auto& t : threads) t.join();
  Check out;
  double err2 = 0, ref2 = 0;
  for (const Part& part : parts) {
    out.pass = out.pass && part.pass;
    out.worst_ratio = std::max(out.worst_ratio, part.worst_ratio);
    err2 += part.err2;
    ref2 += part.ref2;
  }
  out.norm_error = ref2 > 0 ? std::sqrt(err2 / ref2) : std::sqrt(err2);
  if (out.norm_error > 8 * u_acc * sk + 4 * u_out) out.pass = false;
  return out;
}

struct Row {
  std::string name, shape, dtype, decision, lib_ms, tuned_ms, vendor_ms, result;
};

std::string ms(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4f", v);
  return buf;
}

void* device_copy(const std::vector<unsigned char>& bytes) {
  if (bytes.empty()) return nullptr;
  void* p = nullptr;
  CUDA_CHECK(cudaMalloc(&p, bytes.size()));
  CUDA_CHECK(cudaMemcpy(p, bytes.data(), bytes.size(), cudaMemcpyHostToDevice));
  return p;
}

// Runs, checks and times one problem; fills the row's decision, time and result.
// A buffer twice the size of the L2 cache, written before each timed run.
struct L2Flush {
  void* ptr = nullptr;
  std::size_t bytes = 0;
  L2Flush() {
    int dev = 0, l2 = 0;
    CUDA_CHECK(cudaGetDevice(&dev));
    CUDA_CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev));
    bytes = std::max<std::size_t>(2 * std::size_t(l2), 1 << 20);
    CUDA_CHECK(cudaMalloc(&ptr, bytes));
  }
  ~L2Flush() { cudaFree(ptr); }
};

bool run(tilesmith::Gemm& gemm, const ts_gemm_problem& p, cudaStream_t stream, const L2Flush& flush, Row& row) {
  const tilesmith::Explanation why = gemm.explain(p);
  row.decision = ts_path_string(why.path);
  Matrix a = fill(std::size_t(p.m * p.k), p.dtype, 1), b = fill(std::size_t(p.k * p.n), p.dtype, 2);
  Matrix c0 = p.beta != 0 ? fill(std::size_t(p.m * p.n), p.c_dtype, 3) : Matrix{};
  const bool has_bias = p.epilogue == TS_EPILOGUE_BIAS_ROW || bias_per_column(p);
  Matrix bias = has_bias ? fill(std::size_t(bias_per_column(p) ? p.n : p.m), p.c_dtype, 4) : Matrix{};
  const std::size_t c_size = std::size_t(p.m * p.n) * dtype_bytes(p.c_dtype);
  void *da = device_copy(a.bytes), *db = device_copy(b.bytes), *dbias = device_copy(bias.bytes), *dc = nullptr;
  CUDA_CHECK(cudaMalloc(&dc, c_size));
  if (p.beta != 0) CUDA_CHECK(cudaMemcpy(dc, c0.bytes.data(), c_size, cudaMemcpyHostToDevice));
  else CUDA_CHECK(cudaMemset(dc, 0xff, c_size));  // NaN: an element never written fails

  gemm.run(p, da, db, dc, dbias, stream);
  CUDA_CHECK(cudaStreamSynchronize(stream));
  std::vector<unsigned char> c_bytes(c_size);
  CUDA_CHECK(cudaMemcpy(c_bytes.data(), dc, c_size, cudaMemcpyDeviceToHost));
  Check result = check(p, a, b, c0, bias, c_bytes);
  row.result = result.pass ? "pass" : "FAIL (worst error/tolerance " + ms(result.worst_ratio) + ", norm " + ms(result.norm_error) + ")";

  // Timing: with beta the output changes between runs, which does not change the time.
  cudaEvent_t start, stop;
  CUDA_CHECK(cudaEventCreate(&start));
  CUDA_CHECK(cudaEventCreate(&stop));
  for (int i = 0; i < 10; ++i) gemm.run(p, da, db, dc, dbias, stream);
  std::vector<float> times;
  for (int i = 0; i < 30; ++i) {
    CUDA_CHECK(cudaMemsetAsync(flush.ptr, i & 0xff, flush.bytes, stream));
    CUDA_CHECK(cudaEventRecord(start, stream));
    gemm.run(p, da, db, dc, dbias, stream);
    CUDA_CHECK(cudaEventRecord(stop, stream));
    CUDA_CHECK(cudaEventSynchronize(stop));
    float t = 0;
    CUDA_CHECK(cudaEventElapsedTime(&t, start, stop));
    times.push_back(t);
  }
  std::sort(times.begin(), times.end());
  row.lib_ms = ms((times[14] + times[15]) / 2);
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  for (void* ptr : {da, db, dc, dbias})
    if (ptr) cudaFree(ptr);
  std::printf("  %s: %s\n", row.name.c_str(), why.reason.c_str());
  return result.pass;
}

void print(const std::vector<Row>& rows) {
  std::printf("\n%-24s %-18s %-6s %-15s %10s %10s %10s  %s\n", "name", "shape", "dtype", "decision", "library ms",
              "tuned ms", "vendor ms", "result");
  for (const auto& r : rows)
    std::printf("%-24s %-18s %-6s %-15s %10s %10s %10s  %s\n", r.name.c_str(), r.shape.c_str(), r.dtype.c_str(),
                r.decision.c_str(), r.lib_ms.c_str(), r.tuned_ms.c_str(), r.vendor_ms.c_str(), r.result.c_str());
}

std::string shape(const ts_gemm_problem& p) {
  return std::to_string(p.m) + "x" + std::to_string(p.n) + "x" + std::to_string(p.k);
}

}  // namespace

int main(int argc, char** argv) {
  std::string pkg, untuned, json_out;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--json" && i + 1 < argc) json_out = argv[++i];
    else if (pkg.empty()) pkg = arg;
    else if (untuned.empty()) untuned = arg;
    else pkg.clear(), i = argc;
  }
  if (pkg.empty()) {
    std::fprintf(stderr, "usage: %s PKG [MxNxK] [--json FILE]\n", argv[0]);
    return 2;
  }
  std::ifstream in(pkg + "/tuned.json");
  nlohmann::json tuned = nlohmann::json::parse(in, nullptr, false);
  if (tuned.is_discarded() || !tuned.contains("problems")) {
    std::fprintf(stderr, "%s/tuned.json is missing or not JSON\n", pkg.c_str());
    return 2;
  }
  try {
    ts_gemm_options options = tilesmith::default_options();
    options.log_to_stderr = 1;  // one line per new shape, and any fallback compile
    tilesmith::Gemm gemm(pkg, 0, options);
    cudaStream_t stream;
    CUDA_CHECK(cudaStreamCreate(&stream));
    const L2Flush flush;
    std::vector<Row> rows;
    bool ok = true;
    for (const auto& entry : tuned["problems"]) {
      ts_gemm_problem p = problem_from(entry.at("problem"));
      Row row;
      row.name = entry.value("name", "?");
      row.shape = shape(p);
      row.dtype = dtype_name(p.dtype);
      row.tuned_ms = entry.contains("median_ms") && entry["median_ms"].is_number() ? ms(entry["median_ms"]) : "-";
      const auto& vendor = entry.value("vendor", nlohmann::json());
      row.vendor_ms = vendor.is_object() && vendor.contains("median_ms") && vendor["median_ms"].is_number()
                          ? ms(vendor["median_ms"]) : "-";
      ok = run(gemm, p, stream, flush, row) && ok;
      rows.push_back(row);
    }
    if (!tuned["problems"].empty()) {
      // One shape the package was not tuned for: the fallback's decision.
      ts_gemm_problem p = problem_from(tuned["problems"][0].at("problem"));
      p.m += 7;
      if (!untuned.empty() && std::sscanf(untuned.c_str(), "%" SCNd64 "x%" SCNd64 "x%" SCNd64, &p.m, &p.n, &p.k) != 3) {
        std::fprintf(stderr, "the shape must be MxNxK, not %s\n", untuned.c_str());
        return 2;
      }
      Row row{"(untuned)", shape(p), dtype_name(p.dtype), "", "", "-", "-", ""};
      ok = run(gemm, p, stream, flush, row) && ok;
      rows.push_back(row);
    }
    print(rows);
    if (!json_out.empty()) {
      nlohmann::json j = nlohmann::json::array();
      for (const auto& r : rows)
        j.push_back({{"name", r.name}, {"shape", r.shape}, {"dtype", r.dtype}, {"decision", r.decision},
                     {"library_ms", r.lib_ms}, {"tuned_ms", r.tuned_ms}, {"vendor_ms", r.vendor_ms},
                     {"result", r.result}});
      std::ofstream(json_out) << j.dump(2) << "\n";
    }
    cudaStreamDestroy(stream);
    return ok ? 0 : 1;
  } catch (const tilesmith::GemmError& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
}
