"""Aligning a multilingual encoder on parallel English–Hindi text (Fazili & Jyothi 2022, §2 and §3.1.2).

Two training modes, as in the paper and the authors' released scripts:

* ``all_layers``: every encoder weight is trained (``align_bert.py``: AdamW, lr 5e-5,
  τ 0.001, η 0.1, batch 8);
* ``linear_head``: a new ``Linear(H, H)`` on top of the frozen encoder is the only
  trainable part (``align_linear.py``: AdamW, lr 1e-3, τ 0.01, η 100, batch 512,
  early stopping with patience 10).  The head maps every token vector, so a
  downstream model can keep it between the encoder and its task head.

Both modes stop early on the validation loss and restore the best epoch's weights.
The frozen reference ``f0`` of the regulariser is the initial model: a frozen copy
of the encoder in ``all_layers`` mode, the encoder itself (without the head) in
``linear_head`` mode, so no second forward pass is needed there.

Where a parallel corpus has no alignment file, :func:`~codeswitch.alignment.evaluate.extract_alignments`
derives word alignments from the (initial) encoder itself with awesome-align's recipe.

The losses are :mod:`codeswitch.alignment.loss`; this module only embeds text.

:func:`train_alignment` is a hand-written loop, not the HF ``Trainer``, because the
method needs what the ``Trainer`` does not do: a second, frozen reference model
``f0`` inside the loss (Eq. 2's regulariser), early stopping on the validation *loss*
with the best epoch's trainable weights restored in memory (no checkpoint on disk),
and the released scripts' optimizer (AdamW, betas (0.9, 0.98), no schedule).  It
takes the :class:`~codeswitch.alignment.config.AlignRun` spec as it is.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np
import torch
from torch import Tensor, nn

from .config import MODES, OBJECTIVES, AlignRun
from .data import ParallelData, words
from .loss import gather_aligned_words, pool_subwords, sentence_alignment_loss, word_alignment_loss
from ..common.fastpath import compile_for_training, cudagraph_step_begin
from ..core.progress import progress
from ..core.checkpoints import checkpoint_directory
from ..core.encoders import packed_hidden
from ..core.utils import adamw_kind, to_device

__all__ = [
    "MODES",
    "OBJECTIVES",
    "Aligner",
    "Batch",
    "SideTokens",
    "PairTokens",
    "encode_words",
    "train_alignment",
    "save_aligner",
    "load_aligner",
]



# --------------------------------------------------------------------------- model
class Aligner(nn.Module):
    """An encoder, optionally followed by a trainable ``Linear(H, H)`` applied to every token.

    ``forward`` returns the token vectors (B, T, H) and the sentence vector (B, H);
    ``reference`` returns the same from the frozen initial model f0.
    """

    def __init__(self, encoder: nn.Module, mode: str = "all_layers", *, sentence_vector: str = "cls", head: nn.Linear | None = None):
        super().__init__()
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
        self.mode = mode
        self.sentence_vector = sentence_vector
        self.encoder = encoder
        hidden = encoder.config.hidden_size
        if mode == "linear_head":
            for p in self.encoder.parameters():
                p.requires_grad_(False)
            self.head = head if head is not None else nn.Linear(hidden, hidden)
            self.frozen = None  # f0 is the encoder itself
        else:
            self.head = None
            self.frozen = None  # set by freeze_reference() when training starts

    def freeze_reference(self) -> None:
        """Keep a frozen copy of the current encoder as f0 (all_layers mode)."""
        if self.mode == "all_layers" and self.frozen is None:
            frozen = copy.deepcopy(self.encoder).eval()
            for p in frozen.parameters():
                p.requires_grad_(False)
            object.__setattr__(self, "frozen", frozen)  # not a registered submodule: never trained, never saved

    def _run(self, encoder: nn.Module, input_ids: Tensor, attention_mask: Tensor):
        out = encoder(input_ids=input_ids, attention_mask=attention_mask)
        tokens = out.last_hidden_state  # (B, T, H)
        if self.sentence_vector == "pooler" and getattr(out, "pooler_output", None) is not None:
            sentence = out.pooler_output  # (B, H): BERT's dense+tanh on [CLS]
        else:
            sentence = tokens[:, 0]  # (B, H): the [CLS] vector
        return tokens, sentence

    def forward(self, input_ids: Tensor, attention_mask: Tensor) -> tuple[Tensor, Tensor]:
        if self.mode == "linear_head":
            with torch.no_grad():  # the encoder is frozen: no activations kept for backward
                self.encoder.eval()
                tokens, sentence = self._run(self.encoder, input_ids, attention_mask)
            return self.head(tokens), self.head(sentence)
        return self._run(self.encoder, input_ids, attention_mask)

    @torch.no_grad()
    def reference(self, input_ids: Tensor, attention_mask: Tensor) -> tuple[Tensor, Tensor]:
        """f0's token and sentence vectors (no gradient)."""
        if self.mode == "linear_head":
            self.encoder.eval()
            return self._run(self.encoder, input_ids, attention_mask)
        if self.frozen is None:
            raise RuntimeError("call freeze_reference() before asking for f0")
        return self._run(self.frozen, input_ids, attention_mask)

    def with_reference(self, input_ids: Tensor, attention_mask: Tensor) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        """``(tokens, sentence, tokens0, sentence0)``: f's outputs (with gradient) and f0's (without).

        In ``linear_head`` mode f0 *is* the frozen encoder, so one encoder pass serves both.
        """
        if self.mode == "linear_head":
            tokens0, sentence0 = self.reference(input_ids, attention_mask)
            return self.head(tokens0), self.head(sentence0), tokens0, sentence0
        tokens, sentence = self(input_ids, attention_mask)
        tokens0, sentence0 = self.reference(input_ids, attention_mask)
        return tokens, sentence, tokens0, sentence0

    def trainable_state(self) -> dict[str, Tensor]:
        module = self.head if self.mode == "linear_head" else self.encoder
        return {k: v.detach().clone() for k, v in module.state_dict().items()}

    def load_trainable_state(self, state: dict[str, Tensor]) -> None:
        (self.head if self.mode == "linear_head" else self.encoder).load_state_dict(state)


