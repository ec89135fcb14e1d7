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
# gpu_tag: the short name recordings are labelled with (H100, H200, A100, ...), from the name
# of the first GPU CUDA is allowed to see; $GPU_TAG overrides it, "GPU" when none is found.
gpu_tag() {
  if [[ -n ${GPU_TAG:-} ]]; then echo "$GPU_TAG"; return; fi
  local idx=${CUDA_VISIBLE_DEVICES:-0} name
  name=$(nvidia-smi --query-gpu=name --format=csv,noheader -i "${idx%%,*}" 2>/dev/null)
  name=$(grep -oE '\b[A-Z][0-9]{2,}[A-Za-z]*\b' <<<"$name" | head -1)
  echo "${name:-GPU}"
}
