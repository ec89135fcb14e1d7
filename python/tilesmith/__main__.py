"""python -m tilesmith record|explain (docs/pytorch.md)."""

import argparse
import importlib
import importlib.util
import sys
from pathlib import Path


def _workloads(target):
    """FILE.py:FUNC or package.module:FUNC -> what FUNC returns, as a list of (model, inputs)."""
    if ":" not in target:
        raise SystemExit(f"record: {target!r}: give FILE.py:FUNCTION or MODULE:FUNCTION "
                         f"(FUNCTION returns (model, inputs) or a list of them)")
    where, func = target.rsplit(":", 1)
    if where.endswith(".py"):
        path = Path(where)
        if not path.is_file():
            raise SystemExit(f"record: {where}: no such file")
        spec = importlib.util.spec_from_file_location(path.stem, path)
        module = importlib.util.module_from_spec(spec)
        sys.path.insert(0, str(path.parent))
        spec.loader.exec_module(module)
    else:
        module = importlib.import_module(where)
    if not hasattr(module, func):
        raise SystemExit(f"record: {where} has no function {func!r}")
    got = getattr(module, func)()
    if isinstance(got, tuple) and len(got) == 2 and not isinstance(got[0], tuple):
        got = [got]
    out = []
    for i, item in enumerate(got):
        if not (isinstance(item, tuple) and len(item) == 2):
            raise SystemExit(f"record: {target} item {i}: expected (model, inputs), got {type(item).__name__}")
        model, inputs = item
        out.append((model, inputs if isinstance(inputs, (tuple, list)) else (inputs,)))
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m tilesmith",
                                 description="record a PyTorch model's GEMMs as a problem set; explain a package's dispatch")
    sub = ap.add_subparsers(dest="command", required=True)
    rec = sub.add_parser("record", help="run a model's forward pass(es) and write the GEMMs as a problem set")
    rec.add_argument("target", help="FILE.py:FUNCTION or MODULE:FUNCTION returning (model, inputs) or a list of them "
                                    "(one per batch size to tune for)")
    rec.add_argument("--out", required=True, help="the problem-set file to write (for autotune-loop --problems)")
    rec.add_argument("--name", help="the set's name (default: the model's class)")
    ex = sub.add_parser("explain", help="which kernel the package runs for one problem (needs the GPU)")
    ex.add_argument("package")
    ex.add_argument("--m", type=int, required=True)
    ex.add_argument("--n", type=int, required=True)
    ex.add_argument("--k", type=int, required=True)
    ex.add_argument("--dtype", default="bf16", choices=["fp32", "fp16", "bf16"])
    ex.add_argument("--layout", default="NT", choices=["NN", "NT", "TN", "TT"])
    ex.add_argument("--bias", action="store_true", help="a Linear with a bias (epilogue bias_col)")
    args = ap.parse_args(argv)

    import tilesmith
    try:
        if args.command == "record":
            total = None
            for model, inputs in _workloads(args.target):
                got = tilesmith.record_gemms(model, *inputs, name=args.name)
                total = got if total is None else total.merge(got)
            total.write(args.out)
            print(f"{args.out}: {len(total)} problems")
            for e in total.entries():
                print(f"  {e['name']}: {e['m']}x{e['n']}x{e['k']} {e['dtype']} {e['layout']}"
                      f"{' ' + e['epilogue'] if 'epilogue' in e else ''}, {e['count']} per forward")
            if total.skipped:
                print(f"  skipped {len(total.skipped)} calls, e.g. {total.skipped[0][0] or '(model)'}: "
                      f"{total.skipped[0][2]}")
        else:
            pkg = tilesmith.load(args.package)
            print(pkg.explain(args.m, args.n, args.k, args.dtype, args.layout, args.bias))
    except (tilesmith.TilesmithError, ValueError, OSError) as e:
        print(f"tilesmith {args.command}: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
