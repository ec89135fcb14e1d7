#!/usr/bin/env bash
# Worker fault isolation and several devices, with the real GPU (on the GPU machine).
#
#   scripts/device/worker_faults_gpu.sh [OUT_DIR]  (from the repository root; ~3-5 min of GPU)
#
# 1. worker_gpu_test: out-of-bounds write, trap, hang, NaN and 1 MiB of shared memory in
#    tilesmith-worker processes, health check, 1 vs 2 workers, a GPU soak.
# 2. An autotune-loop run with the test-only fault_gpu template mixed in with gemm_tiled
#    (exhaustive proposer, so every FAULT value comes up): the out-of-bounds, hang and trap
#    candidates must each cost one candidate (crash / timeout / launch_error) while the
#    run goes on to its budget, and nothing is evaluated twice.
# 3. The same short gemm_warp search (64 candidates, compile cache warmed by a first
#    pass) on one worker and on two: two GPUs when the machine has them (--devices 0,1),
#    otherwise two workers on GPU 0 (--devices 0,0, said so in the table). Candidates
#    per minute from each run's summary.
# A table at the end; the details are under OUT_DIR (default results/worker_faults_gpu).
#
# Binaries: $TILESMITH_BIN (default .devpack/bin): autotune-loop, tilesmith-worker,
# worker_gpu_test. $TILESMITH_WORKER points at the worker (set to $TILESMITH_BIN's when
# unset). Exit code 0 when every check passed, 1 otherwise.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/bundle_env.sh"  # root, bin, TILESMITH_WORKER, TILESMITH_SOURCE_DIR
out=${1:-results/worker_faults_gpu}
rm -rf "$out"
mkdir -p "$out"
fail=0
for exe in autotune-loop tilesmith-worker; do
  [[ -x "$bin/$exe" ]] || { echo "worker_faults_gpu: $bin/$exe is missing"; exit 2; }
done

echo "== devices"
"$bin/autotune-loop" --list-devices | tee "$out/devices.txt"
gpus=$("$bin/autotune-loop" --list-devices --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["gpus"])')
backend=$("$bin/autotune-loop" --list-devices --json |
  python3 -c 'import json,sys; print(next((b["backend"] for b in json.load(sys.stdin)["backends"] if b["devices"]), "none"))')
echo "GPUs: $gpus ($backend)"
[[ "$gpus" -ge 1 ]] || { echo "worker_faults_gpu: no GPU"; exit 3; }

# -- 1 ------------------------------------------------------------------------------------
echo "== worker_gpu_test"
gpu_test_rc=missing
if [[ -x "$bin/worker_gpu_test" ]]; then
  TILESMITH_GPU_SOAK=${TILESMITH_GPU_SOAK:-200} timeout 900 "$bin/worker_gpu_test" >"$out/worker_gpu_test.txt" 2>&1
  gpu_test_rc=$?
  grep -E '^\[  (PASSED|FAILED|SKIPPED) |^FAULT=|gpu soak:|candidates/min|workers' "$out/worker_gpu_test.txt" | head -40
  [[ $gpu_test_rc -eq 0 ]] || fail=1
else
  echo "   $bin/worker_gpu_test is missing: not run"
  fail=1
fi

