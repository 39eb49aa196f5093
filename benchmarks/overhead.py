"""What a run costs outside its optimiser steps, split into its parts, on this machine (issue 40 item 5, issue 38).

``python -m benchmarks overhead [--models mbert-base,xlmr-large] [--eval-sentences 512] [--out FILE]``

A run of any notebook loads its backbone, evaluates (forward passes) and saves what it keeps.  For paper-size
backbones with random weights (:func:`benchmarks.hotpaths.save_random_backbone`: each checkpoint's real
configuration, nothing downloaded) this times, in one process:

* **load**: ``AutoModel.from_pretrained`` + ``AutoTokenizer.from_pretrained`` of the saved folder (safetensors);
* **save**: ``save_pretrained`` of the loaded model into a fresh folder (safetensors);
* **evaluation**: forward passes (inference mode) over ``--eval-sentences`` synthetic sentences of Koglish-NLI's
  lengths (the length table) at ``--eval-batch`` and ``--eval-max-length``, tokenisation included -- ConCSE's STS
  scoring shape, for the first model only.

Load and save are host work (disk, deserialisation, allocation): the cost model takes them per parameter as measured
here, unscaled on a GPU machine's host (an assumption, stated where it is used).  The evaluation's forward passes are
device work: the cost model prices them per notebook at the GPU's measured rates, and this row gives the CPU side of
the GPU/CPU forward ratio only together with ``python -m benchmarks --full --device cpu --paths d``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Sequence

import numpy as np
import torch

from . import lengths as L
from .batched_runs import _commit
from . import write_report


def _timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def _eval_forwards(model, tokenizer, n: int, batch: int, max_length: int, seed: int) -> dict:
    """Forward passes over ``n`` sentences of Koglish-NLI's column lengths (tokenisation included)."""
    from .hotpaths import _synthetic_passages

    rng = np.random.default_rng(seed)
    dist = next(iter(L.nli_columns().values()))
    texts = _synthetic_passages(n, dist, max_length, rng)
    tokens = 0
    t0 = time.perf_counter()
    with torch.inference_mode():
        for i in range(0, n, batch):
            enc = tokenizer(texts[i : i + batch], max_length=max_length, truncation=True, padding=True, return_tensors="pt")
            model(**enc)
            tokens += int(enc["attention_mask"].sum())
    seconds = time.perf_counter() - t0
    return {"sentences": n, "batch": batch, "max_length": max_length, "batches": -(-n // batch), "tokens": tokens,
            "seconds": round(seconds, 3), "sentences_per_s": round(n / seconds, 2)}


def measure(models: Sequence[str], *, eval_sentences: int, eval_batch: int, eval_max_length: int, repeats: int,
            seed: int = 0) -> list[dict]:
    from transformers import AutoModel, AutoTokenizer

    from .hotpaths import RANDOM_BACKBONES, save_random_backbone

    rows = []
    for i, name in enumerate(models):
        if name not in RANDOM_BACKBONES:
            raise ValueError(f"--models: unknown backbone {name!r}; known: {sorted(RANDOM_BACKBONES)}")
        work = Path(tempfile.mkdtemp(prefix="codeswitch-overhead-"))
        try:
            folder, note = save_random_backbone(name, work / "model", seed=seed)
            loads, saves = [], []
            for r in range(repeats):
                (model, tok), s = _timed(lambda: (AutoModel.from_pretrained(str(folder)), AutoTokenizer.from_pretrained(str(folder))))
                loads.append(round(s, 3))
                _, s = _timed(lambda: model.save_pretrained(work / f"saved{r}", safe_serialization=True))
                saves.append(round(s, 3))
                shutil.rmtree(work / f"saved{r}", ignore_errors=True)
            model.eval()
            params = sum(p.numel() for p in model.parameters())
            row = {"model": name, "note": note, "params": params, "load_s": loads, "save_s": saves,
                   "load_s_per_mparam": round(float(np.median(loads)) / params * 1e6, 5),
                   "save_s_per_mparam": round(float(np.median(saves)) / params * 1e6, 5)}
            if i == 0 and eval_sentences:
                row["eval"] = _eval_forwards(model, tok, eval_sentences, eval_batch, eval_max_length, seed)
            rows.append(row)
            del model
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks overhead", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--models", default="mbert-base,xlmr-large")
    p.add_argument("--eval-sentences", type=int, default=512)
    p.add_argument("--eval-batch", type=int, default=128)
    p.add_argument("--eval-max-length", type=int, default=64)
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--out", default=None, help="a JSON file for the record")
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    load_before = os.getloadavg()
    t0 = time.time()
    rows = measure([m.strip() for m in args.models.split(",") if m.strip()], eval_sentences=args.eval_sentences,
                   eval_batch=args.eval_batch, eval_max_length=args.eval_max_length, repeats=args.repeats)
    report = {
        "what": "a run's work outside its optimiser steps: loading a paper-size backbone (random weights, real "
                "configuration), saving it, and evaluation forward passes, timed apart on this machine",
        "commit": _commit(),
        "command": "python -m benchmarks overhead " + " ".join(argv if argv is not None else sys.argv[1:]),
        "machine": {"cpu": platform.processor() or platform.machine(), "cores": os.cpu_count(), "torch": torch.__version__,
                    "threads": torch.get_num_threads(), "shared": "a host shared with other jobs: times are upper bounds",
                    "loadavg_1_5_15_before": [round(x, 2) for x in load_before],
                    "loadavg_1_5_15_after": [round(x, 2) for x in os.getloadavg()]},
        "seconds": round(time.time() - t0, 1),
        "rows": rows,
    }
    print(json.dumps(rows, indent=1))
    if args.out:
        write_report(args.out, report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
