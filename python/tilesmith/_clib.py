"""ctypes binding of libtilesmith_gemm's C API (include/tilesmith/gemm.h).

ctypes rather than a compiled extension: the package then needs no compiler at install
time and works with any PyTorch version. The structs below mirror gemm.h field for field;
tests/python checks them against the header so the two cannot drift apart silently.
"""

import ctypes
import ctypes.util
import os
from pathlib import Path

# ts_status
TS_OK = 0
STATUS_NAMES = {0: "TS_OK", 1: "TS_INVALID_ARGUMENT", 2: "TS_PACKAGE_ERROR", 3: "TS_NOT_SUPPORTED",
                4: "TS_DEVICE_ERROR", 5: "TS_INTERNAL_ERROR"}
# ts_dtype
DTYPES = {"fp32": 0, "fp16": 1, "bf16": 2}
# ts_layout
ROW_MAJOR, COL_MAJOR = 0, 1
# ts_epilogue
EPILOGUES = {"none": 0, "bias_row": 1, "bias_col": 2, "relu": 3, "leaky_relu": 4, "gelu": 5, "bias_gelu": 6}
# ts_path
PATHS = {0: "exact", 1: "nearest", 2: "vendor", 3: "foreign-device"}


class GemmProblem(ctypes.Structure):
    _fields_ = [("m", ctypes.c_int64), ("n", ctypes.c_int64), ("k", ctypes.c_int64),
                ("dtype", ctypes.c_int), ("c_dtype", ctypes.c_int), ("accumulate", ctypes.c_int),
                ("a_layout", ctypes.c_int), ("b_layout", ctypes.c_int), ("c_layout", ctypes.c_int),
                ("alpha", ctypes.c_double), ("beta", ctypes.c_double),
                ("epilogue", ctypes.c_int), ("epilogue_slope", ctypes.c_double)]


LOG_FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int, ctypes.c_char_p)


class GemmOptions(ctypes.Structure):
    _fields_ = [("allow_foreign_device", ctypes.c_int), ("cache_dir", ctypes.c_char_p),
                ("log", LOG_FN), ("log_user", ctypes.c_void_p), ("log_to_stderr", ctypes.c_int)]


class LibraryNotFound(OSError):
    pass


def _candidates():
    """Where the library may be, in the order tried: the environment variable, a copy put in
    this package's lib/ folder, the build folder of the source checkout this package sits in
    (used from the source tree), then the system's search path (cmake --install)."""
    here = Path(__file__).resolve().parent
    env = os.environ.get("TILESMITH_GEMM_LIBRARY")
    if env:
        yield Path(env), "TILESMITH_GEMM_LIBRARY"
        return  # a library named explicitly is the only one tried
    yield here / "lib" / "libtilesmith_gemm.so", "inside the package"
    repo = here.parent.parent
    if (repo / "gemmlib" / "CMakeLists.txt").exists():  # used from a source checkout, not installed
        build = os.environ.get("TILESMITH_BUILD_DIR", "build")
        yield repo / build / "gemmlib" / "libtilesmith_gemm.so", "the source checkout's build folder"
    found = ctypes.util.find_library("tilesmith_gemm")
    if found:
        yield Path(found), "the system's library path"
    yield Path("libtilesmith_gemm.so.0"), "the dynamic loader's search path"


def _declare(lib):
    c = ctypes
    P = c.POINTER
    sigs = {
        "ts_gemm_problem_init": (c.c_int, [P(GemmProblem), c.c_int64, c.c_int64, c.c_int64, c.c_int]),
        "ts_gemm_options_init": (c.c_int, [P(GemmOptions)]),
        "ts_gemm_create": (c.c_int, [P(c.c_void_p), c.c_char_p, c.c_int, P(GemmOptions)]),
        "ts_gemm_destroy": (c.c_int, [c.c_void_p]),
        "ts_gemm": (c.c_int, [c.c_void_p, P(GemmProblem), c.c_void_p, c.c_void_p, c.c_void_p, c.c_void_p,
                              c.c_void_p]),
        "ts_gemm_explain": (c.c_int, [c.c_void_p, P(GemmProblem), P(c.c_int), c.c_char_p, c.c_size_t]),
        "ts_last_error": (c.c_char_p, []),
        "ts_status_string": (c.c_char_p, [c.c_int]),
        "ts_path_string": (c.c_char_p, [c.c_int]),
        "ts_gemm_version": (c.c_char_p, []),
        "ts_gemm_built_with_cuda": (c.c_int, []),
    }
    for name, (res, args) in sigs.items():
        f = getattr(lib, name)
        f.restype, f.argtypes = res, args
    return lib


_lib = None


def library():
    """The loaded libtilesmith_gemm; raises LibraryNotFound listing every place tried."""
    global _lib
    if _lib is not None:
        return _lib
    tried = []
    for path, where in _candidates():
        if path.is_absolute() and not path.exists():
            tried.append(f"{path} ({where}: no such file)")
            continue
        try:
            _lib = _declare(ctypes.CDLL(str(path)))
            _lib.tilesmith_path = str(path)
            return _lib
        except (OSError, AttributeError) as e:
            tried.append(f"{path} ({where}: {e})")
    raise LibraryNotFound(
        "libtilesmith_gemm was not found; tried:\n  " + "\n  ".join(tried) +
        "\nBuild it (scripts/setup.sh builds build/gemmlib/libtilesmith_gemm.so) or install it "
        "(cmake --install build --prefix P), then set TILESMITH_GEMM_LIBRARY to the .so file.")


def last_error():
    return library().ts_last_error().decode(errors="replace")
