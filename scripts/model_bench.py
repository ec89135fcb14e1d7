#!/usr/bin/env python3
"""The model-shape benchmark (docs/model-bench.md): tune the layer GEMMs of public model
configurations (data/problems/*_nt.json) shape by shape, then re-time every winner next
to the vendor library and the read floor (each row's figures from one bench-best process,
--bench-batch shapes a process), and print one table.

    scripts/model_bench.sh OUT_DIR [flags] [-- flags for autotune-loop and bench-best]

Run through scripts/model_bench.sh (it finds the binaries: $TILESMITH_BIN, build/cli or
.devpack/bin). Everything is resumable: a shape's folder holds its autotune-loop run, and
running again continues every shape with fewer than --evals evaluations (a search that
ended on its own - plateau, exhausted space, nothing new - counts as done).

Layout of OUT_DIR/<device>/ (device: the GPU's name, so results of two GPU models never
mix; autotune-loop refuses a folder of another device anyway):
    shapes/<m..._n..._k..._dtype_layout>/   one autotune-loop results folder per distinct shape
    shapes/<folder>.loop.txt                that shape's last autotune-loop output
    shapes/<folder>.warm                    the warm-start folders chosen at its first session
    shapes/<folder>.prior                   its --prior (the twin in the other 16-bit type), likewise
    bench.json, bench.err                   the last bench-best batch (--json); the pass's errors
    bench-all.json                          every shape's latest measurement over all passes (the table's)
    table.txt                               the last table

The table (merge_passes, summarize, format_report) is scripts/model_bench_table.py, pure and
tested by tests/scripts/model_bench_test.py; what a shape's folder holds, the folders it was moved
aside to and the warm-start and prior choices kept beside it are scripts/model_bench_folders.py.
"""

import argparse
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import threading
import time

from model_bench_table import (FLOOR_MAX_M, device_line, format_report, measured_shapes, merge_passes, only_pattern,
                               read_json, summarize)
from model_bench_folders import (choose_warm, chosen_once, count_evaluations, last_end_reason, latest_aside,
                                 move_aside, prior_source, shape_done, twin, with_old_winners)

DEFAULT_SETS = ["llama3_8b_nt.json", "llama3_70b_tp8_nt.json", "mixtral_8x7b_experts_nt.json", "qwen2_5_32b_nt.json",
                "llama3_fp8_nt.json"]
HALF_TEMPLATES = ["gemm_hmma", "gemm_decode", "gemm_wgmma_half", "gemm_tma_half"]
FP8_TYPES = ("e4m3", "e5m2")
FP8_TEMPLATES = ["gemm_tma_half"]  # the templates that claim FP8 inputs (and gemm_stream at M <= 16)
# What an FP8 entry may add to its shape (the problem's own flags); anything else is refused.
FP8_KEYS = ("b_dtype", "c_dtype", "scaling", "scale_a", "scale_b")
GEMV_MAX_M = 16  # gemm_gemv joins the search at M <= 16
STREAM_MAX_M = 16  # gemm_stream (W straight into mma fragments) at M <= 16


# ---------------------------------------------------------------- the shape list

def shape_folder(p):
    """The folder of a distinct problem: m16_n6144_k4096_bf16_NT; an FP8 problem adds B's type
    where it differs, C's type and its scaling: m16_n6144_k4096_e4m3_NT_c_bf16_per_tensor."""
    name = "m%d_n%d_k%d_%s_%s" % (p["m"], p["n"], p["k"], p.get("dtype", "fp32"), p.get("layout", "NN"))
    if p.get("dtype") in FP8_TYPES:
        if p.get("b_dtype", p["dtype"]) != p["dtype"]:
            name += "_b_" + p["b_dtype"]
        name += "_c_%s_%s" % (p.get("c_dtype", "bf16"), p.get("scaling", "none"))
    return name


