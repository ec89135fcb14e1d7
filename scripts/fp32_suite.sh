#!/usr/bin/env bash
# The fp32 benchmark suite: for each shape, autotune-loop searches the fast templates'
# spaces with the tuner's own search (--max-evals per shape), then bench-best re-validates
# and re-times the winners next to the vendor library in one process, and a table is
# printed: ours next to cuBLAS/hipBLAS, measured in the same bench-best run.
#
#   scripts/fp32_suite.sh [OUT_DIR] [EVALS_SCALE]
#
# Binaries: $TILESMITH_BIN (default build/cli). OUT_DIR default results/fp32-suite.
# EVALS_SCALE multiplies every shape's evaluation budget (default 1).
set -uo pipefail
bin=${TILESMITH_BIN:-build/cli}
out=${1:-results/fp32-suite}
scale=${2:-1}
mkdir -p "$out"
# name m n k layout evals extra-flags
shapes=(
  "1024^3 1024 1024 1024 NN 60"
  "2048^3 2048 2048 2048 NN 60"
  "4096^3 4096 4096 4096 NN 120"
  "8192^3 8192 8192 8192 NN 30"
  "4096x11008x4096 4096 11008 4096 NN 30"
  "16x4096x4096 16 4096 4096 NN 60"
  "128x4096x4096 128 4096 4096 NN 60"
  "1000x999x1001 1000 999 1001 NN 60"
  "4096^3-NT 4096 4096 4096 NT 40"
  "4096^3-TN 4096 4096 4096 TN 40"
  "2048^3-beta-bias_col-gelu 2048 2048 2048 TT 30 --beta 0.5 --epilogue gelu"
  "1024^3-bias_row 1024 1024 1024 NN 20 --epilogue bias_row"
)
for s in "${shapes[@]}"; do
  read -r name m n k layout evals extra <<<"$s"
  dir="$out/$name"
  evals=$(python3 -c "print(max(8, int($evals * $scale)))")
  echo "== $name: autotune-loop --max-evals $evals"
  "$bin/autotune-loop" --m "$m" --n "$n" --k "$k" --layout "$layout" $extra --template gemm_warp --template gemm_async \
    --max-evals "$evals" --results "$dir" --progress none -q --seed 1 >"$dir.loop.txt" 2>&1 || echo "   autotune-loop exit $?"
  tail -n 3 "$dir.loop.txt"
  "$bin/bench-best" --results "$dir" --json >"$dir.bench.json" 2>"$dir.bench.err" || echo "   bench-best exit $?"
done
python3 - "$out" "${shapes[@]}" <<'PY'
import json, sys, os
out = sys.argv[1]
rows = []
for s in sys.argv[2:]:
    name = s.split()[0]
    try:
        j = json.load(open(os.path.join(out, name + ".bench.json")))
    except Exception as e:
        rows.append((name, "no result", "", "", "", "", "", "", "")); continue
    best = None
    for e in j.get("entries", []):
        now = e.get("now") or {}
        if now.get("outcome") == "ok" and (best is None or now["tflops"] > best[1]["tflops"]):
            best = (e, now)
    if best is None:
        bad = [e.get("status") for e in j.get("entries", [])]
        rows.append((name, "FAILED " + ",".join(bad), "", "", "", "", "", "", "")); continue
    e, now = best
    v = e.get("vendor") or {}
    ratio = v["timing"]["median_ms"] / now["timing"]["median_ms"] if v.get("outcome") == "ok" else float("nan")
    statuses = ",".join(sorted({x.get("status", "?") for x in j["entries"]}))
    rows.append((name, e["template"], "%.4f" % now["timing"]["median_ms"], "%.2f" % now["tflops"],
                 "%.0f" % now["gbps"], "%.1f" % now["roofline_pct"],
                 "%.4f" % v["timing"]["median_ms"] if v else "-", "%.2f" % v["tflops"] if v else "-",
                 "%.3f" % ratio + "  " + statuses))
hdr = ("shape", "template", "ours_ms", "TFLOP/s", "GB/s", "roof%", "vendor_ms", "vendor_TF", "ratio  validation")
w = [max(len(str(r[i])) for r in rows + [hdr]) for i in range(len(hdr))]
for r in [hdr] + rows:
    print("  ".join(str(c).ljust(w[i]) for i, c in enumerate(r)))
PY