# --------------------------------------------------------------------------- batches
@dataclass
class Batch:
    """One side of a batch: sub-word ids, mask and each sub-word's word index (−1 for none)."""

    input_ids: Tensor  # (B, T)
    attention_mask: Tensor  # (B, T)
    word_index: Tensor  # (B, T)
    n_words: int  # W, the longest sentence's word count

    def to(self, device) -> "Batch":
        return Batch(to_device(self.input_ids, device), to_device(self.attention_mask, device), to_device(self.word_index, device),
                     self.n_words)



def auto_model(path):
    """``AutoModel.from_pretrained(path)`` without transformers' load report: a BERT checkpoint without the pooler's
    weights (the tiny backbones, MiniLM) is loaded with a seeded, freshly initialised pooler on purpose, and the report
    of it would be a wall of stderr in the notebook (issue 42.2).  Only logging changes."""
    from transformers import AutoModel

    from ..core.utils import quiet_transformers

    with quiet_transformers():
        return AutoModel.from_pretrained(path)

def encode_words(tokenizer, sentences: Sequence[Sequence[str]], max_length: int) -> Batch:
    """Tokenise pre-split sentences; keep which word every sub-word came from (fast tokenizers' ``word_ids``)."""
    enc = tokenizer(
        [list(s) for s in sentences],
        is_split_into_words=True,
        truncation=True,
        max_length=max_length,
        padding=True,
        return_tensors="pt",
    )
    rows = [[-1 if w is None else w for w in enc.word_ids(b)] for b in range(len(sentences))]
    word_index = torch.tensor(rows, dtype=torch.long)  # (B, T)
    return Batch(enc["input_ids"], enc["attention_mask"], word_index, max((len(s) for s in sentences), default=0))


