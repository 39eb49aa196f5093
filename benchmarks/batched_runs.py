"""``python -m benchmarks batched``: K small fine-tunes as one stacked model against the same runs one by one, on
this CPU (issue 40 item 1, :mod:`codeswitch.core.batched`).

A step is CalBERT's: 8 training sentences (SAIL 2017's token lengths, ``benchmarks/lengths.json``), a sequence
classifier's forward, backward, per-run gradient clipping and AdamW.  Two stand-ins:

* ``smoke``: the smoke profile's ``tiny-bert`` shape (hidden 64, 2 layers, 4 heads, vocabulary 4,000);
* ``paper``: BERT-base's width (hidden 768, 12 heads, FFN 3,072, bert-base-cased's 28,996-word vocabulary, dense
  embedding gradient and AdamW over it) with **2 of its 12 layers** (a shared 2-core machine holds ten runs of it).

Each measurement runs :func:`codeswitch.core.batched.train_runs` for one epoch of ``warmup + steps`` steps and
takes the median interval between optimiser steps after the warm-up (batch assembly included, model building and the
end-of-epoch evaluation not).  ``separate``: one run's step (K separate runs cost K of them); ``batched K``: one
stacked step of K runs.  Speed-up(K) = K x separate / batched K, both from the same repeat; the repeats interleave
separate and batched for every K in one process, and the report gives the median and the range over repeats.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from typing import Sequence

import numpy as np
import torch

from . import write_report
from .measure import code_commit

SIZES = {
    "smoke": dict(vocab_size=4000, hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128),
    "paper": dict(vocab_size=28996, hidden_size=768, num_hidden_layers=2, num_attention_heads=12, intermediate_size=3072),
}
BATCH = 8  # samples per optimiser step (CalBERT SAIL 2017, the released runs)


def _model_factory(size: str, layers: int | None = None):
    from transformers import BertConfig, BertForSequenceClassification

    config = BertConfig(**{**SIZES[size], **({"num_hidden_layers": layers} if layers else {})}, num_labels=3,
                        attn_implementation="eager")

    def make(seed: int):
        torch.manual_seed(seed)
        return BertForSequenceClassification(config)

    return make


def _data(size: str, n: int, seed: int):
    from .lengths import calbert_task

    rng = np.random.default_rng(seed)
    lengths = calbert_task("sail").sample(n, rng, max_length=128)
    vocab = SIZES[size]["vocab_size"]
    rows = [rng.integers(5, vocab, int(L)).tolist() for L in lengths]
    return rows, rng.integers(0, 3, n).tolist()


def step_time(size: str, k: int, *, batched: bool, warmup: int, steps: int, device: str = "cpu",
              layers: int | None = None) -> float:
    """Median seconds between optimiser steps after ``warmup``: one stacked step of ``k`` runs, or one run's step."""
    from codeswitch.core.batched import RunSettings, train_runs

    n = BATCH * (warmup + steps + 1)
    train = _data(size, n, 0)
    settings = RunSettings(learning_rate=2e-5, weight_decay=0.08, num_train_epochs=1, batch_size=BATCH)
    stamps: list[float] = []
    seeds = list(range(1, k + 1)) if batched else [1]
    train_runs(_model_factory(size, layers), seeds, [train] * len(seeds), _data(size, BATCH, 1), settings, batched=batched,
               on_step=lambda s: stamps.append(time.perf_counter()), device=device)  # each step reads its losses: synced
    gaps = np.diff(stamps)[warmup:]
    return float(np.median(gaps))


def padded_positions(size: str, k: int, *, steps: int) -> float:
    """Positions a batched step of ``k`` runs computes (each run's 8 rows padded to the longest row of the stack) over
    those of the same runs' separate steps (each padded to its own longest): the padding batching adds."""
    from codeswitch.core.batched import epoch_order

    rows, _ = _data(size, BATCH * steps, 0)
    lengths = np.array([len(r) for r in rows])
    orders = [epoch_order(len(rows), s, 1)[0].numpy() for s in range(1, k + 1)]
    stacked = separate = 0
    for i in range(steps):
        widths = [lengths[o[i * BATCH:(i + 1) * BATCH]].max() for o in orders]
        stacked += k * BATCH * max(widths)
        separate += BATCH * sum(widths)
    return stacked / separate


