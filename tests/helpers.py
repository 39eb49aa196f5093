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