def load_sets(paths):
    """Every entry of the problem-set files, in order: dicts with set, name, m, n, k, dtype,
    layout, count and folder (entries of equal shape share a folder)."""
    rows = []
    for path in paths:
        with open(path) as f:
            doc = json.load(f)
        set_name = doc.get("name") or os.path.splitext(os.path.basename(path))[0]
        for e in doc["problems"]:
            fp8 = e.get("dtype") in FP8_TYPES
            for key in ("c_dtype", "c_layout", "alpha", "beta", "epilogue", "b_dtype", "scaling", "scale_a", "scale_b"):
                if key in e and not (fp8 and key in FP8_KEYS):
                    raise SystemExit("model_bench: %s: entry %s has %s; the benchmark runs plain GEMMs (an FP8 "
                                     "entry may give %s)" % (path, e.get("name"), key, ", ".join(FP8_KEYS)))
            row = {"set": set_name, "name": e.get("name") or shape_folder(e), "m": int(e["m"]), "n": int(e["n"]),
                   "k": int(e["k"]), "dtype": e.get("dtype", "fp32"), "layout": e.get("layout", "NN"),
                   "count": int(e.get("count", 1))}
            if fp8:
                row.update({key: e[key] for key in FP8_KEYS if key in e})
            row["folder"] = shape_folder(row)
            rows.append(row)
    return rows


def select(rows, only=None, dtype=None, ms=None):
    """The rows the filters keep: a regular expression on "set/name" or the folder, a dtype,
    a set of M values."""
    out = []
    for r in rows:
        if only and not (re.search(only, r["set"] + "/" + r["name"]) or re.search(only, r["folder"])):
            continue
        if dtype and r["dtype"] != dtype:
            continue
        if ms and r["m"] not in ms:
            continue
        out.append(r)
    return out


def distinct(rows):
    """One row per folder, first occurrence first."""
    seen, out = set(), []
    for r in rows:
        if r["folder"] not in seen:
            seen.add(r["folder"])
            out.append(r)
    return out


def templates_for(m, override=None, dtype=None):
    if override:
        return override
    if dtype in FP8_TYPES:
        return FP8_TEMPLATES + (["gemm_stream"] if m <= STREAM_MAX_M else [])
    return HALF_TEMPLATES + (["gemm_stream"] if m <= STREAM_MAX_M else []) + (["gemm_gemv"] if m <= GEMV_MAX_M else [])


# ---------------------------------------------------------------- running

def device_label(bin_dir, passthrough):
    """The GPU's name as a folder name; 'replay' with --backend replay."""
    if "replay" in passthrough:
        return "replay"
    try:
        out = subprocess.run([os.path.join(bin_dir, "autotune-loop"), "--list-devices", "--json"],
                             capture_output=True, text=True, timeout=300)
        j = json.loads(out.stdout)
        for b in j.get("backends", []):
            for d in b.get("devices", []):
                return re.sub(r"[^A-Za-z0-9._-]+", "_", d["name"]).strip("_")
    except (OSError, ValueError, subprocess.TimeoutExpired) as e:
        print("model_bench: listing devices failed: %s" % e, file=sys.stderr)
    return None


def log(msg):
    print(msg, flush=True)


def needed_binaries(args, passthrough):
    """The programs this mode runs: none for the table alone (with --device-label or on replay:
    otherwise autotune-loop lists the devices), bench-best for a bench pass or --list-changed (its
    --record-code-hashes), both where shapes are tuned."""
    listing = [] if args.device_label or "replay" in passthrough else ["autotune-loop"]
    if args.table_only:
        return listing
    if args.bench_only or args.list_changed:
        return listing + ["bench-best"]
    return ["autotune-loop", "bench-best"]


def changed_folders(bench_doc):
    """The shape folders whose winner's template is missing or changed since it was tuned
    (bench-best's MISMATCH in the last pass): their rows describe an older kernel."""
    return {folder for folder, e in measured_shapes(bench_doc).items() if e.get("status") == "MISMATCH"}


def refused_as_changed(loop_output):
    """autotune-loop's refusal to resume a folder whose templates changed (exit 2)."""
    return "changed since" in loop_output and "was recorded" in loop_output


def loop_command(args, bin_dir, r, folder, max_evals, replay):
    """autotune-loop on one shape into its folder, with the benchmark's templates (on replay:
    the recordings')."""
    cmd = [os.path.join(bin_dir, "autotune-loop"), "--m", str(r["m"]), "--n", str(r["n"]), "--k", str(r["k"]),
           "--dtype", r["dtype"], "--layout", r["layout"], "--max-evals", str(max_evals),
           "--results", folder, "--progress", "none", "-q"]
    for key in FP8_KEYS:  # an FP8 problem's types and scales, as the flags of the same names
        if key in r:
            cmd += ["--" + key.replace("_", "-"), str(r[key])]
    if not replay:
        for t in templates_for(r["m"], args.templates, r["dtype"]):
            cmd += ["--template", t]
    return cmd


