"""What a run costs outside its optimiser steps, split into its parts, on this machine (issue 40 item 5, issue 38).

``python -m benchmarks overhead [--models mbert-base,xlmr-large] [--eval-sentences 512] [--out FILE]``
``python -m benchmarks overhead --steps [--steps-only mbert-uncased,...] [--out FILE]``

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

``--steps`` times instead, for every backbone the quick profile trains or encodes with (:data:`STEP_SHAPES`), a
whole **training step** (forward + backward of the model's output, then AdamW's update, the two timed apart) and an
**evaluation forward** (inference mode), each at the shape of the notebook it stands for (batch x length: the
notebook's batch, capped where a step of it would take minutes here; every row at that length, no padding).  The
models are the paper-size stand-ins as ``paper-gpu`` builds them (:mod:`codeswitch.pipeline.standins`: the small
stand-in's config with the real model's sizes, :data:`~codeswitch.pipeline.standins.PAPER_SIZES`; NLLB with its
real vocabulary), random weights, built in memory.  ``python -m benchmarks cost --cpu-steps FILE`` prices a profile
from this record (:func:`benchmarks.cost.cpu_steps_report`).
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
from .measure import code_commit
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


#: ``--steps``: stand-in -> (the notebook whose shape it is timed at, training batch, eval batch, tokens per row).  The
#: batch is the notebook's (quick = paper) where a step of it takes under a minute here, else capped (a larger batch
#: runs at least as many FLOP/s: the rate is an upper bound on time); the row length is the notebook's typical row
#: (ConCSE's NLI sentences and GLUE's CoLA/STS-B rows are short; ContrastiveMix's passages are cut at 128 tokens).
STEP_SHAPES: dict[str, tuple[str, int, int, int]] = {
    "mbert-uncased": ("03", 16, 64, 32),      # ConCSE (03/04; batch 128 x 6 sentences there) and Koglish-GLUE (02: 128)
    "xlmr-base": ("03", 16, 64, 32),          # 02, 03, 07
    "xlmr-large": ("03", 8, 32, 32),          # 02 (batch 64), 03 (48)
    "mbart50": ("02", 8, 32, 32),             # 02 (batch 64)
    "mbert-cased": ("05", 4, 16, 128),        # 05 (passages of <= 128 tokens, batch 128), 06 (alignment, 8 pairs)
    "bert-cased": ("07", 8, 16, 32),          # CalBERT fine-tuning: batch 8 (pre-training 16)
    "roberta": ("07", 8, 16, 32),
    "distilbert-cased": ("07", 8, 16, 32),
    "indicbert": ("07", 8, 16, 32),
    "nllb": ("01", 0, 8, 64),                 # 01 translates (no training): the forward only
}


def _paper_size_model(name: str, work: Path):
    """The paper-size stand-in ``name`` with random weights, as ``paper-gpu`` builds it (the small stand-in's config with
    the real model's sizes), in memory; NLLB with its real vocabulary (256,206: its output layer is real work here)."""
    from transformers import AutoConfig, AutoModel

    from codeswitch.pipeline.standins import PAPER_SIZES, build_standin

    small = AutoConfig.from_pretrained(str(build_standin(name, work, sizes="ci")))
    keys = {**PAPER_SIZES[name], **({"vocab_size": 256206} if name == "nllb" else {})}
    torch.manual_seed(0)
    return AutoModel.from_config(type(small).from_dict({**small.to_dict(), **keys}))


def _inputs(model, batch: int, length: int, seed: int) -> dict:
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(5, model.config.vocab_size, (batch, length), generator=g)
    enc = {"input_ids": ids, "attention_mask": torch.ones_like(ids)}
    if model.config.is_encoder_decoder:  # the decoder reads the same length (a translation's output, a GLUE row)
        enc["decoder_input_ids"] = ids
    return enc


def _spread(xs: list[float]) -> dict:
    return {"median": round(float(np.median(xs)), 3), "min": round(min(xs), 3), "max": round(max(xs), 3),
            "all": [round(x, 3) for x in xs]}


def time_steps(name: str, model, notebook: str, batch: int, eval_batch: int, length: int, repeats: int) -> dict:
    """``repeats`` training steps (forward + backward, then AdamW, timed apart; the first AdamW update, which allocates
    its state, is kept apart) and ``repeats`` evaluation forwards of ``model`` on rows of ``length`` tokens."""
    from codeswitch.pipeline.standins import FOR_HUB_ID

    row = {"standin": name, "model": next(h for h, s in FOR_HUB_ID.items() if s == name), "notebook": notebook,
           "params": sum(p.numel() for p in model.parameters()), "length": length}
    if batch:
        model.train()
        opt = torch.optim.AdamW(model.parameters(), lr=1e-5)
        enc = _inputs(model, batch, length, 0)
        fb, upd = [], []
        for _ in range(max(2, repeats)):
            t0 = time.perf_counter()
            model(**enc).last_hidden_state.float().square().mean().backward()
            t1 = time.perf_counter()
            opt.step()
            opt.zero_grad(set_to_none=True)
            fb.append(t1 - t0)
            upd.append(time.perf_counter() - t1)
        row["train"] = {"batch": batch, "forward_backward_s": _spread(fb), "adamw_s": _spread(upd[1:]),
                        "adamw_first_s": round(upd[0], 3), "step_s": _spread([a + b for a, b in zip(fb[1:], upd[1:])])}
        del opt
    model.eval()
    enc = _inputs(model, eval_batch, length, 1)
    fw = []
    with torch.inference_mode():
        for _ in range(repeats):
            fw.append(_timed(lambda: model(**enc))[1])
    row["eval"] = {"batch": eval_batch, "forward_s": _spread(fw)}
    return row


def measure_steps(names: Sequence[str], repeats: int) -> list[dict]:
    rows = []
    for name in names:
        if name not in STEP_SHAPES:
            raise ValueError(f"--steps-only: unknown stand-in {name!r}; known: {sorted(STEP_SHAPES)}")
        work = Path(tempfile.mkdtemp(prefix="codeswitch-steps-"))
        try:
            t0 = time.perf_counter()
            model = _paper_size_model(name, work)
            built = time.perf_counter() - t0
            row = time_steps(name, model, *STEP_SHAPES[name], repeats=repeats)
            row["build_s"] = round(built, 1)
            rows.append(row)
            print(json.dumps(row), flush=True)
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
    p.add_argument("--steps", action="store_true", help="time training steps and evaluation forwards instead "
                   "(every backbone of STEP_SHAPES, paper-size stand-ins)")
    p.add_argument("--steps-only", default=None, help="with --steps: these stand-ins only (comma-separated)")
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    load_before = os.getloadavg()
    t0 = time.time()
    if args.steps:
        names = [m.strip() for m in args.steps_only.split(",")] if args.steps_only else list(STEP_SHAPES)
        rows = measure_steps(names, args.repeats)
        what = ("training steps (forward + backward, AdamW's update timed apart) and evaluation forwards of each "
                "paper-size stand-in (random weights, real configuration) at its notebook's shape, on this machine")
    else:
        rows = measure([m.strip() for m in args.models.split(",") if m.strip()], eval_sentences=args.eval_sentences,
                       eval_batch=args.eval_batch, eval_max_length=args.eval_max_length, repeats=args.repeats)
        what = ("a run's work outside its optimiser steps: loading a paper-size backbone (random weights, real "
                "configuration), saving it, and evaluation forward passes, timed apart on this machine")
    report = {
        "what": what,
        "commit": code_commit(),
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
