#!/usr/bin/env python3
"""Two versions of a kernel compared at fixed clocks: ncu runs bench-best on the same config once per
version (or on two configs: --b-config) in alternating processes (A B, B A, A B, ...) with the GPU held at its base clocks
(--clock-control base), and the versions' kernel times and executed instructions are set side by side,
with the ratio B / A and its 95% interval over the pairs of processes.

Why: a kernel change worth 1-3% cannot be told from noise on a GPU at its power cap, where
bench-best's paired rounds against the vendor move by up to 13% within one process (notes/device-runs.md,
run 222), and ncu's base-clock times of one kernel differ by up to 2% between processes (run 223). At
base clocks the power cap is out of the way; alternating the order and taking several processes of
each version averages the differences between processes, and the interval says whether what is
left is more than that.

    scripts/device/kernel_ab.py --b DIR [--a DIR] [--pairs 4] -- BENCH_BEST_FLAGS
    scripts/device/kernel_ab.py --b-config JSON [--a DIR] [--b DIR] -- BENCH_BEST_FLAGS
    scripts/device/kernel_ab.py --b-set epilogue=bias_gelu [--b-set NAME=VALUE ...] -- BENCH_BEST_FLAGS
    e.g. scripts/device/kernel_ab.py --a old/kernels --b kernels --pairs 4 -- --template gemm_tma_half \\
             --config '{"BLOCK_M":128,"BLOCK_N":256,"EPILOGUE_SMEM":2}' --m 4096 --n 4096 --k 4096 \\
             --dtype bf16 --layout NT

A and B are template folders as bench-best's --kernels-dir takes them (--a left out: the built-in
templates; --b left out: A's). --b-config gives B another config of the template (its --config in
place of the one among the flags): two tile shapes of one problem timed at the same clocks. --b-set
NAME=VALUE (repeatable) sets any other bench-best flag --NAME for B alone, e.g. `--b-set epilogue=bias_gelu`:
what a fused epilogue costs over the plain GEMM, the same kernel at the same clocks. The flags
after -- go to bench-best as they are (the problem, --template and --config);
this script adds --in-process --no-vendor --rounds 0 --no-read-floor. The kernel ncu measures is the
template's (--kernel, default the --template flag's value). Runs from the repository root with a devpack
(.devpack/env.sh) or with ncu and bench-best on PATH; needs a GPU ncu may profile.
"""

import argparse
import csv
import io
import json
import math
import os
import subprocess
import sys

METRICS = ("gpu__time_duration.sum", "smsp__inst_executed.sum")

# Two-sided 95% quantiles of Student's t by degrees of freedom (1..30); beyond, the normal's.
T95 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
       2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042]


class Failed(Exception):
    """A process that did not give the measurements asked for (the message says which and why)."""


def t95(df):
    return T95[df - 1] if df <= len(T95) else 1.960


def parse_ncu_csv(text, kernel):
    """The launches' (time in ns, instructions) of the kernels whose name starts with `kernel`, from
    ncu's --csv output (one row per launch and metric; ncu's and the program's own lines around them)."""
    scale = {"ns": 1.0, "nsecond": 1.0, "us": 1e3, "usecond": 1e3, "ms": 1e6, "msecond": 1e6, "s": 1e9, "second": 1e9}
    launches = {}
    header = None
    for row in csv.reader(io.StringIO(text)):
        if not row:
            continue
        if "Metric Name" in row and "Metric Value" in row and "ID" in row:
            header = {name: i for i, name in enumerate(row)}
            continue
        if header is None or len(row) < len(header):
            continue
        name, metric = row[header["Kernel Name"]], row[header["Metric Name"]]
        if not name.startswith(kernel) or metric not in METRICS:
            continue
        try:
            value = float(row[header["Metric Value"]].replace(",", ""))
        except ValueError:
            raise Failed("ncu gave %r for %s" % (row[header["Metric Value"]], metric))
        unit = row[header["Metric Unit"]] if "Metric Unit" in header else ""
        if metric == METRICS[0]:
            value *= scale.get(unit, 1.0)
        launches.setdefault(row[header["ID"]], {})[metric] = value
    return [(v[METRICS[0]], v.get(METRICS[1], float("nan"))) for _, v in sorted(launches.items(), key=lambda kv: int(kv[0]))
            if METRICS[0] in v]


def with_flag(passthrough, flag, value):
    """The bench-best flags with `value` as `flag`'s value (replacing the one there, if any)."""
    out = list(passthrough)
    if flag in out and out.index(flag) + 1 < len(out):
        out[out.index(flag) + 1] = value
    else:
        out += [flag, value]
    return out