class SideTokens:
    """One side of a set of pre-split sentences, tokenised once (:func:`codeswitch.common.tokens.tokenised_words`):
    :meth:`batch` pads the rows a step asks for, the same :class:`Batch` :func:`encode_words` makes of them."""

    def __init__(self, tokenizer, sentences: Sequence[Sequence[str]], max_length: int):
        from ..common.tokens import tokenised_words

        enc = tokenised_words(tokenizer, sentences, max_length=max_length)
        self.input_ids, self.word_ids = enc["input_ids"], enc["word_ids"]  # lists of token ids / word indices per row
        self.n_words = [len(s) for s in sentences]
        self.pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
        self.left = getattr(tokenizer, "padding_side", "right") == "left"

    def lengths(self) -> list[int]:
        return [len(r) for r in self.input_ids]

    def batch(self, idx: Sequence[int]) -> Batch:
        from ..common.tokens import pad_rows

        ids = pad_rows([self.input_ids[k] for k in idx], self.pad_id, left=self.left)  # (B, T)
        mask = pad_rows([[1] * len(self.input_ids[k]) for k in idx], 0, left=self.left)  # (B, T)
        word_index = pad_rows([self.word_ids[k] for k in idx], -1, left=self.left)  # (B, T)
        return Batch(ids, mask, word_index, max((self.n_words[k] for k in idx), default=0))


class PairTokens:
    """Both sides of a :class:`~codeswitch.alignment.data.ParallelData`, tokenised once per tokenizer (not in every
    step); ``budgets`` (row counts, :func:`~codeswitch.common.fastpath.sampled_budgets`): steps are packed
    (the section's ``packing``, :func:`_packed_outputs`)."""

    def __init__(self, tokenizer, data: ParallelData, max_length: int, *, budgets: Sequence[int] | None = None,
                 width: int | None = None):
        self.en = SideTokens(tokenizer, [words(p[0]) for p in data.pairs], max_length)
        self.hi = SideTokens(tokenizer, [words(p[1]) for p in data.pairs], max_length)
        self.budgets, self.width = (tuple(budgets) if budgets else None), width

    @classmethod
    def packed(cls, tokenizer, data: ParallelData, max_length: int, *, batch_size: int, seed: int, budgets=None) -> "PairTokens":
        """Packed steps: ``budgets`` (default: from ``data``'s lengths, ``batch_size`` pairs a step) of rows of
        ``max(PACK_WIDTH, max_length)`` tokens."""
        from ..common.fastpath import PACK_WIDTH, sampled_budgets

        out = cls(tokenizer, data, max_length)
        out.width = max(PACK_WIDTH, max_length)
        if budgets is None:
            lengths = np.stack([out.en.lengths(), out.hi.lengths()], axis=1)  # (pairs, 2)
            budgets = sampled_budgets(lengths, batch_size, max_length=max_length, width=out.width, seed=seed)
        out.budgets = tuple(budgets)
        return out

    def batch(self, idx: Sequence[int]) -> tuple[Batch, Batch, dict | None]:
        """The step's two sides, and with budgets their packed form (host work, as a DataLoader collator's):
        ``pack_features`` of the English then the Hindi rows, one ``R × width`` batch."""
        en, hi = self.en.batch(idx), self.hi.batch(idx)
        if not self.budgets:
            return en, hi, None
        from ..common.fastpath import pack_features

        if self.en.left or self.hi.left:
            raise ValueError("alignment packing needs a right-padding tokenizer")
        sides = [{"input_ids": b.input_ids, "attention_mask": b.attention_mask} for b in (en, hi)]
        return en, hi, pack_features(sides, self.budgets, self.width)