def refused_by_the_loop(args, bin_dir, r, folder, passthrough, replay, env=None):
    """Whether autotune-loop refuses to resume a folder that is already at its budget because
    its templates changed: asked with the folder's own count as the budget and no re-timing,
    so a folder that is fine ends at once, adding nothing."""
    cmd = loop_command(args, bin_dir, r, folder, max(1, count_evaluations(folder)), replay) + ["--retime", "0"]
    p = subprocess.run(cmd + passthrough, capture_output=True, text=True, env=env)
    return p.returncode == 2 and refused_as_changed(p.stdout + p.stderr)


# bench-best --record-code-hashes's words for a changed kernel (runtime/code_identity.cpp's
# describe_kernel_match; test CodeIdentity.AChangedKernelIsDescribedWithItsCodeHashThenAndNow).
_NOW_HASH = re.compile(r"code hash \S+ then, ([0-9a-f]+) now")


def winner_kernel(bin_dir, folder, env=None):
    """(whether the folder's winner still compiles to the kernel it was tuned with although its
    template's source changed, the code hash it compiles to now where bench-best says that it
    changed, else None), from bench-best --record-code-hashes (no GPU)."""
    best = os.path.join(folder, "best_config.json")
    if not os.path.exists(best):
        return False, None
    p = subprocess.run([os.path.join(bin_dir, "bench-best"), "--best-config", best, "--fastest-only",
                        "--record-code-hashes"], capture_output=True, text=True, env=env)
    now = _NOW_HASH.search(p.stdout)
    return p.returncode == 0, now.group(1) if now else None


def winner_kernel_unchanged(bin_dir, folder, env=None):
    """Whether the folder's winner still compiles to the kernel it was tuned with (winner_kernel):
    then its row stands, and the shape is not tuned again."""
    return winner_kernel(bin_dir, folder, env)[0]


def is_tuned(shapes_dir, folder):
    """Whether the shape's folder has a winner (best_config.json)."""
    return os.path.exists(os.path.join(shapes_dir, folder, "best_config.json"))


def kernel_changed_folders(bin_dir, shapes_dir, rows, env=None):
    """The tuned shapes (folder -> the code hash its winner compiles to now, None where not told)
    whose winner no longer compiles to the kernel it was tuned with, or whose kernel cannot be
    told (winner_kernel: no GPU needed): the rows a --retune-changed call would tune again."""
    changed = {}
    for r in distinct(rows):
        if is_tuned(shapes_dir, r["folder"]):
            same, now = winner_kernel(bin_dir, os.path.join(shapes_dir, r["folder"]), env)
            if not same:
                changed[r["folder"]] = now
    return changed


def measured_on_another_kernel(changed, bench_doc):
    """Of the changed folders (kernel_changed_folders), those whose row in the table was not
    measured on the kernel their winner compiles to now (or has no row): a --bench-only pass
    brings them up to date without tuning them again. A row's pass records the code hash it
    measured (bench-best's `now`)."""
    measured = measured_shapes(bench_doc)
    return [f for f, now in changed.items()
            if now is None or ((measured.get(f) or {}).get("now") or {}).get("code_hash") != now]


def table_document(dev_dir):
    """The table's document: every shape's latest bench pass (bench-all.json); results of
    versions before it have only the last pass (bench.json)."""
    path = os.path.join(dev_dir, "bench-all.json")
    return path if os.path.exists(path) else os.path.join(dev_dir, "bench.json")


def row_stands(args, replay, bin_dir, folder, env=None):
    """Whether a shape whose templates changed keeps its row instead of being tuned again: its
    winner still compiles to the kernel it was tuned with (never on replay, which has no kernels to
    compile), unless --retune-all-changed asks for every changed shape (a template whose space grew:
    configs the old search could not try, though its winner's kernel is the same)."""
    return not replay and not args.retune_all_changed and winner_kernel_unchanged(bin_dir, folder, env)


def row_stands_note(name, have, asked):
    """The log line for a changed shape whose row stands (row_stands). Asked for more evaluations
    than it holds, the run adds none (autotune-loop does not resume a folder of older templates),
    so the line says how to search the shape further."""
    note = ("%s: not resumed: its templates changed since it was tuned, but its winner compiles to the same "
            "kernel (code hash), so its row stands" % name)
    if have < asked:
        note += ("; it holds %d of the %d evaluations asked, and searching it further means searching it again "
                 "with today's templates, its old winners first: --retune-all-changed --only '%s'"
                 % (have, asked, only_pattern([name])))
    return note


