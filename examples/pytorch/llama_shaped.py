"""A Llama-3-8B-shaped model (the real hidden and MLP sizes, fewer layers, random bf16
weights) from recording its GEMMs to running it on the tuned package (docs/pytorch.md).

  python3 examples/pytorch/llama_shaped.py record --out llama.json
  autotune-loop --problems llama.json --hours 8 --results llama-tuned
  autotune-loop export --results llama-tuned --out llama-pkg
  python3 examples/pytorch/llama_shaped.py compare --package llama-pkg

compare builds the model twice from one seed, checks the patched model's logits against
the unpatched ones, and prints per forward pass the time of the linear layers alone and of
the whole model, unpatched and patched, measured interleaved in one process.
Needs a CUDA GPU, PyTorch and transformers.
"""

import argparse
import gc
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python"))
import tilesmith  # noqa: E402


def llama_3_8b(layers):
    """Meta Llama 3 8B's config.json (hidden_size 4096, intermediate_size 14336, 32 heads,
    8 KV heads, vocabulary 128256, rope_theta 500000) with `layers` decoder layers."""
    from transformers import LlamaConfig, LlamaForCausalLM
    config = LlamaConfig(hidden_size=4096, intermediate_size=14336, num_attention_heads=32,
                         num_key_value_heads=8, num_hidden_layers=layers, vocab_size=128256,
                         max_position_embeddings=8192, rope_theta=500000.0, torch_dtype=torch.bfloat16)
    torch.manual_seed(0)
    with torch.device("cuda"):
        model = LlamaForCausalLM(config).to(torch.bfloat16).eval()
    return model


def batches(tokens):
    """Token counts to input ids: decode steps of t sequences (one token each) for t <= 512,
    else one prefill of t tokens."""
    out = []
    for t in tokens:
        shape = (t, 1) if t <= 512 else (1, t)
        out.append((t, torch.randint(0, 128256, shape, device="cuda")))
    return out


def median_ms(fn, reps):
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(reps):
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def linear_inputs(model, ids):
    """Each nn.Linear's input in one forward pass, in call order."""
    seen, handles = [], []
    for _, m in model.named_modules():
        if isinstance(m, torch.nn.Linear):
            handles.append(m.register_forward_pre_hook(lambda mod, inp: seen.append((mod, inp[0]))))
    with torch.no_grad():
        model(ids, use_cache=False)
    for h in handles:
        h.remove()
    return seen


def cpu_us_per_call(fn, calls=300):
    """CPU time to enqueue one call, with the GPU held busy by a sleep kernel so the queue
    never drains and the launches never wait: what a call costs where decode is CPU-bound."""
    fn()
    torch.cuda.synchronize()
    torch.cuda._sleep(400_000_000)  # ~0.2 s at 2 GHz, longer than the calls take to enqueue
    t = time.perf_counter()
    for _ in range(calls):
        fn()
    took = time.perf_counter() - t
    torch.cuda.synchronize()
    return took / calls * 1e6


def cpu_costs(model, pkg, calls):
    """Per routed Linear: CPU microseconds per call through torch, through the patch, and
    the patch's parts (the library launch alone; the Python side alone)."""
    tilesmith.patch(model, pkg)
    out = []
    with torch.no_grad():
        for mod, x in calls:
            route = getattr(mod, "_tilesmith_route", None)
            plan = route.plan_for(x, mod.weight) if route else None
            if plan is None:
                continue
            w, b = mod.weight, mod.bias
            y = torch.empty(x.shape[:-1] + (route.n,), dtype=x.dtype, device=x.device)
            ptrs = (x.data_ptr(), w.data_ptr(), y.data_ptr(), None, torch.cuda.current_stream().cuda_stream)
            out.append((route.name, x.numel() // route.k,
                        cpu_us_per_call(lambda: torch.nn.functional.linear(x, w, b)),
                        cpu_us_per_call(lambda: mod(x)),
                        cpu_us_per_call(lambda: plan.launch(*ptrs))))
    tilesmith.unpatch(model)
    return out


def cmd_record(args):
    model = llama_3_8b(args.layers)
    total = None
    for _, ids in batches(args.tokens):
        got = tilesmith.record_gemms(model, ids, name=args.name, use_cache=False)
        total = got if total is None else total.merge(got)
    total.write(args.out)
    print(f"{args.out}: {len(total)} problems")
    for e in total.entries():
        print(f"  {e['name']}: {e['m']}x{e['n']}x{e['k']} {e['dtype']} {e['layout']}, {e['count']} per forward")


