#!/usr/bin/env bash
# The three steps of a user, on the GPU machine: tune a problem set in one run, export the
# winners as a package, run every tuned shape (and one untuned shape) from a program built
# against the installed libtilesmith_gemm; then bench-best on each problem's folder, and one
# table: per problem, the library call's time, bench-best's time for the same config and the
# vendor's, and whether the library is within 5% of bench-best.
#
#   scripts/device/problem_set_gpu.sh OUT_DIR [SET_FILE] [MAX_EVALS] [UNTUNED_MxNxK] [HOURS]
#
# SET_FILE default data/problems/llama3_8b_bf16_decode.json, MAX_EVALS (the whole set's
# budget) default 240, UNTUNED default 64x6144x4096, HOURS (a wall-clock cap on the tuning)
# default 0.1. From the repository root, with a bundled
# build in .devpack that includes the example program (gemm_package) and
# libtilesmith_gemm.so, or binaries in $TILESMITH_BIN.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/bundle_env.sh"
out=${1:?usage: problem_set_gpu.sh OUT_DIR [SET_FILE] [MAX_EVALS] [UNTUNED_MxNxK]}
set_file=${2:-data/problems/llama3_8b_bf16_decode.json}
evals=${3:-240}
untuned=${4:-64x6144x4096}
hours=${5:-0.1}
mkdir -p "$out"
status=0

echo "== 1. tune the set: $set_file, $evals evaluations in all"
"$bin/autotune-loop" --problems "$set_file" --max-evals "$evals" --hours "$hours" --results "$out/set" \
  --compile-threads 8 --progress plain --status-interval 30 >"$out/tune.txt" 2>&1 || { echo "   autotune-loop exit $?"; status=1; }
grep -E "^\[|µs per step|faster|slower" "$out/tune.txt" | tail -n 20

echo "== 2. export"
"$bin/autotune-loop" export --results "$out/set" --out "$out/pkg" --replace 2>&1 | tee "$out/export.txt"
[[ ${PIPESTATUS[0]} -eq 0 ]] || status=1

echo "== 3. the example program, built against the installed library"
"$bin/gemm_package" "$out/pkg" "$untuned" --json "$out/example.json" 2>&1 | tee "$out/example.txt"
[[ ${PIPESTATUS[0]} -eq 0 ]] || status=1

echo "== 4. bench-best on every problem's folder"
for d in "$out"/set/*/; do
  [[ -f $d/best_config.json ]] || continue
  name=$(basename "$d")
  "$bin/bench-best" --results "$d" --json >"$out/bench_$name.json" 2>"$out/bench_$name.err" || echo "   bench-best $name exit $?"
done

echo "== 5. the table"
python3 - "$out" <<'PY' || status=1
import json, os, sys
out = sys.argv[1]
tuned = json.load(open(os.path.join(out, "pkg", "tuned.json")))
example = {r["name"]: r for r in json.load(open(os.path.join(out, "example.json")))}
rows, worst = [], 0.0
print("| problem | shape | template | library ms | bench-best ms | vendor ms (bench-best) | library / bench-best | vendor / library | result |")
print("|---|---|---|---|---|---|---|---|---|")
for p in tuned["problems"]:
    name = p["name"]
    ex = example.get(name, {})
    bench_path = os.path.join(out, "bench_%s.json" % name)
    ours = vendor = None
    if os.path.exists(bench_path):
        try:
            b = json.load(open(bench_path))
            for e in b["entries"]:
                if e["template"] == p["template"] and e["config"] == p["config"] and "now" in e:
                    ours = e["now"]["timing"]["median_ms"]
                    vendor = e.get("vendor", {}).get("timing", {}).get("median_ms")
        except Exception as err:
            print("bench-best %s unreadable: %s" % (name, err))
    lib = float(ex["library_ms"]) if ex.get("library_ms") else None
    ratio = lib / ours if lib and ours else None
    if ratio: worst = max(worst, abs(ratio - 1))
    shape = "%dx%dx%d %s" % (p["problem"]["m"], p["problem"]["n"], p["problem"]["k"], p["problem"]["dtype"])
    f = lambda v, d=4: ("%.*f" % (d, v)) if v else "-"
    print("| %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (name, shape, p["template"], f(lib), f(ours), f(vendor),
          f(ratio, 3), f(vendor / lib if vendor and lib else None, 3), ex.get("result", "not run")))
un = example.get("(untuned)")
if un:
    print("| (untuned) | %s | %s | %s | - | - | - | - | %s |" % (un["shape"], un["decision"], un["library_ms"], un["result"]))
print("largest |library / bench-best - 1| = %.1f%%" % (100 * worst))
ok = all(r.get("result") == "pass" for r in example.values()) and len(example) == len(tuned["problems"]) + 1
print("EVERY SHAPE PASSED" if ok else "SOME SHAPE FAILED OR DID NOT RUN")
sys.exit(0 if ok else 1)
PY
exit $status
