#pragma once
// The CPUs this process may run on (Linux sched_getaffinity), and widening them.
//
// Why: MPI launchers bind each rank to a core or two by default (OpenMPI's mpirun binds
// to one core per rank for two ranks), and every process a rank starts inherits that
// binding. A tuning rank starts compile helpers and worker processes that must run beside
// each other: bound to one core, two ranks on a 32-core, two-GPU host evaluated 0.66x the
// candidates of one unbound process (issue 33). Widening asks for every online CPU; the
// kernel keeps the result inside the process's cpuset (a batch system's allocation), so
// it never reaches CPUs the job was not given.

#include <string>
#include <vector>

namespace tilesmith {

struct CpuAffinity {
  int allowed = 0;  // CPUs in the process's affinity mask; 0 where it cannot be read
  int online = 0;   // CPUs online on the host
  std::string list;  // the allowed CPUs, "0-3,8"
};

// This process's affinity now.
CpuAffinity current_cpu_affinity();

// Sets this process's (and so its future children's) affinity to every online CPU the
// kernel allows it. Returns the affinity afterwards (unchanged where the call failed).
CpuAffinity widen_cpu_affinity();

// "0-3,8" for the CPUs in `cpus` (sorted, distinct).
std::string cpu_list_text(const std::vector<int>& cpus);

}  // namespace tilesmith
