"""Packed vs bucketed ConCSE training, eager and compiled, on this machine's device (issue 24).

    python scripts/check_packing.py [--device cuda] [--steps-rows 2048] [--batch 128] [--layers 4]

A random-weight BERT (hidden 256, WordPiece tokenizer from $CODESWITCH_BENCH_TOKENIZER or wheelhouse/tokenizer; nothing
downloads) trained by the real trainer (``concse.train.train_encoder``) on synthetic NLI rows for one epoch, in the
``--ways`` given: buckets, packing, packing + torch.compile, packing + CUDA graphs (``torch_compile: reduce-overhead``),
buckets + torch.compile.  Prints each run's seconds, steps, training loss and
dev Spearman as one JSON line.  A check that the settings run on a GPU, not a benchmark (``python -m benchmarks`` is).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "lib"), str(ROOT)]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--rows", type=int, default=2048)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--ways", default="buckets,packing,packing+compile,packing+cudagraphs")
    args = ap.parse_args()
    import torch
    from transformers import AutoTokenizer, BertConfig, BertModel

    from codeswitch.concse.config import Backbone, Config
    from codeswitch.concse.plan import spec as concse_spec
    from codeswitch.concse.train import train_encoder
    from codeswitch.core.profiles import load_profile

    tok_dir = os.environ.get("CODESWITCH_BENCH_TOKENIZER") or str(ROOT / "wheelhouse" / "tokenizer")
    tmp = Path(tempfile.mkdtemp(prefix="check-packing-"))
    tok = AutoTokenizer.from_pretrained(tok_dir)
    torch.manual_seed(0)
    BertModel(BertConfig(vocab_size=len(tok), hidden_size=256, num_hidden_layers=args.layers, num_attention_heads=4,
                         intermediate_size=1024)).save_pretrained(tmp / "model")
    tok.save_pretrained(tmp / "model")
    rng = np.random.default_rng(0)
    words = "the girl drinks milk in a village while her sister eats bread at market 작은 돼지 공원 집 dog ran home".split()
    sent = lambda: " ".join(rng.choice(words, size=int(rng.integers(3, 40))))  # noqa: E731
    cols = ("sentence1", "sentence2", "hard_neg", "cross1", "cross2", "cross_hard_neg")
    nli = pd.DataFrame([{c: sent() for c in cols} for _ in range(args.rows)])
    dev = pd.DataFrame({"cross1": [sent() for _ in range(64)], "cross2": [sent() for _ in range(64)], "label": rng.uniform(0, 5, 64)})
    precision = "bf16" if args.device == "cuda" else "fp32"
    profile = load_profile("smoke", {"device": args.device, "precision": precision}, output_root=tmp)
    for way in args.ways.split(","):
        config = Config(backbones=(Backbone("t", str(tmp / "model"), args.batch, args.batch, 5e-5),), ablation_backbone="t",
                        num_train_epochs=1, max_length=64, packing="packing" in way,
                        torch_compile="reduce-overhead" if "cudagraphs" in way else "compile" in way)
        spec = concse_spec(config, profile, config.backbones[0], "concse", 1, koglish="test")
        t0 = time.perf_counter()
        _, info = train_encoder(spec, str(tmp / "model"), nli, dev, profile=profile)
        print(json.dumps({"way": way, "device": args.device, "precision": precision, "seconds": round(time.perf_counter() - t0, 2),
                          "steps": info["steps"], "train_loss": info["train_loss"], "dev": info["dev"]}), flush=True)


if __name__ == "__main__":
    main()
