"""tilesmith.matmul and patch() on a GPU against PyTorch's own results (ctest label gpu).

The package comes from a short real tune of two nn.Linear-shaped bf16 problems (with and
without a bias) and autotune-loop export, unless TILESMITH_TEST_PACKAGE names one."""

import json
import os
import subprocess
import tempfile
import unittest

import torch

import tilesmith

BIN = os.environ.get("TILESMITH_BIN", "build/cli")
M, N, K = 64, 256, 512


def skip_reason():
    return None if torch.cuda.is_available() else "no CUDA device visible to PyTorch"


def tuned_package(work):
    given = os.environ.get("TILESMITH_TEST_PACKAGE")
    if given:
        return given
    problems = os.path.join(work, "set.json")
    json.dump({"name": "linear", "problems": [
        {"name": "plain", "m": M, "n": N, "k": K, "dtype": "bf16", "layout": "NT"},
        {"name": "biased", "m": M, "n": N, "k": K, "dtype": "bf16", "layout": "NT", "epilogue": "bias_col"}]},
        open(problems, "w"))
    results, pkg = os.path.join(work, "results"), os.path.join(work, "pkg")
    for cmd in ([os.path.join(BIN, "autotune-loop"), "--problems", problems, "--max-evals", "8", "--results", results],
                [os.path.join(BIN, "autotune-loop"), "export", "--results", results, "--out", pkg]):
        run = subprocess.run(cmd, capture_output=True, text=True)
        assert run.returncode == 0, f"{' '.join(cmd)}: {run.stdout[-2000:]}\n{run.stderr[-2000:]}"
    return pkg


def rel_err(got, want):
    return ((got.float() - want.float()).norm() / want.float().norm()).item()


class OnTheGpu(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.work = tempfile.mkdtemp()
        cls.pkg = tilesmith.load(tuned_package(cls.work))

    def operands(self, rows=M):
        torch.manual_seed(3)
        x = torch.randn(rows, K, device="cuda", dtype=torch.bfloat16)
        w = torch.randn(N, K, device="cuda", dtype=torch.bfloat16) / K ** 0.5
        b = torch.randn(N, device="cuda", dtype=torch.bfloat16)
        return x, w, b

    def test_matmul_matches_torch_with_and_without_bias(self):
        x, w, b = self.operands()
        self.assertLess(rel_err(tilesmith.matmul(x, w.t()), x @ w.t()), 1e-2)
        self.assertLess(rel_err(tilesmith.matmul(x, w.t(), bias=b), torch.nn.functional.linear(x, w, b)), 1e-2)
        out = torch.empty(M, N, device="cuda", dtype=torch.bfloat16)
        got = tilesmith.matmul(x.view(4, M // 4, K), w.t(), out=out.view(4, M // 4, N))
        self.assertEqual(got.data_ptr(), out.data_ptr())
        self.assertLess(rel_err(out, x @ w.t()), 1e-2)
        # A shape no tuned problem covers runs on the vendor library, and is still right.
        x2 = torch.randn(7, K, device="cuda", dtype=torch.bfloat16)
        self.assertLess(rel_err(tilesmith.matmul(x2, w.t()), x2 @ w.t()), 1e-2)
        self.assertIn(tilesmith.explain(M, N, K).path, ("exact", "vendor"))

    def test_cuda_argument_errors(self):
        x, w, b = self.operands()
        with self.assertRaisesRegex(tilesmith.TilesmithError, "b is on cpu"):
            tilesmith.matmul(x, w.t().cpu())
        with self.assertRaisesRegex(tilesmith.TilesmithError, "bias: a contiguous vector of N = 256"):
            tilesmith.matmul(x, w.t(), bias=b[:128])
        with self.assertRaisesRegex(tilesmith.TilesmithError, r"out: a contiguous tensor of shape \(64, 256\)"):
            tilesmith.matmul(x, w.t(), out=torch.empty(N, M, device="cuda", dtype=torch.bfloat16).t())
        with self.assertRaisesRegex(tilesmith.TilesmithError, "b has dtype torch.float16"):
            tilesmith.matmul(x, w.t().half())

    def test_patched_linear_matches_and_routes_by_the_rule(self):
        x, w, b = self.operands()
        for bias in (False, True):
            lin = torch.nn.Linear(K, N, bias=bias, device="cuda", dtype=torch.bfloat16)
            with torch.no_grad():
                lin.weight.copy_(w)
                if bias:
                    lin.bias.copy_(b)
                want = lin(x)
                # Every path taken: the call goes through the library whatever it decides.
                report = tilesmith.patch(lin, self.pkg, paths=("exact", "nearest", "vendor"))
                self.assertEqual(report, {"": None})
                self.assertIsNotNone(lin._tilesmith_route.plan_for(x, lin.weight))
                self.assertLess(rel_err(lin(x), want), 1e-2)
                self.assertLess(rel_err(lin(x[:5]), lin.__class__.forward(lin, x[:5])), 1e-2)
                self.assertEqual(tilesmith.unpatch(lin), 1)
                # The default: only an exact tuned kernel that beat the vendor; else untouched.
                report = tilesmith.patch(lin, self.pkg)
                decision = tilesmith.explain(M, N, K, bias=bias)
                self.assertEqual(report[""] is None, decision.path == "exact", (report, decision))
                self.assertLess(rel_err(lin(x), want), 1e-2)
                tilesmith.unpatch(lin)


if __name__ == "__main__":
    unittest.main()
