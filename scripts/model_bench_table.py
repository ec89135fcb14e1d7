"""The model-shape benchmark's table (scripts/model_bench.py runs the benchmark): every
shape's latest bench-best figures kept over passes (merge_passes), the rows and summary
figures (summarize) and their text (format_report). Pure: no process, no GPU; tested by
tests/scripts/model_bench_test.py."""

import json
import math
import os
import re

FLOOR_MAX_M = 128  # rows with M <= this are judged against the read floor, the others against the peak
WIN_MARGIN = 1.03  # "won by >= 3%"
LOSS_MARGIN = 0.95  # lost by more than 5%


def only_pattern(folders):
    """An --only expression that picks exactly these shape folders."""
    return "^(%s)$" % "|".join(re.escape(f) for f in folders)


def geomean(values):
    values = [v for v in values if v and v > 0]
    if not values:
        return None
    return math.exp(sum(math.log(v) for v in values) / len(values))


def _ms(evaluation):
    if not evaluation or evaluation.get("outcome") != "ok":
        return None
    return evaluation["timing"]["median_ms"]


def _rel_err(evaluation):
    a = evaluation.get("accuracy") or {}
    return a.get("rel_error_norm") if a.get("checked") else None


def entry_folder(entry):
    """The shape folder a bench-best entry came from (its best_config.json's folder)."""
    return os.path.basename(os.path.dirname(entry.get("best_config", "")))


def measured_shapes(bench):
    """folder name -> what bench-best measured for it (its fastest ok entry, else its first)."""
    out = {}
    for e in (bench or {}).get("entries", []):
        folder = entry_folder(e)
        now_ms = _ms(e.get("now"))
        best = out.get(folder)
        if best is None or (now_ms is not None and (_ms(best.get("now")) is None or now_ms < _ms(best.get("now")))):
            out[folder] = e
    return out


def merge_passes(kept, latest, when):
    """The table's document after a bench pass: every entry of `latest` (the pass just run,
    bench-best's JSON), stamped with `when`, and the entries of `kept` (the document before)
    for the shape folders this pass did not measure, so a table filled over several calls
    keeps every shape's latest figures. Each row's ours, vendor and floor still come from one
    bench-best process; only rows of different passes were measured apart. Pure."""
    out = dict(latest or {})
    fresh = [dict(e, measured_at=when) for e in (latest or {}).get("entries", [])]
    covered = {entry_folder(e) for e in fresh}
    older = [e for e in (kept or {}).get("entries", []) if entry_folder(e) not in covered]
    out["entries"] = fresh + older
    out["latest_pass"] = when
    out["passes"] = sorted({e.get("measured_at") for e in out["entries"] if e.get("measured_at")})
    return out


def read_json(path):
    """The JSON at path, or None when there is none; ValueError names the file."""
    if not os.path.exists(path):
        return None
    with open(path) as f:
        try:
            return json.load(f)
        except ValueError as e:
            raise ValueError("%s is not readable JSON (%s)" % (path, e))


