#!/usr/bin/env python3
"""Does a problem set reach each problem's best sooner than tuning the problem alone? (issue 34's set point)

On recordings, with the replay backend (no GPU): for every seed, the whole set under one budget
(`autotune-loop --problems FILE --max-evals SET_EVALS --retime 0 --seed S`) and each of its problems
alone (`--max-evals ALONE_EVALS`, the same seed). Then, per problem, the evaluations of its own
history until the best so far is within TARGET% of the fastest time any recording of its shape holds
(a miss where it never gets there). The table gives, per problem in the set's order of tuning, the
median over seeds, quartiles, the worst seed and the misses, set beside alone, and in how many seeds
the set started the problem from a tuned neighbour (warm-start rows in its history); then the sums of
the medians.

  scripts/set_transfer_replay.py --seeds 1-20
  scripts/set_transfer_replay.py --recordings DIR --problems FILE --seeds 1-80 --jobs 2

The set's budget should give every problem at least ALONE_EVALS (the set splits it by the problems'
weights, docs/problem-sets.md), so that a problem's figure is not cut short by its share.
"""
import argparse
import csv
import glob
import gzip
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def fail(message):
    sys.exit(f"set_transfer_replay: {message}")


def parse_seeds(text):
    try:
        first, _, last = text.partition("-")
        seeds = list(range(int(first), int(last or first) + 1))
    except ValueError:
        seeds = []
    if not seeds or seeds[0] < 0:
        fail(f"--seeds {text!r}: give one seed or a range FIRST-LAST, e.g. 1-20")
    return seeds


def shape_key(problem):
    return (int(problem["m"]), int(problem["n"]), int(problem["k"]), problem.get("dtype", "fp32"),
            problem.get("layout", "NN"))


def recorded_bests(recordings, problems):
    """The fastest recorded time (ms) of each problem's shape over every recording of it."""
    best = {}
    for path in sorted(glob.glob(os.path.join(recordings, "*.json*"))):
        opener = gzip.open if path.endswith(".gz") else open
        try:
            with opener(path, "rt") as f:
                data = json.load(f)
            problem = data["tilesmith"]["problem"]
        except (OSError, ValueError, KeyError, TypeError) as e:
            fail(f"{path}: not a recording of tilesmith's ({e}); record one with "
                 "`autotune-loop history --kernel-tuner-cache`")
        times = [v["time"] for v in data.get("cache", {}).values()
                 if isinstance(v, dict) and isinstance(v.get("time"), (int, float)) and v["time"] > 0]
        if times:
            key = shape_key(problem)
            best[key] = min(best.get(key, float("inf")), min(times))
    missing = [p["name"] for p in problems if shape_key(p) not in best]
    if missing:
        fail(f"no recording in {recordings} holds a time for {', '.join(missing)}: "
             "record those shapes or leave them out of the problem set")
    return best


def evaluations_to(history, target_ms):
    """(evaluations until the best so far is at or below target_ms or None, warm-start rows)."""
    with open(history, newline="") as f:
        rows = list(csv.DictReader(f))
    best, reached = float("inf"), None
    for i, row in enumerate(rows, 1):
        if row.get("outcome") == "ok" and row.get("median_ms"):
            best = min(best, float(row["median_ms"]))
        if reached is None and best <= target_ms:
            reached = i
    return reached, sum(1 for row in rows if row.get("proposer") == "warm-start")


