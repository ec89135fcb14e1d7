"""A problem-set file (docs/problem-sets.md) built from recorded GEMM calls.

One entry per distinct problem (M, N, K, dtype, layout, epilogue) with how often one
forward pass runs it, named after the modules that run it. The file is what
`autotune-loop --problems` reads, so every field written here is one that reader knows.
"""

import json
import re
from dataclasses import dataclass, field

_NAME_OK = re.compile(r"[^A-Za-z0-9._-]")
_MAX_NAME = 100  # the reader's limit on an entry name (a folder name)


@dataclass(frozen=True)
class GemmKey:
    """The problem as the tuner and the library see it: C = epilogue(op(A) op(B)), A M x K,
    B K x N; layout is A's then B's storage (N row-major, T column-major)."""
    m: int
    n: int
    k: int
    dtype: str
    layout: str
    epilogue: str = "none"

    def to_json(self):
        d = {"m": self.m, "n": self.n, "k": self.k, "dtype": self.dtype, "layout": self.layout}
        if self.epilogue != "none":
            d["epilogue"] = self.epilogue
        return d


@dataclass
class RecordedGemm:
    key: GemmKey
    count: int = 0
    modules: list = field(default_factory=list)  # module paths in first-call order, no repeats
    op: str = "linear"  # the torch function that ran it: linear, matmul, mm


def _pattern(path):
    """A module path with its layer numbers generalised: model.layers.3.mlp -> model.layers.x.mlp."""
    return ".".join("x" if part.isdigit() else part for part in path.split(".")) if path else ""


def entry_name(rec):
    """The entry's name: the modules' shared path, then their distinct last parts, then M.
    q_proj and o_proj of every layer: model.layers.x.self_attn.q_proj-o_proj_m16."""
    patterns = []
    for p in rec.modules:
        p = _pattern(p)
        if p not in patterns:
            patterns.append(p)
    if not patterns or patterns == [""]:
        base = rec.op
    elif len(patterns) == 1:
        base = patterns[0]
    else:
        split = [p.split(".") for p in patterns]
        common = 0
        while all(len(s) > common + 1 for s in split) and len({s[common] for s in split}) == 1:
            common += 1
        prefix = ".".join(split[0][:common])
        rest = "-".join(".".join(s[common:]) for s in split)
        base = f"{prefix}.{rest}" if prefix else rest
    suffix = f"_m{rec.key.m}"
    base = _NAME_OK.sub("_", base).lstrip(".") or rec.op
    return base[: _MAX_NAME - len(suffix)] + suffix


class ProblemSet:
    """Recorded GEMMs, written as a problem-set file with write()."""

    def __init__(self, name="recorded", source=""):
        self.name = name
        self.sources = [source] if source else []  # one per recording merged in
        self.gemms = {}  # GemmKey -> RecordedGemm, in first-call order
        self.skipped = []  # (module path, what, why) of calls no entry stands for

    def add(self, key, module, op):
        rec = self.gemms.setdefault(key, RecordedGemm(key=key, op=op))
        rec.count += 1
        if module not in rec.modules:
            rec.modules.append(module)

    def merge(self, other):
        """Adds another recording's problems (another batch size, say). A problem both hold
        keeps the larger count: counts are per forward of the recording they came from."""
        for key, rec in other.gemms.items():
            mine = self.gemms.get(key)
            if mine is None:
                self.gemms[key] = RecordedGemm(key, rec.count, list(rec.modules), rec.op)
            else:
                mine.count = max(mine.count, rec.count)
                mine.modules += [m for m in rec.modules if m not in mine.modules]
        self.sources += other.sources
        self.skipped += other.skipped
        return self

    def entries(self):
        """The file's problems: name, count and the problem fields, names unique."""
        out, taken = [], set()
        for rec in self.gemms.values():
            name = entry_name(rec)
            base, i = name, 2
            while name in taken:
                name = f"{base[: _MAX_NAME - 4]}_{i}"
                i += 1
            taken.add(name)
            out.append({"name": name, "count": rec.count, **rec.key.to_json()})
        return out

    def to_json(self):
        entries = self.entries()
        served = "; ".join(f"{e['name']}: {', '.join(rec.modules) or rec.op}"
                           for e, rec in zip(entries, self.gemms.values()))
        doc = {"name": self.name, "source": "; ".join(self.sources),
               "description": "count = calls per forward pass; modules per entry: " + served,
               "problems": entries}
        if not entries:
            raise ValueError("the recording holds no GEMM the tuner can take"
                             + (f" ({len(self.skipped)} calls skipped: {self.skipped[0][2]}, ...)"
                                if self.skipped else "; did the forward pass run any nn.Linear, F.linear or matmul?"))
        return doc

    def write(self, path):
        text = json.dumps(self.to_json(), indent=2) + "\n"
        with open(path, "w") as f:
            f.write(text)
        return path

    def __len__(self):
        return len(self.gemms)

    def __repr__(self):
        return f"ProblemSet({self.name!r}, {len(self)} problems, {sum(r.count for r in self.gemms.values())} calls)"
