#!/usr/bin/env python3
"""scripts/model_bench.py without a GPU: the shape lists, a shape's folder (evaluations, why its
search ended), the warm-start choice, and the driver end to end on the replay backend (two
recorded shapes tuned, resumed to a larger budget, benched in one process; a shape with no
recording listed as not tuned; a folder whose template changed named, and tuned again beside the
kept old folder on request). The table's arithmetic: model_bench_table_test.py.

    python3 tests/scripts/model_bench_test.py        (ctest: model_bench_script_test)
"""

import argparse
import csv
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import model_bench as mb  # noqa: E402
import model_bench_folders as mf  # noqa: E402
import model_bench_table as mt  # noqa: E402
from model_bench_fixtures import evaluation, row  # noqa: E402


class ShapeLists(unittest.TestCase):
    def test_shipped_sets_have_the_promised_shapes(self):
        sets = [os.path.join(ROOT, "data", "problems", s) for s in mb.DEFAULT_SETS]
        rows = mb.load_sets(sets)
        self.assertEqual(len(rows), 120)
        self.assertEqual(len(mb.distinct(rows)), 116)  # Mixtral's M = 1 and 128 experts are Llama-3-8B shapes
        self.assertEqual({r["layout"] for r in rows}, {"NT"})
        self.assertEqual({r["set"] for r in rows},
                         {"llama3_8b_nt", "llama3_70b_tp8_nt", "mixtral_8x7b_experts_nt", "qwen2_5_32b_nt",
                          "llama3_fp8_nt"})
        fp8 = mb.select(rows, dtype="e4m3")
        self.assertEqual(len(fp8), 24)
        self.assertEqual({r["m"] for r in fp8}, {16, 128, 4096})
        self.assertTrue(all(r["scaling"] == "per_tensor" and r["c_dtype"] == "bf16" for r in fp8))
        self.assertEqual(mb.shape_folder(fp8[0]), "m16_n6144_k4096_e4m3_NT_c_bf16_per_tensor")
        self.assertTrue(all(r["m"] >= 512 for r in rows if r["dtype"] == "fp16"))
        self.assertEqual(mb.shape_folder(rows[0]), "m1_n6144_k4096_bf16_NT")
        small = mb.select(rows, ms={1, 16, 128})
        self.assertTrue(all(r["m"] in (1, 16, 128) for r in small))
        self.assertEqual(len(mb.select(rows, only="llama3_8b")), 28)
        self.assertEqual(len(mb.select(rows, only="_m16_", dtype="bf16")), 12)
        self.assertEqual(len(mb.select(rows, dtype="fp16")), 26)

    def test_an_fp8_shape_is_tuned_as_its_problem_by_the_templates_that_claim_fp8(self):
        r = {"m": 16, "n": 4096, "k": 4096, "dtype": "e4m3", "layout": "NT", "c_dtype": "bf16",
             "scaling": "per_tensor", "scale_a": 0.5, "scale_b": 0.25, "b_dtype": "e5m2"}
        r["folder"] = mb.shape_folder(r)
        self.assertEqual(r["folder"], "m16_n4096_k4096_e4m3_NT_b_e5m2_c_bf16_per_tensor")

        class Args:
            templates = None
        cmd = mb.loop_command(Args(), "bin", r, "f", 150, False)
        flags = {a: cmd[i + 1] for i, a in enumerate(cmd[:-1]) if a.startswith("--")}
        self.assertEqual((flags["--c-dtype"], flags["--scaling"], flags["--scale-a"], flags["--scale-b"],
                          flags["--b-dtype"]), ("bf16", "per_tensor", "0.5", "0.25", "e5m2"))
        self.assertEqual([cmd[i + 1] for i, a in enumerate(cmd) if a == "--template"], ["gemm_tma_half", "gemm_stream"])
        self.assertEqual(mb.templates_for(128, None, "e4m3"), ["gemm_tma_half"])
        plain = dict(r, dtype="bf16")
        for key in mb.FP8_KEYS:
            del plain[key]
        self.assertNotIn("--scaling", mb.loop_command(Args(), "bin", plain, "f", 150, False))

    def test_an_entry_with_flags_the_benchmark_does_not_run_is_refused_by_name(self):
        d = tempfile.mkdtemp(prefix="model_bench_test_")
        try:
            path = os.path.join(d, "s.json")
            for bad in ({"dtype": "bf16", "scaling": "per_tensor"}, {"dtype": "e4m3", "epilogue": "gelu"}):
                with open(path, "w") as f:
                    json.dump({"problems": [dict({"name": "x", "m": 1, "n": 2, "k": 3}, **bad)]}, f)
                with self.assertRaises(SystemExit) as e:
                    mb.load_sets([path])
                self.assertIn("entry x has", str(e.exception))
        finally:
            shutil.rmtree(d)

    def test_templates_add_gemv_for_skinny_shapes(self):
        self.assertIn("gemm_gemv", mb.templates_for(16))
        self.assertIn("gemm_stream", mb.templates_for(16))
        self.assertNotIn("gemm_stream", mb.templates_for(32))
        self.assertNotIn("gemm_gemv", mb.templates_for(128))
        self.assertEqual(mb.templates_for(1, ["gemm_decode"]), ["gemm_decode"])