def retune_from_nothing(folder, why="its templates changed since it was tuned"):
    """Moves a shape's folder aside; returns the folder it is now in, whose winners seed the
    shape's new search (a kernel change seldom moves the best configs far: re-measuring them
    first saves the retune most of its budget)."""
    aside = move_aside(folder)
    log("== %s: %s; moved aside to %s, tuning it again, its old winners first"
        % (os.path.basename(folder), why, os.path.basename(aside)))
    return aside


def tune(args, bin_dir, shapes_dir, todo, everything, passthrough, loop_args, deadline, changed=frozenset()):
    """Tunes the shapes of `todo` in turn; with --gpus, one worker per GPU takes the next shape
    (largest first, so the long ones do not end the call alone), each autotune-loop seeing only
    its GPU (CUDA_VISIBLE_DEVICES / HIP_VISIBLE_DEVICES)."""
    gpus = gpu_list(args)
    if len(gpus) <= 1:
        env = gpu_env(gpus[0])
        for i, r in enumerate(todo):
            if not tune_shape(args, bin_dir, shapes_dir, r, i, todo, everything, passthrough, loop_args, deadline,
                              changed, env, ""):
                return
        return
    queue = sorted(todo, key=lambda r: -r["m"] * r["n"] * r["k"])
    lock = threading.Lock()

    def worker(gpu):
        env = gpu_env(gpu)
        while True:
            with lock:
                if not queue:
                    return
                r = queue.pop(0)
                i = len(todo) - len(queue) - 1
            if not tune_shape(args, bin_dir, shapes_dir, r, i, todo, everything, passthrough, loop_args, deadline,
                              changed, env, "[gpu %s] " % gpu):
                return

    threads = [threading.Thread(target=worker, args=(g,)) for g in gpus]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def tune_shape(args, bin_dir, shapes_dir, r, i, todo, everything, passthrough, loop_args, deadline, changed, env,
               who):
    """One shape's autotune-loop (resumed, or from nothing where its templates changed and
    --retune-changed asks). False when the time is up (nothing more should start)."""
    replay = "replay" in passthrough
    folder = os.path.join(shapes_dir, r["folder"])
    aside = None
    # --retune: a shape at its budget is searched again (one still short of it resumes, so a
    # call cut off mid-retune goes on where it stopped). A bench pass's MISMATCH may predate the
    # code hashes; either way a winner that still compiles to its kernel keeps its row.
    again = os.path.isdir(folder) and (
        (args.retune and shape_done(folder, args.evals)) or
        (args.retune_changed and (
            r["folder"] in changed or
            (shape_done(folder, args.evals) and refused_by_the_loop(args, bin_dir, r, folder, passthrough, replay,
                                                                    env))) and (
            not row_stands(args, replay, bin_dir, folder, env))))
    if not again and shape_done(folder, args.evals):
        return True
    left = None
    if deadline is not None:
        # Before any folder is moved aside: one left without the time to tune it has no row.
        left = deadline - time.time()
        if left < 60:
            rest = [x["folder"] for x in todo if not shape_done(os.path.join(shapes_dir, x["folder"]), args.evals)]
            if again:
                rest.insert(0, r["folder"])
            log("== %stime is up: %d shapes left to tune (%s)" % (who, len(rest), " ".join(rest)))
            return False
    if again:
        aside = retune_from_nothing(folder, "searched again (--retune)") if args.retune else \
            retune_from_nothing(folder)
    done_before = count_evaluations(folder)
    # Warm start and prior: chosen at the shape's first session and kept for its resumes.
    def tuned_with(name):  # the shapes whose folder holds the file `name`
        return [x for x in everything if os.path.exists(os.path.join(shapes_dir, x["folder"], name))]

    def folders(rows):
        return [os.path.join(shapes_dir, x["folder"]) for x in rows]

    warm = chosen_once(folder + ".warm", "best_config.json", not args.no_warm_start,
                       lambda: with_old_winners(aside or latest_aside(folder),
                                                folders(choose_warm(r, tuned_with("best_config.json")))))
    # The twin's whole history: its measurements rank this shape's configurations as well.
    prior = chosen_once(folder + ".prior", "history.csv", not args.no_warm_start,
                        lambda: folders([t for t in [twin(r, tuned_with("history.csv"))] if t]))
    prior = [p for p in map(prior_source, prior) if p]
    if args.no_warm_start:
        warm = []
        prior = []
    cmd = loop_command(args, bin_dir, r, folder, args.evals, replay) + ["--seed", "1"]
    if not replay:
        cmd += ["--compile-threads", str(args.compile_threads)]
    for w in warm:
        cmd += ["--warm-start", w]
    for p in prior:
        cmd += ["--prior", p]
    if left is not None:
        cmd += ["--hours", "%.4f" % (max(left - 45, 30) / 3600.0)]
    cmd += loop_args + passthrough
    log("== %s[%d/%d] %s (%d of %d evaluations so far)%s%s" % (
        who, i + 1, len(todo), r["folder"], done_before, args.evals,
        (", warm start from " + ", ".join(os.path.basename(w) for w in warm)) if warm else "",
        (", prior " + ", ".join(os.path.basename(p) for p in prior)) if prior else ""))
    for attempt in (1, 2):
        t0 = time.time()
        with open(folder + ".loop.txt", "w") as out:
            try:
                rc = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT, env=env,
                                    timeout=None if left is None else left + 120).returncode
            except subprocess.TimeoutExpired:
                rc = "timeout"
        with open(folder + ".loop.txt") as f:
            output = f.read()
        now = count_evaluations(folder)
        # The journal's last end is an earlier session's when this call added nothing.
        how = (last_end_reason(folder) or "no end recorded") if now > done_before or rc == 0 else \
            "no evaluations this call"
        log("   %s%s: exit %s after %.0f s, %d evaluations, %s" % (who, r["folder"], rc, time.time() - t0, now, how))
        if rc == 2 and refused_as_changed(output):
            if row_stands(args, replay, bin_dir, folder, env):
                log("   " + row_stands_note(r["folder"], now, args.evals))
                break
            if args.retune_changed and attempt == 1:
                aside = retune_from_nothing(folder)
                done_before = 0
                if not args.no_warm_start and os.path.exists(os.path.join(aside, "best_config.json")):
                    cmd = cmd + ["--warm-start", aside]
                    log("   %s%s: warm start from %s" % (who, r["folder"], os.path.basename(aside)))
                    with open(folder + ".warm", "w") as f:
                        f.write("\n".join(with_old_winners(aside, warm)) + "\n")
                continue
            log("   %s: not resumed: its templates changed since it was tuned, so its row describes the old "
                "kernel (MISMATCH). --retune-changed moves such folders aside and tunes them again."
                % r["folder"])
        elif rc != 0:
            for l in [l.rstrip() for l in output.splitlines() if l.strip()][-3:]:
                log("     " + l[:300])
        break
    return True


