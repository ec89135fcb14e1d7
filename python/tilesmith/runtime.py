"""Running a tuned package on PyTorch tensors: load() and Package.matmul / explain.

Every call goes to libtilesmith_gemm, which decides per problem between the tuned kernel
and the vendor library (docs/gemm-library.md); this module only turns tensors into the
C API's problem, pointers and stream, and refuses what the library cannot serve before
anything is enqueued.
"""

import ctypes
import json
import os
import threading
from dataclasses import dataclass

import torch

from . import _clib
from .errors import TilesmithError
from .record import TORCH_DTYPES, storage_of


@dataclass(frozen=True)
class Decision:
    path: str  # exact, nearest, vendor, foreign-device
    line: str  # the library's one-line reason

    def __str__(self):
        return self.line


def check_status(status, what):
    """Raises TilesmithError with the library's message for a status other than TS_OK."""
    if status != _clib.TS_OK:
        raise TilesmithError(f"{what}: {_clib.last_error()}", _clib.STATUS_NAMES.get(status, str(status)))


def _problem(m, n, k, dtype, layout, epilogue):
    if dtype not in _clib.DTYPES:
        raise TilesmithError(f"dtype {dtype!r}: the library takes fp32, fp16 or bf16")
    if len(layout) != 2 or any(c not in "NT" for c in layout):
        raise TilesmithError(f"layout {layout!r}: two letters N or T (A's storage, then B's)")
    if epilogue not in _clib.EPILOGUES:
        raise TilesmithError(f"epilogue {epilogue!r}: one of {', '.join(_clib.EPILOGUES)}")
    p = _clib.GemmProblem()
    check_status(_clib.library().ts_gemm_problem_init(ctypes.byref(p), m, n, k, _clib.DTYPES[dtype]),
           f"problem {m}x{n}x{k} {dtype}")
    p.a_layout = _clib.COL_MAJOR if layout[0] == "T" else _clib.ROW_MAJOR
    p.b_layout = _clib.COL_MAJOR if layout[1] == "T" else _clib.ROW_MAJOR
    p.epilogue = _clib.EPILOGUES[epilogue]
    return p


class Package:
    """A tuned package opened on CUDA devices (one library handle per device, opened on
    first use). Use load() to make one."""

    def __init__(self, path, allow_foreign_device=False, log=False):
        self.path = os.fspath(path)
        if not os.path.isdir(self.path):
            raise TilesmithError(f"package {self.path}: no such folder (write one with "
                                 f"`autotune-loop export --results DIR --out PKG`)")
        self._options = _clib.GemmOptions()
        _clib.library().ts_gemm_options_init(ctypes.byref(self._options))
        self._options.allow_foreign_device = int(bool(allow_foreign_device))
        self._options.log_to_stderr = int(bool(log))
        self._handles = {}
        self._problems = {}  # cached C problems, by (m, n, k, dtype, layout, epilogue)
        self._lock = threading.Lock()
        self._tuned = None

    def handle(self, device):
        h = self._handles.get(device)
        if h is None:
            with self._lock:
                h = self._handles.get(device)
                if h is None:
                    out = ctypes.c_void_p()
                    check_status(_clib.library().ts_gemm_create(ctypes.byref(out), self.path.encode(), device,
                                                          ctypes.byref(self._options)),
                           f"package {self.path} on CUDA device {device}")
                    self._handles[device] = h = out
        return h

    def problem(self, m, n, k, dtype, layout="NT", epilogue="none"):
        key = (m, n, k, dtype, layout, epilogue)
        p = self._problems.get(key)
        if p is None:
            p = self._problems[key] = _problem(m, n, k, dtype, layout, epilogue)
        return p

    def tuned_problems(self):
        """The problems tuned.json lists (as written by export), for deciding which modules
        a patch may route here. The library itself validates the package at load()."""
        if self._tuned is None:
            with open(os.path.join(self.path, "tuned.json")) as f:
                self._tuned = [e["problem"] for e in json.load(f).get("problems", [])]
        return self._tuned

    def explain(self, m, n, k, dtype="bf16", layout="NT", bias=False, device=None):
        """The library's decision for a problem, without running it."""
        dev = torch.cuda.current_device() if device is None else device
        path = ctypes.c_int()
        buf = ctypes.create_string_buffer(512)
        check_status(_clib.library().ts_gemm_explain(self.handle(dev), ctypes.byref(self.problem(
            m, n, k, dtype, layout, "bias_col" if bias else "none")), ctypes.byref(path), buf, len(buf)),
            f"explain {m}x{n}x{k} {dtype} {layout}")
        return Decision(_clib.PATHS.get(path.value, str(path.value)), buf.value.decode(errors="replace"))

    def launcher(self, m, n, k, dtype, layout, epilogue, device):
        """A callable (a_ptr, b_ptr, c_ptr, bias_ptr, stream) -> ts_status for one problem on
        one device, with the handle, the problem and the C function looked up once: what a
        patched layer calls on every forward, where Python's per-call cost is the overhead."""
        handle, problem, gemm = self.handle(device), ctypes.byref(self.problem(m, n, k, dtype, layout, epilogue)), \
            _clib.library().ts_gemm

        def launch(a, b, c, bias, stream):
            return gemm(handle, problem, a, b, c, bias, stream)
        return launch

    def matmul(self, a, b, bias=None, out=None):
        """a @ b (+ bias, N entries added to every row) on the current CUDA stream. a is
        [..., M, K] (dense row-major, or a 2-D column-major view such as x.t()), b is [K, N]
        (dense row-major, or W.t() of a contiguous [N, K] weight)."""
        m, n, k, dtype, layout = _operands(a, b)
        epilogue = "none"
        if bias is not None:
            _check_tensor(bias, "bias", a)
            if bias.dim() != 1 or bias.shape[0] != n or not bias.is_contiguous():
                raise TilesmithError(f"bias: a contiguous vector of N = {n} entries, got shape {tuple(bias.shape)} "
                                     f"strides {tuple(bias.stride())}")
            epilogue = "bias_col"
        shape = tuple(a.shape[:-1]) + (n,)
        if out is None:
            out = torch.empty(shape, dtype=a.dtype, device=a.device)
        else:
            _check_tensor(out, "out", a)
            if tuple(out.shape) != shape or not out.is_contiguous():
                raise TilesmithError(f"out: a contiguous tensor of shape {shape}, got {tuple(out.shape)} "
                                     f"strides {tuple(out.stride())}")
        if m == 0 or n == 0:
            return out
        if k == 0:
            return out.zero_() if bias is None else out.copy_(bias.expand(shape))
        dev = a.device.index if a.device.index is not None else torch.cuda.current_device()
        stream = current_stream(dev)
        check_status(_clib.library().ts_gemm(self.handle(dev), ctypes.byref(self.problem(m, n, k, dtype, layout, epilogue)),
                                       a.data_ptr(), b.data_ptr(), out.data_ptr(),
                                       bias.data_ptr() if bias is not None else None, stream),
               f"gemm {m}x{n}x{k} {dtype} {layout}")
        return out

    def close(self):
        """Releases the library handles (after the streams using them are synchronized)."""
        with self._lock:
            for h in self._handles.values():
                _clib.library().ts_gemm_destroy(h)
            self._handles.clear()

    def __repr__(self):
        return f"tilesmith.Package({self.path!r})"