def _packed_run(aligner: Aligner, encoder: nn.Module, packed: dict, widths: tuple[int, int], device) -> tuple[Tensor, ...]:
    """One forward of ``encoder`` over a packed step already on ``device``: ``(x_tok, x, y_tok, y)``, the padded
    forwards' outputs (token vectors (B, Tx, H) / (B, Ty, H) read back from the stream at each sentence's offsets,
    the [CLS] vectors (B, H), or the pooler's)."""
    hidden = packed_hidden(encoder, packed)  # (R, W, H)
    flat = hidden.reshape(-1, hidden.shape[-1])  # (R·W, H)
    starts = packed["starts"]  # (2B,)
    T = max(widths)
    at = (starts[:, None] + torch.arange(T, device=device)).clamp(max=flat.shape[0] - 1)  # (2B, T); beyond a sentence: masked by word_index −1
    tokens = flat[at]  # (2B, T, H)
    first = tokens[:, 0]  # (2B, H)
    pooler = getattr(encoder, "pooler", None)
    sentence = pooler(tokens[:, :1]) if aligner.sentence_vector == "pooler" and pooler is not None else first
    B = starts.shape[0] // 2
    return tokens[:B, : widths[0]], sentence[:B], tokens[B:, : widths[1]], sentence[B:]


def _packed_outputs(aligner: Aligner, en: Batch, hi: Batch, packed: dict, device):
    """``with_reference`` of both sides from one packed forward per encoder (f, and f0 where it is another model)."""
    widths = (en.input_ids.shape[1], hi.input_ids.shape[1])
    packed = {k: to_device(packed[k], device) for k in ("input_ids", "attention_mask", "position_ids", "starts")}  # once, for f and f0
    if aligner.mode == "linear_head":  # f0 is the frozen encoder, f = head ∘ f0: one forward
        with torch.no_grad():
            aligner.encoder.eval()
            x0_tok, x0, y0_tok, y0 = _packed_run(aligner, aligner.encoder, packed, widths, device)
        h = aligner.head
        return (h(x0_tok), h(x0), x0_tok, x0), (h(y0_tok), h(y0), y0_tok, y0)
    if aligner.frozen is None:
        raise RuntimeError("call freeze_reference() before asking for f0")
    x_tok, x, y_tok, y = _packed_run(aligner, aligner.encoder, packed, widths, device)
    with torch.no_grad():
        x0_tok, x0, y0_tok, y0 = _packed_run(aligner, aligner.frozen, packed, widths, device)
    return (x_tok, x, x0_tok, x0), (y_tok, y, y0_tok, y0)


def _batches(n: int, batch_size: int, generator: torch.Generator | None) -> list[list[int]]:
    order = torch.randperm(n, generator=generator).tolist() if generator is not None else list(range(n))
    return [order[k : k + batch_size] for k in range(0, n, batch_size)]


def _batch_loss(aligner: Aligner, data: ParallelData, idx: Sequence[int], tokens: PairTokens, args: AlignRun, device
                ) -> dict[str, Tensor]:
    """The loss terms of the pairs ``idx`` of ``data``, whose tokens are ``tokens`` (tokenised once, not here)."""
    return _step_loss(aligner, tokens.batch(idx), [data.alignments[k] for k in idx] if data.alignments is not None else None,
                      args, device, source=data.source)