def summary(values, cap):
    """Median, quartiles and worst of evaluations, a miss counting as `cap` + 1 (above any run's)."""
    filled = sorted(v if v is not None else cap + 1 for v in values)
    q = statistics.quantiles(filled, n=4, method="inclusive") if len(filled) > 1 else filled * 3
    worst = "miss" if None in values else str(max(filled))
    return statistics.median(filled), q[0], q[2], worst, sum(v is None for v in values)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--recordings", default=os.path.join(REPO, "data/recordings/llama3_8b_bf16_decode"))
    ap.add_argument("--problems", default=os.path.join(REPO, "data/problems/llama3_8b_bf16_decode.json"))
    ap.add_argument("--seeds", default="1-20", help="one seed or FIRST-LAST (default 1-20)")
    ap.add_argument("--set-evals", type=int, default=1600, help="the whole set's budget (default 1600)")
    ap.add_argument("--alone-evals", type=int, default=100, help="each problem's budget alone (default 100)")
    ap.add_argument("--target", type=float, default=5.0, help="within this many percent of the best (default 5)")
    ap.add_argument("--jobs", type=int, default=2, help="autotune-loop runs at once (default 2)")
    ap.add_argument("--bin", default=os.environ.get("TILESMITH_BIN", os.path.join(REPO, "build/cli")),
                    help="folder with autotune-loop (default $TILESMITH_BIN or build/cli)")
    ap.add_argument("--work", help="keep the runs' results here (default: a temporary folder, removed)")
    a = ap.parse_args()

    if a.set_evals < 1 or a.alone_evals < 1 or a.jobs < 1 or not a.target > 0:
        fail("--set-evals, --alone-evals and --jobs must be at least 1 and --target above 0")
    seeds = parse_seeds(a.seeds)
    try:
        with open(a.problems) as f:
            problems = json.load(f)["problems"]
        names = [p["name"] for p in problems]
        shapes = [shape_key(p) for p in problems]
    except (OSError, ValueError, KeyError, TypeError) as e:
        fail(f"{a.problems}: not a problem set ({e}); see docs/problem-sets.md for the format")
    if not problems or len(set(names)) != len(names) or len(set(shapes)) != len(shapes):
        fail(f"{a.problems}: give at least one problem, each with its own name and shape")
    best = recorded_bests(a.recordings, problems)
    exe = os.path.join(a.bin, "autotune-loop")
    if not os.access(exe, os.X_OK):
        fail(f"{exe} is not an executable: build first (README) or pass --bin / TILESMITH_BIN")

    work = a.work or tempfile.mkdtemp(prefix="set_transfer_")
    os.makedirs(work, exist_ok=True)
    common = ["--backend", "replay", "--replay-file", a.recordings, "--retime", "0"]
    runs = []
    for s in seeds:
        runs.append((["--problems", a.problems, "--max-evals", str(a.set_evals)], s, f"set_{s}"))
        for p in problems:
            m, n, k, dtype, layout = shape_key(p)
            runs.append((["--m", str(m), "--n", str(n), "--k", str(k), "--dtype", dtype, "--layout", layout,
                          "--max-evals", str(a.alone_evals)], s, f"alone_{s}_{p['name']}"))

    def run(job):
        args, seed, name = job
        out = os.path.join(work, name)
        shutil.rmtree(out, ignore_errors=True)
        r = subprocess.run([exe] + common + args + ["--seed", str(seed), "--results", out],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if r.returncode != 0:
            last = (r.stderr.strip().splitlines() or ["no message"])[-1]
            return f"{name}: autotune-loop exited {r.returncode}: {last}"
        return None

    with ThreadPoolExecutor(a.jobs) as pool:
        errors = [e for e in pool.map(run, runs) if e]
    if errors:
        fail("; ".join(errors[:3]))

    # The set's order of tuning (its first slices go heaviest first): by each problem's first row in the
    # first seed's run.
    def first_row(name):
        with open(os.path.join(work, f"set_{seeds[0]}", name, "history.csv"), newline="") as f:
            return next(csv.DictReader(f), {}).get("timestamp", "")
    order = sorted((p["name"] for p in problems), key=first_row)
    by_name = {p["name"]: p for p in problems}
    print(f"evaluations until within {a.target:g}% of the recorded best, seeds {seeds[0]}-{seeds[-1]} "
          f"({len(seeds)}); the set under {a.set_evals}, each problem alone under {a.alone_evals}")
    print(f"{'problem':<16} {'best ms':>9}  {'set: median [q1, q3] worst misses':<36} "
          f"{'alone: median [q1, q3] worst misses':<38} started from a neighbour")
    sums = [0.0, 0.0]
    for name in order:
        target = best[shape_key(by_name[name])] * (1 + a.target / 100)
        in_set = [evaluations_to(os.path.join(work, f"set_{s}", name, "history.csv"), target) for s in seeds]
        alone = [evaluations_to(os.path.join(work, f"alone_{s}_{name}", "history.csv"), target)[0] for s in seeds]
        cells = []
        for i, values in enumerate(([v for v, _ in in_set], alone)):
            med, q1, q3, worst, misses = summary(values, max(a.set_evals, a.alone_evals))
            sums[i] += med
            cells.append(f"{med:g} [{q1:g}, {q3:g}] {worst} {misses}")
        warm = sum(1 for _, w in in_set if w > 0)
        print(f"{name:<16} {best[shape_key(by_name[name])]:>9.4f}  {cells[0]:<36} {cells[1]:<38} "
              f"{warm} of {len(seeds)}")
    print(f"sums of the medians: set {sums[0]:g}, alone {sums[1]:g}")
    if not a.work:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
