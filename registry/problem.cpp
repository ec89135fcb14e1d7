#include "registry/problem.h"

#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

namespace tilesmith {

const char* epilogue_name(Epilogue e) {
  switch (e) {
    case Epilogue::kNone: return "none";
    case Epilogue::kBiasRow: return "bias_row";
    case Epilogue::kBiasCol: return "bias_col";
    case Epilogue::kRelu: return "relu";
    case Epilogue::kLeakyRelu: return "leaky_relu";
    case Epilogue::kGelu: return "gelu";
    case Epilogue::kBiasGelu: return "bias_gelu";
  }
  return "?";
}

bool epilogue_has_bias(Epilogue e) {
  return e == Epilogue::kBiasRow || e == Epilogue::kBiasCol || e == Epilogue::kBiasGelu;
}
bool epilogue_bias_per_column(Epilogue e) { return e == Epilogue::kBiasCol || e == Epilogue::kBiasGelu; }

Result<Epilogue> parse_epilogue(const std::string& s) {
  for (Epilogue e : {Epilogue::kNone, Epilogue::kBiasRow, Epilogue::kBiasCol, Epilogue::kRelu,
                     Epilogue::kLeakyRelu, Epilogue::kGelu, Epilogue::kBiasGelu})
    if (s == epilogue_name(e)) return e;
  return Status::invalid("unknown epilogue '" + s +
                         "' (expected none, bias_row, bias_col, relu, leaky_relu, gelu or bias_gelu)");
}

double per_tensor_alpha_scale(const GemmProblem& p) {
  return p.scaling == Scaling::kPerTensor ? double(float(p.scale_a)) * double(float(p.scale_b)) : 1.0;
}

const char* scaling_name(Scaling s) {
  switch (s) {
    case Scaling::kNone: return "none";
    case Scaling::kPerTensor: return "per_tensor";
    case Scaling::kBlock: return "block";
  }
  return "?";
}

Result<Scaling> parse_scaling(const std::string& s) {
  for (Scaling k : {Scaling::kNone, Scaling::kPerTensor, Scaling::kBlock})
    if (s == scaling_name(k)) return k;
  return Status::invalid("unknown scaling '" + s + "' (expected none, per_tensor or block)");
}

std::string GemmProblem::layout_code() const {
  std::string s;
  s += a_layout == Layout::kRowMajor ? 'N' : 'T';
  s += b_layout == Layout::kRowMajor ? 'N' : 'T';
  return s;
}

Status apply_layout_code(const std::string& code, GemmProblem& p) {
  if (code.size() != 2 || (code[0] != 'N' && code[0] != 'T') || (code[1] != 'N' && code[1] != 'T'))
    return Status::invalid("layout '" + code + "' is not one of NN, NT, TN, TT");
  p.a_layout = code[0] == 'N' ? Layout::kRowMajor : Layout::kColMajor;
  p.b_layout = code[1] == 'N' ? Layout::kRowMajor : Layout::kColMajor;
  return {};
}

double GemmProblem::min_bytes() const {
  double ab = double(m) * double(k) * dtype_bytes(a_type) + double(k) * double(n) * dtype_bytes(b_type);
  double c = double(m) * double(n) * dtype_bytes(c_type) * (beta != 0.0 ? 2.0 : 1.0);
  if (scaling == Scaling::kBlock) {  // fp32 scales: M x ceil(K/128) for A, ceil(K/128) x ceil(N/128) for B
    const double kb = double((k + kScaleBlock - 1) / kScaleBlock), nb = double((n + kScaleBlock - 1) / kScaleBlock);
    ab += 4.0 * (double(m) * kb + kb * nb);
  }
  return ab + c;
}

std::string GemmProblem::describe() const {
  std::string s = std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k) + " " +
                  dtype_name(a_type) + " " + layout_code();
  if (c_type != a_type) s += std::string(" C:") + dtype_name(c_type);
  if (c_layout == Layout::kColMajor) s += " C:col";
  char buf[64];
  if (alpha != 1.0 || beta != 0.0) {
    std::snprintf(buf, sizeof buf, " alpha=%g beta=%g", alpha, beta);
    s += buf;
  }
  if (epilogue != Epilogue::kNone) s += std::string(" +") + epilogue_name(epilogue);
  if (scaling == Scaling::kPerTensor) {
    std::snprintf(buf, sizeof buf, " scale:%g,%g", scale_a, scale_b);
    s += buf;
  } else if (scaling == Scaling::kBlock) {
    s += " scale:block";
  }
  return s;
}

