#include "base/cpu_affinity.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>

namespace tilesmith {

std::string cpu_list_text(const std::vector<int>& cpus) {
  std::string out;
  for (std::size_t i = 0; i < cpus.size();) {
    std::size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    if (!out.empty()) out.push_back(',');
    out.append(std::to_string(cpus[i]));
    if (j > i) {
      out.push_back('-');
      out.append(std::to_string(cpus[j]));
    }
    i = j + 1;
  }
  return out;
}

CpuAffinity current_cpu_affinity() {
  CpuAffinity a;
  a.online = static_cast<int>(std::max(1L, ::sysconf(_SC_NPROCESSORS_ONLN)));
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) != 0) return a;
  std::vector<int> cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  a.allowed = static_cast<int>(cpus.size());
  a.list = cpu_list_text(cpus);
  return a;
}

CpuAffinity widen_cpu_affinity() {
  const long configured = std::max(1L, ::sysconf(_SC_NPROCESSORS_CONF));
  cpu_set_t set;
  CPU_ZERO(&set);
  for (long c = 0; c < configured && c < CPU_SETSIZE; ++c) CPU_SET(static_cast<int>(c), &set);
  // The kernel drops the CPUs the cpuset does not allow; it fails only when none is left.
  (void)::sched_setaffinity(0, sizeof set, &set);
  return current_cpu_affinity();
}

}  // namespace tilesmith
