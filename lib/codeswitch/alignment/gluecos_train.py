"""Fine-tuning an (aligned) encoder on a GLUECoS task, with GLUECoS's protocol.

GLUECoS's ``BertSequence.py`` / ``BertToken.py`` / ``run_squad.py`` (which the
alignment authors used) train with AdamW, a linear schedule with warm-up, gradient
clipping at 1.0, evaluate on the validation split after every epoch and keep the
best epoch.  This module does the same:

* :class:`TaskModel` = encoder → optional aligned ``Linear(H, H)`` (Table 3.2's
  linear-head models; ``Baseline (rand)`` is an untrained one) → the task head of
  ``BertForSequenceClassification`` (BERT pooler + dropout + linear),
  ``BertForTokenClassification`` (dropout + linear on every token) or
  ``BertForQuestionAnswering`` (linear to start/end logits).  The head is built
  here rather than taken from ``AutoModelFor*`` because the aligned linear layer
  sits between the encoder and it; without a head the maths is that of the HF
  classes.
* :func:`load_tokenizer` loads the tokenizer as those scripts do: ``BertSequence.py``
  and ``BertToken.py`` pass ``do_lower_case=True`` (also for the cased mBERT, whose
  tokenizer then lower-cases and strips accents — Unicode Mn, which in Devanagari
  includes the virama, the anusvara and the vowel signs u, uu, e, ai); ``run_squad.py`` only with
  ``--do_lower_case``, which ``train_qa.sh`` does not pass.
* :func:`finetune` runs the protocol and returns every epoch's scores and those of
  the epoch with the best validation score ("best_dev_epoch", GLUECoS's model
  selection) or of the last epoch.

With the run's ``packing`` (``alignment.gluecos_packing``; issue 24) each training batch is one packed, fixed-shape
forward for the three heads (:class:`PackedSteps`, :meth:`TaskModel._packed`); with ``torch_compile``
(``alignment.torch_compile``) the task model's training forward is compiled
(:func:`~codeswitch.common.fastpath.compile_for_training`; ``reduce-overhead``: CUDA graphs over the budgets, each step
marked by :func:`~codeswitch.common.fastpath.cudagraph_step_begin`).  Evaluation stays padded and eager.

The loop is a plain PyTorch loop rather than the HF ``Trainer``: it is GLUECoS's
own loop, and the smoke profile runs ~40 tiny fine-tunings, where ``Trainer``'s
fixed per-step overhead (~0.1 s measured on 2 CPU cores) would exceed the budget.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .config import FinetuneRun
from .gluecos_data import TASKS, QAExample, TaggedSentence
from .gluecos_evaluate import LEARNING_MARGIN, entity_f1, learning_baseline, qa_predictions, squad_v2_f1, weighted_f1
from ..common.fastpath import compile_for_training, cudagraph_step_begin, sdpa_ready, uses_sdpa
from ..common.tokens import pad_rows, tokenised, tokenised_words
from ..core.encoders import packed_hidden
from ..core.learning import learning
from ..core.utils import adamw_kind, set_seed

__all__ = ["TaskModel", "finetune", "load_tokenizer"]


def load_tokenizer(path: str, *, do_lower_case: bool):
    """The fine-tuning tokenizer of ``path``; with ``do_lower_case`` it lower-cases (and strips accents).

    ``do_lower_case=False`` loads the tokenizer as it ships.  A tokenizer that has no
    lower-casing switch (byte-level BPE, SentencePiece) is an error rather than a
    silent no-op: the check tokenizes ``"A É"`` and ``"a e"``, which must agree.
    """
    from transformers import AutoTokenizer

    if not do_lower_case:
        return AutoTokenizer.from_pretrained(path)
    tok = AutoTokenizer.from_pretrained(path, do_lower_case=True)
    if tok("A É", add_special_tokens=False)["input_ids"] != tok("a e", add_special_tokens=False)["input_ids"]:
        raise ValueError(
            f"tokenizer of {path} ({type(tok).__name__}) does not lower-case with do_lower_case=True; "
            f"set alignment.<task>.do_lower_case: false for this backbone"
        )
    return tok


class TaskModel(nn.Module):
    """Encoder → optional aligned ``Linear(H, H)`` → task head (see the module docstring)."""

    def __init__(self, encoder: nn.Module, kind: str, num_labels: int, head: nn.Linear | None = None):
        super().__init__()
        self.encoder, self.aligned_head, self.kind = encoder, head, kind
        config = encoder.config
        hidden = config.hidden_size
        self.dropout = nn.Dropout(getattr(config, "hidden_dropout_prob", 0.1))
        out = 2 if kind == "span" else num_labels
        self.classifier = nn.Linear(hidden, out)
        std = getattr(config, "initializer_range", 0.02)
        nn.init.normal_(self.classifier.weight, std=std)  # as HF initialises task heads
        nn.init.zeros_(self.classifier.bias)

    def forward(self, input_ids: Tensor, attention_mask: Tensor | None, token_type_ids: Tensor | None = None,
                position_ids: Tensor | None = None, starts: Tensor | None = None, lengths: Tensor | None = None) -> Tensor:
        if starts is not None:
            return self._packed(input_ids, attention_mask, token_type_ids, position_ids, starts, lengths)
        kwargs = {"token_type_ids": token_type_ids} if token_type_ids is not None else {}
        tokens = self.encoder(input_ids=input_ids, attention_mask=attention_mask, **kwargs).last_hidden_state  # (B, T, H)
        if self.aligned_head is not None:
            tokens = self.aligned_head(tokens)  # (B, T, H)
        if self.kind == "sequence":
            pooler = getattr(self.encoder, "pooler", None)
            pooled = pooler(tokens) if pooler is not None else tokens[:, 0]  # (B, H): BERT's dense+tanh on [CLS]
            return self.classifier(self.dropout(pooled))  # (B, C)
        if self.kind == "token":
            return self.classifier(self.dropout(tokens))  # (B, T, C)
        return self.classifier(tokens)  # (B, T, 2): start and end logits

    def _packed(self, input_ids: Tensor, attention_mask: Tensor, token_type_ids: Tensor | None, position_ids: Tensor,
                starts: Tensor, lengths: Tensor | None) -> Tensor:
        """The logits of a packed batch (:class:`PackedSteps`): one encoder forward over its ``R × W`` tokens.

        ``"sequence"``: (N, C), the head on each sequence's first token; ``"token"``: (R, W, C), a logit row per packed
        slot (the labels are packed alike, −100 on padding); ``"span"``: (N, W, 2), each sequence's start/end logits
        read back from the stream at its offsets, the slots past its ``lengths`` at the dtype's lowest value, so its
        softmax covers its own tokens only.
        """
        packed = {"input_ids": input_ids, "attention_mask": attention_mask, "position_ids": position_ids}
        if token_type_ids is not None:
            packed["token_type_ids"] = token_type_ids
        tokens = packed_hidden(self.encoder, packed)  # (R, W, H)
        flat = tokens.reshape(-1, tokens.shape[-1])  # (R·W, H)
        if self.kind == "sequence":
            first = flat.index_select(0, starts)[:, None]  # (N, 1, H)
            if self.aligned_head is not None:
                first = self.aligned_head(first)  # a per-token linear map: on the first tokens only, as on all
            pooler = getattr(self.encoder, "pooler", None)
            pooled = pooler(first) if pooler is not None else first[:, 0]  # (N, H)
            return self.classifier(self.dropout(pooled))  # (N, C)
        if self.aligned_head is not None:
            tokens = self.aligned_head(tokens)  # (R, W, H)
        if self.kind == "token":
            return self.classifier(self.dropout(tokens))  # (R, W, C)
        logits = self.classifier(tokens).reshape(-1, 2)  # (R·W, 2)
        W = tokens.shape[1]
        offsets = torch.arange(W, device=logits.device)  # (W,)
        at = (starts[:, None] + offsets).clamp(max=logits.shape[0] - 1)  # (N, W); past a sequence: masked below
        inside = offsets < lengths[:, None]  # (N, W)
        return logits[at].masked_fill(~inside[..., None], torch.finfo(logits.dtype).min)  # (N, W, 2)


# --------------------------------------------------------------------------- features per task kind
def _sequence_features(examples, tokenizer, args: FinetuneRun, train: bool) -> list[dict]:
    enc = tokenised(tokenizer, [[t for t, _ in examples]], max_length=args.max_length)  # once per tokenizer, not per run
    return [{**{k: enc[k][i] for k in enc.keys()}, "labels": examples[i][1]} for i in range(len(examples))]


def _token_features(examples: Sequence[TaggedSentence], tokenizer, args: FinetuneRun, train: bool, label_ids: dict) -> list[dict]:
    enc = tokenised_words(tokenizer, [list(s.words) for s in examples], max_length=args.max_length)  # once per tokenizer
    word_ids = enc.pop("word_ids")  # −1: no word
    feats = []
    for i, s in enumerate(examples):
        labels, previous = [], None
        for w in word_ids[i]:
            # Only a word's first sub-word carries its tag (GLUECoS / HF convention); −100 is ignored.
            labels.append(-100 if w < 0 or w == previous else label_ids[s.tags[w]])
            previous = w
        feats.append({**{k: enc[k][i] for k in enc.keys()}, "labels": labels})
    return feats


def _span_features(examples: Sequence[QAExample], tokenizer, args: FinetuneRun, train: bool) -> list[dict]:
    enc = tokenizer(
        [e.question for e in examples],
        [e.context for e in examples],
        truncation="only_second",
        max_length=args.max_length,
        stride=args.doc_stride,
        return_overflowing_tokens=True,
        return_offsets_mapping=True,
    )
    feats = []
    for k in range(len(enc["input_ids"])):
        ex = examples[enc["overflow_to_sample_mapping"][k]]
        seq = enc.sequence_ids(k)
        offsets = enc["offset_mapping"][k]
        f = {key: enc[key][k] for key in enc.keys() if key not in ("offset_mapping", "overflow_to_sample_mapping")}
        if train:
            start = end = 0  # [CLS]: no answer in this window
            if ex.answers:
                a_text, a_start = ex.answers[0]
                a_end = a_start + len(a_text)
                ctx = [t for t, s in enumerate(seq) if s == 1]
                if ctx and offsets[ctx[0]][0] <= a_start and offsets[ctx[-1]][1] >= a_end:
                    start = next(t for t in ctx if offsets[t][1] > a_start)
                    end = next(t for t in reversed(ctx) if offsets[t][0] < a_end)
            f["start_positions"], f["end_positions"] = start, end
        else:
            f["example_id"] = ex.id
            f["offset_mapping"] = [tuple(o) if s == 1 else None for o, s in zip(offsets, seq)]
        feats.append(f)
    return feats


_TENSOR_KEYS = ("input_ids", "attention_mask", "token_type_ids")
_MODEL_KEYS = (*_TENSOR_KEYS, "position_ids", "starts", "lengths")  # a packed batch's (PackedSteps) too


def _collate(feats: Sequence[dict], pad_id: int) -> dict[str, Tensor]:
    """Features padded on the right into one batch (:func:`~codeswitch.common.tokens.pad_rows`): ids with ``pad_id``,
    masks and token types with 0, token labels with −100 (ignored by the loss)."""
    batch: dict[str, Any] = {}
    for key in _TENSOR_KEYS:
        if key in feats[0]:
            batch[key] = pad_rows([f[key] for f in feats], pad_id if key == "input_ids" else 0)
    if "labels" in feats[0]:
        lab = feats[0]["labels"]
        if isinstance(lab, list):
            batch["labels"] = pad_rows([f["labels"] for f in feats], -100)
        else:
            batch["labels"] = torch.tensor([f["labels"] for f in feats], dtype=torch.long)
    for key in ("start_positions", "end_positions"):
        if key in feats[0]:
            batch[key] = torch.tensor([f[key] for f in feats], dtype=torch.long)
    return batch


class PackedSteps:
    """GLUECoS training batches as packed, fixed-shape forwards (the run's ``packing``; issue 24).

    Each batch (the shuffled rows of a step, unchanged) is padded by :func:`_collate` and packed by
    :class:`~codeswitch.common.packed_classifier.PackRows` (:func:`~codeswitch.common.fastpath.pack_features`):
    ``R × W`` tokens, ``W = max(PACK_WIDTH, max_length)``, ``R`` from at most four budgets sampled from the training
    features' lengths (seeded: reproducible), per-sequence positions, block-diagonal attention.  Token labels are
    packed alike (−100 on every padding slot); QA batches carry each window's length (``lengths``), so its start/end
    softmax covers its own tokens (:meth:`TaskModel._packed`).  An epoch's last, smaller batch is completed to
    ``batch_size`` sequences whose targets are −100 (ignored by the loss), so its shapes are the others'.  Host work
    only.

    The sequence and token heads' loss equals the padded step's (up to float summation order).  QA's differs by
    design: the padded step's softmax also covers the padding up to the batch's longest window (as GLUECoS's
    ``run_squad.py`` covers its padding to ``max_seq_length``), which depends on which windows share a batch; the
    packed step's covers each window's own tokens.
    """

    def __init__(self, kind: str, feats: Sequence[dict], pad_id: int, *, batch_size: int, max_length: int, seed: int):
        from functools import partial

        from ..common.packed_classifier import PackRows

        self.kind, self.batch_size = kind, batch_size
        self.rows = PackRows.for_lengths(None, [len(f["input_ids"]) for f in feats], batch_size=batch_size,
                                         max_length=max_length, seed=seed, pad=partial(_collate, pad_id=pad_id))

    @property
    def budgets(self) -> tuple[int, ...]:
        return self.rows.budgets

    def __call__(self, feats: Sequence[dict]) -> dict[str, Tensor]:
        batch = self.rows(feats)
        lengths = [len(f["input_ids"]) for f in feats]
        if self.kind == "token":
            R, W = batch["input_ids"].shape
            labels = torch.full((R * W,), -100, dtype=torch.long)
            for i, (start, n) in enumerate(zip(batch["starts"].tolist(), lengths)):  # host tensors
                labels[start : start + n] = batch["labels"][i, :n]
            batch["labels"] = labels.view(R, W)
        elif self.kind == "span":
            batch["lengths"] = torch.tensor(lengths, dtype=torch.long)
        missing = self.batch_size - len(feats)  # an epoch's last, smaller batch: the same shapes as the others
        if missing > 0:  # sequences that read slot 0 and whose targets the loss ignores (-100, cross-entropy's default)
            fills = {"starts": 0, "lengths": 0, "labels": -100, "start_positions": -100, "end_positions": -100}
            for key, fill in fills.items():
                if key in batch and batch[key].ndim == 1:  # per sequence (token labels are per packed slot)
                    batch[key] = torch.cat([batch[key], torch.full((missing,), fill, dtype=batch[key].dtype)])
        return batch


def _host_batch(feats: Sequence[dict], pad_id: int, *, sdpa: bool, pack: PackedSteps | None = None) -> dict[str, Tensor]:
    """A training batch as the step takes it, prepared on the host: packed (``pack``), or padded (:func:`_collate`)
    and, for an SDPA encoder, its padding mask decided here (:func:`~codeswitch.common.fastpath.sdpa_ready`: dropped
    when nothing is padded, else the boolean form), so transformers never asks the device whether the mask is all
    ones."""
    if pack is not None:
        return pack(feats)
    batch = _collate(feats, pad_id)
    return sdpa_ready(batch) if sdpa else batch


def _train_step(model: TaskModel, kind: str, batch: dict[str, Tensor], optimizer, scheduler, scaler, max_grad_norm: float,
                autocast, device) -> None:
    """One optimiser step on a host batch (:func:`_host_batch`): forward, the loss in fp32, backward, clipping, AdamW,
    schedule; no read of a tensor on the host."""
    batch = {key: v.to(device) for key, v in batch.items()}
    inputs = {key: batch[key] for key in _MODEL_KEYS if key in batch}
    inputs.setdefault("attention_mask", None)  # sdpa_ready dropped a mask without padding
    with autocast():
        logits = model(**inputs)
    loss = _loss(kind, logits.float(), batch)  # the loss in fp32
    scaler.scale(loss).backward()
    scaler.unscale_(optimizer)
    torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
    scaler.step(optimizer)
    scaler.update()
    scheduler.step()
    optimizer.zero_grad(set_to_none=True)


def _loss(kind: str, logits: Tensor, batch: dict[str, Tensor]) -> Tensor:
    if kind == "sequence":
        return F.cross_entropy(logits, batch["labels"])
    if kind == "token":
        return F.cross_entropy(logits.flatten(0, 1), batch["labels"].flatten(), ignore_index=-100)  # (B·T, C)
    start, end = logits.unbind(-1)  # (B, T) each
    return 0.5 * (F.cross_entropy(start, batch["start_positions"]) + F.cross_entropy(end, batch["end_positions"]))


@torch.no_grad()
def _logits(model: TaskModel, feats: list[dict], args: FinetuneRun, pad_id: int, device) -> list[np.ndarray]:
    model.eval()
    out = []
    for k in range(0, len(feats), args.per_device_eval_batch_size):
        batch = _collate(feats[k : k + args.per_device_eval_batch_size], pad_id)
        inputs = {key: batch[key].to(device) for key in _TENSOR_KEYS if key in batch}
        logits = model(**inputs).float().cpu().numpy()
        out.extend(logits[i, : len(feats[k + i]["input_ids"])] if logits.ndim == 3 else logits[i] for i in range(len(logits)))
    return out


def _score(kind: str, model: TaskModel, examples, feats, args: FinetuneRun, pad_id: int, device, labels: Sequence[str]) -> float:
    logits = _logits(model, feats, args, pad_id, device)
    if kind == "sequence":
        return weighted_f1([lab for _, lab in examples], [int(np.argmax(l)) for l in logits])
    if kind == "token":
        gold, pred = [], []
        for f, l in zip(feats, logits):
            keep = [t for t, lab in enumerate(f["labels"]) if lab != -100]  # first sub-words of the words kept
            gold.append([labels[f["labels"][t]] for t in keep])
            pred.append([labels[int(np.argmax(l[t]))] for t in keep])
        return entity_f1(gold, pred)
    T = max(len(l) for l in logits)
    start = np.full((len(logits), T), -1e9)
    end = np.full((len(logits), T), -1e9)
    for k, l in enumerate(logits):
        start[k, : len(l)], end[k, : len(l)] = l[:, 0], l[:, 1]
    preds = qa_predictions(feats, start, end, {e.id: e.context for e in examples}, max_answer_length=args.max_answer_length)
    return squad_v2_f1(preds, {e.id: [a for a, _ in e.answers] for e in examples})


def _labels_of(task: str, data: dict) -> list[str]:
    if task == "sentiment":
        from .gluecos_data import SENTIMENT_LABELS

        return list(SENTIMENT_LABELS)
    if task == "ner":
        tags = {t for split in ("train", "validation") for s in data[split] for t in (s.tags or ())}
        return sorted(tags)
    return []


def _features(kind: str, examples, tokenizer, args: FinetuneRun, train: bool, label_ids: dict) -> list[dict]:
    if kind == "sequence":
        return _sequence_features(examples, tokenizer, args, train)
    if kind == "token":
        return _token_features(examples, tokenizer, args, train, label_ids)
    return _span_features(examples, tokenizer, args, train)


def _labelled(task: str, examples) -> bool:
    if task == "sentiment":
        return all(lab is not None for _, lab in examples)
    if task == "ner":
        return all(s.tags is not None for s in examples)
    return True


def finetune(
    task: str,
    data: dict,
    encoder: nn.Module,
    tokenizer,
    args: FinetuneRun,
    *,
    aligned_head: nn.Linear | None = None,
    device: torch.device | str = "cpu",
    keep: Callable[[TaskModel, dict], Any] | None = None,
) -> dict:
    """Fine-tune on ``data["train"]`` as the spec ``args`` says, score ``validation`` (and a labelled ``test``) after every epoch.

    ``keep``: called as ``keep(model, result)`` at the end with the selected epoch's weights loaded (the kept model,
    issue 28; :func:`~codeswitch.alignment.gluecos_export.as_transformers` makes it a ``transformers`` task model).

    Returns ``{"validation": F1, "test": F1 or None, "epoch": selected epoch,
    "per_epoch": [{"epoch", "validation", "test"}, ...], "labels": [...]}``.
    """
    kind = TASKS[task].kind
    device = torch.device(device)
    labels = _labels_of(task, data)
    label_ids = {lab: i for i, lab in enumerate(labels)}
    set_seed(args.seed)  # before the task head is built, as run_glue.py does
    model = TaskModel(encoder, kind, num_labels=max(len(labels), 1), head=aligned_head).to(device)
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    train_feats = _features(kind, data["train"], tokenizer, args, True, label_ids)
    eval_sets = {"validation": data["validation"]}
    if "test" in data and _labelled(task, data["test"]):
        eval_sets["test"] = data["test"]
    eval_feats = {k: _features(kind, v, tokenizer, args, False if kind == "span" else True, label_ids) for k, v in eval_sets.items()}

    optimizer, scheduler = _optimizer(model, args, len(train_feats), device)
    generator = torch.Generator().manual_seed(args.seed)
    amp_dtype = {"fp32": None, "bf16": torch.bfloat16, "fp16": torch.float16}[args.precision]  # the spec's resolved precision
    autocast = lambda: torch.autocast(device_type=device.type, dtype=amp_dtype, enabled=amp_dtype is not None)  # noqa: E731
    scaler = torch.amp.GradScaler(device.type, enabled=amp_dtype == torch.float16)  # fp16: dynamic loss scaling
    per_epoch = []
    sdpa = uses_sdpa(encoder)
    pack = _packed_steps(kind, encoder, train_feats, pad_id, args)
    if getattr(args, "torch_compile", None):  # training steps compiled (the loss is computed outside the model)
        compile_for_training(model, fixed_shapes=pack is not None, mode=args.torch_compile)
    for epoch in range(1, args.num_train_epochs + 1):
        model.train()
        order = torch.randperm(len(train_feats), generator=generator).tolist()
        for k in range(0, len(order), args.batch_size):
            batch = _host_batch([train_feats[i] for i in order[k : k + args.batch_size]], pad_id, sdpa=sdpa, pack=pack)
            cudagraph_step_begin(getattr(args, "torch_compile", None))  # reduce-overhead: a new step for the CUDA graphs
            _train_step(model, kind, batch, optimizer, scheduler, scaler, args.max_grad_norm, autocast, device)
        row = {"epoch": epoch}
        for split, feats in eval_feats.items():
            with autocast():
                row[split] = _score(kind, model, eval_sets[split], feats, args, pad_id, device, labels)
        row.setdefault("test", None)
        per_epoch.append(row)
        if keep is not None and args.selection == "best_dev_epoch" and max(per_epoch, key=_selected) is row:
            best_state = {k: v.detach().to("cpu", copy=True) for k, v in model.state_dict().items()}  # the kept epoch's
    result = _result(task, data, per_epoch, labels, args.selection)
    if keep is not None:
        if args.selection == "best_dev_epoch":
            model.load_state_dict(best_state)
        keep(model.eval(), result)
    return result


def _optimizer(model: TaskModel, args: FinetuneRun, n_train: int, device: torch.device):
    """GLUECoS's AdamW (no weight decay on biases and LayerNorm weights) and linear schedule with warm-up over
    ``num_train_epochs`` epochs of ``n_train`` features."""
    from transformers import get_linear_schedule_with_warmup

    no_decay = ("bias", "LayerNorm.weight", "layer_norm.weight")
    named = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    groups = [
        {"params": [p for n, p in named if not any(nd in n for nd in no_decay)], "weight_decay": args.weight_decay},
        {"params": [p for n, p in named if any(nd in n for nd in no_decay)], "weight_decay": 0.0},
    ]
    optimizer = torch.optim.AdamW(groups, lr=args.learning_rate, eps=1e-8, **adamw_kind(device))  # fused on CUDA, foreach on CPU
    steps_per_epoch = max(1, -(-n_train // args.batch_size))
    total = steps_per_epoch * args.num_train_epochs
    return optimizer, get_linear_schedule_with_warmup(optimizer, int(total * args.warmup_ratio), total)


def _result(task: str, data: dict, per_epoch: list[dict], labels: list[str], selection: str) -> dict:
    """The selected epoch's scores (``selection``: GLUECoS's best validation epoch, or the last), every epoch's, and
    the run's learning entry."""
    chosen = max(per_epoch, key=_selected) if selection == "best_dev_epoch" else per_epoch[-1]
    # the learning entry scores the model the table reports where its selection did not look (issue 23: the best of
    # 12 validation epochs let a chance-level model clear the majority class): a labelled test at the chosen epoch
    split = "test" if chosen["test"] is not None else "validation"
    baseline, name = learning_baseline(task, data, split)
    entry = learning(f"{TASKS[task].metric}, {split}", chosen[split], baseline, baseline_name=name, margin=LEARNING_MARGIN)
    return {"validation": chosen["validation"], "test": chosen["test"], "epoch": chosen["epoch"], "per_epoch": per_epoch,
            "labels": labels, "learning": entry}


def _packed_steps(kind: str, encoder: nn.Module, feats: Sequence[dict], pad_id: int, args: FinetuneRun) -> PackedSteps | None:
    """The packer of a run with ``packing`` (:class:`PackedSteps`), else None; an encoder that cannot take a packed
    batch is an error naming the setting."""
    if not getattr(args, "packing", None):
        return None
    from ..common.packed_classifier import PACKABLE

    model_type = getattr(encoder.config, "model_type", None)
    if model_type not in PACKABLE or not uses_sdpa(encoder):
        raise ValueError(f"alignment.gluecos_packing: a {model_type} encoder with {encoder.config._attn_implementation!r} "
                         f"attention cannot take packed batches (needs one of {', '.join(PACKABLE)} with SDPA attention); "
                         "set alignment.gluecos_packing: false")
    return PackedSteps(kind, feats, pad_id, batch_size=args.batch_size, max_length=args.max_length, seed=args.seed)


def _selected(row: dict) -> tuple:
    return row["validation"], -row["epoch"]  # the best validation score; ties: the earlier epoch
