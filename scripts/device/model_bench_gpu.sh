#!/usr/bin/env bash
# One call of the model-shape benchmark on the GPU machine (docs/model-bench.md), made to be
# repeated: unpacks the results of earlier calls (results/model-bench.tgz, carried in),
# checks the read floor on this GPU once (the gpu test, when bundled), runs
# scripts/model_bench.sh with the flags given, and packs the results into $OUT for the next
# call. From the repository root with a devpack bundle (.devpack) or $TILESMITH_BIN.
#
#   scripts/device/model_bench_gpu.sh [model_bench.sh flags]
#   e.g. scripts/device/model_bench_gpu.sh --m 1,16,128 --minutes 7 --tune-only
#        scripts/device/model_bench_gpu.sh --bench-only --minutes 8
#        scripts/device/model_bench_gpu.sh --gpus 0,1,2,3 --retune-changed --minutes 8.5   (a four-GPU host)
# --minutes bounds the tuning and the bench pass (in batches of --bench-batch shapes, each kept
# as it ends), so a call ends with its results packed before the machine's limit.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/bundle_env.sh"
export TILESMITH_BIN=$bin
out=${OUT:-results}
res=results/model-bench
if [[ -f results/model-bench.tgz && ! -d $res ]]; then tar xzf results/model-bench.tgz; fi
mkdir -p "$res"
if [[ -x $bin/gpu_evaluator_test && ! -f $res/read_floor_gpu_test.txt ]]; then
  echo "== the read floor on this GPU (gpu_evaluator_test --gtest_filter='*ReadFloor*')"
  timeout 240 "$bin/gpu_evaluator_test" --gtest_filter='*ReadFloor*' >"$res/read_floor_gpu_test.txt" 2>&1
  echo "   exit $?"
  grep -E "read floor|vendor|FAILED|OK \]|PASSED|SKIPPED" "$res/read_floor_gpu_test.txt" | head -n 20
fi
pack() {
  mkdir -p "$out"
  tar czf "$out/model-bench.tgz" "$res" && echo "== results packed: $out/model-bench.tgz (carry it in as results/model-bench.tgz)"
}
# A call stopped from outside (the machine's time limit sends TERM) still packs what it has: give
# --minutes a minute or two below the call's limit so that it ends on its own.
trap 'pack; exit 143' TERM INT
scripts/model_bench.sh "$res" "$@"
status=$?
pack
exit $status
