"""patch(model, package): route nn.Linear layers through the tuned package where it wins.

A patched Linear has a launch plan for each token count (M) whose decision, asked of the
library, is one of the paths given (by default "exact": a kernel tuned for this very
problem that beat the vendor library by more than the noise at tuning). Every other call
runs the layer's own F.linear, so a patched model is not slower than the unpatched one
beyond one dictionary lookup per call; a layer with no such M is not patched at all.
"""

import weakref

import torch

from .errors import TilesmithError
from .record import TORCH_DTYPES
from .runtime import Package, check_status, current_stream, load

_ATTR = "_tilesmith_route"
_left_alone = weakref.WeakKeyDictionary()  # Linear -> why the last patch() left it alone, for explain()
_routes = {}  # id -> _Route, for the custom op (which takes plain values)
_op = None
_EXACT_ONLY = frozenset({"exact"})


class _Plan:
    """One M's launch through the library: everything but the pointers and the stream
    fixed in advance, and the cheap checks that the call is the problem it was made for."""

    def __init__(self, route, m, launch):
        self.route, self.m, self.launch = route, m, launch

    def __call__(self, x, weight, bias):
        r = self.route
        out = x.new_empty(x.shape[:-1] + (r.n,))
        status = self.launch(x.data_ptr(), weight.data_ptr(), out.data_ptr(),
                             bias.data_ptr() if bias is not None else None, current_stream(r.device))
        if status:
            check_status(status, f"{r.name}: gemm {self.m}x{r.n}x{r.k}")
        return out


class _Route:
    """Where one patched Linear's calls go, by M (the rows of its input). With the default
    paths ("exact") the Ms that go to the library are known at patch time (the tuned Ms
    whose kernel won), so every other call costs one dictionary lookup before the layer's
    own F.linear; other paths are decided per M on first sight and cached."""

    def __init__(self, name, module, package, paths, device):
        self.name, self.package, self.paths = name, package, frozenset(paths)
        self.n, self.k = module.out_features, module.in_features
        self.dtype, self.device = module.weight.dtype, device
        self.bias = module.bias is not None
        self.exact_only = self.paths <= _EXACT_ONLY
        self.plans = {}  # m -> _Plan, or None: the layer's own forward
        self.reasons = {}  # m -> the library's decision line, for explain()
        self.op_calls = 0  # calls through the custom op (torch.compile's graphs)
        self.id = id(self)

    def decide(self, m):
        """The plan for M (None: torch runs it), asking the library once."""
        if m in self.plans:
            return self.plans[m]
        plan = None
        if m > 0:
            dec = self.package.explain(m, self.n, self.k, TORCH_DTYPES[self.dtype], "NT", self.bias, device=self.device)
            self.reasons[m] = (dec.path in self.paths, f"{dec.path}: {dec.line}")
            if dec.path in self.paths:
                plan = _Plan(self, m, self.package.launcher(m, self.n, self.k, TORCH_DTYPES[self.dtype], "NT",
                                                            "bias_col" if self.bias else "none", self.device))
        self.plans[m] = plan
        return plan

    def plan_for(self, x, weight):
        """The plan for this call, or None when torch runs it: a plan only for an input of
        the weight's dtype on its device, both densely packed."""
        m = x.numel() // self.k
        plan = self.plans.get(m) if self.exact_only else self.decide(m)
        if plan is None or x.dtype != self.dtype or not x.is_contiguous() or not weight.is_contiguous() \
                or x.get_device() != self.device:
            return None
        return plan

    def __call__(self, x, weight, bias):
        self.op_calls += 1
        plan = self.plan_for(x, weight)
        if plan is None:
            return torch.nn.functional.linear(x, weight, bias)
        return plan(x, weight, bias)


def _custom_op():
    """tilesmith::linear as a torch.library custom op (PyTorch 2.4 and later), so
    torch.compile sees one opaque call with a known output shape instead of tracing ctypes."""
    global _op
    if _op is None and hasattr(torch.library, "custom_op"):
        from typing import Optional

        @torch.library.custom_op("tilesmith::linear", mutates_args=())
        def linear(x: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor], route: int) -> torch.Tensor:
            return _routes[route](x, weight, bias)

        @linear.register_fake
        def _(x, weight, bias, route):
            return x.new_empty(tuple(x.shape[:-1]) + (weight.shape[0],))

        _op = linear
    return _op


def _compiling_check():
    """torch.compiler.is_compiling where this PyTorch has it (looked up once: the forward
    calls it on every call), else a function that says no."""
    compiler = getattr(torch, "compiler", None)
    return getattr(compiler, "is_compiling", None) or (lambda: False)