std::string GemmProblem::key() const {
  char buf[256];
  std::snprintf(buf, sizeof buf, "m=%lld,n=%lld,k=%lld,a=%s,b=%s,c=%s,acc=%s,%s,%s,%s,alpha=%.17g,beta=%.17g,epi=%s,slope=%.17g",
                (long long)m, (long long)n, (long long)k, dtype_name(a_type), dtype_name(b_type),
                dtype_name(c_type), dtype_name(accumulate), a_layout == Layout::kRowMajor ? "A:row" : "A:col",
                b_layout == Layout::kRowMajor ? "B:row" : "B:col", c_layout == Layout::kRowMajor ? "C:row" : "C:col",
                alpha, beta, epilogue_name(epilogue), epilogue == Epilogue::kLeakyRelu ? epilogue_slope : 0.0);
  std::string s = buf;
  if (scaling != Scaling::kNone) {
    std::snprintf(buf, sizeof buf, ",scaling=%s,scale_a=%.17g,scale_b=%.17g", scaling_name(scaling), scale_a, scale_b);
    s += buf;
  }
  return s;
}

Status apply_scaling_from_key(const std::string& key, GemmProblem& p) {
  const auto at = key.find(",scaling=");
  if (at == std::string::npos) return {};
  // The fields key() writes, in its order: scaling=NAME,scale_a=X,scale_b=Y.
  const auto field = [&](const std::string& name) -> std::string {
    const auto f = key.find("," + name + "=", at);
    if (f == std::string::npos) return {};
    const auto from = f + name.size() + 2, to = key.find(',', from);
    return key.substr(from, to == std::string::npos ? std::string::npos : to - from);
  };
  TS_ASSIGN_OR_RETURN(p.scaling, parse_scaling(field("scaling")));
  try {
    p.scale_a = std::stod(field("scale_a"));
    p.scale_b = std::stod(field("scale_b"));
  } catch (const std::exception&) {
    return Status::invalid("the problem key '" + key + "' has scaling but no readable scale_a and scale_b");
  }
  return {};
}

Status GemmProblem::validate() const {
  if (m < 1 || n < 1 || k < 1)
    return Status::invalid("M, N and K must each be at least 1 (got " + std::to_string(m) + ", " +
                           std::to_string(n) + ", " + std::to_string(k) + ")");
  const std::int64_t kMaxDim = (std::int64_t(1) << 31) - 1;
  if (m > kMaxDim || n > kMaxDim || k > kMaxDim)
    return Status::invalid("M, N and K must each fit in 32-bit signed integers");
  if (!std::isfinite(alpha) || !std::isfinite(beta)) return Status::invalid("alpha and beta must be finite");
  // FP8 pairs may mix (e4m3 activations with e5m2 gradients, as cuBLASLt takes them); other types may not.
  if (a_type != b_type && !(dtype_is_fp8(a_type) && dtype_is_fp8(b_type)))
    return Status::invalid(std::string("A and B must have the same element type (got ") + dtype_name(a_type) + " and " +
                           dtype_name(b_type) + "; only the FP8 types e4m3 and e5m2 may be mixed)");
  // FP8 is an input type: nothing writes or accumulates in it.
  if (!dtype_can_be_output(c_type))
    return Status::invalid(std::string("C cannot be ") + dtype_name(c_type) + ": " + dtype_name(c_type) +
                           " is an input type only; C must be " + output_dtype_list());
  if (!dtype_can_be_output(accumulate))
    return Status::invalid(std::string("cannot accumulate in ") + dtype_name(accumulate) +
                           "; the accumulator must be " + output_dtype_list());
  if (scaling != Scaling::kNone && !dtype_is_fp8(a_type))
    return Status::invalid(std::string("scaling (") + scaling_name(scaling) + ") applies to FP8 inputs (e4m3, e5m2) only, not " +
                           dtype_name(a_type));
  for (double s : {scale_a, scale_b}) {
    const float f = float(s);
    if (!(std::isfinite(f) && std::isnormal(f) && f > 0))
      return Status::invalid("scale_a and scale_b must be positive normal fp32 values (got " + std::to_string(s) + ")");
  }
  if (scaling != Scaling::kPerTensor && (scale_a != 1.0 || scale_b != 1.0))
    return Status::invalid(std::string("scale_a and scale_b are per-tensor factors: they must be 1 with scaling ") +
                           scaling_name(scaling) + (scaling == Scaling::kBlock ? " (block scales are generated with the inputs)" : ""));
  return {};
}

