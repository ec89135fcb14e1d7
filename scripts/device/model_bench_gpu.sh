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
# as it ends). It bounds when a shape starts, not when it ends (a large shape's autotune-loop
# ran 80 s past it, run 203), so the call keeps its own deadline as well:
# TILESMITH_CALL_LIMIT_S (default 560 s from this script's start; 0: none) stops the
# benchmark there (TERM, then KILL: every results folder resumes after either) and packs what
# is done. The benchmark's output goes to $OUT/model-bench.log (its last lines printed at the end).
# A pack larger than TILESMITH_PACK_PART_BYTES (default 15 MiB: the device tool returns files of
# at most 16 MiB and leaves larger ones out) comes back as model-bench.tgz.part-00, -01, ...;
# join them here with `cat model-bench.tgz.part-* > results/model-bench.tgz` (the parts, carried
# in as results/model-bench.tgz.part-*, are joined by this script as well).
# TILESMITH_RESULTS_PACK names another pack to start from (e.g. a tracked file, which travels
# with the working tree: no second copy carried against the tool's 64 MiB). A named pack that is
# missing, unreadable or holds no results/model-bench folder stops the call (exit 2) before any
# device work rather than start the results over; so does an unreadable default pack.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/bundle_env.sh"
export TILESMITH_BIN=$bin
out=${OUT:-results}
res=results/model-bench
pack_in=${TILESMITH_RESULTS_PACK:-results/model-bench.tgz}
unpack_fail() { echo "model_bench_gpu: $1" >&2; exit 2; }
if [[ ! -d $res ]]; then
  unpacked=
  if [[ -f $pack_in ]]; then
    tar xzf "$pack_in" || unpack_fail "$pack_in is not a readable pack (tar xzf failed)"
    unpacked=$pack_in
  elif compgen -G "$pack_in.part-*" >/dev/null; then
    cat "$pack_in".part-* | tar xzf - || unpack_fail "the parts $pack_in.part-* do not join to a readable pack"
    unpacked="$pack_in.part-*"
  elif [[ -n ${TILESMITH_RESULTS_PACK:-} ]]; then
    unpack_fail "TILESMITH_RESULTS_PACK=$pack_in is neither a file nor parts $pack_in.part-*; carry it in, or unset it to start from results/model-bench.tgz (or from nothing)"
  else
    echo "== no results carried in ($pack_in): starting from an empty $res"
  fi
  [[ -z $unpacked || -d $res ]] || unpack_fail "$unpacked holds no $res folder (pack it from the repository root)"
fi
mkdir -p "$res"
if [[ -x $bin/gpu_evaluator_test && ! -f $res/read_floor_gpu_test.txt ]]; then
  echo "== the read floor on this GPU (gpu_evaluator_test --gtest_filter='*ReadFloor*')"
  timeout 240 "$bin/gpu_evaluator_test" --gtest_filter='*ReadFloor*' >"$res/read_floor_gpu_test.txt" 2>&1
  echo "   exit $?"
  grep -E "read floor|vendor|FAILED|OK \]|PASSED|SKIPPED" "$res/read_floor_gpu_test.txt" | head -n 20
fi
limit=${TILESMITH_CALL_LIMIT_S:-560}
mkdir -p "$out"
log=$out/model-bench.log
part_bytes=${TILESMITH_PACK_PART_BYTES:-15728640}
pack() {
  tail -n 80 "$log"
  rm -f "$out"/model-bench.tgz "$out"/model-bench.tgz.part-*
  tar czf "$out/model-bench.tgz" "$res" || { echo "== packing the results failed: they stay in $res"; return 1; }
  local size
  size=$(stat -c %s "$out/model-bench.tgz")
  if (( size <= part_bytes )); then
    echo "== results packed: $out/model-bench.tgz (carry it in as results/model-bench.tgz)"
    return 0
  fi
  # Larger than one returned file may be: split, so that the device tool brings every part back.
  split -b "$part_bytes" -d "$out/model-bench.tgz" "$out/model-bench.tgz.part-" ||
    { echo "== splitting the pack failed: $out/model-bench.tgz is whole (the device tool may leave it out)"; return 1; }
  rm "$out/model-bench.tgz"
  echo "== results packed in $(ls "$out"/model-bench.tgz.part-* | wc -l) parts of at most $part_bytes bytes:" \
    "$out/model-bench.tgz.part-* (join them: cat model-bench.tgz.part-* > results/model-bench.tgz)"
}
# The benchmark in its own process group, so that stopping it stops its autotune-loop and
# bench-best processes too; this shell only waits, so a TERM from outside is handled at once.
setsid scripts/model_bench.sh "$res" "$@" >"$log" 2>&1 &
pid=$!
stop() {
  kill -TERM -- -"$pid" 2>/dev/null
  for _ in $(seq 20); do kill -0 "$pid" 2>/dev/null || return 0; sleep 1; done
  kill -KILL -- -"$pid" 2>/dev/null
}
trap 'echo "== stopped from outside: packing what is done"; stop; pack; exit 143' TERM INT
while kill -0 "$pid" 2>/dev/null; do
  if (( limit > 0 && SECONDS >= limit )); then
    echo "== $limit s into the call: stopping the benchmark and packing what is done (the next call resumes it)"
    stop
    break
  fi
  sleep 2
done
wait "$pid"
status=$?
pack
exit $status
