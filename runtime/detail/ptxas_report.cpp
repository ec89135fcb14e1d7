#include "runtime/detail/ptxas_report.h"

#include <regex>
#include <sstream>

namespace tilesmith::detail {

KernelResources parse_ptxas_report(const std::string& log, const std::string& entry) {
  KernelResources r;
  // The report for one function starts at "Compiling entry function 'NAME'" (or
  // "Function properties for NAME") and runs until the next function's header.
  std::istringstream in(log);
  std::string line;
  bool inside = false;
  static const std::regex used(R"(Used (\d+) registers)");
  static const std::regex smem(R"((\d+) bytes smem)");
  static const std::regex frame(R"((\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads)");
  std::smatch m;
  while (std::getline(in, line)) {
    if (line.find("Compiling entry function") != std::string::npos ||
        line.find("Function properties for") != std::string::npos) {
      inside = line.find("'" + entry + "'") != std::string::npos || line.find(" " + entry) != std::string::npos;
      continue;
    }
    if (!inside) continue;
    if (std::regex_search(line, m, used)) {
      r.registers = std::stoi(m[1]);
      if (r.static_shared_bytes < 0) r.static_shared_bytes = 0;  // ptxas omits "0 bytes smem"
    }
    if (std::regex_search(line, m, smem)) r.static_shared_bytes = std::stoll(m[1]);
    if (std::regex_search(line, m, frame)) {
      r.local_bytes = std::stoll(m[1]);
      r.spill_store_bytes = std::stoll(m[2]);
      r.spill_load_bytes = std::stoll(m[3]);
    }
  }
  return r;
}

}  // namespace tilesmith::detail
