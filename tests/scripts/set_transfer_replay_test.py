#!/usr/bin/env python3
"""scripts/set_transfer_replay.py: its counting on small files, its messages on bad input, and a whole run on
the decode recordings with the built autotune-loop (TILESMITH_BIN)."""
import gzip
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import unittest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(REPO, "scripts", "set_transfer_replay.py")
spec = importlib.util.spec_from_file_location("set_transfer_replay", SCRIPT)
st = importlib.util.module_from_spec(spec)
spec.loader.exec_module(st)

HEADER = "row,proposer,outcome,median_ms\n"


def write(path, text):
    with open(path, "w") as f:
        f.write(text)
    return path


class Counting(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()

    def test_evaluations_count_every_row_until_the_best_so_far_reaches_the_target(self):
        h = write(os.path.join(self.dir, "h.csv"), HEADER + "1,warm-start,ok,2.0\n2,evolve,wrong_result,0.5\n"
                  "3,evolve,ok,1.2\n4,evolve,ok,1.04\n5,evolve,ok,1.0\n")
        # A wrong result's time does not count; the failed row still does.
        self.assertEqual(st.evaluations_to(h, 1.05), (4, 1))
        self.assertEqual(st.evaluations_to(h, 2.0), (1, 1))
        self.assertEqual(st.evaluations_to(h, 0.9), (None, 1))

    def test_a_miss_counts_above_every_run_and_is_named(self):
        med, q1, q3, worst, misses = st.summary([10, None, 30], cap=100)
        self.assertEqual((med, worst, misses), (30, "miss", 1))
        med, q1, q3, worst, misses = st.summary([10, 20, 30, 40], cap=100)
        self.assertEqual((med, q1, q3, worst, misses), (25, 17.5, 32.5, "40", 0))

    def test_the_best_of_a_shape_is_over_every_recording_of_it(self):
        def recording(name, m, times):
            data = {"cache": {str(i): {"time": t} for i, t in enumerate(times)},
                    "tilesmith": {"problem": {"m": m, "n": 64, "k": 64, "dtype": "bf16", "layout": "NN"}}}
            with gzip.open(os.path.join(self.dir, name + ".json.gz"), "wt") as f:
                json.dump(data, f)
        recording("a", 16, [0.5, "InvalidConfig", 0.3])
        recording("b", 16, [0.4, 0.2])
        recording("c", 128, [1.0])
        problems = [{"name": "p16", "m": 16, "n": 64, "k": 64, "dtype": "bf16", "layout": "NN"},
                    {"name": "p128", "m": 128, "n": 64, "k": 64, "dtype": "bf16"}]
        best = st.recorded_bests(self.dir, problems)
        self.assertEqual(best[(16, 64, 64, "bf16", "NN")], 0.2)
        self.assertEqual(best[(128, 64, 64, "bf16", "NN")], 1.0)
        with self.assertRaises(SystemExit) as e:
            st.recorded_bests(self.dir, problems + [{"name": "p1", "m": 1, "n": 64, "k": 64, "dtype": "bf16"}])
        self.assertIn("p1", str(e.exception))


class WholeRun(unittest.TestCase):
    def run_script(self, *args):
        env = dict(os.environ)
        return subprocess.run([sys.executable, SCRIPT] + list(args), capture_output=True, text=True, env=env,
                              timeout=300)

    def test_bad_input_is_named_before_anything_runs(self):
        # Checked before the executable is looked for (--bin points at a folder without one).
        r = self.run_script("--seeds", "x")
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("--seeds 'x'", r.stderr)
        with tempfile.TemporaryDirectory() as d:
            not_a_set = write(os.path.join(d, "set.json"), '{"problems": [{"m": 16}]}')
            r = self.run_script("--problems", not_a_set, "--bin", d)
            self.assertNotEqual(r.returncode, 0)
            self.assertIn("not a problem set", r.stderr)
            twice = write(os.path.join(d, "twice.json"), json.dumps({"problems": [
                {"name": "a", "m": 16, "n": 64, "k": 64}, {"name": "b", "m": 16, "n": 64, "k": 64}]}))
            r = self.run_script("--problems", twice, "--bin", d)
            self.assertNotEqual(r.returncode, 0)
            self.assertIn("each with its own name and shape", r.stderr)

    @unittest.skipUnless(os.access(os.path.join(os.environ.get("TILESMITH_BIN", ""), "autotune-loop"), os.X_OK),
                         "set TILESMITH_BIN to the folder with the built autotune-loop")
    def test_the_decode_set_against_its_problems_alone_on_replay(self):
        r = self.run_script("--seeds", "3", "--set-evals", "96", "--alone-evals", "12", "--target", "50")
        self.assertEqual(r.returncode, 0, r.stderr)
        lines = r.stdout.splitlines()
        names = ["qkv_t16", "attn_out_t16", "gate_up_t16", "down_t16",
                 "qkv_t128", "attn_out_t128", "gate_up_t128", "down_t128"]
        rows = [line for line in lines if line.split(" ")[0] in names]
        self.assertEqual(sorted(line.split(" ")[0] for line in rows), sorted(names), r.stdout)
        # The heaviest problems go first (the gate/up projections) and have no neighbour to start from.
        self.assertTrue(rows[0].startswith("gate_up"), r.stdout)
        self.assertTrue(rows[0].endswith("0 of 1"), r.stdout)
        self.assertTrue(any(not row.endswith("0 of 1") for row in rows), r.stdout)
        self.assertTrue(lines[-1].startswith("sums of the medians: set "), r.stdout)


if __name__ == "__main__":
    unittest.main()