def current_stream(device):
    """The raw cudaStream_t PyTorch enqueues on for `device`: the private accessor where this
    PyTorch has it (no Stream object is built, which costs microseconds per call)."""
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    return raw(device) if raw is not None else torch.cuda.current_stream(device).cuda_stream


def _check_tensor(t, name, like):
    if not isinstance(t, torch.Tensor):
        raise TilesmithError(f"{name}: a torch.Tensor, got {type(t).__name__}")
    if not t.is_cuda:
        raise TilesmithError(f"{name} is on {t.device}: tilesmith runs CUDA tensors only (move it with .cuda())")
    if t.device != like.device:
        raise TilesmithError(f"{name} is on {t.device}, the input on {like.device}: put both on one device")
    if t.dtype != like.dtype:
        raise TilesmithError(f"{name} has dtype {t.dtype}, the input {like.dtype}: the library takes one dtype for A, B and C")


def _operands(a, b):
    """(m, n, k, dtype, layout) of a @ b, or the reason the library cannot take them. The
    device is checked last, so every other message can be shown without a GPU."""
    for t, name in ((a, "a"), (b, "b")):
        if not isinstance(t, torch.Tensor):
            raise TilesmithError(f"{name}: a torch.Tensor, got {type(t).__name__}")
    if a.dtype not in TORCH_DTYPES:
        raise TilesmithError(f"a has dtype {a.dtype}: the library takes torch.float32, float16 or bfloat16")
    if b.dtype != a.dtype:
        raise TilesmithError(f"b has dtype {b.dtype}, a {a.dtype}: the library takes one dtype for A, B and C")
    if a.dim() < 2 or b.dim() != 2:
        raise TilesmithError(f"a must be [..., M, K] and b [K, N]; got {tuple(a.shape)} and {tuple(b.shape)} "
                             f"(batched b is not served)")
    k = a.shape[-1]
    if b.shape[0] != k:
        raise TilesmithError(f"a is {tuple(a.shape)} and b {tuple(b.shape)}: a's last size must equal b's first")
    m, n = a.numel() // k if k else 0, b.shape[1]
    la, lb = storage_of(a, m, k), storage_of(b, k, n)
    if la is None or lb is None:
        which = "a" if la is None else "b"
        t = a if la is None else b
        raise TilesmithError(f"{which} is a strided view (shape {tuple(t.shape)}, strides {tuple(t.stride())}): "
                             f"the library takes densely packed row- or column-major operands; "
                             f"call .contiguous() first")
    _check_tensor(a, "a", a)
    _check_tensor(b, "b", a)
    return m, n, k, TORCH_DTYPES[a.dtype], la + lb


def load(path, allow_foreign_device=False, log=False):
    """Opens a package written by `autotune-loop export`. The library checks it now, on the
    current CUDA device, so a bad package fails here with the library's message."""
    pkg = Package(path, allow_foreign_device=allow_foreign_device, log=log)
    pkg.handle(torch.cuda.current_device() if torch.cuda.is_available() else 0)
    return pkg