def with_config(passthrough, config):
    """The bench-best flags with `config` as the --config value (replacing the one there, if any)."""
    return with_flag(passthrough, "--config", config)


def measure(args, label, kernels_dir, passthrough):
    """One process: ncu over bench-best with this version's templates; the mean of its launches."""
    cmd = [args.ncu, "--clock-control", "base", "--kernel-name", args.kernel, "--launch-skip",
           str(args.launch_skip), "--launch-count", str(args.launch_count), "--metrics", ",".join(METRICS), "--csv",
           args.bench_best, "--in-process", "--no-vendor", "--rounds", "0", "--no-read-floor"]
    if kernels_dir:
        cmd += ["--kernels-dir", kernels_dir]
    cmd += passthrough
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=args.timeout)
    except FileNotFoundError as e:
        raise Failed("%s: cannot run %s (%s); put ncu and bench-best on PATH (source .devpack/env.sh) or give "
                     "--ncu / --bench-best" % (label, e.filename, e.strerror))
    except subprocess.TimeoutExpired:
        raise Failed("%s: no answer within %d s (--timeout)" % (label, args.timeout))
    tail = "\n".join(p.stdout.strip().splitlines()[-6:])
    if p.returncode != 0:
        raise Failed("%s: exit %d\n%s" % (label, p.returncode, tail))
    launches = parse_ncu_csv(p.stdout, args.kernel)
    if len(launches) < args.launch_count:
        raise Failed("%s: %d of the %d launches of %s measured (is --kernel the kernel's name, and does bench-best "
                     "launch it %d times?)\n%s" % (label, len(launches), args.launch_count, args.kernel,
                                                  args.launch_skip + args.launch_count, tail))
    times = [t for t, _ in launches]
    return {"version": label, "kernels_dir": kernels_dir or "built-in", "launch_ns": times,
            "mean_ns": sum(times) / len(times), "instructions": sum(i for _, i in launches) / len(launches)}


def summarize(processes, pairs):
    """Each version's mean over its processes and their spread; B / A per pair (the pair's two
    processes, run back to back) and their geometric mean with a t interval on the log ratios."""
    out = {}
    for v in ("A", "B"):
        means = [p["mean_ns"] for p in processes if p["version"] == v]
        m = sum(means) / len(means)
        sd = math.sqrt(sum((x - m) ** 2 for x in means) / (len(means) - 1)) if len(means) > 1 else 0.0
        inst = [p["instructions"] for p in processes if p["version"] == v]
        out[v] = {"processes": len(means), "mean_ns": m, "sd_ns": sd, "instructions": sum(inst) / len(inst)}
    logs = []
    for i in range(pairs):
        a = next(p for p in processes[2 * i:2 * i + 2] if p["version"] == "A")
        b = next(p for p in processes[2 * i:2 * i + 2] if p["version"] == "B")
        logs.append(math.log(b["mean_ns"] / a["mean_ns"]))
    mean = sum(logs) / len(logs)
    out["pair_ratios"] = [math.exp(x) for x in logs]
    out["ratio"] = math.exp(mean)
    if len(logs) > 1:
        half = t95(len(logs) - 1) * math.sqrt(sum((x - mean) ** 2 for x in logs) / (len(logs) - 1) / len(logs))
        out["interval"] = [math.exp(mean - half), math.exp(mean + half)]
        lo, hi = out["interval"]
        out["verdict"] = "B faster" if hi < 1 else "A faster" if lo > 1 else "tie"
    else:
        out["interval"] = None
        out["verdict"] = "one pair: no interval (--pairs 2 or more)"
    out["instruction_ratio"] = out["B"]["instructions"] / out["A"]["instructions"]
    return out


