#!/usr/bin/env bash
# Search efficiency of the offline proposers on recorded Kernel Tuner spaces: builds
# tilesmith_search_bench if needed and prints, per recorded space and proposer, the
# evaluations until the best found is within 5% and 1% of the optimum (median and
# quartiles over seeds), beside the exact figures for uniform random sampling.
#
#   scripts/search_efficiency.sh [DATA_DIR_OR_FILES...] [-- bench options]
#   e.g. scripts/search_efficiency.sh /work/shared/data/kernel_tuner_gemm -- --seeds 20 --jobs 2
#
# Environment: BUILD_DIR (default build-reg), TILESMITH_KT_DATA (default data folder).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${BUILD_DIR:-$root/build-reg}"
paths=()
while [[ $# -gt 0 && "$1" != "--" ]]; do paths+=("$1"); shift; done
[[ "${1:-}" == "--" ]] && shift
if [[ ${#paths[@]} -eq 0 ]]; then paths=("${TILESMITH_KT_DATA:-/work/shared/data/kernel_tuner_gemm}"); fi

if [[ ! -f "$build/build.ninja" && ! -f "$build/Makefile" ]]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
fi
cmake --build "$build" --target tilesmith_search_bench -- -j"${JOBS:-2}" >/dev/null
bench="$(find "$build" -name tilesmith_search_bench -type f -perm -u+x | head -n1)"
exec "$bench" --spaces-dir "$root/data/spaces" "$@" "${paths[@]}"
