"""tilesmith for PyTorch: record a model's GEMMs, tune them with autotune-loop, and run the
model on the tuned package (docs/pytorch.md).

    problems = tilesmith.record_gemms(model, example_input)      # 1. what the model runs
    problems.write("model.json")                                 #    autotune-loop --problems model.json
    tilesmith.patch(model, "pkg")                                # 3. after autotune-loop export --out pkg
"""

from .errors import TilesmithError
from .problem_set import GemmKey, ProblemSet
from .record import record_gemms
from .runtime import Decision, Package
from .runtime import load as _load
from .patch import explain as _explain_model
from .patch import patch, unpatch

__version__ = "0.1.0"
__all__ = ["TilesmithError", "GemmKey", "ProblemSet", "record_gemms", "Decision", "Package", "load", "matmul",
           "patch", "unpatch", "explain"]

_default = None


def load(path, allow_foreign_device=False, log=False):
    """Opens a package (autotune-loop export's folder) and makes it the one matmul() uses."""
    global _default
    _default = _load(path, allow_foreign_device=allow_foreign_device, log=log)
    return _default


def matmul(a, b, bias=None, out=None, package=None):
    """a @ b (+ bias) through the package given, or the one load() opened last."""
    pkg = package or _default
    if pkg is None:
        raise TilesmithError("tilesmith.matmul: no package: call tilesmith.load(PKG) first or pass package=")
    return pkg.matmul(a, b, bias=bias, out=out)


def explain(target=None, *args, **kwargs):
    """explain(model): the dispatch of every Linear of a patched model, one line each.
    explain(m, n, k, dtype="bf16", layout="NT", bias=False, package=None): the library's
    decision for one problem."""
    import torch
    if isinstance(target, torch.nn.Module):
        return _explain_model(target)
    pkg = kwargs.pop("package", None) or _default
    if pkg is None:
        raise TilesmithError("tilesmith.explain: no package: call tilesmith.load(PKG) first or pass package=")
    return pkg.explain(target, *args, **kwargs)