def _step_loss(aligner: Aligner, prepared: tuple[Batch, Batch, dict | None], al, args: AlignRun, device, *, source: str = ""
               ) -> dict[str, Tensor]:
    """The loss terms of one prepared step (:meth:`PairTokens.batch`; ``al``: its pairs' word alignments or None)."""
    en, hi, packed = prepared
    if packed is not None:  # one packed forward per encoder over both sides
        (x_tok, x, x0_tok, x0), (y_tok, y, y0_tok, y0) = _packed_outputs(aligner, en, hi, packed, device)
        en, hi = en.to(device), hi.to(device)
    else:
        en, hi = en.to(device), hi.to(device)
        x_tok, x, x0_tok, x0 = aligner.with_reference(en.input_ids, en.attention_mask)  # (B, Tx, H), (B, H), f0's twice
        y_tok, y, y0_tok, y0 = aligner.with_reference(hi.input_ids, hi.attention_mask)  # (B, Ty, H), (B, H), f0's twice
    if args.objective == "sentence":
        return sentence_alignment_loss(
            x, y, x0, y0, temperature=args.temperature, reg_weight=args.reg_weight, variant=args.contrastive_variant
        )
    if al is None:
        raise ValueError(f"word-level alignment needs word alignments for {source}; extract them first")
    xw, xp = pool_subwords(x_tok, en.word_index, en.n_words)  # (B, Wx, H)
    yw, yp = pool_subwords(y_tok, hi.word_index, hi.n_words)  # (B, Wy, H)
    xs, ys = gather_aligned_words(xw, xp, yw, yp, al)  # (P, H) each
    if args.word_reg_on == "words":
        x0w, _ = pool_subwords(x0_tok, en.word_index, en.n_words)
        y0w, _ = pool_subwords(y0_tok, hi.word_index, hi.n_words)
        x0s, y0s = gather_aligned_words(x0w, xp, y0w, yp, al)
        anchors, anchors0 = torch.cat([xs, ys]), torch.cat([x0s, y0s])
    else:
        anchors, anchors0 = torch.cat([x, y]), torch.cat([x0, y0])  # (2B, H): Eq. 2 on the [CLS] vectors
    return word_alignment_loss(xs, ys, anchors, anchors0, reg_weight=args.reg_weight, distance=args.word_distance or "cosine")


def _mean_loss(aligner: Aligner, data: ParallelData, tokens: PairTokens, args: AlignRun, device) -> float:
    aligner.eval()
    total, n = 0.0, 0
    with torch.no_grad():
        for idx in _batches(len(data), args.batch_size, None):  # fixed order: the loss of a batch depends on its members
            total += float(_batch_loss(aligner, data, idx, tokens, args, device)["total"]) * len(idx)
            n += len(idx)
    return total / max(n, 1)


def train_alignment(
    aligner: Aligner,
    tokenizer,
    train: ParallelData,
    valid: ParallelData,
    args: AlignRun,
    *,
    device: torch.device | str = "cpu",
    desc: str = "align",
) -> dict:
    """Train ``aligner`` with Lc or Lm as the spec ``args`` says; early stopping on the validation loss; best weights restored.

    Returns the history: ``{"train_loss": [...], "valid_loss": [...], "best_epoch", "best_valid_loss",
    "initial_valid_loss", "epochs_run", "steps"}`` (epochs 1-based; ``best_epoch`` 0 = the initial
    weights were never beaten).
    """
    device = torch.device(device)
    aligner.to(device)
    aligner.freeze_reference()
    if aligner.frozen is not None:
        aligner.frozen.to(device)
    if getattr(args, "torch_compile", None) and aligner.mode == "all_layers":  # after the frozen copy: f compiled, f0 not
        compile_for_training(aligner.encoder, fixed_shapes=bool(getattr(args, "packing", None)),  # linear_head: f0 frozen
                             mode=args.torch_compile)
    params = [p for p in aligner.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=args.learning_rate, betas=(0.9, 0.98), eps=1e-8, weight_decay=args.weight_decay,
                                  **adamw_kind(device))  # fused on CUDA, foreach on CPU
    generator = torch.Generator().manual_seed(args.seed)
    amp_dtype = {"fp32": None, "bf16": torch.bfloat16, "fp16": torch.float16}[args.precision]  # the spec's resolved precision
    autocast = lambda: torch.autocast(device_type=device.type, dtype=amp_dtype, enabled=amp_dtype is not None)  # noqa: E731
    scaler = torch.amp.GradScaler(device.type, enabled=amp_dtype == torch.float16)  # fp16: dynamic loss scaling
    if getattr(args, "packing", None):  # the section's packing: one packed forward per encoder a step (issue 24)
        train_tokens = PairTokens.packed(tokenizer, train, args.max_length, batch_size=args.batch_size, seed=args.seed)
        valid_tokens = PairTokens.packed(tokenizer, valid, args.max_length, batch_size=args.batch_size, seed=args.seed,
                                         budgets=train_tokens.budgets)  # the largest budget holds any batch
    else:  # tokenised once per (tokenizer, limit, texts), not in every step
        train_tokens, valid_tokens = PairTokens(tokenizer, train, args.max_length), PairTokens(tokenizer, valid, args.max_length)
    with autocast():
        best_loss = _mean_loss(aligner, valid, valid_tokens, args, device)
    history = {"train_loss": [], "valid_loss": [], "initial_valid_loss": best_loss, "best_epoch": 0, "steps": 0}
    best_state, bad_epochs = aligner.trainable_state(), 0
    for epoch in progress(range(1, args.num_train_epochs + 1), desc=desc, unit="epoch"):
        aligner.train()
        running, seen = torch.zeros((), dtype=torch.float64, device=device), 0  # summed on the device: no host read per step
        for idx in _batches(len(train), args.batch_size, generator):
            cudagraph_step_begin(getattr(args, "torch_compile", None))  # reduce-overhead: a new step for the CUDA graphs
            with autocast():
                loss = _batch_loss(aligner, train, idx, train_tokens, args, device)["total"]
            optimizer.zero_grad(set_to_none=True)
            scaler.scale(loss).backward()
            if args.max_grad_norm:
                scaler.unscale_(optimizer)
                torch.nn.utils.clip_grad_norm_(params, args.max_grad_norm)
            scaler.step(optimizer)
            scaler.update()
            running += loss.detach().double() * len(idx)
            seen += len(idx)
            history["steps"] += 1
        with autocast():
            valid_loss = _mean_loss(aligner, valid, valid_tokens, args, device)
        history["train_loss"].append(float(running) / max(seen, 1))
        history["valid_loss"].append(valid_loss)
        if valid_loss < best_loss:
            best_loss, best_state, bad_epochs = valid_loss, aligner.trainable_state(), 0
            history["best_epoch"] = epoch
        else:
            bad_epochs += 1
            if bad_epochs >= args.patience:
                break
    aligner.load_trainable_state(best_state)
    aligner.eval()
    history["best_valid_loss"] = best_loss
    history["epochs_run"] = len(history["valid_loss"])
    return history


