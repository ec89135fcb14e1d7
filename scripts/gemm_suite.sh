#!/usr/bin/env bash
# The benchmark suites: for each shape, autotune-loop searches the templates' spaces with
# the tuner's own search (--max-evals per shape), then bench-best re-validates and re-times
# the winners next to the vendor library in one process, and a table is printed: ours next
# to cuBLAS/hipBLAS (cuBLASLt for half precision), measured in the same bench-best run.
#
#   scripts/gemm_suite.sh SUITE [OUT_DIR] [EVALS_SCALE]
#
# SUITE: fp32 (FFMA and 3xTF32 templates) or half (bf16/fp16 on the tensor cores, decode
# shapes, a fused LeakyReLU). Binaries: $TILESMITH_BIN (default build/cli). OUT_DIR default
# results/SUITE-suite. EVALS_SCALE multiplies every shape's evaluation budget (default 1).
# TILESMITH_SUITE_ONLY: names of the shapes to run (default all); the table covers what is
# under OUT_DIR, so two calls with different names and the same OUT_DIR make one table.
# TILESMITH_SUITE_TEMPLATES: the templates searched (default per suite, below; templates
# that cannot serve a shape or GPU are left out by autotune-loop with the reason).
set -uo pipefail
suite=${1:?usage: scripts/gemm_suite.sh fp32|half [OUT_DIR] [EVALS_SCALE]}
bin=${TILESMITH_BIN:-build/cli}
out=${2:-results/$suite-suite}
scale=${3:-1}
# name m n k layout evals warm-from extra-flags. warm-from: "-", or an earlier shape whose
# results seed this search (autotune-loop --warm-start): its winners are measured first.
case $suite in
  fp32)
    default_templates="gemm_warp gemm_async gemm_mma gemm_wgmma gemm_tma_tf32 gemm_gemv"
    shapes=(
      "4096x4096x4096 4096 4096 4096 NN 120 -"
      "1024x1024x1024 1024 1024 1024 NN 60 -"
      "2048x2048x2048 2048 2048 2048 NN 60 4096x4096x4096"
      "8192x8192x8192 8192 8192 8192 NN 50 4096x4096x4096"
      "4096x11008x4096 4096 11008 4096 NN 50 4096x4096x4096"
      "16x4096x4096 16 4096 4096 NN 80 -"
      "128x4096x4096 128 4096 4096 NN 160 -"
      "1000x999x1001 1000 999 1001 NN 60 -"
      "4096x4096x4096-NT 4096 4096 4096 NT 60 4096x4096x4096"
      "4096x4096x4096-TN 4096 4096 4096 TN 60 4096x4096x4096"
      "2048x2048x2048-TT-beta-gelu 2048 2048 2048 TT 30 - --beta 0.5 --epilogue gelu"
      "1024x1024x1024-bias_row 1024 1024 1024 NN 20 - --epilogue bias_row"
      "1024x1024x1024-NT-colC-bias_col 1024 1024 1024 NT 20 - --epilogue bias_col --c-layout col"
      "1x4096x4096 1 4096 4096 NN 80 -"
      "8x4096x4096 8 4096 4096 NN 80 -"
      "4096x1x4096 4096 1 4096 NN 80 -"
      "777x1555x333-TN 777 1555 333 TN 80 -"
      "300x300x300 300 300 300 NN 80 -"
      "6144x6144x6144-NT 6144 6144 6144 NT 50 4096x4096x4096"
    ) ;;
  half)
    default_templates="gemm_hmma gemm_decode gemm_stream gemm_wgmma_half gemm_tma_half"
    shapes=(
      "bf16-4096x4096x4096 4096 4096 4096 NN 120 - --dtype bf16"
      "bf16-8192x8192x8192 8192 8192 8192 NN 40 bf16-4096x4096x4096 --dtype bf16"
      "bf16-4096x11008x4096 4096 11008 4096 NN 50 bf16-4096x4096x4096 --dtype bf16"
      "bf16-1000x999x1001 1000 999 1001 NN 60 - --dtype bf16"
      "bf16-16x4096x4096 16 4096 4096 NN 100 - --dtype bf16"
      "bf16-128x4096x4096 128 4096 4096 NN 100 - --dtype bf16"
      "bf16-128x14336x4096 128 14336 4096 NN 60 bf16-128x4096x4096 --dtype bf16"
      "fp16-4096x4096x4096 4096 4096 4096 NN 60 bf16-4096x4096x4096 --dtype fp16"
      "fp16-8192x8192x8192 8192 8192 8192 NN 30 fp16-4096x4096x4096 --dtype fp16"
      "fp16-4096x4096x4096-leaky_relu 4096 4096 4096 NN 30 fp16-4096x4096x4096 --dtype fp16 --epilogue leaky_relu"
      "bf16-8192x8192x8192-NT 8192 8192 8192 NT 30 bf16-8192x8192x8192 --dtype bf16"
      "fp16-4096x11008x4096 4096 11008 4096 NN 30 fp16-4096x4096x4096 --dtype fp16"
      "fp16-8192x8192x8192-NT 8192 8192 8192 NT 30 fp16-8192x8192x8192 --dtype fp16"
    ) ;;
  *) echo "gemm_suite.sh: unknown suite '$suite' (fp32 or half)" >&2; exit 2 ;;
