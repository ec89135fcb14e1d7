#!/usr/bin/env bash
# The three steps of a user, on the GPU machine: tune a problem set in one run, export the
# winners as a package, run every tuned shape (and one untuned shape) from a program built
# against the installed libtilesmith_gemm; then bench-best on each problem's folder, and one
# table: per problem, what the library ran (its decision: a tuned kernel, or the vendor where
# the tuned kernel did not beat it by more than the noise at tuning) and its time, ours as
# tuned and the vendor's (bench-best, one process), the figures recorded at tuning, and the
# per-step totals (vendor, ours as tuned, dispatched): the dispatched set must be no worse
# than the vendor's.
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
grep -E "^\[|us per step|faster|slower|dispatched to the vendor" "$out/tune.txt" | tail -n 20

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
# Per problem: what the library ran (decision, time through libtilesmith_gemm), ours as
# tuned and the vendor (bench-best, one process: the same clock), and the figures recorded
# at tuning (tuned.json). The library is checked against what it should have run: the
# tuned kernel's bench-best time on exact/nearest, the vendor's on the vendor path. Then
# the per-step totals (sum of count x ms): the dispatched set must be no worse than the
# vendor's (never slower than the vendor), within the noise of separate processes.
import json, os, sys
out = sys.argv[1]
tuned = json.load(open(os.path.join(out, "pkg", "tuned.json")))
example = {r["name"]: r for r in json.load(open(os.path.join(out, "example.json")))}
summary_path = os.path.join(out, "set", "summary.json")
summary = json.load(open(summary_path)) if os.path.exists(summary_path) else {}
num = lambda v: float(v) if v not in (None, "", "-") else None
f = lambda v, d=4: ("%.*f" % (d, v)) if v is not None else "-"
worst = 0.0
steps = {"vendor": 0.0, "tuned": 0.0, "library": 0.0, "rec_vendor": 0.0, "rec_tuned": 0.0}
complete = True
print("| problem | shape | count | library runs | library ms | ours as tuned ms (bench-best) | vendor ms (bench-best) "
      "| library / expected | tuned at tuning ms | vendor at tuning ms | result |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
for p in tuned["problems"]:
    name, count = p["name"], p.get("count", 1)
    ex = example.get(name, {})
    ours = vendor = None
    bench_path = os.path.join(out, "bench_%s.json" % name)
    if os.path.exists(bench_path):
        try:
            b = json.load(open(bench_path))
            for e in b["entries"]:
                if e["template"] == p["template"] and e["config"] == p["config"] and "now" in e:
                    ours = e["now"]["timing"]["median_ms"]
                    vendor = (e.get("vendor") or {}).get("timing", {}).get("median_ms")
        except Exception as err:
            print("bench-best %s unreadable: %s" % (name, err))
    lib = num(ex.get("library_ms"))
    decision = ex.get("decision", "not run")
    expected = vendor if decision in ("vendor", "foreign-device") else ours
    ratio = lib / expected if lib and expected else None
    if ratio: worst = max(worst, abs(ratio - 1))
    rec_tuned = num(p.get("median_ms"))
    rec_vendor = num((p.get("vendor") or {}).get("median_ms"))
    if None in (lib, ours, vendor): complete = False
    else:
        steps["vendor"] += count * vendor * 1000
        steps["tuned"] += count * ours * 1000
        steps["library"] += count * lib * 1000
    if rec_tuned and rec_vendor:
        steps["rec_vendor"] += count * rec_vendor * 1000
        steps["rec_tuned"] += count * rec_tuned * 1000
    shape = "%dx%dx%d %s" % (p["problem"]["m"], p["problem"]["n"], p["problem"]["k"], p["problem"]["dtype"])
    print("| %s | %s | %d | %s | %s | %s | %s | %s | %s | %s | %s |" % (name, shape, count, decision, f(lib), f(ours),
          f(vendor), f(ratio, 3), f(rec_tuned), f(rec_vendor), ex.get("result", "not run")))
un = example.get("(untuned)")
if un:
    print("| (untuned) | %s | - | %s | %s | - | - | - | - | - | %s |" % (un["shape"], un["decision"], un["library_ms"],
                                                                        un["result"]))
print("largest |library / expected - 1| = %.1f%%" % (100 * worst))
print()
print("| per step (sum of count x ms) | vendor us | ours as tuned us | dispatched us | dispatched / vendor |")
print("|---|---|---|---|---|")
no_worse = None
if complete:
    no_worse = steps["library"] <= steps["vendor"] * 1.03
    print("| now: bench-best, library | %.1f | %.1f | %.1f | %.3f |" % (steps["vendor"], steps["tuned"],
          steps["library"], steps["library"] / steps["vendor"]))
t = summary.get("totals", {})
if t.get("vendor_us_per_step"):
    print("| at tuning: summary.json | %.1f | %.1f | %.1f | %.3f |" % (t["vendor_us_per_step"], t["tuned_us_per_step"],
          t["ours_us_per_step"], t["ours_us_per_step"] / t["vendor_us_per_step"]))
    print("on the vendor by the rule at tuning: %s" % (", ".join(t.get("problems_on_vendor", [])) or "none"))
if no_worse is None:
    print("PER-STEP CHECK NOT MADE: a problem has no library, bench-best or vendor time")
else:
    print("PER-STEP: the library's set is %s the vendor's (%.1f vs %.1f us, 3%% allowed for separate processes)"
          % ("NO WORSE THAN" if no_worse else "WORSE THAN", steps["library"], steps["vendor"]))
ok = all(r.get("result") == "pass" for r in example.values()) and len(example) == len(tuned["problems"]) + 1
print("EVERY SHAPE PASSED" if ok else "SOME SHAPE FAILED OR DID NOT RUN")
sys.exit(0 if ok and no_worse is not False else 1)
PY
exit $status