# --------------------------------------------------------------------------- checkpoints
def save_aligner(aligner: Aligner, tokenizer, folder: str | Path, *, meta: dict | None = None) -> Path:
    """Save an aligned model as safetensors, atomically (a temporary sibling renamed into place).

    ``all_layers``: ``encoder/`` (``save_pretrained``) with the tokenizer.  ``linear_head``:
    ``head.safetensors`` only (the encoder is unchanged).  ``aligner.json`` records the mode.
    """
    from safetensors.torch import save_file

    folder = Path(folder)
    with checkpoint_directory(folder) as tmp:
        if aligner.mode == "all_layers":
            aligner.encoder.save_pretrained(tmp / "encoder", safe_serialization=True)
            tokenizer.save_pretrained(tmp / "encoder")
        else:
            save_file({k: v.contiguous().cpu() for k, v in aligner.head.state_dict().items()}, str(tmp / "head.safetensors"))
        info = {"mode": aligner.mode, "sentence_vector": aligner.sentence_vector, **(meta or {})}
        (tmp / "aligner.json").write_text(json.dumps(info, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return folder


def load_aligner(folder: str | Path, backbone_path: str) -> tuple[nn.Module, nn.Linear | None]:
    """``(encoder, head)`` of a saved aligned model (``head`` is ``None`` in ``all_layers`` mode).

    ``backbone_path`` is the original encoder, used when only a head was saved.
    """
    from safetensors.torch import load_file

    folder = Path(folder)
    info_path = folder / "aligner.json"
    if not info_path.is_file():
        raise FileNotFoundError(f"{folder} is not a saved aligned model (no aligner.json)")
    info = json.loads(info_path.read_text(encoding="utf-8"))
    if info["mode"] == "all_layers":
        return auto_model(folder / "encoder"), None
    encoder = auto_model(backbone_path)
    state = load_file(str(folder / "head.safetensors"))
    hidden = encoder.config.hidden_size
    head = nn.Linear(hidden, hidden)
    head.load_state_dict(state)
    return encoder, head
