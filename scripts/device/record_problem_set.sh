#!/usr/bin/env bash
# Records the tuning spaces of a problem set on the GPU machine, for GPU-free runs of the
# set (`autotune-loop --problems SET --backend replay --replay-file data/recordings/NAME`):
# per problem one run of every template that serves it, with the random proposer (uniform
# over each valid space, never a configuration twice; a uniform sample when the time is
# short of the space), no re-timing, the vendor timed as in any run; then each
# (problem, template) history as a Kernel Tuner cache file named TEMPLATE_PROBLEM_GPU.json.gz,
# which carries the vendor's time at that problem too.
#
#   scripts/device/record_problem_set.sh OUT_DIR [SET_FILE] [SECONDS_PER_PROBLEM] [GPU_TAG]
#
# SET_FILE default data/problems/llama3_8b_bf16_decode.json, SECONDS_PER_PROBLEM default 40,
# GPU_TAG default the GPU's short name (H100, H200; from nvidia-smi). The caches go to OUT_DIR/recordings/SET_NAME/, the raw results to
# OUT_DIR/rec.tar.gz (one file, so the device tool brings it back whole). From the
# repository root, with a bundled build in .devpack or binaries in $TILESMITH_BIN.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/bundle_env.sh"
out=${1:?usage: record_problem_set.sh OUT_DIR [SET_FILE] [SECONDS_PER_PROBLEM] [GPU_TAG]}
set_file=${2:-data/problems/llama3_8b_bf16_decode.json}
secs=${3:-40}
tag=${4:-$(gpu_tag)}
set_name=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["name"])' "$set_file") || exit 2
rec=$(mktemp -d)
dest="$out/recordings/$set_name"
mkdir -p "$dest"
hours=$(awk -v s="$secs" 'BEGIN { print s / 3600 }')
threads=$(( $(nproc) > 2 ? $(nproc) - 2 : 1 ))
pack() { tar czf "$out/rec.tar.gz" --exclude=journal.jsonl --exclude=.autotune-loop.lock -C "$rec" .; }
# name m n k dtype layout c_dtype epilogue, one problem a line
python3 - "$set_file" >"$rec/problems.txt" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
for p in s["problems"]:
    print(p["name"], p["m"], p["n"], p["k"], p.get("dtype", "fp32"), p.get("layout", "NN"),
          p.get("c_dtype", p.get("dtype", "fp32")), p.get("epilogue", "none"))
PY
status=0
while read -r name m n k dtype layout c_dtype epilogue; do
  echo "== $name ${m}x${n}x${k} $dtype $layout ($secs s) $(date +%T)"
  "$bin/autotune-loop" --backend cuda --proposer random --candidates 32 --retime 0 --compile-threads "$threads" \
    --seed 1 --progress plain --status-interval 60 --hours "$hours" --results "$rec/$name" \
    --m "$m" --n "$n" --k "$k" --dtype "$dtype" --c-dtype "$c_dtype" --layout "$layout" --epilogue "$epilogue" \
    >"$rec/$name.log" 2>&1 || { echo "   autotune-loop exit $?"; status=1; }
  grep -E "evaluated in|vendor:|leaving out" "$rec/$name.log" | head -n 8
  # One cache per template the run evaluated.
  for t in $(python3 -c '
import csv, sys
seen = []
for r in csv.DictReader(open(sys.argv[1])):
    if r.get("stage") == "evaluation" and r["template"] not in seen: seen.append(r["template"])
print(" ".join(seen))' "$rec/$name/history.csv"); do
    "$bin/autotune-loop" history --results "$rec/$name" --template "$t" \
      --kernel-tuner-cache "$dest/${t}_${name}_${tag}.json.gz" >/dev/null || status=1
  done
  pack
done <"$rec/problems.txt"
ls -l "$dest"
du -sh "$dest"
exit $status
