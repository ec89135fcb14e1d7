#!/usr/bin/env python3
"""scripts/device/kernel_ab.py without a GPU: a stand-in for ncu (a script on the command line's
--ncu) that answers like ncu --csv with times set per template folder and a drift per process,
so that the order of the processes (A B, B A, ...), the parsing of ncu's CSV, the ratio with its
interval and the verdict, and the failures (a process that fails, a kernel name that matches no
launch, a missing kernel name) can be checked.

    python3 tests/scripts/kernel_ab_test.py        (ctest: kernel_ab_script_test)
"""

import json
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "scripts", "device", "kernel_ab.py")
sys.path.insert(0, os.path.join(ROOT, "scripts", "device"))
import kernel_ab as ab  # noqa: E402

# Answers as ncu --csv does (its own lines, the program's, then one row per launch and metric), with
# the kernel time of the folder after --kernels-dir ("built-in" without one) from FAKE_NCU_TIMES,
# or of the --config value from FAKE_NCU_CONFIG_TIMES where that is set (of the --epilogue value from
# FAKE_NCU_EPILOGUE_TIMES, "none" without one, where that is set), grown by FAKE_NCU_DRIFT
# per process so far (counted in FAKE_NCU_LOG, one line per process).
FAKE_NCU = r'''#!/usr/bin/env python3
import json, os, sys
args = sys.argv[1:]
if os.environ.get("FAKE_NCU_FAIL"):
    print("==ERROR== the profiler could not start"); sys.exit(1)
d = args[args.index("--kernels-dir") + 1] if "--kernels-dir" in args else "built-in"
log = os.environ["FAKE_NCU_LOG"]
calls = open(log).read().count("\n") if os.path.exists(log) else 0
with open(log, "a") as f:
    f.write(d + "\n")
cfg = args[args.index("--config") + 1] if "--config" in args else ""
epi = args[args.index("--epilogue") + 1] if "--epilogue" in args else "none"
if os.environ.get("FAKE_NCU_EPILOGUE_TIMES"):  # a time per epilogue
    t = json.loads(os.environ["FAKE_NCU_EPILOGUE_TIMES"])[epi]
elif cfg and os.environ.get("FAKE_NCU_CONFIG_TIMES"):  # a time per config instead of per folder
    t = json.loads(os.environ["FAKE_NCU_CONFIG_TIMES"])[cfg]
else:
    t = json.loads(os.environ["FAKE_NCU_TIMES"])[d]
t *= 1 + float(os.environ.get("FAKE_NCU_DRIFT", "0")) * calls
inst = 1000000 if d == "built-in" else 900000
name = os.environ.get("FAKE_NCU_KERNEL", "gemm_tma_half")
count = int(args[args.index("--launch-count") + 1])
print("==PROF== Connected to process 1 (bench-best)")
print("gemm_tma_half ok 0.2 0.2")
print('"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size",'
      '"Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"')
for i in range(count):
    for metric, unit, v in (("gpu__time_duration.sum", "us", t), ("smsp__inst_executed.sum", "inst", inst)):
        print('"%d","1","bench-best","h","%s","1","7","(384, 1, 1)","(132, 1, 1)","0","9.0","m","%s","%s","%s"'
              % (i, name, metric, unit, "{:,.3f}".format(v + 0.001 * i) if unit == "us" else "{:,}".format(v)))
'''


class KernelAbTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.ncu = os.path.join(self.tmp.name, "ncu")
        with open(self.ncu, "w") as f:
            f.write(FAKE_NCU)
        os.chmod(self.ncu, 0o755)
        self.b = os.path.join(self.tmp.name, "new")
        os.mkdir(self.b)
        self.log = os.path.join(self.tmp.name, "calls")
        self.env = dict(os.environ, FAKE_NCU_LOG=self.log, FAKE_NCU_TIMES=json.dumps({"built-in": 200.0, self.b: 196.0}))

    def tearDown(self):
        self.tmp.cleanup()

    def run_script(self, *args, env=None):
        return subprocess.run([sys.executable, SCRIPT] + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, env=env or self.env)

    def run_ab(self, *extra, env=None, pairs=4):
        return self.run_script("--b", self.b, "--pairs", str(pairs), "--ncu", self.ncu, *extra, "--", "--template",
                               "gemm_tma_half", "--m", "64", "--n", "64", "--k", "64", env=env)

    def test_alternating_order_cancels_a_drift_and_the_interval_finds_the_difference(self):
        env = dict(self.env, FAKE_NCU_DRIFT="0.005")  # +0.5% a process: what runs second looks slower
        p = self.run_ab("--json", env=env)
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(self.log) as f:
            order = ["B" if line.strip() == self.b else "A" for line in f]
        self.assertEqual(order, ["A", "B", "B", "A", "A", "B", "B", "A"])
        s = json.loads(p.stdout)["summary"]
        self.assertAlmostEqual(s["ratio"], 0.98, delta=0.002)  # 196 / 200, the drift divided out
        lo, hi = s["interval"]
        self.assertLess(lo, 0.98)
        self.assertGreater(hi, 0.98)
        self.assertEqual(s["verdict"], "B faster")
        self.assertAlmostEqual(s["instruction_ratio"], 0.9)
        self.assertEqual(s["A"]["processes"], 4)
        # Times in microseconds in ncu's CSV, nanoseconds here; four launches a process.
        self.assertEqual(len(json.loads(p.stdout)["processes"][0]["launch_ns"]), 4)
        self.assertAlmostEqual(json.loads(p.stdout)["processes"][0]["launch_ns"][0], 200000.0)

    def test_same_times_are_a_tie_and_the_table_says_so(self):
        env = dict(self.env, FAKE_NCU_TIMES=json.dumps({"built-in": 200.0, self.b: 200.0}), FAKE_NCU_DRIFT="0.004")
        p = self.run_ab(env=env)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("time B / A: 1.000", p.stdout)
        self.assertIn("(tie)", p.stdout)
        self.assertIn("instructions B / A: 0.900", p.stdout)

    def test_a_failing_process_is_named_and_nothing_is_summarized(self):
        p = self.run_ab(env=dict(self.env, FAKE_NCU_FAIL="1"))
        self.assertEqual(p.returncode, 1)
        self.assertIn("A: exit 1", p.stderr)
        self.assertIn("the profiler could not start", p.stderr)
        self.assertNotIn("time B / A", p.stdout)

    def test_a_kernel_name_that_matches_no_launch_says_what_to_check(self):
        p = self.run_ab(env=dict(self.env, FAKE_NCU_KERNEL="cutlass_kernel"))
        self.assertEqual(p.returncode, 1)
        self.assertIn("0 of the 4 launches of gemm_tma_half measured", p.stderr)

    def test_bad_usage_is_refused_before_any_process(self):
        p = self.run_script("--b", self.b, "--ncu", self.ncu, "--", "--m", "64")
        self.assertEqual(p.returncode, 2)
        self.assertIn("give --kernel", p.stderr)
        p = self.run_ab(pairs=0)
        self.assertEqual(p.returncode, 2)
        p = self.run_script("--b", os.path.join(self.tmp.name, "nothing"), "--kernel", "k")
        self.assertEqual(p.returncode, 2)
        self.assertIn("is not a folder of templates", p.stderr)
        self.assertFalse(os.path.exists(self.log))

    def test_a_second_config_is_timed_against_the_first(self):
        a, b = '{"BLOCK_M":128}', '{"BLOCK_M":256,"BLOCK_N":160}'
        env = dict(self.env, FAKE_NCU_CONFIG_TIMES=json.dumps({a: 300.0, b: 270.0}))
        p = self.run_script("--b-config", b, "--pairs", "2", "--ncu", self.ncu, "--json", "--", "--template",
                            "gemm_tma_half", "--config", a, "--m", "64", env=env)
        self.assertEqual(p.returncode, 0, p.stderr)
        out = json.loads(p.stdout)
        self.assertEqual(out["b"], "built-in")  # B's templates are A's
        self.assertEqual(out["b_config"], b)
        self.assertAlmostEqual(out["summary"]["ratio"], 0.9, places=4)
        # Without a --config among the flags, B's is added; a config that is not a JSON object is refused.
        self.assertEqual(ab.with_config(["--m", "64"], b), ["--m", "64", "--config", b])
        for flags, says in ((["--b-config", "BLOCK_M=256"], "--b-config must be a JSON object"), ([], "give --b")):
            p = self.run_script(*flags, "--ncu", self.ncu, "--", "--template", "gemm_tma_half")
            self.assertEqual(p.returncode, 2)
            self.assertIn(says, p.stderr)

    def test_another_flag_for_b_alone_times_an_epilogue_against_the_plain_gemm(self):
        env = dict(self.env, FAKE_NCU_EPILOGUE_TIMES=json.dumps({"none": 200.0, "bias_gelu": 205.0, "gelu": 203.0}))
        flags = ("--pairs", "2", "--ncu", self.ncu, "--json", "--", "--template", "gemm_tma_half", "--m", "64")
        p = self.run_script("--b-set", "epilogue=bias_gelu", *flags, env=env)
        self.assertEqual(p.returncode, 0, p.stderr)
        out = json.loads(p.stdout)
        self.assertEqual(out["b_flags"], [["--epilogue", "bias_gelu"]])
        self.assertAlmostEqual(out["summary"]["ratio"], 1.025, places=4)
        # B's value replaces A's where A has the flag (A gelu, B bias_gelu); a NAME with its dashes is taken too.
        flags = flags[:-2] + ("--epilogue", "gelu", "--m", "64")
        p = self.run_script("--b-set=--epilogue=bias_gelu", *flags, env=env)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertAlmostEqual(json.loads(p.stdout)["summary"]["ratio"], 205.0 / 203.0, places=4)
        for bad in ("epilogue", "=bias_gelu", "kernels-dir=/tmp"):
            p = self.run_script("--b-set", bad, "--ncu", self.ncu, "--", "--template", "gemm_tma_half")
            self.assertEqual(p.returncode, 2, bad)
            self.assertIn("--b-set takes NAME=VALUE", p.stderr)

    def test_one_pair_has_no_interval(self):
        s = ab.summarize([{"version": "A", "mean_ns": 100.0, "instructions": 10.0},
                          {"version": "B", "mean_ns": 95.0, "instructions": 9.0}], 1)
        self.assertIsNone(s["interval"])
        self.assertAlmostEqual(s["ratio"], 0.95)


if __name__ == "__main__":
    unittest.main()