def cmd_compare(args):
    model = llama_3_8b(args.layers)
    pkg = tilesmith.load(args.package)
    rows = []
    for tokens, ids in batches(args.tokens):
        with torch.no_grad():
            reference = model(ids, use_cache=False).logits.float()
        calls = linear_inputs(model, ids)
        report = tilesmith.patch(model, pkg)
        with torch.no_grad():
            patched = model(ids, use_cache=False).logits.float()
        routed = sum(1 for mod, x in calls if getattr(mod, "_tilesmith_route", None) is not None and
                     mod._tilesmith_route.plan_for(x, mod.weight) is not None)
        err = ((patched - reference).norm() / reference.norm()).item()
        tilesmith.unpatch(model)

        def whole():
            with torch.no_grad():
                model(ids, use_cache=False)

        def linears():
            with torch.no_grad():
                for mod, x in calls:
                    mod(x)

        times = {"model": ([], []), "linear": ([], [])}
        whole(), linears()
        gc.disable()  # a collection inside one side's round would be charged to that side
        # Unpatched and patched alternate in ABBA order, so drift and whichever side runs
        # second hit both alike; the spread of the per-round ratios is the noise.
        for r in range(args.rounds):
            for side in ((0, 1) if r % 2 == 0 else (1, 0)):
                if side:
                    tilesmith.patch(model, pkg)
                times["model"][side].append(median_ms(whole, args.reps))
                times["linear"][side].append(median_ms(linears, args.reps))
                if side:
                    tilesmith.unpatch(model)
        if args.cpu_cost:
            for name, m, torch_us, patched_us, launch_us in cpu_costs(model, pkg, calls):
                print(f"  CPU per call, {name} M={m}: torch F.linear {torch_us:.1f} us, patched {patched_us:.1f} us "
                      f"(of which the library launch through ctypes {launch_us:.1f} us)")
        # The rounds' ratios give the range; torch's own round medians (max / min) its noise.
        med = {k: (statistics.median(v[0]), statistics.median(v[1]),
                   min(a / b for a, b in zip(*v)), max(a / b for a, b in zip(*v)), max(v[0]) / min(v[0]))
               for k, v in times.items()}
        rows.append((tokens, len(calls), routed, med["linear"], med["model"], err))
        patched_names = sorted(n for n, why in report.items() if why is None)
        print(f"tokens {tokens}: {len(patched_names)} of {len(report)} Linear modules patched; "
              f"{routed} of {len(calls)} calls per forward go to tilesmith")
        if args.explain and tokens == args.tokens[0]:
            for name, why in report.items():
                print(f"  {name}: {'patched' if why is None else why[:300]}")
    name = torch.cuda.get_device_name()
    print(f"\n{name}, Llama-3-8B-shaped, {args.layers} layers, bf16; medians of {args.rounds} rounds "
          f"x {args.reps} forward passes, unpatched and patched in ABBA order; speedup = torch / patched "
          f"(range: the rounds' ratios)")
    print("| tokens | GEMMs routed | linear layers torch ms | patched ms | speedup (range) | torch noise | "
          "whole model torch ms | patched ms | speedup (range) | torch noise | logits rel. error |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for tokens, calls, routed, lin, whole_ms, err in rows:
        print(f"| {tokens} | {routed}/{calls} | {lin[0]:.3f} | {lin[1]:.3f} | {lin[0] / lin[1]:.3f} "
              f"({lin[2]:.3f}-{lin[3]:.3f}) | {100 * (lin[4] - 1):.1f}% | {whole_ms[0]:.3f} | {whole_ms[1]:.3f} | "
              f"{whole_ms[0] / whole_ms[1]:.3f} ({whole_ms[2]:.3f}-{whole_ms[3]:.3f}) | {100 * (whole_ms[4] - 1):.1f}% | "
              f"{err:.2e} |")
    print("torch noise: the spread of the unpatched model's own round medians (slowest / fastest - 1)")
    worst = max(r[5] for r in rows)
    if worst > args.tolerance:
        print(f"FAIL: patched logits differ by {worst:.2e} (relative), more than {args.tolerance}")
        return 1
    return 0


def cmd_compile_check(args):
    """torch.compile over a patched MLP block: the custom op keeps the graph whole and the
    result matches eager."""
    model = llama_3_8b(1)
    pkg = tilesmith.load(args.package)
    mlp = model.model.layers[0].mlp
    x = torch.randn(args.tokens[0], 4096, device="cuda", dtype=torch.bfloat16)
    with torch.no_grad():
        reference = mlp(x).float()
        tilesmith.patch(mlp, pkg)
        compiled = torch.compile(mlp, fullgraph=True)
        got = compiled(x).float()
    err = ((got - reference).norm() / reference.norm()).item()
    through_op = {name: m._tilesmith_route.op_calls for name, m in mlp.named_modules()
                  if getattr(m, "_tilesmith_route", None) is not None}
    print(f"torch.compile(fullgraph=True) of a patched MLP at M={args.tokens[0]}: relative error {err:.2e}; "
          f"calls through the tilesmith::linear op: {through_op}")
    print(tilesmith.explain(mlp))
    if through_op and not all(through_op.values()):
        print("FAIL: a patched layer was not called through the custom op in the compiled graph")
        return 1
    return 0 if err <= args.tolerance else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("command", choices=["record", "compare", "compile-check"])
    ap.add_argument("--layers", type=int, default=2, help="decoder layers (Llama 3 8B has 32)")
    ap.add_argument("--tokens", default="16,128,4096",
                    help="token counts: up to 512 a decode step of that many sequences, above it one prefill")
    ap.add_argument("--out", default="llama3_8b_shaped.json", help="record: the problem-set file")
    ap.add_argument("--name", default="llama3_8b_shaped")
    ap.add_argument("--package", help="compare: the package autotune-loop export wrote")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--tolerance", type=float, default=2e-2, help="largest relative error of the logits (bf16)")
    ap.add_argument("--explain", action="store_true", help="compare: print every Linear's dispatch")
    ap.add_argument("--cpu-cost", action="store_true",
                    help="compare: print the CPU time per call of each routed Linear, torch and patched")
    args = ap.parse_args()
    args.tokens = [int(t) for t in args.tokens.split(",")]
    if args.command != "record" and not args.package:
        ap.error(f"{args.command} needs --package")
    return {"record": cmd_record, "compare": cmd_compare, "compile-check": cmd_compile_check}[args.command](args) or 0


if __name__ == "__main__":
    sys.exit(main())
