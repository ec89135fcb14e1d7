"""The package on tensors without a GPU: the ctypes binding against the C library, argument
errors, a tampered package refused with the library's message, and patch() leaving alone
what it cannot serve (python/tilesmith/_clib.py, runtime.py, patch.py)."""

import ctypes
import json
import os
import shutil
import subprocess
import tempfile
import unittest

import torch

import tilesmith
from tilesmith import _clib


def fixture_package(where):
    """The gemm_tiled package the C++ fixture writes (fp32, Y = X W^T at M = 16 for a 64 x 64
    weight, and for a 256 x 64 weight with a bias), checked there by the library's reader."""
    env = dict(os.environ, TILESMITH_PYTHON_PACKAGE_DIR=where)
    run = subprocess.run([os.environ["TILESMITH_PACKAGE_FIXTURE"]], env=env, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    return where


class Binding(unittest.TestCase):
    def test_the_structs_match_the_header(self):
        lib = _clib.library()
        p = _clib.GemmProblem()
        self.assertEqual(lib.ts_gemm_problem_init(ctypes.byref(p), 3, 5, 7, _clib.DTYPES["bf16"]), _clib.TS_OK)
        # Every field where gemm.h puts it: a shifted offset would read another field's bytes.
        self.assertEqual((p.m, p.n, p.k), (3, 5, 7))
        self.assertEqual((p.dtype, p.c_dtype, p.accumulate), (2, 2, 0))
        self.assertEqual((p.a_layout, p.b_layout, p.c_layout), (0, 0, 0))
        self.assertEqual((p.alpha, p.beta, p.epilogue, p.epilogue_slope), (1.0, 0.0, 0, 0.01))
        self.assertEqual(ctypes.sizeof(_clib.GemmProblem), 80)  # 3 int64, 6 enums, 2 doubles, enum + pad, double
        o = _clib.GemmOptions()
        o.allow_foreign_device, o.log_to_stderr = 7, 7
        self.assertEqual(lib.ts_gemm_options_init(ctypes.byref(o)), _clib.TS_OK)
        self.assertEqual((o.allow_foreign_device, o.cache_dir, o.log_to_stderr), (0, None, 0))
        self.assertEqual(lib.ts_gemm_version().decode(), tilesmith.__version__)
        self.assertEqual(lib.ts_status_string(2).decode(), "TS_PACKAGE_ERROR")

    def test_a_missing_library_names_every_place_tried(self):
        saved = os.environ.get("TILESMITH_GEMM_LIBRARY"), _clib._lib
        try:
            os.environ["TILESMITH_GEMM_LIBRARY"] = "/nonexistent/libtilesmith_gemm.so"
            _clib._lib = None
            with self.assertRaisesRegex(_clib.LibraryNotFound, "nonexistent.*TILESMITH_GEMM_LIBRARY"):
                _clib.library()
        finally:
            os.environ["TILESMITH_GEMM_LIBRARY"] = saved[0]
            _clib._lib = saved[1]


class WithFixturePackage(unittest.TestCase):
    """The fixture package, opened without a device (Package() checks nothing yet)."""

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp()
        cls.pkg = tilesmith.Package(fixture_package(os.path.join(cls.dir, "pkg")))

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir)


class Arguments(WithFixturePackage):
    def refused(self, pattern, *args, **kwargs):
        with self.assertRaisesRegex(tilesmith.TilesmithError, pattern):
            self.pkg.matmul(*args, **kwargs)

    def test_each_bad_argument_is_named(self):
        f = torch.randn
        self.refused(r"a: a torch.Tensor, got list", [[1.0]], f(1, 1))
        self.refused(r"a has dtype torch.int32.*float32, float16 or bfloat16",
                     torch.ones(4, 8, dtype=torch.int32), torch.ones(8, 2, dtype=torch.int32))
        self.refused(r"b has dtype torch.float16, a torch.float32", f(4, 8), f(8, 2).half())
        self.refused(r"batched b is not served", f(2, 4, 8), f(2, 8, 2))
        self.refused(r"a is \(4, 8\) and b \(6, 2\): a's last size must equal b's first", f(4, 8), f(6, 2))
        self.refused(r"a is a strided view.*call .contiguous\(\) first", f(8, 16)[:, ::2], f(8, 2))
        self.refused(r"b is a strided view", f(4, 8), f(8, 4)[:, ::2])
        self.refused(r"a is on cpu: tilesmith runs CUDA tensors only", f(4, 8), f(8, 2))

    def test_no_package_and_a_missing_folder(self):
        saved = tilesmith._default
        tilesmith._default = None
        try:
            with self.assertRaisesRegex(tilesmith.TilesmithError, r"call tilesmith.load\(PKG\) first"):
                tilesmith.matmul(torch.randn(2, 2), torch.randn(2, 2))
        finally:
            tilesmith._default = saved
        with self.assertRaisesRegex(tilesmith.TilesmithError, "no_such_pkg: no such folder.*autotune-loop export"):
            tilesmith.load(os.path.join(self.dir, "no_such_pkg"))


