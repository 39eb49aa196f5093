"""Small stand-ins shared by several test modules."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import torch


class BagEncoder(torch.nn.Module):
    """A small sentence encoder: masked mean of token embeddings, then a linear layer (no dropout: exact comparisons)."""

    def __init__(self, vocab=60, dim=8):
        super().__init__()
        self.emb = torch.nn.Embedding(vocab, dim)
        self.out = torch.nn.Linear(dim, dim)

    def forward(self, features):
        mask = features["attention_mask"].unsqueeze(-1).to(self.emb.weight.dtype)  # (n, L, 1)
        pooled = (self.emb(features["input_ids"]) * mask).sum(1) / mask.sum(1)  # (n, dim)
        return {"sentence_embedding": self.out(pooled)}


def glue_spec(**fields):
    """A :class:`codeswitch.glue.config.GlueRun` for trainer tests: one SST-2 run on English, fp32, with ``fields`` changed."""
    from codeswitch.glue.config import GlueRun

    base = dict(
        experiment="test", task="sst2", backbone="tiny", model="tiny-bert", train="en", select="en", test=("en",), seed=3,
        koglish_source="test", data="test", num_train_epochs=2, batch_size=8, learning_rate=3e-3, warmup_ratio=0.1,
        weight_decay=0.0, max_length=115, per_device_eval_batch_size=64, precision="fp32", group_by_length=True, log_epochs=False,
    )
    return GlueRun(**(base | fields))


def check_artifacts(fig_dir: Path, spec) -> None:
    """Every artifact a notebook registers exists in ``fig_dir``: tables non-empty with finite numbers, figures drawn."""
    index = {json.loads(p.read_text())["name"]: json.loads(p.read_text()) for p in (fig_dir / ".index").glob("*.json")}
    for name in spec.artifacts:
        assert name in index, f"{spec.file} did not write {name}"
        assert index[name]["notebook"] == spec.stem
        if index[name]["kind"] == "table":
            for ext in ("md", "csv", "tex"):
                assert (fig_dir / f"{name}.{ext}").stat().st_size > 0
            df = pd.read_csv(fig_dir / f"{name}.csv")
            assert len(df) > 0, f"{name}.csv is empty"
            numeric = df.select_dtypes("number")
            value_cols = [c for c in ("mean", "value") if c in numeric] or list(numeric.columns)
            assert value_cols, f"{name}.csv has no numeric column"
            values = numeric[value_cols].to_numpy().ravel()
            assert all(math.isfinite(v) for v in values), f"{name}.csv holds non-finite numbers"
        else:
            for ext in ("png", "pdf"):
                assert (fig_dir / f"{name}.{ext}").stat().st_size > 1000
    assert (fig_dir / "INDEX.md").is_file()
