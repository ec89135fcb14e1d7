"""What the model benchmark's script tests share: a bench-best evaluation and entry as bench
passes write them, and a shape's row as the problem files give it."""

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import model_bench as mb  # noqa: E402


def evaluation(ms, flops, rel=0.0017):
    return {"outcome": "ok", "timing": {"median_ms": ms}, "tflops": flops / (ms * 1e-3) / 1e12,
            "accuracy": {"checked": True, "rel_error_norm": rel}}


def entry(row, ours_ms, vendor_ms, floor_ms=None, peak=989.0, status="ok", template="gemm_tma_half"):
    flops = 2.0 * row["m"] * row["n"] * row["k"]
    e = {"best_config": "/x/shapes/%s/best_config.json" % row["folder"], "template": template, "status": status,
         "peak_tflops": peak, "floor_beaten_by": []}
    e["now"] = evaluation(ours_ms, flops) if ours_ms else {"outcome": "wrong_result", "message": "bad"}
    if vendor_ms:
        e["vendor"] = evaluation(vendor_ms, flops, 0.0018)
    else:
        e["vendor_unavailable"] = "none"
    if floor_ms:
        e["read_floor"] = {"median_ms": floor_ms}
        e["floor_beaten_by"] = [w for w, ms in (("ours", ours_ms), ("vendor", vendor_ms)) if ms and ms < floor_ms]
    else:
        e["read_floor_unavailable"] = "not measured (M > --read-floor-max-m 128)"
    return e


def row(set_name, name, m, n, k, dtype="bf16"):
    r = {"set": set_name, "name": name, "m": m, "n": n, "k": k, "dtype": dtype, "layout": "NT", "count": 1}
    r["folder"] = mb.shape_folder(r)
    return r