def _patched_forward(module, route):
    """The patched Linear's forward, written flat: in a decode step every Linear call's CPU
    time adds to the step's, so each lookup here is one a torch call would not make."""
    op, compiling = _custom_op(), _compiling_check()
    params = module._parameters  # a dict lookup per call instead of nn.Module.__getattr__
    linear, plans, k, n = torch.nn.functional.linear, route.plans, route.k, route.n
    dtype, device, exact_only = route.dtype, route.device, route.exact_only
    raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None) or current_stream

    def forward(x):
        weight, bias = params["weight"], params["bias"]
        if op is not None and compiling():
            return op(x, weight, bias, route.id)
        plan = plans.get(x.numel() // k) if exact_only else route.decide(x.numel() // k)
        if plan is None or x.dtype != dtype or not x.is_contiguous() or x.get_device() != device \
                or not weight.is_contiguous():
            return linear(x, weight, bias)
        out = x.new_empty(x.shape[:-1] + (n,))
        status = plan.launch(x.data_ptr(), weight.data_ptr(), out.data_ptr(),
                             None if bias is None else bias.data_ptr(), raw_stream(device))
        if status:
            check_status(status, f"{route.name}: gemm {plan.m}x{n}x{k}")
        return out
    return forward


def _serves(package, module):
    """Why the package cannot serve this Linear at any M, or None when it can. The shape
    is checked first: a layer the package was not tuned for is named as such on any device."""
    if module.weight.dtype not in TORCH_DTYPES:
        return f"weight dtype {module.weight.dtype} is not fp32, fp16 or bf16"
    dtype = TORCH_DTYPES[module.weight.dtype]
    epilogue = "bias_col" if module.bias is not None else "none"
    if not any(_is_linear_problem(p, module.out_features, module.in_features, dtype, epilogue)
               for p in package.tuned_problems()):
        return (f"no tuned problem with N={module.out_features}, K={module.in_features}, {dtype}, layout NT, "
                f"epilogue {epilogue}")
    if not module.weight.is_cuda:
        return f"weight is on {module.weight.device}: tilesmith runs CUDA tensors only"
    return None


def _tuned_ms(package, module):
    dtype = TORCH_DTYPES[module.weight.dtype]
    epilogue = "bias_col" if module.bias is not None else "none"
    return sorted({p["m"] for p in package.tuned_problems()
                   if _is_linear_problem(p, module.out_features, module.in_features, dtype, epilogue)})


def _is_linear_problem(p, n, k, dtype, epilogue):
    """Whether a tuned.json problem is Y = X W^T + bias for a [n, k] weight (any M)."""
    return (p.get("n"), p.get("k"), p.get("dtype"), p.get("epilogue", "none"), p.get("layout", "NN"),
            p.get("c_layout", "row"), p.get("alpha", 1), p.get("beta", 0), p.get("c_dtype", dtype)) == \
        (n, k, dtype, epilogue, "NT", "row", 1, 0, dtype)


def patch(model, package, paths=("exact",)):
    """Routes each nn.Linear whose (N, K, dtype, bias) the package was tuned for through it;
    leaves the others alone. package: a Package or a folder. paths: which of the library's
    decisions to take ("exact", "nearest", "vendor"); the rest run the layer's own forward.
    Returns {module name: None if patched, else why not}. unpatch(model) undoes it."""
    if not isinstance(model, torch.nn.Module):
        raise TilesmithError(f"patch: model must be a torch.nn.Module, got {type(model).__name__}")
    bad = set(paths) - {"exact", "nearest", "vendor", "foreign-device"}
    if bad:
        raise TilesmithError(f"patch: unknown path(s) {sorted(bad)}: exact, nearest, vendor or foreign-device")
    if not isinstance(package, Package):
        package = load(package)
    report = {}
    for name, module in model.named_modules():
        if not isinstance(module, torch.nn.Linear):
            continue
        if hasattr(module, _ATTR):
            report[name] = "already patched (unpatch first)"
            continue
        why = _serves(package, module)
        route = None
        if why is None:
            route = _Route(name, module, package, paths, module.weight.get_device())
            if route.exact_only:
                # Plans for the tuned Ms now; a layer none of whose kernels won keeps its forward.
                for m in _tuned_ms(package, module):
                    route.decide(m)
                if not any(route.plans.values()):
                    why = "no kernel of the package beat the vendor for it: " + "; ".join(
                        f"M={m} {line}" for m, (_, line) in sorted(route.reasons.items()))
        report[name] = why
        if why is not None:
            _left_alone[module] = why
        else:
            _left_alone.pop(module, None)
            _routes[route.id] = route
            setattr(module, _ATTR, route)
            module.forward = _patched_forward(module, route)
    return report


def unpatch(model):
    """Restores every Linear patch() routed; returns how many."""
    count = 0
    for _, module in model.named_modules():
        route = getattr(module, _ATTR, None)
        if route is not None:
            del module.forward  # the instance attribute: the class's forward shows again
            delattr(module, _ATTR)
            _routes.pop(route.id, None)
            count += 1
    return count


def explain(model):
    """One line per Linear of a patched model: left alone and why, or the decision taken
    for every (M, dtype) it has run so far."""
    lines = []
    for name, module in model.named_modules():
        if not isinstance(module, torch.nn.Linear):
            continue
        route = getattr(module, _ATTR, None)
        head = f"{name or '(model)'} [N={module.out_features}, K={module.in_features}]"
        if route is None:
            why = _left_alone.get(module)
            lines.append(f"{head}: not patched" + (f" ({why})" if why else ""))
            continue
        lines.append(f"{head}: patched; every M not listed runs torch's F.linear")
        for m, (taken, why) in sorted(route.reasons.items()):
            lines.append(f"  M={m}: {'tilesmith' if taken else 'torch'} ({why})")
    return "\n".join(lines)