class Tampering(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.path = fixture_package(os.path.join(self.dir, "pkg"))

    def tearDown(self):
        shutil.rmtree(self.dir)

    def load_status(self):
        try:
            tilesmith.load(self.path)
            return "TS_OK", ""
        except tilesmith.TilesmithError as e:
            return e.status, str(e)

    def tamper(self, edit):
        tuned_path = os.path.join(self.path, "tuned.json")
        tuned = json.load(open(tuned_path))
        edit(tuned)
        json.dump(tuned, open(tuned_path, "w"))

    def test_a_tampered_tuned_json_is_refused_with_the_librarys_message(self):
        # Untouched, the package passes the library's checks: what stops it here is the
        # device (no GPU on a CI machine), or nothing on a GPU machine.
        status, _ = self.load_status()
        self.assertIn(status, ("TS_OK", "TS_DEVICE_ERROR"))

        self.tamper(lambda t: t["kernels"][0].update(binary="../elsewhere.cubin"))
        status, message = self.load_status()
        self.assertEqual(status, "TS_PACKAGE_ERROR")
        self.assertIn("'..'", message)
        self.assertIn(self.path, message)

        self.tamper(lambda t: t.update(schema="tilesmith.tuned/9"))
        status, message = self.load_status()
        self.assertEqual(status, "TS_PACKAGE_ERROR")
        self.assertIn("tilesmith.tuned/9", message)

    def test_a_tuned_json_that_is_not_json_is_refused(self):
        with open(os.path.join(self.path, "tuned.json"), "a") as f:
            f.write("}")
        status, message = self.load_status()
        self.assertEqual(status, "TS_PACKAGE_ERROR")
        self.assertIn("tuned.json", message)


class Patch(WithFixturePackage):
    def model(self):
        torch.manual_seed(1)
        return torch.nn.Sequential(torch.nn.Linear(64, 64, bias=False),  # the package's q_m16 shape
                                   torch.nn.Linear(64, 256),  # its up_m16 shape (with bias)
                                   torch.nn.ReLU(),
                                   torch.nn.Linear(256, 64, bias=True),  # not tuned
                                   torch.nn.Linear(64, 64).double())  # not a dtype the library takes

    def test_patch_leaves_what_it_cannot_serve_untouched(self):
        model = self.model()
        x = torch.randn(2, 8, 64)
        before = model[:4](x)
        report = tilesmith.patch(model, self.pkg)
        self.assertEqual(report["0"], "weight is on cpu: tilesmith runs CUDA tensors only")
        self.assertEqual(report["1"], "weight is on cpu: tilesmith runs CUDA tensors only")
        self.assertEqual(report["3"], "no tuned problem with N=64, K=256, fp32, layout NT, epilogue bias_col")
        self.assertIn("weight dtype torch.float64", report["4"])
        # Nothing was routed: the modules keep their own forward and give the same result.
        self.assertFalse(any("forward" in vars(m) for m in model))
        self.assertTrue(torch.equal(model[:4](x), before))
        self.assertEqual(tilesmith.unpatch(model), 0)
        self.assertIn("3 [N=64, K=256]: not patched (no tuned problem with N=64, K=256", tilesmith.explain(model))

    def test_patch_refuses_bad_arguments(self):
        with self.assertRaisesRegex(tilesmith.TilesmithError, "torch.nn.Module, got str"):
            tilesmith.patch("model", self.pkg)
        with self.assertRaisesRegex(tilesmith.TilesmithError, r"unknown path\(s\) \['fastest'\]"):
            tilesmith.patch(self.model(), self.pkg, paths=("exact", "fastest"))


if __name__ == "__main__":
    unittest.main()