def summarize(rows, bench, tuned_folders, evals=None, floor_max_m=FLOOR_MAX_M):
    """The table's rows and the summary figures, from the set rows (in order), bench-best's
    JSON (or None) and the folders that have a tuning result. Pure.

    Each table row: dict with the set row's fields plus state ('measured', 'not tuned',
    'not measured', 'failed'), ours/vendor TFLOP/s, ratio (vendor ms / ours ms: above 1 ours
    is faster), pct and vendor_pct (of the dtype's dense peak for M > floor_max_m, of the
    read floor for M <= floor_max_m: floor ms / kernel ms), basis ('peak' or 'floor'),
    rel errors, template, same_as (the first row of the same shape), floor_beaten.
    Summary figures are over distinct shapes."""
    evals = evals or {}
    measured = measured_shapes(bench)
    table, first_of = [], {}
    for r in rows:
        t = dict(r)
        t["evals"] = evals.get(r["folder"])
        t["same_as"] = first_of.get(r["folder"])
        first_of.setdefault(r["folder"], r["set"] + "/" + r["name"])
        t["basis"] = "floor" if r["m"] <= floor_max_m else "peak"
        e = measured.get(r["folder"])
        if r["folder"] not in tuned_folders and e is None:
            t["state"] = "not tuned"
        elif e is None:
            t["state"] = "not measured"
        else:
            now, vendor = e.get("now"), e.get("vendor")
            ours_ms, vendor_ms = _ms(now), _ms(vendor)
            t["template"] = e.get("template")
            t["status"] = e.get("status")
            t["measured_at"] = e.get("measured_at")
            if ours_ms is None:
                t["state"] = "failed"
                t["message"] = (now or {}).get("message", e.get("status", ""))
            else:
                t["state"] = "measured"
                t["ours_tflops"] = now["tflops"]
                t["ours_ms"] = ours_ms
                t["rel_err"] = _rel_err(now)
            if vendor_ms is not None:
                t["vendor_tflops"] = vendor["tflops"]
                t["vendor_ms"] = vendor_ms
                t["vendor_rel_err"] = _rel_err(vendor)
            else:
                t["vendor_note"] = e.get("vendor_unavailable", "")
            if ours_ms is not None and vendor_ms is not None:
                t["ratio"] = vendor_ms / ours_ms
            # bench-best --rounds: the ratio of the alternating rounds is the one to trust (a
            # clock that moved between the two single measurements above does not bias it).
            paired = e.get("paired")
            if ours_ms is not None and paired and paired.get("ratio"):
                t["ratio_once"] = t.get("ratio")
                t["ratio"] = paired["ratio"]
                t["ratio_interval"] = paired.get("interval")
                t["ratio_rounds"] = paired.get("rounds")
                # The throughputs from the rounds' medians too: the single measurements above run
                # ours first and the vendor second, and a GPU that heats up meanwhile (at its power
                # cap by M = 4096) slows the second, so their TF/s can say "ours faster" where the
                # rounds say the opposite.
                if paired.get("ours_median_ms"):
                    t["ours_tflops"] = now["tflops"] * ours_ms / paired["ours_median_ms"]
                    if vendor_ms is not None and paired.get("vendor_median_ms"):
                        t["vendor_tflops"] = vendor["tflops"] * vendor_ms / paired["vendor_median_ms"]
                    t["tflops_from_rounds"] = True
            # The tuning's own verdict on its winner (autotune-loop's end-of-run certification:
            # several processes, paired rounds with the vendor), where it describes today's kernel.
            cert = (e.get("certification") or {}).get("vendor") or {}
            if cert.get("ratio") and cert.get("ratio_interval") and e.get("status") != "MISMATCH":
                t["certified_ratio"] = cert["ratio"]
                t["certified_interval"] = cert["ratio_interval"]
            floor = e.get("read_floor")
            t["floor_ms"] = floor["median_ms"] if floor else None
            t["floor_note"] = e.get("read_floor_unavailable", "")
            t["floor_beaten"] = list(e.get("floor_beaten_by", []))
            peak = e.get("peak_tflops")
            if t["basis"] == "floor":
                if t["floor_ms"]:
                    t["pct"] = 100.0 * t["floor_ms"] / ours_ms if ours_ms else None
                    t["vendor_pct"] = 100.0 * t["floor_ms"] / vendor_ms if vendor_ms else None
            elif peak:
                t["pct"] = 100.0 * t["ours_tflops"] / peak if ours_ms else None
                t["vendor_pct"] = 100.0 * t["vendor_tflops"] / peak if vendor_ms else None
        table.append(t)

    # Summary over distinct measured shapes.
    shapes = [t for t in table if t["same_as"] is None]
    ratio_rows = [t for t in shapes if t.get("ratio")]
    s = {"shapes": len(shapes), "rows": len(table),
         "measured": sum(1 for t in shapes if t["state"] == "measured"),
         "not_tuned": [t["folder"] for t in shapes if t["state"] == "not tuned"],
         "not_measured": [t["folder"] for t in shapes if t["state"] == "not measured"],
         "failed": [t["folder"] for t in shapes if t["state"] == "failed"],
         "floor_beaten": [(t["folder"], t["floor_beaten"]) for t in shapes if t.get("floor_beaten")],
         "floor_missing": {},
         "large": {}, "small": None}
    for dtype in sorted({t["dtype"] for t in shapes}):
        big = [t for t in ratio_rows if t["dtype"] == dtype and t["m"] > floor_max_m]
        if big:
            worst = min(big, key=lambda t: t["ratio"])
            s["large"][dtype] = {"geomean": geomean([t["ratio"] for t in big]), "n": len(big),
                                 "worst": worst["folder"], "worst_ratio": worst["ratio"]}
    small = [t for t in ratio_rows if t["m"] <= floor_max_m]
    with_floor = [t for t in shapes if t["m"] <= floor_max_m and t.get("pct") is not None]
    if small or with_floor:
        low = min(with_floor, key=lambda t: t["pct"]) if with_floor else None
        s["small"] = {"geomean": geomean([t["ratio"] for t in small]), "n": len(small),
                      "lowest_floor_pct": low["pct"] if low else None, "lowest_floor": low["folder"] if low else None,
                      "at_90_of_floor": sum(1 for t in with_floor if t["pct"] >= 90.0 - 1e-9), "with_floor": len(with_floor)}
    for t in shapes:
        if t["state"] == "measured" and t["basis"] == "floor" and t.get("floor_ms") is None:
            s["floor_missing"].setdefault(t.get("floor_note") or "no reason given", []).append(t["folder"])
    s["compared"] = len(ratio_rows)
    # Which verdicts the rounds' interval settles: a win whose whole interval is at >= 3%, a loss
    # whose whole interval is below 0.95. One pass's median at M >= 1024 moves by up to 14%
    # between passes (the power limit), so a verdict the interval does not settle is a reading,
    # not a result.
    won = [t for t in ratio_rows if t["ratio"] >= WIN_MARGIN]
    s["won"] = len(won)
    s["lost"] = [t for t in ratio_rows if t["ratio"] < LOSS_MARGIN]
    settled_won = [t for t in won if t.get("ratio_interval") and t["ratio_interval"][0] >= WIN_MARGIN]
    settled_lost = [t for t in s["lost"] if t.get("ratio_interval") and t["ratio_interval"][1] < LOSS_MARGIN]
    s["won_settled"], s["lost_settled"] = len(settled_won), len(settled_lost)
    settled = {t["folder"] for t in settled_won + settled_lost}
    s["unsettled"] = [t["folder"] for t in won + s["lost"] if t["folder"] not in settled]
    return table, s


