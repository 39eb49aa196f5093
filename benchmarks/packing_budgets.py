"""``python -m benchmarks budgets``: the padding share of b_pk's packed Koglish-GLUE batches under packing budgets
drawn from random batches (what ``glue.train`` and the b_pk row used before issue 40 item 4) and from the
length-grouped batches the trainer actually trains on (``fastpath.grouped_budgets``, ``PackRows.for_lengths(
grouped=True)``).  Padding depends only on the lengths and the budgets, so this runs on a CPU, in a second.

The batches are (b)'s at the paper sizes (``hotpaths.FULL``: 64 pairs a step, ≤ 230 tokens, rows of 256 tokens):
pairs drawn from the Koglish-GLUE length table (``benchmarks/lengths.json``) and cut by the HF length-grouped
sampler's rule (``hotpaths._grouped``).  ``--pools`` independent pools of 50 batches each; each batch is packed by
first-fit-decreasing (``fastpath.first_fit``) and rounded up to its budget, as ``fastpath.pack_features`` does.
Padding = 1 − non-padding tokens / packed positions, over all batches; the GPU row's own 13 batches (its seed) too.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from typing import Sequence

import numpy as np

from . import write_report


def _padding(batches, budgets, width: int) -> dict:
    from codeswitch.common.fastpath import first_fit

    tokens = positions = 0
    rows = []
    for ln in batches:
        used = first_fit([int(x) for x in ln], width)[1]
        r = next(b for b in sorted(budgets) if b >= used)
        tokens, positions = tokens + int(np.sum(ln)), positions + r * width
        rows.append(r)
    return {"budgets": [int(b) for b in budgets], "padding": round(1 - tokens / positions, 4),
            "rows_per_step_mean": round(float(np.mean(rows)), 2)}


def measure(seed: int, pools: int) -> dict:
    from codeswitch.common.fastpath import PACK_WIDTH, grouped_budgets, sampled_budgets
    from . import lengths as L
    from .hotpaths import FULL, _grouped

    s, dist = FULL, L.glue_pairs()
    width = max(PACK_WIDTH, s.glue_max_length)
    rng = np.random.default_rng([seed, 3])  # (b)'s generator: hotpaths.Context.rng(3), as hotpaths.glue draws grouped
    out = {}
    for name, n in (("gpu_row_batches", 13), ("pools", 50 * pools)):
        pool = dist.sample(50 * s.glue_batch * max(1, -(-n // 50)), rng, s.glue_max_length)
        batches = _grouped(pool, s.glue_batch, rng)[:n]
        kw = dict(max_length=s.glue_max_length, width=width, seed=seed)
        out[name] = {"batches": len(batches),
                     "random_batch_budgets": _padding(batches, sampled_budgets(pool[:, None], s.glue_batch, **kw), width),
                     "grouped_batch_budgets": _padding(batches, grouped_budgets(pool[:, None], s.glue_batch, **kw), width)}
    return out


def main(argv: Sequence[str] | None = None) -> int:
    from .measure import code_commit

    p = argparse.ArgumentParser(prog="python -m benchmarks budgets", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seed", type=int, default=0, help="the bench's --seed (default 0, as the GPU run)")
    p.add_argument("--pools", type=int, default=20)
    p.add_argument("--out", default=None, help="a JSON file for the report")
    args = p.parse_args(argv)
    commit, t0 = code_commit(), time.time()
    report = {"what": "padding share of (b)'s packed Koglish-GLUE batches: budgets from random vs length-grouped batches",
              "commit": commit, "command": "python -m benchmarks budgets " + " ".join(argv if argv is not None else sys.argv[1:]),
              "machine": {"cpu": platform.processor() or platform.machine(), "python": platform.python_version()},
              **measure(args.seed, args.pools)}
    report["seconds"] = round(time.time() - t0, 1)
    print(json.dumps(report, indent=2))
    if args.out:
        write_report(args.out, report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