esac
template_flags=""
for t in ${TILESMITH_SUITE_TEMPLATES:-$default_templates}; do template_flags+=" --template $t"; done
mkdir -p "$out"
only=" ${TILESMITH_SUITE_ONLY:-} "
for s in "${shapes[@]}"; do
  read -r name m n k layout evals warm extra <<<"$s"
  [[ "$only" == "  " || "$only" == *" $name "* ]] || continue
  dir="$out/$name"
  rm -rf "$dir"
  evals=$(python3 -c "print(max(8, int($evals * $scale)))")
  warm_flags=""
  [[ "$warm" != "-" && -f "$out/$warm/best_config.json" ]] && warm_flags="--warm-start $out/$warm"
  echo "== $name: autotune-loop --max-evals $evals $warm_flags"
  "$bin/autotune-loop" --m "$m" --n "$n" --k "$k" --layout "$layout" $extra $template_flags $warm_flags \
    --max-evals "$evals" --results "$dir" --progress none -q --seed 1 >"$dir.loop.txt" 2>&1 || echo "   autotune-loop exit $?"
  tail -n 3 "$dir.loop.txt"
  "$bin/bench-best" --results "$dir" --json >"$dir.bench.json" 2>"$dir.bench.err" || echo "   bench-best exit $?"
done
# One row per shape: the fastest re-validated entry, the vendor library from the same
# bench-best process, % of the measured copy bandwidth, the fastest FFMA entry for the fp32
# suite, relative errors (ours, vendor), and the validation status of every entry.
python3 - "$suite" "$out" "${shapes[@]}" <<'PY'
import json, sys, os
suite, out = sys.argv[1], sys.argv[2]
FFMA = {"gemm_tiled", "gemm_warp", "gemm_async"}
rows = []
for s in sys.argv[3:]:
    name = s.split()[0]
    path = os.path.join(out, name + ".bench.json")
    if not os.path.exists(path):
        continue
    try:
        j = json.load(open(path))
    except Exception:
        rows.append((name, "no result")); continue
    ok = [(e, e["now"]) for e in j.get("entries", []) if (e.get("now") or {}).get("outcome") == "ok"]
    if not ok:
        rows.append((name, "FAILED " + ",".join(e.get("status", "?") for e in j.get("entries", []))))
        continue
    e, now = max(ok, key=lambda x: x[1]["tflops"])
    v = e.get("vendor") or {}
    vms = v["timing"]["median_ms"] if v.get("outcome") == "ok" else None
    ratio = lambda n: "%.3f" % (vms / n["timing"]["median_ms"]) if vms else "-"
    bw = j.get("measured_bandwidth_gbps")
    statuses = ",".join(sorted({x.get("status", "?") for x in j["entries"]}))
    row = [name, e["template"], "%.4f" % now["timing"]["median_ms"], "%.2f" % now["tflops"],
           "%.0f" % now["gbps"] + (" (%.0f%%)" % (100 * now["gbps"] / bw) if bw else ""),
           "%.4f" % vms if vms else "-", "%.2f" % v["tflops"] if vms else "-", ratio(now)]
    err = lambda x: "%.2g" % x["accuracy"]["rel_error_norm"] if x.get("accuracy") else "-"
    if suite == "fp32":
        ffma = [x for x in ok if x[0]["template"] in FFMA]
        best_ffma = max(ffma, key=lambda x: x[1]["tflops"]) if ffma else None
        row += ["%s %.2f" % (best_ffma[0]["template"], best_ffma[1]["tflops"]) if best_ffma else "-",
                ratio(best_ffma[1]) if best_ffma else "-", err(now), err(v) if vms else "-"]
    else:
        row += [err(now), err(v) if vms else "-", "plain (unfused)" if "plain GEMM" in v.get("message", "") else "-"]
    rows.append(tuple(row + [statuses]))
hdr = ["shape", "best", "ours_ms", "TFLOP/s", "GB/s (%HBM)", "vendor_ms", "vendor_TF", "ratio"]
hdr += ["best FFMA TF", "FFMA ratio", "rel_err", "vendor_rel_err"] if suite == "fp32" else ["rel_err", "vendor_rel_err", "vendor_epilogue"]
hdr = tuple(hdr + ["validation"])
w = [max(len(str(r[i])) if i < len(r) else 0 for r in rows + [hdr]) for i in range(len(hdr))]
for r in [hdr] + rows:
    print("  ".join(str(c).ljust(w[i]) for i, c in enumerate(r)))
PY
