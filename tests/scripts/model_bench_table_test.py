#!/usr/bin/env python3
"""scripts/model_bench_table.py without a GPU: the table's arithmetic (ratios, % of peak and of the
read floor, geomeans, the worst shape, the lowest % of floor, wins by >= 3% and which of them the
rounds' interval settles, losses, duplicates counted once, untuned and failed shapes listed).

    python3 tests/scripts/model_bench_table_test.py        (ctest: model_bench_table_test)
"""

import math
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from model_bench_fixtures import entry, row  # noqa: E402
import model_bench_table as mt  # noqa: E402


class Table(unittest.TestCase):
    def setUp(self):
        self.r = [row("m", "qkv_m1_bf16", 1, 6144, 4096),        # floor basis
                  row("m", "qkv_m128_bf16", 128, 6144, 4096),     # floor basis, floor beaten by the vendor
                  row("m", "qkv_m4096_bf16", 4096, 6144, 4096),   # peak basis
                  row("m", "down_m4096_bf16", 4096, 4096, 14336),
                  row("m", "qkv_m4096_fp16", 4096, 6144, 4096, "fp16"),
                  row("e", "dup_m1_bf16", 1, 6144, 4096),         # same shape as the first
                  row("m", "gate_m16_bf16", 16, 28672, 4096),     # failed in the bench pass
                  row("m", "down_m16_bf16", 16, 4096, 14336)]     # not tuned
        self.bench = {"entries": [entry(self.r[0], 0.0200, 0.0210, floor_ms=0.0180),
                                  entry(self.r[1], 0.0250, 0.0190, floor_ms=0.0200),
                                  entry(self.r[2], 0.2500, 0.2600),
                                  entry(self.r[3], 0.5000, 0.4500),
                                  entry(self.r[4], 0.2000, 0.2200),
                                  entry(self.r[6], None, 0.0500, floor_ms=0.0400, status="FAILED")]}
        self.tuned = {r["folder"] for r in self.r[:7]}

    def test_rows(self):
        table, s = mt.summarize(self.r, self.bench, self.tuned, {self.r[0]["folder"]: 150})
        t = {x["set"] + "/" + x["name"]: x for x in table}
        q1 = t["m/qkv_m1_bf16"]
        self.assertEqual(q1["state"], "measured")
        self.assertAlmostEqual(q1["ratio"], 0.0210 / 0.0200)
        self.assertEqual(q1["basis"], "floor")
        self.assertAlmostEqual(q1["pct"], 90.0)             # floor / ours
        self.assertAlmostEqual(q1["vendor_pct"], 100.0 * 0.018 / 0.021)
        self.assertEqual(q1["evals"], 150)
        self.assertAlmostEqual(q1["rel_err"], 0.0017)
        self.assertEqual(t["m/qkv_m128_bf16"]["floor_beaten"], ["vendor"])
        big = t["m/qkv_m4096_bf16"]
        self.assertEqual(big["basis"], "peak")
        self.assertAlmostEqual(big["pct"], 100.0 * big["ours_tflops"] / 989.0)
        self.assertEqual(t["e/dup_m1_bf16"]["same_as"], "m/qkv_m1_bf16")
        self.assertAlmostEqual(t["e/dup_m1_bf16"]["ratio"], q1["ratio"])
        self.assertEqual(t["m/gate_m16_bf16"]["state"], "failed")
        self.assertEqual(t["m/down_m16_bf16"]["state"], "not tuned")
        self.assertEqual(s["shapes"], 7)
        self.assertEqual(s["rows"], 8)
        self.assertEqual(s["measured"], 5)
        self.assertEqual(s["not_tuned"], [self.r[7]["folder"]])
        self.assertEqual(s["failed"], [self.r[6]["folder"]])

    def test_summary_arithmetic(self):
        _, s = mt.summarize(self.r, self.bench, self.tuned)
        bf16 = s["large"]["bf16"]
        self.assertEqual(bf16["n"], 2)
        self.assertAlmostEqual(bf16["geomean"], math.sqrt((0.26 / 0.25) * (0.45 / 0.50)))
        self.assertEqual(bf16["worst"], self.r[3]["folder"])
        self.assertAlmostEqual(bf16["worst_ratio"], 0.9)
        self.assertEqual(s["large"]["fp16"]["n"], 1)
        self.assertAlmostEqual(s["large"]["fp16"]["geomean"], 1.1)
        small = s["small"]
        self.assertEqual(small["n"], 2)  # the duplicate counts once, the failed shape has no ratio
        self.assertAlmostEqual(small["geomean"], math.sqrt((0.021 / 0.020) * (0.019 / 0.025)))
        self.assertAlmostEqual(small["lowest_floor_pct"], 80.0)
        self.assertEqual(small["lowest_floor"], self.r[1]["folder"])
        self.assertEqual(small["at_90_of_floor"], 1)
        self.assertEqual(small["with_floor"], 2)
        self.assertEqual(s["won"], 3)  # 1.05 (M = 1), 1.04 and 1.10
        self.assertEqual(s["compared"], 5)

    def test_won_counts_margins(self):
        _, s = mt.summarize(self.r, self.bench, self.tuned)
        ratios = [0.021 / 0.020, 0.019 / 0.025, 0.26 / 0.25, 0.45 / 0.50, 0.22 / 0.20]
        self.assertEqual(s["won"], sum(1 for x in ratios if x >= 1.03))

    def test_report_text(self):
        table, s = mt.summarize(self.r, self.bench, self.tuned)
        text = mt.format_report(table, s, "NVIDIA H200 (sm_90)")
        for part in ["model/layer", "cuBLASLt TF/s", "m/qkv_m1_bf16", "90.0%", "floor", "peak", "80.0%!",
                     "same shape as m/qkv_m1_bf16", "FAILED", "not tuned",
                     "M > 128, bf16: geomean ratio 0.967 over 2 shapes; worst m4096_n4096_k14336_bf16_NT at 0.900",
                     "M > 128, fp16: geomean ratio 1.100 over 1 shapes",
                     "lowest % of floor 80.0% (m128_n6144_k4096_bf16_NT); 1 of 2 at >= 90% of the floor",
                     "won by >= 3%: 3 of 5 shapes", "NOTE m128_n6144_k4096_bf16_NT: vendor ran faster than the read floor",
                     "not tuned yet (1): m16_n4096_k14336_bf16_NT"]:
            self.assertIn(part, text)

    def test_report_counts_wins_against_the_whole_benchmark(self):
        table, s = mt.summarize(self.r, self.bench, self.tuned)
        text = mt.format_report(table, s, benchmark_shapes=84)
        self.assertIn("won by >= 3%: 3 of 5 shapes compared with cuBLASLt; 3 of the benchmark's 84 distinct shapes "
                      "(a third: 28)", text)
        self.assertNotIn("benchmark's", mt.format_report(table, s))

    def test_paired_rounds_give_the_ratio_and_its_interval(self):
        # bench-best --rounds: the rounds' ratio replaces the single pass's, and the
        # summary (geomean, won) counts it; the single pass's is kept beside it.
        bench = {"entries": [dict(e) for e in self.bench["entries"]]}
        bench["entries"][3]["paired"] = {"rounds": 8, "ratio": 1.04, "interval": [1.02, 1.06],
                                         "verdict": "ours faster"}
        table, s = mt.summarize(self.r, bench, self.tuned)
        paired = next(x for x in table if x["folder"] == self.r[3]["folder"])
        self.assertAlmostEqual(paired["ratio"], 1.04)
        self.assertAlmostEqual(paired["ratio_once"], 0.45 / 0.50)
        self.assertEqual(paired["ratio_interval"], [1.02, 1.06])
        _, before = mt.summarize(self.r, self.bench, self.tuned)
        self.assertEqual(s["won"], before["won"] + 1)
        text = mt.format_report(table, s)
        self.assertIn("1.040 [1.020-1.060]", text)
        self.assertIn("with its 95% interval in brackets", text)
        self.assertNotIn("tflops_from_rounds", paired, "no medians in these rounds: the single pass's TF/s stay")

    def test_the_summary_says_which_wins_and_losses_the_interval_settles(self):
        # Ratios 1.05, 0.76, 1.04, 0.9, 1.1 in one pass each; rounds give three of them intervals.
        bench = {"entries": [dict(e) for e in self.bench["entries"]]}
        bench["entries"][4]["paired"] = {"rounds": 8, "ratio": 1.1, "interval": [1.05, 1.15]}   # a win, settled
        bench["entries"][1]["paired"] = {"rounds": 8, "ratio": 0.76, "interval": [0.70, 0.80]}  # a loss, settled
        bench["entries"][3]["paired"] = {"rounds": 16, "ratio": 0.93, "interval": [0.90, 0.97]}  # a loss, not
        table, s = mt.summarize(self.r, bench, self.tuned)
        self.assertEqual((s["won"], s["won_settled"]), (3, 1))
        self.assertEqual((len(s["lost"]), s["lost_settled"]), (2, 1))
        text = mt.format_report(table, s)
        self.assertIn("won by >= 3%: 3 of 5 shapes compared with cuBLASLt; 1 of them with the whole interval at >= 1.03",
                      text)
        self.assertIn("lost by more than 5%%: 2 (%s 0.760 [0.700-0.800], %s 0.930 [0.900-0.970]); 1 of them with the "
                      "whole interval below 0.95" % (self.r[1]["folder"], self.r[3]["folder"]), text)
        # The wins read from one pass and the loss whose interval reaches 0.95, with the --only that
        # measures them again.
        unsettled = [self.r[0]["folder"], self.r[2]["folder"], self.r[3]["folder"]]
        self.assertEqual(sorted(s["unsettled"]), sorted(unsettled))
        self.assertIn("verdicts their interval does not settle (3): measure them again with more rounds: --bench-only "
                      "--rounds-max 32 --only '%s'" % mt.only_pattern(s["unsettled"]), text)
        # No losses and every win settled: no line for either.
        text = mt.format_report(*mt.summarize(self.r[4:5], bench, self.tuned))
        self.assertNotIn("lost by more than", text)
        self.assertNotIn("does not settle", text)

    def test_paired_rounds_give_the_throughputs(self):
        # The rounds' medians replace the single measurements' TF/s (ours ran first there, on a
        # cooler GPU), and the % of peak follows them.
        bench = {"entries": [dict(e) for e in self.bench["entries"]]}
        e = bench["entries"][3]
        once_ours, once_vendor = e["now"]["tflops"], e["vendor"]["tflops"]
        e["paired"] = {"rounds": 8, "ratio": 0.9, "interval": [0.85, 0.95], "ours_median_ms": 0.50 * 1.2,
                       "vendor_median_ms": 0.45 * 0.9}
        table, _ = mt.summarize(self.r, bench, self.tuned)
        t = next(x for x in table if x["folder"] == self.r[3]["folder"])
        self.assertTrue(t["tflops_from_rounds"])
        self.assertAlmostEqual(t["ours_tflops"], once_ours / 1.2)
        self.assertAlmostEqual(t["vendor_tflops"], once_vendor / 0.9)
        self.assertAlmostEqual(t["pct"], 100.0 * t["ours_tflops"] / e["peak_tflops"])

    def test_a_pass_and_its_tuning_certification_with_different_verdicts_are_both_shown(self):
        bench = {"entries": [dict(e) for e in self.bench["entries"]]}
        e = bench["entries"][3]
        e["paired"] = {"rounds": 16, "ratio": 1.12, "interval": [1.004, 1.166]}

        def note_with(cert_ratio, cert_interval, status="ok"):
            e["certification"] = {"processes": 4, "vendor": {"ratio": cert_ratio, "ratio_interval": cert_interval}}
            e["status"] = status
            table, s = mt.summarize(self.r, bench, self.tuned)
            return mt.format_report(table, s)

        # The pass says won, the tuning a tie: the row shows both, and the legend says what it is.
        text = note_with(1.007, [0.958, 1.083])
        self.assertIn("tuning certified 1.007 [0.958-1.083]", text)
        self.assertIn("tuning certified = the ratio autotune-loop certified", text)
        # The same verdict (both won), a certification whose interval holds the pass, or a kernel
        # changed since the tuning (MISMATCH): nothing to add.
        for args in ((1.05, [1.04, 1.06]), (1.01, [0.99, 1.13]), (1.007, [0.958, 1.083], "MISMATCH")):
            text = note_with(*args)
            self.assertNotIn("tuning certified", text, args)

    def test_no_bench_yet(self):
        table, s = mt.summarize(self.r, None, self.tuned)
        self.assertEqual({t["state"] for t in table}, {"not measured", "not tuned"})
        self.assertIsNone(s["small"])
        self.assertEqual(s["large"], {})
        mt.format_report(table, s)

    def test_geomean(self):
        self.assertAlmostEqual(mt.geomean([2.0, 8.0]), 4.0)
        self.assertIsNone(mt.geomean([]))


if __name__ == "__main__":
    unittest.main(verbosity=2)
