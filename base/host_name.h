#pragma once
// The name of the machine this process runs on, as the history's `host` column and the
// several-host run (docs/scale-out.md) name it: gethostname(), cut at the first dot
// (cluster nodes often have long DNS names; the short name is what Slurm and the
// operator use). "unknown-host" when the system does not say. Thread-safe.

#include <string>

namespace tilesmith {

const std::string& local_host_name();

}  // namespace tilesmith
