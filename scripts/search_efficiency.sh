#!/usr/bin/env bash
# Search efficiency of the offline proposers on recorded Kernel Tuner spaces: builds
# tilesmith_search_bench if needed and prints, per recorded space and proposer, the
# evaluations until the best found is within 5% and 1% of the optimum (median and
# quartiles over seeds), beside the exact figures for uniform random sampling.
#
#   scripts/search_efficiency.sh [DATA_DIR_OR_FILES...] [-- bench options]
#   e.g. scripts/search_efficiency.sh /work/shared/data/kernel_tuner_gemm -- --seeds 20 --jobs 2
#        scripts/search_efficiency.sh -- --proposers evolve --loop --cap 300 --detail --calibration 5%
# Without paths: the shared Kernel Tuner GEMM spaces and the built-in templates' spaces
# in data/recordings. --loop runs every seed through the whole tuning loop (as
# autotune-loop --backend replay --max-evals CAP --seed S); its scratch results folders
# go to $TMPDIR (a tmpfs such as /dev/shm keeps the per-row fsyncs cheap).
#
# Environment: BUILD_DIR (default build-reg), TILESMITH_KT_DATA (the shared data folder).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${BUILD_DIR:-$root/build-reg}"
paths=()
while [[ $# -gt 0 && "$1" != "--" ]]; do paths+=("$1"); shift; done
[[ "${1:-}" == "--" ]] && shift
if [[ ${#paths[@]} -eq 0 ]]; then
  paths=("$root/data/recordings")
  shared="${TILESMITH_KT_DATA:-$root/../shared/data/kernel_tuner_gemm}"
  [[ -d "$shared" ]] && paths=("$shared" "${paths[@]}")
fi

if [[ ! -f "$build/build.ninja" && ! -f "$build/Makefile" ]]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
fi
cmake --build "$build" --target tilesmith_search_bench -- -j"${JOBS:-2}" >/dev/null
bench="$(find "$build" -name tilesmith_search_bench -type f -perm -u+x | head -n1)"
exec "$bench" --spaces-dir "$root/data/spaces" "$@" "${paths[@]}"