def bench_order(folders, shapes_dir, kept):
    """The folders in the order a bench pass measures them: those tuned after their latest
    measurement (or never measured) first, in the order given, then the others, the longest
    unmeasured first; so passes cut short by time still cover every shape over several calls.
    `kept` is the table's document (bench-all.json) or None."""
    measured = measured_shapes(kept)

    def tuned_at(f):
        path = os.path.join(shapes_dir, f, "best_config.json")
        return time.strftime("%Y-%m-%d %H:%M", time.localtime(os.path.getmtime(path)))

    stale = [f for f in folders if f not in measured or
             (measured[f].get("measured_at") or "") < tuned_at(f)]
    fresh = sorted((f for f in folders if f not in stale), key=lambda f: measured[f].get("measured_at") or "")
    return stale + fresh


def gpu_list(args):
    """--gpus as a list of index strings; [None] (the inherited GPU) without it."""
    return [g for g in (args.gpus or "").split(",") if g != ""] or [None]


def gpu_env(gpu):
    """The environment of a run that sees only `gpu` (None: the inherited one)."""
    return None if gpu is None else dict(os.environ, CUDA_VISIBLE_DEVICES=gpu, HIP_VISIBLE_DEVICES=gpu)


def bench_batch(args, bin_dir, dev_dir, shapes_dir, folders, passthrough, timeout, gpu=None, lock=None):
    """One bench-best process over `folders` on `gpu`, its rows merged into bench-all.json at
    once (a call cut off later keeps them; `lock` serialises the merge of batches run side by
    side). The merged document's path, or None when nothing came back."""
    cmd = [os.path.join(bin_dir, "bench-best"), "--fastest-only", "--json",
           "--read-floor-max-m", str(FLOOR_MAX_M)]
    if args.rounds_max:
        cmd += ["--rounds-max", str(args.rounds_max)]
    for f in folders:
        cmd += ["--results", os.path.join(shapes_dir, f)]
    cmd += passthrough
    log("== %sbench-best: %d shapes in one process" % ("" if gpu is None else "[gpu %s] " % gpu, len(folders)))
    own = os.path.join(dev_dir, "bench.json" if gpu is None else "bench.gpu%s.json" % gpu)
    t0 = time.time()
    with open(own, "w") as out, open(os.path.join(dev_dir, "bench.err"), "a") as err:
        try:
            rc = subprocess.run(cmd, stdout=out, stderr=err, timeout=timeout, env=gpu_env(gpu)).returncode
        except subprocess.TimeoutExpired:
            log("   bench-best stopped after %.0f s (time is up): these %d shapes keep their earlier figures"
                % (time.time() - t0, len(folders)))
            return None
    log("   bench-best exit %d after %.0f s" % (rc, time.time() - t0))
    with (lock or threading.Lock()):
        if own != os.path.join(dev_dir, "bench.json"):
            shutil.copyfile(own, os.path.join(dev_dir, "bench.json"))
            os.remove(own)
        try:
            latest = read_json(os.path.join(dev_dir, "bench.json"))
            kept = read_json(os.path.join(dev_dir, "bench-all.json"))
        except ValueError as e:
            log("== %s: the table keeps what it had (see bench.err)" % e)
            return None
        if latest is None or not latest.get("entries"):
            log("== the bench pass measured nothing (see bench.err): the table keeps what it had")
            return None
        merged = merge_passes(kept, latest, time.strftime("%Y-%m-%d %H:%M"))
        tmp = os.path.join(dev_dir, "bench-all.json.tmp")
        with open(tmp, "w") as f:
            json.dump(merged, f, indent=1)
        os.replace(tmp, os.path.join(dev_dir, "bench-all.json"))
    return os.path.join(dev_dir, "bench-all.json")