class ShapeFolders(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="model_bench_test_")

    def tearDown(self):
        shutil.rmtree(self.dir)

    def test_evaluations_and_end_reasons(self):
        folder = os.path.join(self.dir, "s")
        self.assertEqual(mf.count_evaluations(folder), 0)
        os.makedirs(folder)
        with open(os.path.join(folder, "history.csv"), "w") as f:
            f.write("schema_version,stage,outcome,message\n4,evaluation,ok,\n4,proposal,invalid,\"a, b\"\n"
                    "4,evaluation,wrong_result,\"x\ny\"\n")
        self.assertEqual(mf.count_evaluations(folder), 2)
        self.assertFalse(mf.shape_done(folder, 3))
        self.assertTrue(mf.shape_done(folder, 2))
        with open(os.path.join(folder, "journal.jsonl"), "w") as f:
            f.write(json.dumps({"event": "end", "reason": "time budget reached"}) + "\n")
            f.write('{"event": "end", "reason": "plateau (no faster config within the patience)"}\n{"torn')
        self.assertTrue(mf.search_ended(mf.last_end_reason(folder)))
        self.assertTrue(mf.shape_done(folder, 100))
        self.assertFalse(mf.search_ended("time budget reached"))
        self.assertFalse(mf.search_ended("evaluation budget reached"))

    def test_warm_start_takes_the_nearest_of_the_same_type(self):
        a = row("x", "a", 16, 4096, 4096)
        near = row("x", "b", 16, 6144, 4096)
        far = row("x", "c", 4096, 28672, 4096)
        other_shape_fp16 = row("x", "d", 16, 6144, 4096, dtype="fp16")
        self.assertEqual([w["name"] for w in mf.choose_warm(a, [far, other_shape_fp16, near, a])], ["b", "c"])
        self.assertEqual(mf.choose_warm(a, [a]), [])

    def test_warm_start_takes_the_twin_in_the_other_16_bit_type_first(self):
        a = row("x", "a", 512, 4096, 4096, dtype="fp16")
        near = row("x", "b", 512, 6144, 4096, dtype="fp16")
        twin = row("x", "t", 512, 4096, 4096)  # bf16
        fp8 = row("x", "e", 512, 4096, 4096, dtype="e4m3")
        self.assertEqual([w["name"] for w in mf.choose_warm(a, [near, fp8, twin])], ["t", "b"])
        self.assertEqual(mf.twin(a, [near, fp8, twin])["name"], "t")
        self.assertEqual(mf.twin(twin, [a])["name"], "a", "and back")
        self.assertIsNone(mf.twin(fp8, [a, twin]), "FP8 has no 16-bit twin")
        self.assertIsNone(mf.twin(a, [near, fp8]))


BIN = os.environ.get("TILESMITH_BIN", os.path.join(ROOT, "build", "cli"))
REC = os.path.join(ROOT, "data", "recordings")


def as_if_its_template_changed(folder):
    """Rewrites the folder's history.csv as an older template version would have left it (the
    recorded rows carry another source hash); returns the new text."""
    path = os.path.join(folder, "history.csv")
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    col = rows[0].index("template_hash")
    for r in rows[1:]:
        if len(r) > col and r[col]:
            r[col] = "0123456789abcdef"
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows(rows)
    with open(path, "w") as f:
        f.write(buf.getvalue())
    return buf.getvalue()


@unittest.skipUnless(os.path.exists(os.path.join(BIN, "autotune-loop")) and
                     os.path.exists(os.path.join(BIN, "bench-best")), "autotune-loop / bench-best not built")
