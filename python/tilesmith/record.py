"""record_gemms: one forward pass with every GEMM call noted (shape, dtype, layout, bias,
and the module that made it), returned as a ProblemSet.

Calls are seen through a TorchFunctionMode, so nn.Linear (which calls F.linear), F.linear
and torch.matmul / Tensor.__matmul__ / torch.mm written directly in a forward are all caught
in one place; forward hooks on every submodule say whose forward is running.
"""

import torch
from torch.overrides import TorchFunctionMode

from .errors import TilesmithError
from .problem_set import GemmKey, ProblemSet

TORCH_DTYPES = {torch.float32: "fp32", torch.float16: "fp16", torch.bfloat16: "bf16"}

_LINEAR = {torch.nn.functional.linear}
_MATMUL = {torch.matmul, torch.mm, torch.Tensor.matmul, torch.Tensor.__matmul__, torch.Tensor.mm}
# GEMM-like calls the library does not take (batched, or with an added matrix): reported as skipped.
_OTHER = {torch.bmm, torch.baddbmm, torch.addmm, torch.Tensor.bmm, torch.Tensor.addmm}


def storage_of(t, rows, cols):
    """'N' when the 2-D view (rows x cols) of t is dense row-major, 'T' when dense
    column-major, None otherwise (the library takes densely packed operands only)."""
    if t.dim() == 2:
        if rows <= 1 or cols <= 1:
            return "N" if t.is_contiguous() else ("T" if t.t().is_contiguous() else None)
        if t.stride() == (cols, 1):
            return "N"
        if t.stride() == (1, rows):
            return "T"
        return None
    # More than two dimensions: the leading ones fold into the rows only when contiguous.
    return "N" if t.is_contiguous() else None


def gemm_of(func, args, kwargs):
    """(GemmKey, op) for a call the tuner can take, (None, why) for one it cannot, None for
    a call that is not a GEMM."""
    kwargs = kwargs or {}
    if func in _LINEAR:
        x, w = args[0], args[1] if len(args) > 1 else kwargs.get("weight")
        bias = args[2] if len(args) > 2 else kwargs.get("bias")
        op, b_rows, b_cols = "linear", None, None
    elif func in _MATMUL:
        x, w = args[0], args[1] if len(args) > 1 else kwargs.get("other", kwargs.get("mat2"))
        bias, op = None, "matmul"
    elif func in _OTHER:
        return None, f"{getattr(func, '__name__', func)} (batched or with an added matrix) is not a GEMM the library takes"
    else:
        return None
    if not isinstance(x, torch.Tensor) or not isinstance(w, torch.Tensor):
        return None, f"{op} on non-tensors"
    if x.dtype not in TORCH_DTYPES or w.dtype != x.dtype:
        return None, f"{op} with dtypes {x.dtype}/{w.dtype} (the library takes fp32, fp16 or bf16, both alike)"
    if x.dim() < 2 or w.dim() != 2:
        return None, f"{op} of a {tuple(x.shape)} and a {tuple(w.shape)} tensor (batched or a vector: not a single GEMM)"
    k = x.shape[-1]
    m = x.numel() // k if k else 0
    if op == "linear":
        n = w.shape[0]
        # Y = X W^T with W stored [out, in]: B = W^T is K x N column-major when W is contiguous.
        b_layout = "T" if w.is_contiguous() else ("N" if w.t().is_contiguous() else None)
    else:
        if w.shape[0] != k:
            return None, f"matmul of {tuple(x.shape)} by {tuple(w.shape)}: inner sizes differ"
        n = w.shape[1]
        b_layout = storage_of(w, k, n)
    a_layout = storage_of(x, m, k)
    if m == 0 or n == 0 or k == 0:
        return None, f"{op} with an empty dimension (M={m}, N={n}, K={k})"
    if a_layout is None or b_layout is None:
        return None, f"{op} on a strided view (strides {tuple(x.stride())}, {tuple(w.stride())}): not densely packed"
    epilogue = "none"
    if bias is not None:
        if not isinstance(bias, torch.Tensor) or bias.dim() != 1 or bias.shape[0] != n:
            return None, f"{op} with a bias of shape {tuple(getattr(bias, 'shape', ()))} (the library adds one of N entries)"
        epilogue = "bias_col"
    return GemmKey(int(m), int(n), int(k), TORCH_DTYPES[x.dtype], a_layout + b_layout, epilogue), op


class _Recorder(TorchFunctionMode):
    def __init__(self, problems, stack):
        super().__init__()
        self.problems, self.stack = problems, stack

    def __torch_function__(self, func, types, args=(), kwargs=None):
        seen = gemm_of(func, args, kwargs)
        if seen is not None:
            key, what = seen
            # Named after the Linear that ran it, or after the op inside the forward that called it.
            path, is_linear = self.stack[-1] if self.stack else ("", False)
            if key is None:
                self.problems.skipped.append((path, getattr(func, "__name__", str(func)), what))
            else:
                self.problems.add(key, path if is_linear or not path else f"{path}.{what}", what)
        return func(*args, **(kwargs or {}))


def record_gemms(model, *example_inputs, name=None, **example_kwargs):
    """Runs model(*example_inputs, **example_kwargs) once under torch.no_grad() and returns
    the ProblemSet of the GEMMs it ran (write it with .write(path) for
    `autotune-loop --problems`). Calls the library cannot take (batched matmuls, other
    dtypes, strided views) are listed in .skipped with the reason."""
    if not isinstance(model, torch.nn.Module):
        raise TilesmithError(f"record_gemms: model must be a torch.nn.Module, got {type(model).__name__}")
    problems = ProblemSet(name=name or type(model).__name__,
                          source=f"recorded by tilesmith.record_gemms from {type(model).__name__} "
                                 f"with inputs {[tuple(t.shape) for t in example_inputs if isinstance(t, torch.Tensor)]}")
    stack, handles = [], []

    def enter(path):
        def hook(module, inputs):
            stack.append((path, isinstance(module, torch.nn.Linear)))  # returns None: a pre-hook's result would replace the inputs
        return hook

    def leave(module, inputs, output):
        stack.pop()  # returns None: a forward hook's result would replace the output

    for path, module in model.named_modules():
        handles.append(module.register_forward_pre_hook(enter(path)))
        handles.append(module.register_forward_hook(leave))
    try:
        with torch.no_grad(), _Recorder(problems, stack):
            model(*example_inputs, **example_kwargs)
    finally:
        for h in handles:
            h.remove()
    return problems