# -- 2 ------------------------------------------------------------------------------------
echo "== autotune-loop with fault_gpu mixed in"
kdir="$out/kernels"
mkdir -p "$kdir"
cp kernels/*.hip kernels/*.json kernels/*.h "$kdir"/
cp tests/kernels/fault_gpu.hip tests/kernels/fault_gpu.json "$kdir"/
# 12 fault_gpu configs (TILE 8/16 x FAULT 0-5) and 18 of gemm_tiled; a hang costs the
# 10 s run deadline, a crash a worker restart.
"$bin/autotune-loop" --m 1024 --n 1024 --k 1024 --kernels-dir "$kdir" --template gemm_tiled --template fault_gpu \
  --proposer exhaustive --candidates 6 --max-evals 30 --run-deadline 10 --no-vendor --retime 0 \
  --results "$out/faults" --progress plain --status-interval 5 >"$out/faults.out" 2>"$out/faults.err"
faults_rc=$?
tail -n 25 "$out/faults.out"
grep -E 'warn|progress' "$out/faults.err" | tail -n 12

# -- 3 ------------------------------------------------------------------------------------
if [[ "$gpus" -ge 2 ]]; then two="0,1"; two_note="two GPUs"; else two="0,0"; two_note="two workers on GPU 0 (one GPU here)"; fi
echo "== one worker vs $two_note"
# Same seed, same 64 configs in every run. A first pass fills a compile cache that both
# timed runs start from a copy of, so they compare the devices' measuring rate, not how
# fast NVRTC compiles.
rate_args=(--m 2048 --n 2048 --k 2048 --template gemm_warp --proposer random --seed 6 --candidates 16
  --max-evals 64 --no-vendor --retime 0 --progress none -q)
"$bin/autotune-loop" "${rate_args[@]}" --devices 0 --cache-dir "$out/cache_warm" --results "$out/rate_warm" \
  >"$out/rate_warm.out" 2>"$out/rate_warm.err"
echo "   compile pass: exit $?; $(grep -m1 'this session' "$out/rate_warm.out")"
for run in one two; do
  devices=0
  [[ $run == two ]] && devices=$two
  cp -r "$out/cache_warm" "$out/cache_$run"
  "$bin/autotune-loop" "${rate_args[@]}" --devices "$devices" --cache-dir "$out/cache_$run" \
    --results "$out/rate_$run" >"$out/rate_$run.out" 2>"$out/rate_$run.err"
  echo "   $run (--devices $devices): exit $?; $(grep -m1 'this session' "$out/rate_$run.out")"
done

python3 - "$out" "$faults_rc" "$gpu_test_rc" "$two" "$two_note" <<'PY' || fail=1
import csv, json, os, re, sys
out, faults_rc, gpu_test_rc, two, two_note = sys.argv[1:6]
ok = True
def check(cond):
    global ok
    ok = ok and cond
    return "PASS" if cond else "FAIL"

print("\n== worker faults on the GPU")
print("worker_gpu_test: exit %s  %s" % (gpu_test_rc, check(gpu_test_rc == "0")))

# The fault run: each fault_gpu config once, with an outcome its fault allows; the run
# reached its budget (exit 0) and gemm_tiled went on being measured after the faults.
allowed = {0: {"ok"}, 1: {"crash", "launch_error"}, 2: {"timeout"}, 3: {"crash", "launch_error"},
           4: {"wrong_result"}, 5: {"resource_error", "invalid", "launch_error"}}
names = {0: "control", 1: "out-of-bounds write", 2: "hang", 3: "trap", 4: "NaN output", 5: "1 MiB shared"}
rows = list(csv.DictReader(open(os.path.join(out, "faults", "history.csv")))) if os.path.exists(
    os.path.join(out, "faults", "history.csv")) else []
fault_rows = [r for r in rows if r["template"] == "fault_gpu" and r["stage"] == "evaluation"]
keys = [(r["template"], r["config_hash"]) for r in rows if r["stage"] == "evaluation"]
print("\nautotune-loop with fault_gpu: exit %s, %d rows  %s" % (faults_rc, len(rows), check(faults_rc == "0" and len(rows) == 30)))
print("  no candidate evaluated twice: %s" % check(len(keys) == len(set(keys))))
print("  %-20s %-5s %-14s %-10s %-8s %s" % ("fault", "TILE", "outcome", "eval_ms", "device", "check"))
for r in sorted(fault_rows, key=lambda r: (json.loads(r["config"])["FAULT"], json.loads(r["config"])["TILE"])):
    c = json.loads(r["config"])
    f = c["FAULT"]
    print("  %-20s %-5s %-14s %-10s %-8s %s  %s" % (names[f], c["TILE"], r["outcome"], r["eval_ms"][:8], r["device"],
          check(r["outcome"] in allowed[f]), r["message"][:90].replace("\n", " ")))
print("  fault_gpu configs: %d of 12  %s" % (len(fault_rows), check(len(fault_rows) == 12)))
last_fault = max((int(r["row"]) for r in fault_rows if json.loads(r["config"])["FAULT"] in (1, 2, 3)), default=0)
after = [r for r in rows if r["template"] == "gemm_tiled" and int(r["row"]) > last_fault and r["outcome"] == "ok"]
print("  gemm_tiled ok after the last crash/hang: %d  %s" % (len(after), check(len(after) > 0)))
summary = open(os.path.join(out, "faults.out")).read()
for line in summary.splitlines():
    if line.startswith("worker "):
        print("  " + line[:200])

print("\ncandidates per minute (gemm_warp 2048^3, random, the same 64 candidates, compile cache warm)")
print("  %-5s %-10s %-10s %-10s %s" % ("run", "devices", "evaluated", "wall", "candidates/min"))
rates = {}
for run, devices in (("one", "0"), ("two", two)):
    text = open(os.path.join(out, "rate_%s.out" % run)).read() if os.path.exists(os.path.join(out, "rate_%s.out" % run)) else ""
    m = re.search(r"this session: (\d+) evaluated in (\S+) \(([\d.e+]+) candidates/min", text)
    if m:
        rates[run] = float(m.group(3))
        print("  %-5s %-10s %-10s %-10s %s" % (run, devices, m.group(1), m.group(2), m.group(3)))
    else:
        print("  %-5s %-10s no summary (see %s/rate_%s.err)" % (run, devices, out, run))
        ok = False
if len(rates) == 2:
    print("  two / one: %.2fx (%s)" % (rates["two"] / rates["one"], two_note))
print("\n" + ("ALL PASS" if ok else "SOME CHECKS FAILED"))
sys.exit(0 if ok else 1)
PY
exit $fail
