#!/usr/bin/env python3
"""The model-shape benchmark's shape folders on disk (scripts/model_bench.py drives them): what a
folder holds (its evaluations, whether any succeeded, how its last search ended), the folders it
was moved aside to when its templates changed, and the choices of warm start and prior kept
beside it (the twin in the other 16-bit type, the nearest tuned shapes). Nothing here runs a
binary; model_bench.py decides when to tune, retune and bench.
"""

import csv
import json
import math
import os
import time

# Reasons in a session's end (journal.jsonl) that mean the search ended on its own: the shape is done.
ENDED = ("plateau", "every valid configuration", "produced nothing new", "converged")


def count_evaluations(folder):
    """Evaluations recorded in folder/history.csv (proposals rejected before evaluation do
    not count, as for --max-evals); 0 when there is no history."""
    path = os.path.join(folder, "history.csv")
    if not os.path.exists(path):
        return 0
    n = 0
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            if row.get("stage") == "evaluation":
                n += 1
    return n


def measured(folder):
    """Whether folder/history.csv holds a successful measurement: what autotune-loop's --prior needs
    (it refuses a history with none)."""
    path = os.path.join(folder, "history.csv")
    if not os.path.exists(path):
        return False
    with open(path, newline="") as f:
        return any(row.get("outcome") == "ok" for row in csv.DictReader(f))


def prior_source(folder):
    """Where a prior is read from: the twin's folder, or, while the twin is being tuned again from
    nothing (on another GPU, say) and has no measurement yet, the newest folder it was moved aside
    to that has one; None where neither has."""
    if measured(folder):
        return folder
    return next((a for a in reversed(asides_of(folder)) if measured(a)), None)


def last_end_reason(folder):
    """The reason of the last session's end in folder/journal.jsonl ('' when none)."""
    path = os.path.join(folder, "journal.jsonl")
    reason = ""
    if not os.path.exists(path):
        return reason
    with open(path) as f:
        for line in f:
            try:
                j = json.loads(line)
            except ValueError:
                continue  # a torn last line
            if j.get("event") == "end":
                reason = j.get("reason", "")
    return reason


def search_ended(reason):
    return any(word in reason for word in ENDED)


def shape_done(folder, budget):
    return count_evaluations(folder) >= budget or search_ended(last_end_reason(folder))


def log_distance(a, b):
    return sum(abs(math.log(a[x]) - math.log(b[x])) for x in ("m", "n", "k"))


# Input types whose kernels are the same instructions at the same rate (wgmma and mma.sync take
# bf16 and fp16 alike): a shape tuned in one is the best start for the other.
SIXTEEN_BIT = ("bf16", "fp16")


def twin(shape, candidates):
    """The same shape and layout tuned in the other 16-bit type (bf16 for fp16 and back), or
    None: its winners and its measurements carry over whole (the kernels differ in the type
    named in two instructions)."""
    if shape["dtype"] not in SIXTEEN_BIT:
        return None
    for c in candidates:
        if (c["dtype"] in SIXTEEN_BIT and c["dtype"] != shape["dtype"] and c["layout"] == shape["layout"]
                and all(c[x] == shape[x] for x in ("m", "n", "k"))):
            return c
    return None


def chosen_once(path, needs, keep, choose):
    """Folders chosen once for a shape and kept in `path` for its resumes (those still holding
    the file `needs`); `choose` makes the choice where there is none yet, written when `keep`."""
    if os.path.exists(path):
        with open(path) as f:
            return [w for w in f.read().split() if os.path.exists(os.path.join(w, needs))]
    chosen = choose()
    if keep:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write("\n".join(chosen) + "\n")
    return chosen


def choose_warm(shape, candidates, limit=2):
    """The shape's twin in the other 16-bit type where it is tuned, then up to `limit` tuned
    shapes of the same dtype and layout, nearest in log (M, N, K)."""
    same = [c for c in candidates if c["dtype"] == shape["dtype"] and c["layout"] == shape["layout"]
            and c["folder"] != shape["folder"]]
    same.sort(key=lambda c: (log_distance(shape, c), c["folder"]))
    first = twin(shape, candidates)
    return ([first] if first else []) + same[:limit]


def move_aside(folder):
    """Renames a shape's folder (and forgets its warm-start choice) so that it is tuned again
    from nothing; nothing is deleted. Returns the new name."""
    aside = folder + ".changed-" + time.strftime("%Y%m%d-%H%M%S")
    os.rename(folder, aside)
    if os.path.exists(folder + ".warm"):
        os.remove(folder + ".warm")
    return aside


def asides_of(folder):
    """The FOLDER.changed-DATE folders beside a folder (where move_aside put it), oldest first."""
    parent, name = os.path.split(folder)
    try:
        return [os.path.join(parent, f) for f in sorted(os.listdir(parent or ".")) if f.startswith(name + ".changed-")]
    except OSError:
        return []


def latest_aside(folder):
    """The newest FOLDER.changed-DATE beside a folder with nothing in it yet: a retune that was
    moved aside and then stopped by the time limit before its first evaluation."""
    if count_evaluations(folder) > 0:
        return None
    asides = asides_of(folder)
    return asides[-1] if asides else None


def with_old_winners(aside, warm):
    """The warm-start list with a moved-aside folder's winners first (where it has any)."""
    if aside and os.path.exists(os.path.join(aside, "best_config.json")):
        return [aside] + [w for w in warm if w != aside]
    return warm
