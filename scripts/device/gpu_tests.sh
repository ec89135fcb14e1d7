#!/usr/bin/env bash
# Runs every gpu-labelled test (tests/*/CMakeLists.txt: LABELS gpu) from a bundled build,
# on the GPU machine, from the repository root.
#
#   here:      scripts/setup.sh && ../shared/tools/devpack build
#   there:     scripts/device/gpu_tests.sh [GTEST_FILTER]
#
# The tests find their test kernels (tests/kernels) through TILESMITH_SOURCE_DIR, which
# this script sets to the repository root; run from anywhere else, a bundled test would
# look for them in the source folder of the machine that built it. Binaries come from
# $TILESMITH_BIN (default .devpack/bin); the worker tests start $TILESMITH_WORKER
# (default $TILESMITH_BIN/tilesmith-worker). Each test's output goes to
# $OUT_DIR (default results/gpu_tests)/NAME.txt; a table at the end.
# Exit code 0 when every test passed, 1 when one failed or is missing from the bundle.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/bundle_env.sh"  # root, bin, TILESMITH_WORKER, TILESMITH_SOURCE_DIR
out=${OUT_DIR:-results/gpu_tests}
filter=${1:-*}
mkdir -p "$out"

# The gpu-labelled tests, read from the CMake lists so a new one is picked up unchanged.
mapfile -t tests < <(python3 - <<'PY'
import glob, re
for path in sorted(glob.glob("tests/**/CMakeLists.txt", recursive=True) + glob.glob("tests/**/*.cmake", recursive=True)):
    text = re.sub(r"#[^\n]*", "", open(path).read())  # comments name no test
    for m in re.finditer(r"\btilesmith_\w*test\(\s*(\w+)([^)]*)\)", text):
        if re.search(r"\bLABELS\b[^)]*\bgpu\b", m.group(2)):
            print(m.group(1))
PY
)
if ((${#tests[@]} == 0)); then echo "gpu_tests: no gpu-labelled test found under tests/"; exit 1; fi
echo "gpu-labelled tests: ${tests[*]}"

fail=0
declare -A result
for t in "${tests[@]}"; do
  if [[ ! -x "$bin/$t" ]]; then
    echo "== $t: $bin/$t is missing (bundle the build: ../shared/tools/devpack build)"
    result[$t]="missing"
    fail=1
    continue
  fi
  echo "== $t"
  timeout 1800 "$bin/$t" --gtest_filter="$filter" >"$out/$t.txt" 2>&1
  rc=$?
  grep -E '^\[  (PASSED|FAILED|SKIPPED) |^\[==========\]' "$out/$t.txt" | tail -n 20
  passed=$(grep -cE '^\[       OK \]' "$out/$t.txt")
  failed=$(grep -cE '^\[  FAILED  \] [A-Za-z]' "$out/$t.txt")
  skipped=$(grep -cE '^\[  SKIPPED \] [A-Za-z]' "$out/$t.txt")
  result[$t]="exit $rc: $passed passed, $failed failed, $skipped skipped"
  [[ $rc -eq 0 ]] || fail=1
done

echo
printf '%-28s %s\n' test result
for t in "${tests[@]}"; do printf '%-28s %s\n' "$t" "${result[$t]}"; done
echo
if ((fail)); then echo "SOME GPU TESTS FAILED (details in $out/)"; else echo "ALL GPU TESTS PASSED"; fi
exit $fail