def measure(sizes: Sequence[str], ks: Sequence[int], *, repeats: int, warmup: int, steps: int) -> dict:
    rows = []
    for size in sizes:
        samples = {k: {"separate": [], "batched": []} for k in ks}
        for rep in range(repeats):
            for k in ks:  # interleaved: separate, batched K, separate, batched K', ...
                sep = step_time(size, k, batched=False, warmup=warmup, steps=steps)
                bat = step_time(size, k, batched=True, warmup=warmup, steps=steps)
                samples[k]["separate"].append(sep)
                samples[k]["batched"].append(bat)
                print(f"[batched] {size} K={k} repeat {rep + 1}/{repeats}: separate {sep * 1e3:.1f} ms/run-step, "
                      f"batched {bat * 1e3:.1f} ms/step of {k} runs, speed-up {k * sep / bat:.2f}x", flush=True)
        for k in ks:
            sep, bat = samples[k]["separate"], samples[k]["batched"]
            ups = [k * s / b for s, b in zip(sep, bat)]
            rows.append({
                "size": size, "K": k, "samples_per_step_per_run": BATCH,
                "separate_ms_per_run_step": [round(x * 1e3, 2) for x in sep],
                "batched_ms_per_step": [round(x * 1e3, 2) for x in bat],
                "separate_ms_median": round(statistics.median(sep) * 1e3, 2),
                "batched_ms_median": round(statistics.median(bat) * 1e3, 2),
                "speedup_median": round(statistics.median(ups), 2),
                "speedup_min": round(min(ups), 2),
                "speedup_max": round(max(ups), 2),
                "padded_positions_ratio": round(padded_positions(size, k, steps=warmup + steps + 1), 3),
            })
    return {"rows": rows}


def markdown(report: dict) -> str:
    lines = ["| stand-in | K | separate (ms / run-step) | batched (ms / step of K runs) | speed-up, median (range) "
             "| positions computed, batched / separate |", "|---|---|---|---|---|---|"]
    for r in report["rows"]:
        lines.append(f"| {r['size']} | {r['K']} | {r['separate_ms_median']:.1f} | {r['batched_ms_median']:.1f} | "
                     f"{r['speedup_median']:.2f}x ({r['speedup_min']:.2f}-{r['speedup_max']:.2f}) | {r['padded_positions_ratio']:.2f} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks batched", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", default="smoke,paper")
    p.add_argument("--ks", default="1,4,10")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--out", default=None, help="a JSON file for the report")
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    load_before = os.getloadavg()
    commit = code_commit()  # the code measured: read before the run, so an edit made while it runs cannot be credited to it
    t0 = time.time()
    report = measure(args.sizes.split(","), [int(k) for k in args.ks.split(",")],
                     repeats=args.repeats, warmup=args.warmup, steps=args.steps)
    report = {
        "what": "CalBERT-shaped fine-tuning steps (8 samples), K runs stacked (codeswitch.core.batched, vmap) "
                "against one run at a time; speed-up = K x separate / batched, per repeat",
        "commit": commit,
        "command": "python -m benchmarks batched " + " ".join(argv if argv is not None else sys.argv[1:]),
        "machine": {"cpu": platform.processor() or platform.machine(), "cores": os.cpu_count(),
                    "torch": torch.__version__, "threads": torch.get_num_threads(),
                    "loadavg_1_5_15_before": [round(x, 2) for x in load_before],
                    "loadavg_1_5_15_after": [round(x, 2) for x in os.getloadavg()]},
        "sizes": SIZES, "seconds": round(time.time() - t0, 1), **report,
    }
    report["table_markdown"] = markdown(report)
    print(report["table_markdown"])
    if args.out:
        write_report(args.out, report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