class EndToEndOnReplay(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="model_bench_e2e_")
        self.set = os.path.join(self.dir, "set.json")
        with open(self.set, "w") as f:
            json.dump({"name": "replayed", "problems": [
                {"name": "decode_m128", "m": 128, "n": 4096, "k": 4096, "dtype": "bf16"},
                {"name": "prefill_m4096", "m": 4096, "n": 4096, "k": 4096, "dtype": "bf16"},
                {"name": "again_m128", "m": 128, "n": 4096, "k": 4096, "dtype": "bf16"},
                {"name": "unrecorded_m16", "m": 16, "n": 4096, "k": 4096, "dtype": "bf16"}]}, f)
        self.replay = ["--backend", "replay",
                       "--replay-file", os.path.join(REC, "gemm_wgmma_half_bf16_128x4096x4096_H200.json.gz"),
                       "--replay-file", os.path.join(REC, "gemm_wgmma_half_bf16_4096x4096x4096_H200.json.gz")]

    def tearDown(self):
        shutil.rmtree(self.dir)

    def run_driver(self, *flags):
        env = dict(os.environ, TILESMITH_BIN=BIN)
        p = subprocess.run([os.path.join(ROOT, "scripts", "model_bench.sh"), os.path.join(self.dir, "out"),
                            "--sets", self.set] + list(flags) + ["--"] + self.replay,
                           capture_output=True, text=True, env=env, timeout=600)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        return p.stdout

    def test_tune_resume_bench_table(self):
        shapes = os.path.join(self.dir, "out", "replay", "shapes")
        out = self.run_driver("--evals", "10", "--tune-only")
        self.assertIn("tuned: 2 of 3 shapes done; left: m16_n4096_k4096_bf16_NN", out)
        self.assertEqual(mf.count_evaluations(os.path.join(shapes, "m128_n4096_k4096_bf16_NN")), 10)
        self.assertEqual(mf.count_evaluations(os.path.join(shapes, "m4096_n4096_k4096_bf16_NN")), 10)
        # The same command again: nothing left to do for the tuned shapes.
        again = self.run_driver("--evals", "10", "--tune-only")
        self.assertNotIn("== [1/3] m128", again)
        self.assertEqual(mf.count_evaluations(os.path.join(shapes, "m128_n4096_k4096_bf16_NN")), 10)
        # A larger budget resumes each shape to it, then one bench pass and the table.
        text = self.run_driver("--evals", "16")
        self.assertEqual(mf.count_evaluations(os.path.join(shapes, "m128_n4096_k4096_bf16_NN")), 16)
        self.assertIn("bench-best: 2 shapes in one process", text)
        self.assertIn("replayed/decode_m128", text)
        self.assertIn("same shape as replayed/decode_m128", text)
        self.assertIn("not tuned yet (1): m16_n4096_k4096_bf16_NN", text)
        self.assertIn("read floor n/a for 1 shapes: the replay backend measures no read floor", text)
        with open(os.path.join(self.dir, "out", "replay", "bench.json")) as f:
            bench = json.load(f)
        self.assertEqual(len(bench["entries"]), 2)
        self.assertEqual(len(bench["best_configs"]), 2)
        # The table alone, from the last bench.json: the same table, also kept in table.txt.
        with open(os.path.join(self.dir, "out", "replay", "table.txt")) as f:
            table = f.read()
        self.assertTrue(text.endswith(table))
        self.assertTrue(self.run_driver("--table-only", "--evals", "16").endswith(table))


    def test_a_shape_tuned_with_an_older_template_is_named_and_retuned_on_request(self):
        shapes = os.path.join(self.dir, "out", "replay", "shapes")
        folder = os.path.join(shapes, "m128_n4096_k4096_bf16_NN")
        self.run_driver("--evals", "6", "--tune-only", "--only", "decode_m128")
        before = as_if_its_template_changed(folder)
        out = self.run_driver("--evals", "10", "--tune-only", "--only", "decode_m128")
        self.assertIn("no evaluations this call", out)
        self.assertIn("not resumed: its templates changed since it was tuned", out)
        self.assertIn("--retune-changed", out)
        self.assertEqual(mf.count_evaluations(folder), 6)
        # On request: the old folder is kept aside, untouched, and the shape is tuned from nothing.
        out = self.run_driver("--evals", "10", "--tune-only", "--only", "decode_m128", "--retune-changed")
        self.assertIn("moved aside to m128_n4096_k4096_bf16_NN.changed-", out)
        self.assertRegex(out, r"warm start from m128_n4096_k4096_bf16_NN\.changed-", "its old winners seed the retune")
        self.assertEqual(mf.count_evaluations(folder), 10)
        aside = [d for d in os.listdir(shapes) if d.startswith("m128_n4096_k4096_bf16_NN.changed-")]
        self.assertEqual(len(aside), 1)
        with open(os.path.join(shapes, aside[0], "history.csv")) as f:
            self.assertEqual(f.read(), before)

    def test_bench_passes_accumulate_so_a_table_filled_over_several_calls_keeps_every_shape(self):
        self.run_driver("--evals", "6", "--tune-only")
        first = self.run_driver("--evals", "6", "--bench-only", "--only", "decode_m128")
        self.assertIn("replayed/decode_m128", first)
        second = self.run_driver("--evals", "6", "--bench-only", "--only", "prefill_m4096")
        self.assertIn("bench-best: 1 shapes in one process", second)
        # The whole table after both passes: both shapes measured, neither "not in any pass".
        table = self.run_driver("--evals", "6", "--table-only")
        self.assertIn("shapes: 3 distinct in 4 rows; 2 measured", table)
        self.assertNotIn("not in any bench pass", table)
        with open(os.path.join(self.dir, "out", "replay", "bench-all.json")) as f:
            merged = json.load(f)
        self.assertEqual(len(merged["entries"]), 2)
        with open(os.path.join(self.dir, "out", "replay", "bench.json")) as f:
            self.assertEqual(len(json.load(f)["entries"]), 1, "bench.json is the last pass alone")

    def test_a_pass_in_batches_keeps_each_batch_and_time_left_decides_what_starts(self):
        self.run_driver("--evals", "6", "--tune-only")
        out = self.run_driver("--evals", "6", "--bench-only", "--bench-batch", "1")
        self.assertEqual(out.count("bench-best: 1 shapes in one process"), 2, out)
        self.assertIn("shapes: 3 distinct in 4 rows; 2 measured", out)
        with open(os.path.join(self.dir, "out", "replay", "bench-all.json")) as f:
            self.assertEqual(len(json.load(f)["entries"]), 2)
        with open(os.path.join(self.dir, "out", "replay", "bench.json")) as f:
            self.assertEqual(len(json.load(f)["entries"]), 1, "bench.json is the last batch alone")
        # The batches spread over GPUs: each its own process on one GPU, all merged, nothing left over.
        both = self.run_driver("--evals", "6", "--bench-only", "--bench-batch", "1", "--gpus", "0,1")
        self.assertEqual(both.count("] bench-best: 1 shapes in one process"), 2, both)
        self.assertIn("shapes: 3 distinct in 4 rows; 2 measured", both)
        self.assertEqual([f for f in os.listdir(os.path.join(self.dir, "out", "replay")) if f.startswith("bench.gpu")],
                         [])
        # Too little time for a batch: none starts, the table keeps what it had and says which wait.
        late = self.run_driver("--evals", "6", "--bench-only", "--minutes", "0.5")
        self.assertIn("time is up: 2 shapes not measured this pass", late)
        self.assertIn("shapes: 3 distinct in 4 rows; 2 measured", late)

    def test_shapes_tuned_on_several_gpus_at_once_each_reach_their_budget(self):
        shapes = os.path.join(self.dir, "out", "replay", "shapes")
        out = self.run_driver("--evals", "8", "--tune-only", "--gpus", "0,1")
        self.assertIn("[gpu ", out)
        self.assertIn("tuned: 2 of 3 shapes done", out)
        for f in ("m128_n4096_k4096_bf16_NN", "m4096_n4096_k4096_bf16_NN"):
            self.assertEqual(mf.count_evaluations(os.path.join(shapes, f)), 8, out)
        env = dict(os.environ, TILESMITH_BIN=BIN)
        p = subprocess.run([os.path.join(ROOT, "scripts", "model_bench.sh"), os.path.join(self.dir, "out"),
                            "--sets", self.set, "--gpus", "0;1"], capture_output=True, text=True, env=env)
        self.assertEqual(p.returncode, 2)
        self.assertIn("--gpus takes GPU indices separated by commas", p.stderr)

    def test_bench_order_puts_shapes_tuned_since_their_last_measurement_first(self):
        shapes = os.path.join(self.dir, "shapes")
        for f in ("a", "b", "c", "d"):
            os.makedirs(os.path.join(shapes, f))
            with open(os.path.join(shapes, f, "best_config.json"), "w") as out:
                out.write("{}")
        def at(stamp):  # a best_config.json written at a local time "YYYY-MM-DD HH:MM"
            return time.mktime(time.strptime(stamp, "%Y-%m-%d %H:%M"))
        for f, stamp in (("a", "2026-11-27 05:00"), ("b", "2026-11-27 07:00"), ("c", "2026-11-27 05:00"),
                         ("d", "2026-11-27 05:00")):
            path = os.path.join(shapes, f, "best_config.json")
            os.utime(path, (at(stamp), at(stamp)))
        def entry(folder, when):
            return {"best_config": "/r/shapes/%s/best_config.json" % folder, "measured_at": when}
        kept = {"entries": [entry("a", "2026-11-27 06:00"), entry("b", "2026-11-27 06:00"),
                            entry("d", "2026-11-27 05:30")]}
        # b was tuned again after its measurement and c never measured: first; then d (older) before a.
        self.assertEqual(mb.bench_order(["a", "b", "c", "d"], shapes, kept), ["b", "c", "d", "a"])
        self.assertEqual(mb.bench_order(["a", "b"], shapes, None), ["a", "b"])

    def test_merge_passes_keeps_older_shapes_and_replaces_remeasured_ones(self):
        def entry(folder, ms):
            return {"best_config": "/r/shapes/%s/best_config.json" % folder, "status": "ok",
                    "now": evaluation(ms, 1e9)}
        first = mt.merge_passes(None, {"device": {"name": "G"}, "entries": [entry("a", 1.0), entry("b", 2.0)]},
                                "2026-11-27 05:00")
        second = mt.merge_passes(first, {"device": {"name": "G"}, "entries": [entry("b", 1.5), entry("c", 3.0)]},
                                 "2026-11-27 06:00")
        got = {f: (e["now"]["timing"]["median_ms"], e["measured_at"]) for f, e in mt.measured_shapes(second).items()}
        self.assertEqual(got, {"a": (1.0, "2026-11-27 05:00"), "b": (1.5, "2026-11-27 06:00"),
                               "c": (3.0, "2026-11-27 06:00")})
        self.assertEqual(second["latest_pass"], "2026-11-27 06:00")
        self.assertEqual(second["passes"], ["2026-11-27 05:00", "2026-11-27 06:00"])
        rows = [{"set": "s", "name": n, "folder": n, "m": 4096, "n": 4096, "k": 4096, "dtype": "bf16",
                 "layout": "NT"} for n in ("a", "b")]
        for e in second["entries"]:
            e["vendor"] = evaluation(1.2, 1e9)
        table, summary = mt.summarize(rows, second, {"a", "b"})
        text = mt.format_report(table, summary, latest_pass=second["latest_pass"])
        self.assertIn("pass of 2026-11-27 05:00", text)
        self.assertEqual(text.count("pass of "), 1, text)
        self.assertIn("in 2 bench passes", text)

    def test_a_shape_at_its_budget_whose_template_changed_is_found_and_retuned(self):
        shapes = os.path.join(self.dir, "out", "replay", "shapes")
        folder = os.path.join(shapes, "m128_n4096_k4096_bf16_NN")
        other = os.path.join(shapes, "m4096_n4096_k4096_bf16_NN")
        self.run_driver("--evals", "6", "--tune-only")
        as_if_its_template_changed(folder)
        with open(os.path.join(other, "history.csv")) as f:
            untouched = f.read()
        # Both shapes are at their budget and no bench pass has marked anything.
        out = self.run_driver("--evals", "6", "--tune-only", "--retune-changed")
        self.assertIn("m128_n4096_k4096_bf16_NN: its templates changed since it was tuned; moved aside", out)
        self.assertRegex(out, r"m128_n4096_k4096_bf16_NN \(0 of 6 evaluations so far\), warm start from "
                              r"m128_n4096_k4096_bf16_NN\.changed-")
        self.assertNotIn("m4096_n4096_k4096_bf16_NN: its templates changed", out)
        self.assertEqual(mf.count_evaluations(folder), 6)
        with open(os.path.join(other, "history.csv")) as f:
            self.assertEqual(f.read(), untouched, "the probe adds nothing to a folder that is fine")

    def test_retune_searches_a_shape_at_its_budget_again_and_resumes_one_cut_short(self):
        shapes = os.path.join(self.dir, "out", "replay", "shapes")
        folder = os.path.join(shapes, "m128_n4096_k4096_bf16_NN")
        self.run_driver("--evals", "6", "--tune-only", "--only", "decode_m128")
        with open(os.path.join(folder, "history.csv")) as f:
            before = f.read()
        # Without the time to tune it again (under a minute left), the folder stays where it is.
        out = self.run_driver("--evals", "6", "--tune-only", "--only", "decode_m128", "--retune", "--minutes", "0.5")
        self.assertIn("time is up: 1 shapes left to tune (m128_n4096_k4096_bf16_NN)", out)
        self.assertNotIn("moved aside", out)
        self.assertEqual(mf.count_evaluations(folder), 6)
        # Nothing changed, yet --retune searches it again, the old folder kept and first warm start.
        out = self.run_driver("--evals", "6", "--tune-only", "--only", "decode_m128", "--retune")
        self.assertIn("m128_n4096_k4096_bf16_NN: searched again (--retune); moved aside to "
                      "m128_n4096_k4096_bf16_NN.changed-", out)
        self.assertRegex(out, r"\(0 of 6 evaluations so far\), warm start from m128_n4096_k4096_bf16_NN\.changed-")
        self.assertEqual(mf.count_evaluations(folder), 6)
        aside = [d for d in os.listdir(shapes) if d.startswith("m128_n4096_k4096_bf16_NN.changed-")]
        self.assertEqual(len(aside), 1)
        with open(os.path.join(shapes, aside[0], "history.csv")) as f:
            self.assertEqual(f.read(), before)
        # A larger budget: the shape is short of it, so --retune resumes it instead of starting over.
        time.sleep(1.1)  # a wrong second move aside would then not collide with the first's name
        out = self.run_driver("--evals", "9", "--tune-only", "--only", "decode_m128", "--retune")
        self.assertNotIn("moved aside", out)
        self.assertIn("(6 of 9 evaluations so far)", out)
        self.assertEqual(mf.count_evaluations(folder), 9)
        # --retune without --only would search every shape again: refused.
        p = subprocess.run([os.path.join(ROOT, "scripts", "model_bench.sh"), os.path.join(self.dir, "out"),
                            "--sets", self.set, "--retune", "--"] + self.replay,
                           capture_output=True, text=True, env=dict(os.environ, TILESMITH_BIN=BIN), timeout=600)
        self.assertEqual(p.returncode, 2)
        self.assertIn("pick them with --only", p.stderr)

    def test_retune_changed_with_bench_only_is_a_usage_error(self):
        env = dict(os.environ, TILESMITH_BIN=BIN)
        for mode, retune in (("--bench-only", "--retune-changed"), ("--table-only", "--retune-all-changed"),
                             ("--bench-only", "--retune")):
            p = subprocess.run([os.path.join(ROOT, "scripts", "model_bench.sh"), os.path.join(self.dir, "out"),
                                "--sets", self.set, mode, retune, "--"] + self.replay,
                               capture_output=True, text=True, env=env, timeout=60)
            self.assertEqual(p.returncode, 2, retune)
            self.assertIn(retune + " tunes shapes again", p.stderr)

    def test_missing_binaries_are_named_with_what_to_do_and_nothing_is_written(self):
        empty = os.path.join(self.dir, "nobin")
        os.makedirs(empty, exist_ok=True)
        out = os.path.join(self.dir, "out-nobin")
        env = dict(os.environ, TILESMITH_BIN=empty)
        for flags, named in ((["--list-changed", "--device-label", "X"], "bench-best not found"),
                             (["--bench-only", "--device-label", "X"], "bench-best not found"),
                             (["--tune-only", "--device-label", "X"], "autotune-loop and bench-best not found")):
            p = subprocess.run([os.path.join(ROOT, "scripts", "model_bench.sh"), out, "--sets", self.set] + flags,
                               capture_output=True, text=True, env=env, timeout=60)
            self.assertEqual(p.returncode, 2, flags)
            self.assertIn(named + " in " + empty, p.stderr)
            self.assertIn("--bin or $TILESMITH_BIN", p.stderr)
            self.assertNotIn("Traceback", p.stderr)
        self.assertFalse(os.path.exists(out))
        # The table alone reads what is there and needs no binary.
        p = subprocess.run([os.path.join(ROOT, "scripts", "model_bench.sh"), out, "--sets", self.set, "--table-only",
                            "--device-label", "X"], capture_output=True, text=True, env=env, timeout=60)
        self.assertNotIn("not found", p.stderr)
        self.assertNotIn("Traceback", p.stderr)

    def test_a_changed_shape_keeps_its_row_only_where_its_winner_kernel_is_the_same(self):
        # bench-best --record-code-hashes answers whether the winner compiles to its kernel (exit 0) or not.
        fake = os.path.join(self.dir, "fakebin")
        os.makedirs(fake, exist_ok=True)
        folder = os.path.join(self.dir, "shape")
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, "best_config.json"), "w") as f:
            f.write("{}")
        for code, stands in ((0, True), (1, False)):
            with open(os.path.join(fake, "bench-best"), "w") as f:
                f.write("#!/bin/sh\nexit %d\n" % code)
            os.chmod(os.path.join(fake, "bench-best"), 0o755)
            self.assertEqual(mb.row_stands(argparse.Namespace(retune_all_changed=False), False, fake, folder), stands)
            # --retune-all-changed (a space that grew) and replay tune it again whatever the kernel.
            self.assertFalse(mb.row_stands(argparse.Namespace(retune_all_changed=True), False, fake, folder))
            self.assertFalse(mb.row_stands(argparse.Namespace(retune_all_changed=False), True, fake, folder))

    def test_the_shapes_whose_winner_kernel_changed_are_listed_with_the_only_that_picks_them(self):
        # bench-best --record-code-hashes: exit 0 where the winner compiles to its kernel, 4 where it changed.
        fake = os.path.join(self.dir, "fakebin")
        os.makedirs(fake, exist_ok=True)
        with open(os.path.join(fake, "bench-best"), "w") as f:
            f.write('#!/bin/sh\ncase "$*" in *m4096_n4096_k4096_bf16_NT/*) exit 4;; esac\nexit 0\n')
        os.chmod(os.path.join(fake, "bench-best"), 0o755)
        shapes = os.path.join(self.dir, "shapes")
        rows = [{"folder": f} for f in ("m4096_n4096_k4096_bf16_NT", "m4096_n4096_k4096_fp16_NT",
                                        "m128_n4096_k4096_bf16_NT", "m4096_n4096_k4096_bf16_NT")]
        for r in rows[:2]:  # the M = 128 shape is not tuned: nothing to tell
            os.makedirs(os.path.join(shapes, r["folder"]), exist_ok=True)
            with open(os.path.join(shapes, r["folder"], "best_config.json"), "w") as f:
                f.write("{}")
        changed = list(mb.kernel_changed_folders(fake, shapes, rows))
        self.assertEqual(changed, ["m4096_n4096_k4096_bf16_NT"])
        only = mb.only_pattern(changed + ["m16_n1280_k8192_e4m3_NT_c_bf16_per_tensor"])
        for name in changed + ["m16_n1280_k8192_e4m3_NT_c_bf16_per_tensor"]:
            self.assertRegex(name, only)
        for other in ("m4096_n4096_k4096_fp16_NT", "m4096_n4096_k4096_bf16_NT.changed-20261201-133735",
                      "xm4096_n4096_k4096_bf16_NT"):
            self.assertIsNone(re.search(only, other), other)

    def test_changed_shapes_whose_rows_measured_another_kernel_are_the_ones_to_measure_again(self):
        # bench-best --record-code-hashes names the kernel a changed winner compiles to now; a bench pass
        # records the one it measured (its entry's now.code_hash). Rows measured on today's kernel after
        # the change are up to date; the others (and shapes without a row) want a --bench-only pass.
        fake = os.path.join(self.dir, "fakebin")
        os.makedirs(fake, exist_ok=True)
        with open(os.path.join(fake, "bench-best"), "w") as f:
            f.write('#!/bin/sh\ncase "$*" in\n'
                    '  *m1_n2_k3_bf16_NT/*) echo "CHANGED ... (code hash 1111 then, aaaa now)"; exit 4;;\n'
                    '  *m4_n5_k6_bf16_NT/*) echo "CHANGED ... (code hash 2222 then, bbbb now)"; exit 4;;\n'
                    '  *m7_n8_k9_bf16_NT/*) echo "CHANGED ... (code hash 3333 then, cccc now)"; exit 4;;\n'
                    '  *m1_n1_k1_bf16_NT/*) echo "UNKNOWN ... no code hash recorded"; exit 4;;\n'
                    'esac\nexit 0\n')
        os.chmod(os.path.join(fake, "bench-best"), 0o755)
        shapes = os.path.join(self.dir, "shapes")
        names = ["m1_n2_k3_bf16_NT", "m4_n5_k6_bf16_NT", "m7_n8_k9_bf16_NT", "m1_n1_k1_bf16_NT", "m2_n2_k2_bf16_NT"]
        for n in names:
            os.makedirs(os.path.join(shapes, n), exist_ok=True)
            with open(os.path.join(shapes, n, "best_config.json"), "w") as f:
                f.write("{}")
        changed = mb.kernel_changed_folders(fake, shapes, [{"folder": n} for n in names])
        self.assertEqual(changed, {"m1_n2_k3_bf16_NT": "aaaa", "m4_n5_k6_bf16_NT": "bbbb",
                                   "m7_n8_k9_bf16_NT": "cccc", "m1_n1_k1_bf16_NT": None})
        entry = lambda n, h: {"best_config": "r/shapes/%s/best_config.json" % n,
                              "now": {"median_ms": 1.0, "code_hash": h}}
        doc = {"entries": [entry("m1_n2_k3_bf16_NT", "aaaa"), entry("m4_n5_k6_bf16_NT", "2222")]}
        # m1_n2_k3 was measured on today's kernel; m4_n5_k6 on the one it was tuned with; m7_n8_k9 has
        # no row; m1_n1_k1's kernel cannot be told.
        self.assertEqual(mb.measured_on_another_kernel(changed, doc),
                         ["m4_n5_k6_bf16_NT", "m7_n8_k9_bf16_NT", "m1_n1_k1_bf16_NT"])
        self.assertEqual(mb.measured_on_another_kernel(changed, None), list(changed))

    def test_a_standing_row_asked_for_more_evaluations_says_how_to_search_it_further(self):
        # At its budget: the row stands, nothing more to say.
        at_budget = mb.row_stands_note("m128_n55296_k5120_bf16_NT", 150, 150)
        self.assertIn("so its row stands", at_budget)
        self.assertNotIn("--retune-all-changed", at_budget)
        # Asked for more: autotune-loop will not resume it, so the way on is a search with today's templates,
        # and the --only it names picks that shape alone.
        more = mb.row_stands_note("m128_n55296_k5120_bf16_NT", 150, 300)
        self.assertIn("it holds 150 of the 300 evaluations asked", more)
        only = re.search(r"--only '([^']+)'", more).group(1)
        self.assertRegex("m128_n55296_k5120_bf16_NT", only)
        for other in ("m128_n55296_k5120_fp16_NT", "m128_n55296_k5120_bf16_NT.changed-20261201-162247"):
            self.assertIsNone(re.search(only, other), other)

    def test_a_twin_being_tuned_again_lends_its_moved_aside_history_as_the_prior(self):
        # The twin's folder, moved aside and restarted on another GPU, has no measurement yet:
        # autotune-loop would refuse it as a prior (run 230), so the aside's history stands in.
        def write(folder, outcomes):
            os.makedirs(folder, exist_ok=True)
            with open(os.path.join(folder, "history.csv"), "w") as f:
                f.write("stage,outcome\n" + "".join("evaluation,%s\n" % o for o in outcomes))
        twin = os.path.join(self.dir, "m1_n2_k3_bf16_NT")
        write(twin, [])
        self.assertIsNone(mf.prior_source(twin))
        write(twin + ".changed-20261130-010000", ["ok"])
        write(twin + ".changed-20261130-020000", ["compile_error"])
        self.assertEqual(mf.prior_source(twin), twin + ".changed-20261130-010000")
        write(twin + ".changed-20261130-030000", ["compile_error", "ok"])
        self.assertEqual(mf.prior_source(twin), twin + ".changed-20261130-030000")
        write(twin, ["ok"])
        self.assertEqual(mf.prior_source(twin), twin)

    def test_changed_folders_come_from_the_bench_passes_mismatch(self):
        bench = {"entries": [
            {"best_config": "/r/shapes/a/best_config.json", "status": "MISMATCH", "now": None},
            {"best_config": "/r/shapes/b/best_config.json", "status": "ok", "now": evaluation(0.02, 1e9)}]}
        self.assertEqual(mb.changed_folders(bench), {"a"})
        self.assertEqual(mb.changed_folders(None), set())
        self.assertTrue(mb.refused_as_changed(
            "autotune-loop: --results: template gemm_hmma changed since r/history.csv was recorded (source hash"))
        self.assertFalse(mb.refused_as_changed("autotune-loop: --m: must be at least 1"))


if __name__ == "__main__":
    unittest.main(verbosity=2)