def main(argv):
    if "--" in argv:
        cut = argv.index("--")
        own, passthrough = argv[:cut], argv[cut + 1:]
    else:
        own, passthrough = argv, []
    ap = argparse.ArgumentParser(prog="scripts/device/kernel_ab.py", description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="Flags after -- go to bench-best (the problem, --template, --config).\n\n"
                                 + __doc__.split("\n\n")[2])
    ap.add_argument("--a", default="", help="version A's template folder (default: the built-in templates)")
    ap.add_argument("--b", help="version B's template folder (default: A's)")
    ap.add_argument("--b-config", help="version B's config (JSON), in place of the --config among the bench-best "
                    "flags (default: the same config)")
    ap.add_argument("--b-set", action="append", default=[], metavar="NAME=VALUE",
                    help="bench-best's --NAME VALUE for version B alone, in place of that flag's value among the "
                    "bench-best flags (repeatable; e.g. --b-set epilogue=bias_gelu)")
    ap.add_argument("--pairs", type=int, default=4, help="pairs of processes, A B then B A alternately (default 4)")
    ap.add_argument("--launch-skip", type=int, default=3, help="launches of the kernel ncu skips in each process")
    ap.add_argument("--launch-count", type=int, default=4, help="launches it measures in each process")
    ap.add_argument("--kernel", help="the kernel's name (default: --template's value among the bench-best flags)")
    ap.add_argument("--ncu", default="ncu", help="the profiler (default: ncu on PATH)")
    ap.add_argument("--bench-best", default="bench-best", help="bench-best (default: the one on PATH)")
    ap.add_argument("--timeout", type=int, default=120, help="seconds a process may take")
    ap.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    args = ap.parse_args(own)
    if args.pairs < 1 or args.launch_count < 1 or args.launch_skip < 0:
        ap.error("--pairs and --launch-count must be 1 or more, --launch-skip 0 or more")
    if not args.kernel:
        if "--template" not in passthrough or passthrough.index("--template") + 1 >= len(passthrough):
            ap.error("give --kernel, or --template TEMPLATE among the bench-best flags after --")
        args.kernel = passthrough[passthrough.index("--template") + 1]
    if args.b is None and args.b_config is None and not args.b_set:
        ap.error("give --b (another template folder), --b-config (another config), --b-set (another bench-best "
                 "flag's value), or more than one")
    args.b_flag = []
    for item in args.b_set:
        name, eq, value = item.partition("=")
        name = name.lstrip("-")
        if not eq or not name or name == "kernels-dir":
            ap.error("--b-set takes NAME=VALUE, a bench-best flag without its dashes other than kernels-dir (that "
                     "is --b), e.g. epilogue=bias_gelu: %s" % item)
        args.b_flag.append(("--" + name, value))
    if args.b_config is not None:
        try:
            if not isinstance(json.loads(args.b_config), dict):
                raise ValueError("not an object")
        except ValueError as e:
            ap.error("--b-config must be a JSON object of parameters (%s): %s" % (e, args.b_config))
    b_dir = args.b if args.b is not None else args.a
    for d in (args.a, b_dir):
        if d and not os.path.isdir(d):
            ap.error("%s is not a folder of templates" % d)
    b_flags = with_config(passthrough, args.b_config) if args.b_config else list(passthrough)
    for flag, value in args.b_flag:
        b_flags = with_flag(b_flags, flag, value)
    flags = {"A": passthrough, "B": b_flags}
    names = {"A": args.a or "built-in", "B": (b_dir or "built-in") + (" " + args.b_config if args.b_config else "")
             + "".join(" %s %s" % (f, v) for f, v in args.b_flag)}
    processes = []
    try:
        for i in range(args.pairs):
            order = (("A", args.a), ("B", b_dir)) if i % 2 == 0 else (("B", b_dir), ("A", args.a))
            for label, d in order:
                processes.append(measure(args, label, d, flags[label]))
                if not args.json:
                    p = processes[-1]
                    print("%s  %-24s %10.1f us  %.4g instructions  (launches: %s)" % (
                        label, p["kernels_dir"][-24:], p["mean_ns"] / 1e3, p["instructions"],
                        " ".join("%.1f" % (t / 1e3) for t in p["launch_ns"])), flush=True)
    except Failed as e:
        print("kernel_ab: %s" % e, file=sys.stderr)
        return 1
    s = summarize(processes, args.pairs)
    if args.json:
        print(json.dumps({"a": args.a or "built-in", "b": b_dir or "built-in", "b_config": args.b_config,
                          "b_flags": args.b_flag,
                          "kernel": args.kernel, "processes": processes, "summary": s}, indent=1))
        return 0
    for v, d in names.items():
        print("%s %s: %.1f us over %d processes (sd %.1f), %.4g instructions" % (
            v, d, s[v]["mean_ns"] / 1e3, s[v]["processes"], s[v]["sd_ns"] / 1e3, s[v]["instructions"]))
    iv = "[%.3f, %.3f]" % tuple(s["interval"]) if s["interval"] else "(no interval)"
    print("time B / A: %.3f %s over %d pairs at base clocks (%s); instructions B / A: %.3f" % (
        s["ratio"], iv, args.pairs, s["verdict"], s["instruction_ratio"]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
