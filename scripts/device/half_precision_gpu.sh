#!/usr/bin/env bash
# Half precision on the GPU machine: the GPU tests, then the half suite (a search per shape,
# then bench-best next to cuBLASLt), then how fast the default search converges on
# 4096^3 bf16.
#
#   scripts/device/half_precision_gpu.sh OUT_DIR [STEPS] [SUITE_SCALE]
#
# STEPS: any of "tests suite converge" (default all three). SUITE_SCALE multiplies the
# suite's per-shape budgets (default 1). TILESMITH_SUITE_ONLY picks suite shapes (see
# scripts/gemm_suite.sh). From the repository root, with a bundled build in .devpack
# (../shared/tools/devpack build), or binaries in $TILESMITH_BIN.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"
if [[ -f .devpack/env.sh ]]; then source .devpack/env.sh; fi
bin=${TILESMITH_BIN:-.devpack/bin}
export TILESMITH_BIN=$bin TILESMITH_WORKER=${TILESMITH_WORKER:-$bin/tilesmith-worker} TILESMITH_SOURCE_DIR=$root
out=${1:?usage: half_precision_gpu.sh OUT_DIR [STEPS] [SUITE_SCALE]}
steps=" ${2:-tests suite converge} "
scale=${3:-1}
mkdir -p "$out"
status=0
if [[ $steps == *" tests "* ]]; then
  echo "== gpu_evaluator_test"
  "$bin/gpu_evaluator_test" 2>&1 | tee "$out/gpu_evaluator_test.txt" | grep -E "^\[  (FAILED|PASSED) |validated|skipped|vendor |Failure|error" || true
  [[ ${PIPESTATUS[0]} -eq 0 ]] || status=1
fi
if [[ $steps == *" suite "* ]]; then
  echo "== half suite (scale $scale)"
  scripts/gemm_suite.sh half "$out/suite" "$scale" 2>&1 | tee "$out/suite.txt"
fi
if [[ $steps == *" converge "* ]]; then
  # The default search (evolve) with a 300-evaluation budget: where did its best appear?
  echo "== convergence: 4096^3 bf16, default search, 300 evaluations"
  rm -rf "$out/converge"
  "$bin/autotune-loop" --m 4096 --n 4096 --k 4096 --dtype bf16 --max-evals 300 --results "$out/converge" \
    --progress none -q --seed 1 >"$out/converge.txt" 2>&1 || echo "   autotune-loop exit $?"
  tail -n 4 "$out/converge.txt"
  python3 - "$out/converge/history.csv" <<'PY'
import csv, sys
rows = [r for r in csv.DictReader(open(sys.argv[1])) if r["stage"] == "evaluation"]
best, at, trace = 0.0, 0, []
for i, r in enumerate(rows, 1):
    t = float(r["tflops"] or 0) if r["outcome"] == "ok" else 0.0
    if t > best:
        best, at = t, i
        trace.append("%d:%.0f" % (i, t))
within = lambda pct: next((i for i, r in enumerate(rows, 1) if r["outcome"] == "ok" and float(r["tflops"]) >= best * (1 - pct)), None)
print("evaluations %d, best %.1f TFLOP/s first reached at evaluation %d; within 2%% at %s, within 5%% at %s" %
      (len(rows), best, at, within(0.02), within(0.05)))
print("best-so-far steps: " + " ".join(trace))
PY
fi
exit $status
