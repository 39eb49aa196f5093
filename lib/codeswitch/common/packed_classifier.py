"""A sequence classifier trained on packed batches (issue 24): Koglish-GLUE's and CalBERT's fine-tuning.

Both fine-tune a transformers ``…ForSequenceClassification`` through the HF Trainer; with their section's
``packing`` each training batch (the sampler's rows, unchanged) becomes one packed, fixed-shape forward
(:func:`~codeswitch.common.fastpath.pack_features`): block-diagonal attention, per-sequence positions, at most
four shapes an epoch, the model's own head on each sequence's first token.  GLUECoS's fine-tuning
(:mod:`codeswitch.alignment.gluecos_train`) packs its batches with :class:`PackRows` too, padded its own way.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from .fastpath import PACK_WIDTH, grouped_budgets, pack_features, sampled_budgets

__all__ = ["LENGTH", "TARGETS", "PadWithoutLength", "PACKABLE", "PackRows", "packed_forward"]

LENGTH = "length"  # the column of each row's token count (the Trainer's ``length_column_name``)
#: the batch's training targets, passed through :class:`PackRows` as the padding made them
TARGETS = ("labels", "start_positions", "end_positions")


class PadWithoutLength:
    """``DataCollatorWithPadding`` after dropping the ``length`` column (the sampler's, not a model input).

    Pads every batch to its own longest row (dynamic padding).  A module-level
    class, so that DataLoader worker processes can receive it.
    """

    def __init__(self, tokenizer):
        from transformers import DataCollatorWithPadding

        self.pad = DataCollatorWithPadding(tokenizer)

    def __call__(self, features):
        return self.pad([{k: v for k, v in f.items() if k != LENGTH} for f in features])


#: model types whose classification head reads the first token of an encoder (packable); mBART's reads the decoder
PACKABLE = ("bert", "xlm-roberta", "roberta")


class PackRows:
    """A training batch as one packed, fixed-shape forward (:func:`~codeswitch.common.fastpath.pack_features`).

    The batch (the sampler's rows, unchanged) is padded as :class:`PadWithoutLength`
    pads it (or by ``pad``, a callable of the features: GLUECoS's own padding), then
    its sequences are laid without padding into ``R × width`` tokens, ``R`` from at
    most four budgets, with per-sequence positions, a block-diagonal attention mask
    and each sequence's first-token index (``starts``), plus the targets
    (:data:`TARGETS`) as the padding gave them.  Evaluation batches are padded
    (``padded``): the Trainer's evaluation loop takes them (Koglish-GLUE:
    ``GlueTrainer._get_dataloader``).
    """

    def __init__(self, tokenizer, budgets: Sequence[int], width: int, *, pad=None):
        self.padded = PadWithoutLength(tokenizer) if pad is None else pad
        self.budgets, self.width = tuple(budgets), width

    @classmethod
    def for_lengths(cls, tokenizer, lengths: Sequence[int], *, batch_size: int, max_length: int, seed: int,
                    pad=None, grouped: bool = False) -> "PackRows":
        """Budgets from the training rows' token ``lengths`` and ``batch_size`` rows a step (seeded: reproducible):
        the batches a random sampler draws, or with ``grouped`` those of the length-grouped sampler."""
        width = max(PACK_WIDTH, max_length)
        lengths = np.asarray(lengths)[:, None]  # (rows, 1)
        budgets = grouped_budgets if grouped else sampled_budgets
        return cls(tokenizer, budgets(lengths, batch_size, max_length=max_length, width=width, seed=seed), width, pad=pad)

    def __call__(self, features):
        batch = dict(self.padded(features))
        targets = {k: batch.pop(k) for k in TARGETS if k in batch}  # per sequence (or per padded token): not packed here
        return {**pack_features([batch], self.budgets, self.width), **targets}


def packed_forward(model) -> None:
    """Let ``model`` (BERT/XLM-R ``…ForSequenceClassification``) take a :class:`PackRows` batch; padded ones as before.

    A packed batch runs the encoder once over its rows; each sequence's first token
    goes through the model's own head (BERT: pooler, dropout, classifier; XLM-R:
    its classification head), and the loss is the model's (cross-entropy, or MSE
    for one output).  Replaces ``model.forward`` on the instance, so DDP and the
    Trainer call it as they call the model.
    """
    import torch
    from transformers.modeling_outputs import SequenceClassifierOutput

    from ..core.encoders import packed_hidden

    kind = model.config.model_type
    if kind not in PACKABLE:
        raise ValueError(f"packing: model type {kind!r} cannot be packed (packable: {', '.join(PACKABLE)})")
    eager = model.forward
    base = getattr(model, model.base_model_prefix)

    def forward(input_ids=None, attention_mask=None, token_type_ids=None, position_ids=None, labels=None, starts=None,
                **kwargs):
        if starts is None:
            return eager(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids,
                         position_ids=position_ids, labels=labels, **kwargs)
        inputs = {"input_ids": input_ids, "attention_mask": attention_mask, "position_ids": position_ids}
        if token_type_ids is not None:
            inputs["token_type_ids"] = token_type_ids
        hidden = packed_hidden(base, inputs)  # (R, W, H)
        first = hidden.reshape(-1, hidden.shape[-1]).index_select(0, starts)[:, None, :]  # (N, 1, H)
        if kind == "bert":
            logits = model.classifier(model.dropout(base.pooler(first)))
        else:  # the RoBERTa head reads features[:, 0]
            logits = model.classifier(first)
        loss = None
        if labels is not None:
            if model.num_labels == 1:
                loss = torch.nn.functional.mse_loss(logits.squeeze(-1).float(), labels.float())
            else:
                loss = torch.nn.functional.cross_entropy(logits.view(-1, model.num_labels).float(), labels.view(-1))
        return SequenceClassifierOutput(loss=loss, logits=logits)

    model.forward = forward
