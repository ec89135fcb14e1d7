#pragma once
// Tensor maps: how a template asks for operands described to Hopper's tensor memory
// accelerator (TMA). A template lists them under "launch": "tensor_maps" in its JSON:
//   {"operand": "A", "box": ["64", "64"], "swizzle": 128}
// one entry per map, in the order the kernel takes them as extra __grid_constant__
// parameters after the kernel ABI's fourteen (registry/kernel_template.h). Each map
// describes the operand as stored: dimension 0 is the contiguous one (K for a row-major
// A, M for a column-major A; N or K for B; N or M for C), dimension 1 the other, with the
// leading dimension as the row stride; the box (elements, in that order) is what one
// copy moves, and reads outside the matrix are filled with zeros. The backend encodes the
// map for the buffers it launches with (GpuDevice::encode_tensor_map); rendering checks
// what TMA cannot take (a row stride that is not a multiple of 16 bytes, a box over 256
// elements or wider than the swizzle) and refuses the config with the reason, before any
// compile.

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "base/status.h"
#include "registry/dtype.h"
#include "registry/problem.h"

namespace tilesmith {

// One entry of "tensor_maps", as written (box sizes are launch expressions).
struct TensorMapDecl {
  char operand = 'A';                 // 'A', 'B' or 'C'
  std::array<std::string, 2> box;     // elements along dimension 0, 1
  int swizzle_bytes = 128;            // 0 (none), 32, 64 or 128
  // "when" (optional): a launch expression; where it is 0 for a config the kernel still takes
  // the parameter but reads nothing through it, and the map is left unencoded (zero bytes), so
  // the operand need not meet TMA's rules (e.g. C's map for a kernel that stores C through it
  // only in some configs).
  std::string when;
};

// A map for one problem and config: everything cuTensorMapEncodeTiled needs but the address.
struct TensorMapSpec {
  char operand = 'A';
  DType dtype = DType::kF32;
  std::array<std::uint64_t, 2> dims{0, 0};  // elements; dims[0] contiguous
  std::uint64_t row_stride_bytes = 0;       // between consecutive indices of dimension 1
  std::array<std::uint32_t, 2> box{0, 0};
  int swizzle_bytes = 0;
  bool unused = false;  // the declaration's "when" was 0: passed as zero bytes, never encoded
  bool operator==(const TensorMapSpec&) const = default;
};

// Parses the "tensor_maps" list; errors name the entry and the field.
Result<std::vector<TensorMapDecl>> parse_tensor_map_decls(const nlohmann::json& list);

// The map of one declaration for a problem, its box expressions already evaluated for the
// config. Errors are invalid_argument and say what TMA cannot take.
Result<TensorMapSpec> resolve_tensor_map(const TensorMapDecl& decl, const GemmProblem& problem,
                                         std::array<double, 2> box);

// "A: 4096 x 4096 bf16, row stride 8192 B, box 64 x 64, 128-byte swizzle", for messages.
std::string describe(const TensorMapSpec& spec);

nlohmann::json to_json(const TensorMapSpec& spec);
Result<TensorMapSpec> tensor_map_spec_from_json(const nlohmann::json& j);

}  // namespace tilesmith