def _f(v, fmt):
    return fmt % v if v is not None else "-"


def _ratio_cell(t):
    """The ratio, with its interval when it came from paired rounds: '1.032 [1.011-1.047]'."""
    cell = _f(t.get("ratio"), "%.3f")
    iv = t.get("ratio_interval")
    if iv:
        cell += " [%.3f-%.3f]" % (iv[0], iv[1])
    return cell


def _before(text, note):
    """A row's note with `text` put in front of what it already says."""
    return text + ("; " + note if note else "")


def _verdict(ratio):
    """A ratio as a verdict: won by >= 3%, lost by more than 5%, or in between."""
    return "won" if ratio >= WIN_MARGIN else "lost" if ratio < LOSS_MARGIN else "near"


def _certification_disagrees(t):
    """Whether the row's pass and its tuning's certification give the shape different verdicts,
    the pass lying outside the certified interval: one pass of a card at its power limit can read
    5-10% off, and the row then says what the tuning found."""
    iv, r = t.get("certified_interval"), t.get("ratio")
    return bool(iv and r and not iv[0] <= r <= iv[1] and _verdict(r) != _verdict(t["certified_ratio"]))


def device_line(bench_doc):
    """The table's device line from a bench document ("" without one)."""
    d = (bench_doc or {}).get("device")
    if not d:
        return ""
    return "%s (%s), one bench-best process per batch of shapes; measured copy bandwidth %s GB/s" % (
        d.get("name"), d.get("arch"), _f(bench_doc.get("measured_bandwidth_gbps"), "%.0f"))


