"""Small stand-ins shared by several test modules."""

from __future__ import annotations

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
