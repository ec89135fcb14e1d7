#!/usr/bin/env bash
# Records the tuning spaces in data/recordings on the GPU machine: per space one run with
# the random proposer (uniform over the valid space, never a configuration twice; the
# whole space when the time allows, a uniform sample otherwise), no re-timing, then its
# history as a Kernel Tuner cache file. Results go to OUT_DIR/rec.tar.gz (one file, so the
# device tool brings it back whole) and the caches to OUT_DIR/recordings/.
#
#   scripts/device/record_spaces.sh OUT_DIR [SECONDS_PER_SPACE [SPACE...]]
#
# SECONDS_PER_SPACE default 170. The caches are named after the GPU (`..._H100.json.gz`; the
# GPU's short name from nvidia-smi, or $GPU_TAG). SPACE names one row of the table below (default: the four
# single-template spaces; `bf16_4096_set` is every template that serves bf16 4096^3 NN, the
# multi-template recording the search benchmark's --set mode replays as one problem; one
# space a GPU side by side: CUDA_VISIBLE_DEVICES=1 record_spaces.sh OUT2 300 tma_bf16_4096).
# From the repository root, with a bundled build in .devpack (autotune-loop,
# tilesmith-worker) or binaries in $TILESMITH_BIN.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/bundle_env.sh"
out=${1:?usage: record_spaces.sh OUT_DIR [SECONDS_PER_SPACE [SPACE...]]}
secs=${2:-170}
shift $(( $# < 2 ? $# : 2 ))
rec=$(mktemp -d)
mkdir -p "$out/recordings"
tag=$(gpu_tag)
hours=$(awk -v s="$secs" 'BEGIN { print s / 3600 }')
pack() { tar czf "$out/rec.tar.gz" --exclude=journal.jsonl --exclude=.autotune-loop.lock -C "$rec" .; }
record() {  # NAME TEMPLATE autotune-loop problem flags...
  local name=$1 tmpl=$2; shift 2
  echo "== $name ($secs s at most) $(date +%T)"
  "$bin/autotune-loop" --backend cuda --template "$tmpl" --proposer random --candidates 32 --retime 0 \
    --compile-threads 12 --seed 1 --progress plain --status-interval 60 --hours "$hours" \
    --results "$rec/${tmpl}_$name" "$@" 2>&1 | grep -E "evaluated in|vendor:|^ 1 |stopped"
  "$bin/autotune-loop" history --results "$rec/${tmpl}_$name" \
    --kernel-tuner-cache "$out/recordings/${tmpl}_${name}_${tag}.json.gz"
  pack
}
space() {  # SPACE: the recording (name, template, problem)
  case $1 in
    fp32_128) record fp32_128x4096x4096 gemm_wgmma --m 128 --n 4096 --k 4096 ;;
    fp32_4096) record fp32_4096x4096x4096 gemm_wgmma --m 4096 --n 4096 --k 4096 ;;
    bf16_128) record bf16_128x4096x4096 gemm_wgmma_half --dtype bf16 --m 128 --n 4096 --k 4096 ;;
    bf16_4096) record bf16_4096x4096x4096 gemm_wgmma_half --dtype bf16 --m 4096 --n 4096 --k 4096 ;;
    tma_bf16_4096) record bf16_4096x4096x4096 gemm_tma_half --dtype bf16 --m 4096 --n 4096 --k 4096 ;;
    hmma_bf16_4096) record bf16_4096x4096x4096 gemm_hmma --dtype bf16 --m 4096 --n 4096 --k 4096 ;;
    bf16_4096_set) space tma_bf16_4096; space hmma_bf16_4096; space bf16_4096 ;;
    *) echo "record_spaces.sh: unknown space '$1' (fp32_128, fp32_4096, bf16_128, bf16_4096, tma_bf16_4096," \
            "hmma_bf16_4096, bf16_4096_set)" >&2; exit 2 ;;
  esac
}
for s in "${@:-fp32_128 fp32_4096 bf16_128 bf16_4096}"; do for one in $s; do space "$one"; done; done
