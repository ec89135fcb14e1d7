# Sourced by the scripts in scripts/device/: from the repository root, with a devpack
# bundle's environment (.devpack/env.sh, when there), sets
#   root                  the repository root (the working directory from here on)
#   bin                   the bundled executables: $TILESMITH_BIN, default .devpack/bin
#   TILESMITH_WORKER      the worker the tests and runs start (default $bin/tilesmith-worker)
#   TILESMITH_SOURCE_DIR  the repository root, where bundled tests find tests/kernels
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"
if [[ -f .devpack/env.sh ]]; then source .devpack/env.sh; fi
bin=${TILESMITH_BIN:-.devpack/bin}
export TILESMITH_WORKER=${TILESMITH_WORKER:-$bin/tilesmith-worker}
export TILESMITH_SOURCE_DIR=$root