void to_json(nlohmann::json& j, const GemmProblem& p) {
  j = nlohmann::json{{"m", p.m},
                     {"n", p.n},
                     {"k", p.k},
                     {"dtype", dtype_name(p.a_type)},
                     {"c_dtype", dtype_name(p.c_type)},
                     {"accumulate", dtype_name(p.accumulate)},
                     {"layout", p.layout_code()},
                     {"c_layout", p.c_layout == Layout::kRowMajor ? "row" : "col"},
                     {"alpha", p.alpha},
                     {"beta", p.beta},
                     {"epilogue", epilogue_name(p.epilogue)}};
  if (p.epilogue == Epilogue::kLeakyRelu) j["epilogue_slope"] = p.epilogue_slope;
  if (p.b_type != p.a_type) j["b_dtype"] = dtype_name(p.b_type);  // an FP8 mix
  if (p.scaling != Scaling::kNone) {
    j["scaling"] = scaling_name(p.scaling);
    j["scale_a"] = p.scale_a;
    j["scale_b"] = p.scale_b;
  }
}

Result<GemmProblem> problem_from_json(const nlohmann::json& j) {
  if (!j.is_object()) return Status::parse_error("a problem must be a JSON object");
  GemmProblem p;
  try {
    p.m = j.at("m").get<std::int64_t>();
    p.n = j.at("n").get<std::int64_t>();
    p.k = j.at("k").get<std::int64_t>();
    TS_ASSIGN_OR_RETURN(p.a_type, parse_dtype(j.value("dtype", std::string("fp32"))));
    TS_ASSIGN_OR_RETURN(p.b_type, parse_dtype(j.value("b_dtype", std::string(dtype_name(p.a_type)))));
    TS_ASSIGN_OR_RETURN(p.c_type, parse_dtype(j.value("c_dtype", std::string(dtype_name(default_c_dtype(p.a_type))))));
    TS_ASSIGN_OR_RETURN(p.accumulate, parse_dtype(j.value("accumulate", std::string("fp32"))));
    TS_RETURN_IF_ERROR(apply_layout_code(j.value("layout", std::string("NN")), p));
    std::string cl = j.value("c_layout", std::string("row"));
    if (cl != "row" && cl != "col") return Status::invalid("c_layout must be 'row' or 'col'");
    p.c_layout = cl == "row" ? Layout::kRowMajor : Layout::kColMajor;
    p.alpha = j.value("alpha", 1.0);
    p.beta = j.value("beta", 0.0);
    TS_ASSIGN_OR_RETURN(p.epilogue, parse_epilogue(j.value("epilogue", std::string("none"))));
    p.epilogue_slope = j.value("epilogue_slope", 0.01);
    // Absent in files written before FP8: an unscaled problem.
    TS_ASSIGN_OR_RETURN(p.scaling, parse_scaling(j.value("scaling", std::string("none"))));
    p.scale_a = j.value("scale_a", 1.0);
    p.scale_b = j.value("scale_b", 1.0);
  } catch (const nlohmann::json::exception& e) {
    return Status::parse_error(std::string("problem: ") + e.what());
  }
  TS_RETURN_IF_ERROR(p.validate());
  return p;
}

}  // namespace tilesmith
