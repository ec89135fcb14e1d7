#include "registry/problem.h"

#include <cmath>
#include <cstdio>

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
  return s;
}

std::string GemmProblem::key() const {
  char buf[256];
  std::snprintf(buf, sizeof buf, "m=%lld,n=%lld,k=%lld,a=%s,b=%s,c=%s,acc=%s,%s,%s,%s,alpha=%.17g,beta=%.17g,epi=%s,slope=%.17g",
                (long long)m, (long long)n, (long long)k, dtype_name(a_type), dtype_name(b_type),
                dtype_name(c_type), dtype_name(accumulate), a_layout == Layout::kRowMajor ? "A:row" : "A:col",
                b_layout == Layout::kRowMajor ? "B:row" : "B:col", c_layout == Layout::kRowMajor ? "C:row" : "C:col",
                alpha, beta, epilogue_name(epilogue), epilogue == Epilogue::kLeakyRelu ? epilogue_slope : 0.0);
  return buf;
}

Status GemmProblem::validate() const {
  if (m < 1 || n < 1 || k < 1)
    return Status::invalid("M, N and K must each be at least 1 (got " + std::to_string(m) + ", " +
                           std::to_string(n) + ", " + std::to_string(k) + ")");
  const std::int64_t kMaxDim = (std::int64_t(1) << 31) - 1;
  if (m > kMaxDim || n > kMaxDim || k > kMaxDim)
    return Status::invalid("M, N and K must each fit in 32-bit signed integers");
  if (!std::isfinite(alpha) || !std::isfinite(beta)) return Status::invalid("alpha and beta must be finite");
  if (a_type != b_type) return Status::invalid("A and B must have the same element type");
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
}

Result<GemmProblem> problem_from_json(const nlohmann::json& j) {
  if (!j.is_object()) return Status::parse_error("a problem must be a JSON object");
  GemmProblem p;
  try {
    p.m = j.at("m").get<std::int64_t>();
    p.n = j.at("n").get<std::int64_t>();
    p.k = j.at("k").get<std::int64_t>();
    TS_ASSIGN_OR_RETURN(p.a_type, parse_dtype(j.value("dtype", std::string("fp32"))));
    p.b_type = p.a_type;
    TS_ASSIGN_OR_RETURN(p.c_type, parse_dtype(j.value("c_dtype", std::string(dtype_name(p.a_type)))));
    TS_ASSIGN_OR_RETURN(p.accumulate, parse_dtype(j.value("accumulate", std::string("fp32"))));
    TS_RETURN_IF_ERROR(apply_layout_code(j.value("layout", std::string("NN")), p));
    std::string cl = j.value("c_layout", std::string("row"));
    if (cl != "row" && cl != "col") return Status::invalid("c_layout must be 'row' or 'col'");
    p.c_layout = cl == "row" ? Layout::kRowMajor : Layout::kColMajor;
    p.alpha = j.value("alpha", 1.0);
    p.beta = j.value("beta", 0.0);
    TS_ASSIGN_OR_RETURN(p.epilogue, parse_epilogue(j.value("epilogue", std::string("none"))));
    p.epilogue_slope = j.value("epilogue_slope", 0.01);
  } catch (const nlohmann::json::exception& e) {
    return Status::parse_error(std::string("problem: ") + e.what());
  }
  TS_RETURN_IF_ERROR(p.validate());
  return p;
}

}  // namespace tilesmith
