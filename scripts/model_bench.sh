#!/usr/bin/env bash
# The model-shape benchmark (docs/model-bench.md): the layer GEMMs of Llama-3-8B,
# Llama-3-70B (8-way tensor parallel), the Mixtral-8x7B experts and Qwen2.5-32B in the
# layout frameworks use (Y = X W^T), each shape tuned with autotune-loop (resumable, a
# per-shape budget), then every winner re-timed with cuBLASLt and the read floor in one
# bench-best process, and one table.
#
#   scripts/model_bench.sh OUT_DIR [--evals 150] [--only REGEX] [--dtype bf16|fp16] [--m 1,16,128]
#                          [--minutes M] [--tune-only | --bench-only | --table-only] [-- FLAGS]
#
# Binaries: $TILESMITH_BIN, else build/cli, else .devpack/bin (a devpack bundle on the GPU
# machine: source .devpack/env.sh first). --help lists every flag; scripts/model_bench.py
# does the work.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if [[ -z ${TILESMITH_BIN:-} ]]; then
  if [[ -x build/cli/autotune-loop ]]; then TILESMITH_BIN=build/cli
  elif [[ -x $root/build/cli/autotune-loop ]]; then TILESMITH_BIN=$root/build/cli
  elif [[ -x .devpack/bin/autotune-loop ]]; then TILESMITH_BIN=.devpack/bin
  elif [[ -x $root/.devpack/bin/autotune-loop ]]; then TILESMITH_BIN=$root/.devpack/bin
  else TILESMITH_BIN=build/cli
  fi
fi
export TILESMITH_BIN
# The worker beside the binaries (a bundle has it in bin/; a build tree finds its own).
if [[ -z ${TILESMITH_WORKER:-} && -x $TILESMITH_BIN/tilesmith-worker ]]; then
  export TILESMITH_WORKER=$TILESMITH_BIN/tilesmith-worker
fi
exec python3 "$root/scripts/model_bench.py" "$@"