def bench(args, bin_dir, dev_dir, shapes_dir, rows, passthrough, deadline=None):
    """The bench pass: every tuned shape of `rows`, --bench-batch shapes per bench-best
    process (each row's ours, vendor and floor from one process, so on one GPU), the batches
    spread over --gpus, until done or, with --minutes, until the time left would not hold the
    next batch at the pace measured so far."""
    folders = [r["folder"] for r in distinct(rows) if is_tuned(shapes_dir, r["folder"])]
    if not folders:
        log("== nothing tuned yet under %s: no bench pass" % shapes_dir)
        return None
    try:
        kept = read_json(os.path.join(dev_dir, "bench-all.json"))
    except ValueError:
        kept = None  # the first batch names the damage
    todo = bench_order(folders, shapes_dir, kept)
    with open(os.path.join(dev_dir, "bench.err"), "w"):
        pass  # this pass's batches append to it
    lock = threading.Lock()
    state = {"merged": None, "pace": None, "told": False}  # pace: seconds per shape so far

    def worker(gpu):
        while True:
            with lock:
                if not todo:
                    return
                n, timeout = args.bench_batch, None
                if deadline is not None:
                    left = deadline - time.time()
                    if state["pace"] is not None:
                        n = min(n, int(max(left - 30, 0) / state["pace"]))
                    if left < 60 or n < 1:
                        if not state["told"]:
                            log("== time is up: %d shapes not measured this pass (%s); the next pass starts with "
                                "them" % (len(todo), " ".join(todo)))
                            state["told"] = True
                        return
                    timeout = left
                batch = todo[:n]
                del todo[:n]
            t0 = time.time()
            merged = bench_batch(args, bin_dir, dev_dir, shapes_dir, batch, passthrough, timeout, gpu, lock)
            with lock:
                state["merged"] = merged or state["merged"]
                taken = (time.time() - t0) / len(batch)
                state["pace"] = taken if state["pace"] is None else max(state["pace"], taken)

    threads = [threading.Thread(target=worker, args=(g,)) for g in gpu_list(args)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return state["merged"]


def main(argv):
    ap = argparse.ArgumentParser(prog="scripts/model_bench.sh", description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out_dir")
    ap.add_argument("--evals", type=int, default=150, help="evaluations per shape (default 150)")
    ap.add_argument("--sets", nargs="+", help="problem-set files (default: the four model files in data/problems)")
    ap.add_argument("--only", help="regular expression on set/name or the shape folder (e.g. 'llama3_8b', '_m16_')")
    ap.add_argument("--dtype", choices=["bf16", "fp16", "e4m3"], help="only the shapes of this input type")
    ap.add_argument("--m", help="comma-separated M values to keep (e.g. 1,16,128)")
    ap.add_argument("--minutes", type=float, help="stop starting or continuing tuning after this many minutes "
                    "(each autotune-loop gets --hours for what is left; the next call resumes), and end the "
                    "bench pass by then (a batch is started only where the time left holds it)")
    ap.add_argument("--bench-batch", type=int, default=12,
                    help="shapes per bench-best process in a bench pass (default 12); each batch's rows join "
                         "the table as soon as it ends, so a call cut short keeps them")
    ap.add_argument("--rounds-max", type=int, default=16,
                    help="bench-best's --rounds-max: after its 8 paired rounds, two more at a time while a "
                         "ratio's 95%% interval is wider than 0.05, up to this many (default 16; 0: 8 rounds)")
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--tune-only", action="store_true", help="tune, no bench pass")
    mode.add_argument("--bench-only", action="store_true", help="no tuning: one bench-best pass and the table")
    mode.add_argument("--table-only", action="store_true",
                      help="print the table from the bench passes so far (bench-all.json)")
    mode.add_argument("--list-changed", action="store_true",
                      help="no GPU: list the tuned shapes whose winner's kernel changed since it was tuned "
                           "(bench-best --record-code-hashes, which also records the hash where an entry lacks it), "
                           "saying which rows were measured on today's kernel since, with the --only that picks "
                           "the others for --bench-only and the one that picks them all for --retune-changed; "
                           "give --device-label")
    ap.add_argument("--templates", nargs="+", help="templates to search (default: %s, plus gemm_stream at M <= %d "
                    "and gemm_gemv at M <= %d)" % (" ".join(HALF_TEMPLATES), STREAM_MAX_M, GEMV_MAX_M))
    ap.add_argument("--compile-threads", type=int, default=max(1, min(12, (os.cpu_count() or 4) - 2)),
                    help="autotune-loop's compiles at once (default: the cores less two, at most 12)")
    ap.add_argument("--retune-changed", action="store_true",
                    help="tune again, in a new folder, the shapes whose templates changed since they were tuned "
                         "(MISMATCH in a bench pass, or a folder autotune-loop refuses to resume, asked at its own "
                         "budget without re-timing where it is already done); the old folder is kept beside it as "
                         "FOLDER.changed-DATE, and its winners are the new search's first warm start; a shape whose "
                         "winner still compiles to the same kernel keeps its row")
    ap.add_argument("--retune-all-changed", action="store_true",
                    help="--retune-changed for every shape whose templates changed, the same winner kernel or not: "
                         "after a template's space grew (configs the old search could not try); with --only to pick "
                         "the shapes")
    ap.add_argument("--retune", action="store_true",
                    help="search again, in a new folder, every shape --only picks that is at its budget, whatever "
                         "changed (a template's new seed, a wider space): the old folder is kept beside it as "
                         "FOLDER.changed-DATE and its winners are the new search's first warm start; a shape still "
                         "short of its budget resumes instead, so a call cut off mid-retune goes on where it stopped")
    ap.add_argument("--gpus", help="tune on these GPUs at once (e.g. 0,1,2,3): one autotune-loop per GPU, each "
                    "taking the next shape, largest first; the bench pass's batches likewise, each batch on one GPU")
    ap.add_argument("--no-warm-start", action="store_true", help="do not seed a shape with its nearest tuned shapes (nor give it "
                    "its 16-bit twin's history as a prior)")
    ap.add_argument("--loop-args", default="", help="more flags for autotune-loop only (one string)")
    ap.add_argument("--device-label", help="the results subfolder (default: the GPU's name)")
    ap.add_argument("--bin", default=os.environ.get("TILESMITH_BIN", "build/cli"),
                    help="where autotune-loop and bench-best are (default $TILESMITH_BIN, else build/cli)")
    ap.epilog = ("After --: flags for both autotune-loop and bench-best (--backend, --replay-file, --device, "
                 "--cache-dir, ...).")
    passthrough = []
    if "--" in argv:
        cut = argv.index("--")
        argv, passthrough = argv[:cut], argv[cut + 1:]
    args = ap.parse_args(argv)
    if args.gpus is not None and not re.fullmatch(r"\d+(,\d+)*", args.gpus):
        ap.error("--gpus takes GPU indices separated by commas (e.g. 0,1,2,3), not %r" % args.gpus)
    if args.bench_batch < 1:
        ap.error("--bench-batch needs at least 1 shape per bench-best process")
    retune_flag = next((f for f, on in (("--retune", args.retune), ("--retune-changed", args.retune_changed),
                                         ("--retune-all-changed", args.retune_all_changed)) if on), None)
    if retune_flag and (args.bench_only or args.table_only or args.list_changed):
        ap.error("%s tunes shapes again, so it does not go with --bench-only, --table-only or --list-changed"
                 % retune_flag)
    if args.retune and not args.only:
        ap.error("--retune searches shapes at their budget again: pick them with --only")
    args.retune_changed = args.retune_changed or args.retune_all_changed
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    sets = args.sets or [os.path.join(here, "data", "problems", s) for s in DEFAULT_SETS]
    ms = {int(x) for x in args.m.split(",")} if args.m else None
    everything = load_sets(sets)
    rows = select(everything, args.only, args.dtype, ms)
    if not rows:
        raise SystemExit("model_bench: no shape left after the filters")
    missing = [n for n in needed_binaries(args, passthrough) if not os.access(os.path.join(args.bin, n), os.X_OK)]
    if missing:
        print("model_bench: %s not found in %s: build the project first (the README's quickstart), or give --bin "
              "or $TILESMITH_BIN the folder that holds them (a devpack's .devpack/bin on the GPU machine)"
              % (" and ".join(missing), args.bin), file=sys.stderr)
        return 2
    label = args.device_label or device_label(args.bin, passthrough)
    if not label:
        print("model_bench: no GPU found (give --device-label to read an earlier run's results: the table, --list-changed)", file=sys.stderr)
        return 3
    dev_dir = os.path.join(args.out_dir, label)
    shapes_dir = os.path.join(dev_dir, "shapes")
    os.makedirs(shapes_dir, exist_ok=True)
    if args.list_changed:
        changed = kernel_changed_folders(args.bin, shapes_dir, rows)
        tuned = sum(is_tuned(shapes_dir, r["folder"]) for r in distinct(rows))
        try:
            behind = measured_on_another_kernel(changed, read_json(table_document(dev_dir)))
        except ValueError as e:  # the table's document unreadable: no row can be told up to date
            log("== %s: every changed shape counted as measured on another kernel" % e)
            behind = list(changed)
        log("model_bench: %d of %d tuned shapes in %s have a winner whose kernel changed since it was tuned "
            "(or cannot be told)%s" % (len(changed), tuned, shapes_dir,
                                       "".join("\n  %s%s" % (f, "" if f in behind else "  (its row measured today's kernel)")
                                               for f in changed)))
        if behind:
            log("%d of them have a row measured on another kernel, or none; measure them: --bench-only --only '%s'"
                % (len(behind), only_pattern(behind)))
        if changed:
            log("tune them again: --retune-changed --only '%s'" % only_pattern(list(changed)))
        return 0
    deadline = time.time() + args.minutes * 60 if args.minutes else None
    log("model_bench: %d rows, %d distinct shapes (of %d in %d files), %d evaluations each, results in %s"
        % (len(rows), len(distinct(rows)), len(distinct(everything)), len(sets), args.evals, dev_dir))

    bench_json = table_document(dev_dir)
    if not (args.bench_only or args.table_only):
        changed = set()
        if args.retune_changed:
            try:
                changed = changed_folders(read_json(bench_json))
            except ValueError as e:
                log("== %s: only folders autotune-loop refuses are tuned again" % e)
        tune(args, args.bin, shapes_dir, distinct(rows), distinct(everything), passthrough,
             shlex.split(args.loop_args), deadline, changed)
    if not (args.tune_only or args.table_only):
        bench_json = bench(args, args.bin, dev_dir, shapes_dir, rows, passthrough, deadline) or bench_json
    if args.tune_only:
        left = [r["folder"] for r in distinct(rows) if not shape_done(os.path.join(shapes_dir, r["folder"]), args.evals)]
        log("== tuned: %d of %d shapes done%s" % (len(distinct(rows)) - len(left), len(distinct(rows)),
                                                  ("; left: " + " ".join(left)) if left else ""))
        return 0
    try:
        bench_doc = read_json(bench_json)
    except ValueError as e:
        log("== %s (see bench.err)" % e)
        bench_doc = None
    tuned = {r["folder"] for r in distinct(rows) if is_tuned(shapes_dir, r["folder"])}
    evals = {r["folder"]: count_evaluations(os.path.join(shapes_dir, r["folder"])) for r in distinct(rows)}
    table, summary = summarize(rows, bench_doc, tuned, evals)
    report = format_report(table, summary, device_line(bench_doc), benchmark_shapes=len(distinct(everything)),
                           latest_pass=(bench_doc or {}).get("latest_pass"))
    with open(os.path.join(dev_dir, "table.txt"), "w") as f:
        f.write(report)
    sys.stdout.write(report)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