def format_report(table, s, device="", vendor="cuBLASLt", benchmark_shapes=None, latest_pass=None):
    """The table and the summary lines as text. A row measured in a pass other than
    `latest_pass` says when."""
    head = ["model/layer", "MxNxK", "dtype", "evals", "template", "ours TF/s", vendor + " TF/s", "ratio",
            "ours %", "vendor %", "of", "rel err ours/vendor", "note"]
    lines = []
    for t in table:
        label = t["set"] + "/" + t["name"]
        shape = "%dx%dx%d" % (t["m"], t["n"], t["k"])
        note = ""
        if t["same_as"]:
            note = "same shape as " + t["same_as"]
        if t["state"] == "measured" or t["state"] == "failed":
            beaten = "!" if t.get("floor_beaten") else ""
            pct = _f(t.get("pct"), "%.1f%%") + beaten
            vpct = _f(t.get("vendor_pct"), "%.1f%%") + beaten
            of = "floor" if t["basis"] == "floor" else "peak"
            if t["basis"] == "floor" and t.get("floor_ms") is None:
                of = "floor n/a"
            err = _f(t.get("rel_err"), "%.2g") + " / " + _f(t.get("vendor_rel_err"), "%.2g")
            if t["state"] == "failed":
                note = _before("FAILED: " + (t.get("message") or "")[:60], note).strip()
            elif t.get("status") not in (None, "ok", "DRIFT"):
                note = _before(t["status"], note)
            if _certification_disagrees(t):
                lo, hi = t["certified_interval"]
                note = _before("tuning certified %.3f [%.3f-%.3f]" % (t["certified_ratio"], lo, hi), note)
            if latest_pass and t.get("measured_at") and t["measured_at"] != latest_pass:
                note = _before("pass of " + t["measured_at"], note)
            lines.append([label, shape, t["dtype"], _f(t.get("evals"), "%d"), t.get("template") or "-",
                          _f(t.get("ours_tflops"), "%.2f"), _f(t.get("vendor_tflops"), "%.2f"),
                          _ratio_cell(t), pct, vpct, of, err, note])
        else:
            lines.append([label, shape, t["dtype"], _f(t.get("evals"), "%d"), "-", "-", "-", "-", "-", "-", "-", "-",
                          _before(t["state"], note)])
    widths = [max(len(str(r[i])) for r in [head] + lines) for i in range(len(head))]
    out = []
    if device:
        out.append("device: " + device)
    out.append("  ".join(str(c).ljust(widths[i]) for i, c in enumerate(head)).rstrip())
    for r in lines:
        out.append("  ".join(str(c).ljust(widths[i]) for i, c in enumerate(r)).rstrip())
    out.append("")
    out.append("ratio = %s time / ours (above 1: ours faster); where bench-best ran --rounds, the median of the "
               "rounds' ratios (ours and %s alternating) with its 95%% interval in brackets, and TF/s from the "
               "rounds' medians; %% of the dtype's dense tensor peak for M > %d (from those TF/s), of the read floor "
               "(floor time / kernel time, measured in the same bench-best process) for M <= %d"
               % (vendor, vendor, FLOOR_MAX_M, FLOOR_MAX_M))
    if any(_certification_disagrees(t) for t in table):
        out.append("tuning certified = the ratio autotune-loop certified for the winner at the end of its tuning "
                   "(several processes), shown where it and this pass give the shape different verdicts (won by "
                   ">= 3%%, lost by more than %d%%, in between); the summary counts this pass"
                   % round(100 * (1 - LOSS_MARGIN)))
    passes = sorted({t["measured_at"] for t in table if t.get("state") == "measured" and t.get("measured_at")})
    out.append("shapes: %d distinct in %d rows; %d measured%s" % (
        s["shapes"], s["rows"], s["measured"],
        " in %d bench passes (each row's figures from one process; the rows of older passes say when)" % len(passes)
        if len(passes) > 1 else ""))
    for dtype, d in sorted(s["large"].items()):
        out.append("M > %d, %s: geomean ratio %.3f over %d shapes; worst %s at %.3f"
                   % (FLOOR_MAX_M, dtype, d["geomean"], d["n"], d["worst"], d["worst_ratio"]))
    if s["small"]:
        d = s["small"]
        line = "M <= %d: geomean ratio %s over %d shapes" % (FLOOR_MAX_M, _f(d["geomean"], "%.3f"), d["n"])
        if d["lowest_floor"]:
            line += "; lowest %% of floor %.1f%% (%s); %d of %d at >= 90%% of the floor" % (
                d["lowest_floor_pct"], d["lowest_floor"], d["at_90_of_floor"], d["with_floor"])
        else:
            line += "; no read floor measured"
        out.append(line)
    won = "won by >= 3%%: %d of %d shapes compared with %s" % (s["won"], s["compared"], vendor)
    if benchmark_shapes:
        # Issue 32's target is a third of all the benchmark's shapes, measured or not.
        won += "; %d of the benchmark's %d distinct shapes (a third: %d)" % (
            s["won"], benchmark_shapes, math.ceil(benchmark_shapes / 3))
    won += "; %d of them with the whole interval at >= %.2f" % (s["won_settled"], WIN_MARGIN)
    out.append(won)
    if s["lost"]:
        out.append("lost by more than %d%%: %d (%s); %d of them with the whole interval below %.2f" % (
            round(100 * (1 - LOSS_MARGIN)), len(s["lost"]),
            ", ".join("%s %s" % (t["folder"], _ratio_cell(t)) for t in sorted(s["lost"], key=lambda t: t["ratio"])),
            s["lost_settled"], LOSS_MARGIN))
    if s["unsettled"]:
        out.append("verdicts their interval does not settle (%d): measure them again with more rounds: --bench-only "
                   "--rounds-max 32 --only '%s'" % (len(s["unsettled"]), only_pattern(s["unsettled"])))
    for folder, who in s["floor_beaten"]:
        out.append("NOTE %s: %s ran faster than the read floor measured, so that floor is not the fastest read "
                   "(marked !)" % (folder, " and ".join(who)))
    for why, folders in sorted(s["floor_missing"].items()):
        out.append("read floor n/a for %d shapes: %s" % (len(folders), why))
    if s["not_tuned"]:
        out.append("not tuned yet (%d): %s" % (len(s["not_tuned"]), " ".join(s["not_tuned"])))
    if s["not_measured"]:
        out.append("tuned, not in any bench pass yet (%d): %s" % (len(s["not_measured"]), " ".join(s["not_measured"])))
    if s["failed"]:
        out.append("failed in the bench pass (%d): %s" % (len(s["failed"]), " ".join(s["failed"])))
    return "\n".join(out) + "\n"
