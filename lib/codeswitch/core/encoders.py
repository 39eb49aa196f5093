"""Transformer encoders shared by the experiments: the DPR-style dual encoder, its loaders, batch tokenisation.

Lives in the core (not with ContrastiveMix) because the retrieval trainer, the
corpus encoder of :mod:`codeswitch.common.fastpath` and the benchmarks all use it.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any, Mapping, Sequence

from torch import Tensor, nn

from .utils import quiet_transformers

__all__ = ["DualEncoder", "load_encoder", "load_dual_encoder", "tokenize"]


def packed_hidden(encoder: nn.Module, packed: Mapping[str, Any]) -> Tensor:
    """The last layer's token vectors of a :func:`codeswitch.common.fastpath.pack_features` batch: one forward of a
    transformers encoder over all rows, (R, W, H), each sentence's tokens where the batch placed them."""
    inputs = {k: packed[k] for k in ("input_ids", "attention_mask", "position_ids", "token_type_ids") if k in packed}
    embeddings = getattr(encoder, "embeddings", None)
    if getattr(embeddings, "padding_idx", None) is not None:  # RoBERTa / XLM-R count positions from padding_idx + 1
        inputs["position_ids"] = inputs["position_ids"] + (embeddings.padding_idx + 1)
    return encoder(**inputs).last_hidden_state  # (R, W, H)


def packed_first_tokens(encoder: nn.Module, packed: Mapping[str, Any]) -> Tensor:
    """The last layer's first-token vector of each sentence of a :func:`codeswitch.common.fastpath.pack_features` batch: one forward of a
    transformers encoder over all rows; (N, H) in the batch's column-major sentence order."""
    hidden = packed_hidden(encoder, packed)  # (R, W, H)
    return hidden.reshape(-1, hidden.shape[-1]).index_select(0, packed["starts"].to(hidden.device))  # (N, H)


class DualEncoder(nn.Module):
    """Two encoders; every embedding is the last layer's first-token vector."""

    def __init__(self, query_model: nn.Module, passage_model: nn.Module):
        super().__init__()
        self.query_model = query_model
        self.passage_model = passage_model

    @staticmethod
    def _first_token(model: nn.Module, batch: Mapping[str, Tensor]) -> Tensor:
        if "starts" in batch:  # a packed batch (common.fastpath.pack_features): each sentence's first token
            return packed_first_tokens(model, batch)
        return model(**batch).last_hidden_state[:, 0]  # (B, L, H) -> (B, H)

    def forward(self, **groups: Mapping[str, Tensor] | None) -> dict[str, Tensor]:
        """Encode named groups in one call (one forward for DDP): ``query*`` groups with the query encoder, the rest with the passage encoder."""
        out = {}
        for name, batch in groups.items():
            if batch is None:
                continue
            model = self.query_model if name.startswith("query") else self.passage_model
            out[name] = self._first_token(model, batch)
        return out

    def save(self, directory: Path, tokenizer) -> None:
        for side, model in (("query", self.query_model), ("passage", self.passage_model)):
            model.save_pretrained(directory / side, safe_serialization=True)
            tokenizer.save_pretrained(directory / side)


def load_encoder(path: str | Path):
    """One encoder as DPR uses it: SDPA attention, no pooler (DPR pools the first token of the last layer)."""
    from transformers import AutoModel

    attn = {"attn_implementation": "sdpa"}
    try:
        try:
            return AutoModel.from_pretrained(path, add_pooling_layer=False, **attn)
        except TypeError:  # a family without a pooler argument
            return AutoModel.from_pretrained(path, **attn)
    except ValueError as exc:  # a family without SDPA support: transformers' default attention, slower
        if "sdpa" not in str(exc).lower():
            raise
        warnings.warn(f"{path}: no SDPA attention for this model family ({exc}); using the default attention", stacklevel=2)
        try:
            return AutoModel.from_pretrained(path, add_pooling_layer=False)
        except TypeError:
            return AutoModel.from_pretrained(path)


def load_dual_encoder(path: str | Path, *, separate: bool = True):
    """``(DualEncoder, tokenizer)`` from a backbone (both encoders start from it) or a saved checkpoint."""
    from transformers import AutoTokenizer

    path = Path(path)
    if (path / "query").is_dir() and (path / "passage").is_dir():
        q_path, p_path = path / "query", path / "passage"
    else:
        q_path = p_path = path
    with quiet_transformers():
        tokenizer = AutoTokenizer.from_pretrained(q_path)
        return DualEncoder(load_encoder(q_path), load_encoder(p_path)), tokenizer


def tokenize(tokenizer, texts: Sequence[str], max_length: int, special: Sequence[bool] | None = None) -> dict[str, Tensor]:
    """Tokenise a batch; texts whose ``special`` flag is False get no [CLS]/[SEP] (the released code's mixed inputs)."""
    if special is None or all(special):
        return dict(tokenizer(list(texts), max_length=max_length, truncation=True, padding=True, return_tensors="pt"))
    ids = []
    for text, sp in zip(texts, special):
        ids.append(tokenizer(text, max_length=max_length, truncation=True, add_special_tokens=sp)["input_ids"])
    padded = tokenizer.pad({"input_ids": ids}, padding=True, return_tensors="pt")
    return {"input_ids": padded["input_ids"], "attention_mask": padded["attention_mask"]}
