#include "registry/tensor_map.h"

#include <cmath>

#include <nlohmann/json.hpp>

namespace tilesmith {

using nlohmann::json;

Result<std::vector<TensorMapDecl>> parse_tensor_map_decls(const json& list) {
  if (!list.is_array()) return Status::parse_error("'tensor_maps' must be a list of {operand, box, swizzle}");
  std::vector<TensorMapDecl> out;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const json& e = list[i];
    const std::string where = "tensor_maps[" + std::to_string(i) + "]";
    if (!e.is_object()) return Status::parse_error(where + " must be an object");
    TensorMapDecl d;
    const std::string op = e.value("operand", std::string());
    if (op != "A" && op != "B" && op != "C")
      return Status::parse_error(where + ": 'operand' must be \"A\", \"B\" or \"C\", not \"" + op + "\"");
    d.operand = op[0];
    if (!e.contains("box") || !e["box"].is_array() || e["box"].size() != 2)
      return Status::parse_error(where + ": 'box' must be two expressions (elements along the contiguous "
                                         "dimension, then the other)");
    for (int k = 0; k < 2; ++k) {
      const json& b = e["box"][k];
      if (b.is_number_integer())
        d.box[k] = std::to_string(b.get<long long>());
      else if (b.is_string())
        d.box[k] = b.get<std::string>();
      else
        return Status::parse_error(where + ": box entries must be integers or expressions");
    }
    d.swizzle_bytes = e.value("swizzle", 128);
    if (e.contains("when")) {
      if (!e["when"].is_string()) return Status::parse_error(where + ": 'when' must be an expression (a string)");
      d.when = e["when"].get<std::string>();
    }
    if (d.swizzle_bytes != 0 && d.swizzle_bytes != 32 && d.swizzle_bytes != 64 && d.swizzle_bytes != 128)
      return Status::parse_error(where + ": 'swizzle' must be 0, 32, 64 or 128 (bytes)");
    out.push_back(std::move(d));
  }
  return out;
}

Result<TensorMapSpec> resolve_tensor_map(const TensorMapDecl& decl, const GemmProblem& p, std::array<double, 2> box) {
  TensorMapSpec s;
  s.operand = decl.operand;
  s.swizzle_bytes = decl.swizzle_bytes;
  std::int64_t rows = 0, cols = 0, ld = 0;  // logical rows x cols of the operand, as stored
  bool row_major = true;
  switch (decl.operand) {
    case 'A': rows = p.m, cols = p.k, ld = p.lda(), row_major = p.a_layout == Layout::kRowMajor, s.dtype = p.a_type; break;
    case 'B': rows = p.k, cols = p.n, ld = p.ldb(), row_major = p.b_layout == Layout::kRowMajor, s.dtype = p.b_type; break;
    default: rows = p.m, cols = p.n, ld = p.ldc(), row_major = p.c_layout == Layout::kRowMajor, s.dtype = p.c_type; break;
  }
  s.dims = {std::uint64_t(row_major ? cols : rows), std::uint64_t(row_major ? rows : cols)};
  const int bytes = dtype_bytes(s.dtype);
  s.row_stride_bytes = std::uint64_t(ld) * bytes;
  const std::string name = std::string(1, decl.operand);
  if (s.row_stride_bytes % 16 != 0)
    return Status::invalid("the tensor memory accelerator needs " + name + "'s leading dimension (" +
                           std::to_string(ld) + " elements, " + std::to_string(s.row_stride_bytes) +
                           " bytes) to be a multiple of 16 bytes");
  if (s.row_stride_bytes >= (std::uint64_t(1) << 40) || s.dims[0] > (std::uint64_t(1) << 32) ||
      s.dims[1] > (std::uint64_t(1) << 32))
    return Status::invalid(name + " is too large for a tensor map");
  for (int k = 0; k < 2; ++k) {
    if (!std::isfinite(box[k]) || box[k] < 1 || box[k] > 256 || box[k] != std::floor(box[k]))
      return Status::invalid("tensor map box of " + name + " ('" + decl.box[k] + "' = " + std::to_string(box[k]) +
                             ") must be a whole number from 1 to 256");
    s.box[k] = std::uint32_t(box[k]);
  }
  if ((std::uint64_t(s.box[0]) * bytes) % 16 != 0)
    return Status::invalid("tensor map box of " + name + ": its contiguous extent (" + std::to_string(s.box[0]) +
                           " elements) must be a multiple of 16 bytes");
  if (s.swizzle_bytes > 0 && std::uint64_t(s.box[0]) * bytes > std::uint64_t(s.swizzle_bytes))
    return Status::invalid("tensor map box of " + name + ": " + std::to_string(s.box[0] * bytes) +
                           " contiguous bytes exceed the " + std::to_string(s.swizzle_bytes) + "-byte swizzle");
  return s;
}

std::string describe(const TensorMapSpec& s) {
  if (s.unused) return std::string(1, s.operand) + ": unused by this config";
  std::string out = std::string(1, s.operand) + ": " + std::to_string(s.dims[0]) + " x " + std::to_string(s.dims[1]) +
                    " " + dtype_name(s.dtype) + ", row stride " + std::to_string(s.row_stride_bytes) + " B, box " +
                    std::to_string(s.box[0]) + " x " + std::to_string(s.box[1]);
  out += s.swizzle_bytes ? ", " + std::to_string(s.swizzle_bytes) + "-byte swizzle" : ", no swizzle";
  return out;
}

json to_json(const TensorMapSpec& s) {
  json j{{"operand", std::string(1, s.operand)},
          {"dtype", dtype_name(s.dtype)},
          {"dims", {s.dims[0], s.dims[1]}},
          {"row_stride_bytes", s.row_stride_bytes},
          {"box", {s.box[0], s.box[1]}},
          {"swizzle", s.swizzle_bytes}};
  if (s.unused) j["unused"] = true;  // written only then: packages of earlier versions read the same
  return j;
}

Result<TensorMapSpec> tensor_map_spec_from_json(const json& j) {
  TensorMapSpec s;
  try {
    const std::string op = j.at("operand").get<std::string>();
    if (op != "A" && op != "B" && op != "C") return Status::parse_error("tensor map operand must be A, B or C");
    s.operand = op[0];
    TS_ASSIGN_OR_RETURN(s.dtype, parse_dtype(j.at("dtype").get<std::string>()));
    for (int k = 0; k < 2; ++k) {
      s.dims[k] = j.at("dims").at(k).get<std::uint64_t>();
      s.box[k] = j.at("box").at(k).get<std::uint32_t>();
    }
    s.row_stride_bytes = j.at("row_stride_bytes").get<std::uint64_t>();
    s.swizzle_bytes = j.at("swizzle").get<int>();
    s.unused = j.value("unused", false);
  } catch (const json::exception& e) {
    return Status::parse_error(std::string("tensor map: ") + e.what());
  }
  return s;
}

}  // namespace tilesmith
