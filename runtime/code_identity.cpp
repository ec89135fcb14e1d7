#include "runtime/code_identity.h"

#include <nlohmann/json.hpp>

#include "base/hash.h"

namespace tilesmith {
namespace {

bool starts_with_directive(std::string_view line, std::string_view directive) {
  const auto first = line.find_first_not_of(" \t");
  if (first == std::string_view::npos) return false;
  line.remove_prefix(first);
  return line.substr(0, directive.size()) == directive &&
         (line.size() == directive.size() || line[directive.size()] == ' ' || line[directive.size()] == '\t');
}

}  // namespace

std::string normalized_ptx(std::string_view ptx) {
  std::string out;
  out.reserve(ptx.size());
  bool in_debug_section = false;
  while (!ptx.empty()) {
    const auto eol = ptx.find('\n');
    const std::string_view line = ptx.substr(0, eol);
    ptx.remove_prefix(eol == std::string_view::npos ? ptx.size() : eol + 1);
    if (in_debug_section) {
      // A debug section is a braced block: `.section .debug_str { ... }`.
      if (line.find('}') != std::string_view::npos) in_debug_section = false;
      continue;
    }
    if (starts_with_directive(line, ".section") && line.find(".debug") != std::string_view::npos) {
      in_debug_section = line.find('}') == std::string_view::npos;
      continue;
    }
    if (starts_with_directive(line, ".loc") || starts_with_directive(line, ".file")) continue;
    // Comments: the compiler's banner (its build), "begin inline asm" markers.
    if (const auto first = line.find_first_not_of(" \t");
        first != std::string_view::npos && line.substr(first, 2) == "//")
      continue;
    out.append(line);
    out.push_back('\n');
  }
  return out;
}

std::string device_code_digest(std::string_view ptx, std::string_view binary) {
  if (!ptx.empty()) return short_hash("ptx\n" + normalized_ptx(ptx));
  if (!binary.empty()) return short_hash(std::string("binary\n").append(binary));
  return {};
}

std::string kernel_code_hash(const RenderedKernel& r, const std::string& code_digest) {
  if (code_digest.empty()) return {};
  Hasher h;
  h.add_field(code_digest).add_field(r.entry).add_field(r.arch);
  for (auto d : r.grid) h.add_field(std::to_string(d));
  for (auto d : r.block) h.add_field(std::to_string(d));
  h.add_field(std::to_string(r.dynamic_shared_bytes)).add_field(std::to_string(r.workspace_bytes));
  for (const auto& m : r.tensor_maps) h.add_field(to_json(m).dump());
  return h.hex().substr(0, 16);
}

bool needs_compile(const KernelTemplate& t, const RecordedKernel& recorded) {
  return !t.matches_source_hash(recorded.source_hash) && !recorded.code_hash.empty();
}

KernelMatch match_recorded_kernel(const KernelTemplate& t, const RecordedKernel& recorded,
                                  const std::string& code_now) {
  if (t.matches_source_hash(recorded.source_hash)) return KernelMatch::kSameSource;
  if (recorded.code_hash.empty()) return KernelMatch::kUnknown;
  return !code_now.empty() && code_now == recorded.code_hash ? KernelMatch::kSameKernel : KernelMatch::kChanged;
}

std::string describe_source_change(const KernelTemplate& t, const RecordedKernel& recorded) {
  return "template " + t.name() + " changed since it was recorded (source hash " + recorded.source_hash + " then, " +
         t.source_hash() + " now)";
}

std::string describe_kernel_match(KernelMatch match, const KernelTemplate& t, const RecordedKernel& recorded,
                                  const std::string& code_now) {
  if (match == KernelMatch::kSameSource) return {};
  const std::string changed = describe_source_change(t, recorded);
  switch (match) {
    case KernelMatch::kSameKernel:
      return changed + ", but this config compiles to the same kernel (code hash " + recorded.code_hash + ")";
    case KernelMatch::kChanged:
      return changed + ", and so did this config's kernel (code hash " + recorded.code_hash + " then, " +
             (code_now.empty() ? std::string("none") : code_now) + " now)";
    default:
      return changed + ", and no code hash was recorded to tell whether its kernel changed";
  }
}

}  // namespace tilesmith
