"""record_gemms and the problem-set file it writes (python/tilesmith/record.py, problem_set.py)."""

import json
import os
import subprocess
import sys
import tempfile
import unittest

import torch

import tilesmith
from small_model import Small, workloads

BIN = os.environ.get("TILESMITH_BIN", "build/cli")


class RecordGemms(unittest.TestCase):
    def test_counts_layouts_and_names_of_a_forward(self):
        got = tilesmith.record_gemms(Small(), torch.randn(2, 8, 64))
        entries = {e["name"]: e for e in got.entries()}
        self.assertEqual(sorted(entries), ["head_m16", "layers.x.matmul_m16", "layers.x.q-o_m16", "layers.x.up_m16"])
        # q and o share a shape: one problem, run four times per forward (two layers).
        self.assertEqual(entries["layers.x.q-o_m16"],
                         {"name": "layers.x.q-o_m16", "count": 4, "m": 16, "n": 64, "k": 64, "dtype": "fp32",
                          "layout": "NT"})
        # nn.Linear stores [out, in]: Y = X W^T, B column-major; its bias is the fused bias_col.
        self.assertEqual(entries["layers.x.up_m16"]["epilogue"], "bias_col")
        self.assertEqual(entries["layers.x.up_m16"]["count"], 2)
        # A matmul by a [K, N] parameter in a forward: row-major B, named after the op in that module.
        self.assertEqual((entries["layers.x.matmul_m16"]["layout"], entries["layers.x.matmul_m16"]["n"]), ("NN", 32))
        self.assertEqual((entries["head_m16"]["dtype"], entries["head_m16"]["count"]), ("bf16", 1))
        # The batched matmuls are reported, with the module and the reason, not dropped silently.
        self.assertEqual([(s[0], s[1]) for s in got.skipped], [("layers.0", "bmm"), ("layers.1", "bmm")])
        self.assertIn("batched", got.skipped[0][2])

    def test_a_transposed_view_is_recorded_as_column_major_and_a_strided_one_skipped(self):
        class M(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.w = torch.nn.Parameter(torch.randn(32, 64))

            def forward(self, x):
                x @ self.w.t()  # [64, 32] column-major view
                return x @ self.w[::2].t()  # every other row of W: not dense

        got = tilesmith.record_gemms(M(), torch.randn(4, 64))
        self.assertEqual([(e["m"], e["n"], e["k"], e["layout"]) for e in got.entries()], [(4, 32, 64, "NT")])
        self.assertEqual(len(got.skipped), 1)
        self.assertIn("strided view", got.skipped[0][2])

    def test_merge_keeps_each_batch_size_and_names_stay_unique(self):
        model = Small()
        a = tilesmith.record_gemms(model, torch.randn(2, 8, 64))
        b = tilesmith.record_gemms(model, torch.randn(1, 64, 64))
        again = tilesmith.record_gemms(model, torch.randn(2, 8, 64))
        merged = a.merge(b).merge(again)
        names = [e["name"] for e in merged.entries()]
        self.assertEqual(len(names), 8)
        self.assertEqual(len(set(names)), 8)
        self.assertEqual({e["m"] for e in merged.entries()}, {16, 64})
        # The same problem recorded twice keeps its per-forward count, not the sum.
        self.assertEqual({e["name"]: e["count"] for e in merged.entries()}["layers.x.q-o_m16"], 4)

    def test_the_written_file_is_one_autotune_loop_takes(self):
        got = tilesmith.record_gemms(Small(), torch.randn(2, 8, 64))
        with tempfile.TemporaryDirectory() as d:
            path = got.write(os.path.join(d, "small.json"))
            doc = json.load(open(path))
            self.assertIn("layers.0.q, layers.0.o, layers.1.q, layers.1.o", doc["description"])
            # Without a GPU the run stops at "no GPU" (exit 3) after reading the set; a set it
            # could not read would be a usage error (exit 2) naming the file. With a GPU it tunes
            # one candidate (exit 0).
            run = subprocess.run([os.path.join(BIN, "autotune-loop"), "--problems", path, "--max-evals", "1",
                                  "--results", os.path.join(d, "results")], capture_output=True, text=True)
            self.assertIn(run.returncode, (0, 3), run.stderr)
            # The same file with a field the reader does not know is refused: the check can fail.
            doc["problems"][0]["dtpye"] = "bf16"
            json.dump(doc, open(path, "w"))
            run = subprocess.run([os.path.join(BIN, "autotune-loop"), "--problems", path, "--max-evals", "1",
                                  "--results", os.path.join(d, "results2")], capture_output=True, text=True)
            self.assertEqual(run.returncode, 2, run.stderr)
            self.assertIn('unknown field "dtpye"', run.stderr)

    def test_a_model_without_gemms_says_so(self):
        got = tilesmith.record_gemms(torch.nn.ReLU(), torch.randn(3))
        with self.assertRaisesRegex(ValueError, "no GEMM"):
            got.to_json()

    def test_record_refuses_what_is_not_a_module(self):
        with self.assertRaisesRegex(tilesmith.TilesmithError, "torch.nn.Module, got function"):
            tilesmith.record_gemms(lambda x: x, torch.randn(3))


class RecordCommand(unittest.TestCase):
    def run_cli(self, *args):
        return subprocess.run([sys.executable, "-m", "tilesmith", *args], capture_output=True, text=True,
                              env=dict(os.environ))

    def test_record_writes_the_set_of_every_workload(self):
        here = os.path.dirname(os.path.abspath(__file__))
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "set.json")
            run = self.run_cli("record", os.path.join(here, "small_model.py") + ":workloads", "--out", out,
                               "--name", "small")
            self.assertEqual(run.returncode, 0, run.stderr)
            self.assertIn("8 problems", run.stdout)
            self.assertIn("skipped 4 calls", run.stdout)
            doc = json.load(open(out))
            self.assertEqual(doc["name"], "small")
            expected = {e["name"] for w in workloads() for e in tilesmith.record_gemms(w[0], *w[1]).entries()}
            self.assertEqual({p["name"] for p in doc["problems"]}, expected)

    def test_record_names_a_bad_target(self):
        run = self.run_cli("record", "no_such_file.py:f", "--out", "x.json")
        self.assertNotEqual(run.returncode, 0)
        self.assertIn("no_such_file.py: no such file", run.stderr)
        run = self.run_cli("record", "small_model", "--out", "x.json")
        self.assertIn("give FILE.py:FUNCTION", run.stderr)
        self.assertFalse(os.path.exists("x.json"))


if __name__ == "__main__":
    unittest.main()
