#!/usr/bin/env bash
# Sets up (packages + build, see setup.sh) and runs autotune-loop with the given flags.
#   scripts/autotune.sh --m 4096 --n 4096 --k 4096                # on a GPU
#   scripts/autotune.sh --backend replay --replay-file ../shared/data/kernel_tuner_gemm/gemm_RTX_3090.json.gz
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
exec "${TILESMITH_BUILD_DIR:-build}/cli/autotune-loop" "$@"
