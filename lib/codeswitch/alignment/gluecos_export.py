"""A fine-tuned GLUECoS :class:`~codeswitch.alignment.gluecos_train.TaskModel` as the ``transformers`` task class its
task loads with (:func:`as_transformers`): how notebook 06's kept task models are written (issue 28)."""

from __future__ import annotations

from typing import Sequence

import torch
from torch import Tensor, nn

from .gluecos_train import TaskModel

__all__ = ["PROBE", "AUTO_CLASSES", "as_transformers"]


#: what :func:`as_transformers` checks the converted model on (a code-switched Hindi-English pair)
PROBE = ("movie kaisi thi?", "yeh movie bahut achhi thi, I loved the songs")
#: the ``transformers`` head class of each GLUECoS task kind
AUTO_CLASSES = {"sequence": "AutoModelForSequenceClassification", "token": "AutoModelForTokenClassification",
                "span": "AutoModelForQuestionAnswering"}


def _fold(linear: nn.Linear, head: nn.Linear | None) -> tuple[Tensor, Tensor]:
    """``linear ∘ head`` as one linear layer's ``(weight, bias)``: ``W (A x + a) + b = (W A) x + (W a + b)``."""
    w, b = linear.weight.detach().cpu().double(), linear.bias.detach().cpu().double()
    if head is None:
        return w.float(), b.float()
    a, c = head.weight.detach().cpu().double(), head.bias.detach().cpu().double()
    return (w @ a).float(), (w @ c + b).float()


@torch.no_grad()
def as_transformers(model: TaskModel, labels: Sequence[str] = (), tokenizer=None):
    """The fine-tuned :class:`TaskModel` as the ``transformers`` class its task loads with (:data:`AUTO_CLASSES`), with
    its label maps: the same logits at inference.

    The encoder's weights go into the class's base model; the task head into its head (BERT: ``classifier`` on the
    pooler, ``classifier`` per token, ``qa_outputs``; RoBERTa / XLM-R sequence classification: the pooler's dense
    layer becomes ``classifier.dense``, the task layer ``classifier.out_proj``, the same tanh between).  An aligned
    linear head (Table 3.2) is folded into the next linear layer (exact at inference; in further fine-tuning dropout
    then acts before it rather than after).  With ``tokenizer``, both models score :data:`PROBE` (question and
    context for QA) and a logit difference over 1e-4 is an error.
    """
    import copy

    import transformers

    kind, enc, head = model.kind, model.encoder, model.aligned_head
    config = copy.deepcopy(enc.config)
    if kind != "span":
        config.num_labels = len(labels)
        config.id2label, config.label2id = dict(enumerate(labels)), {name: i for i, name in enumerate(labels)}
    hf = getattr(transformers, AUTO_CLASSES[kind]).from_config(config)
    base = getattr(hf, hf.base_model_prefix)
    missing, unexpected = base.load_state_dict({k: v.cpu() for k, v in enc.state_dict().items()}, strict=False)
    if missing or any(not k.startswith("pooler.") for k in unexpected):
        raise ValueError(f"{type(enc).__name__} does not fit {type(hf).__name__}: missing {missing}, unexpected {unexpected}")
    if kind == "sequence":
        pooler = getattr(enc, "pooler", None)
        if pooler is None:
            raise ValueError(f"{type(enc).__name__} has no pooler: its GLUECoS classifier has no transformers class here")
        if hasattr(hf.classifier, "out_proj"):  # RoBERTa / XLM-R: dense + tanh on <s>, then out_proj
            targets = (hf.classifier.dense, hf.classifier.out_proj)
        else:  # BERT: the pooler, then classifier
            targets = (base.pooler.dense, hf.classifier)
        for target, (w, b) in zip(targets, (_fold(pooler.dense, head), _fold(model.classifier, None))):
            target.weight.copy_(w), target.bias.copy_(b)
    else:
        target = hf.classifier if kind == "token" else hf.qa_outputs
        w, b = _fold(model.classifier, head)
        target.weight.copy_(w), target.bias.copy_(b)
    hf.eval()
    if tokenizer is not None:
        probe = dict(tokenizer(*([[PROBE[0]], [PROBE[1]]] if kind == "span" else [list(PROBE)]), padding=True, return_tensors="pt"))
        ours = model.eval().cpu()(**probe)
        out = hf(**probe)
        theirs = torch.stack([out.start_logits, out.end_logits], -1) if kind == "span" else out.logits
        if not torch.allclose(ours, theirs, atol=1e-4):
            raise ValueError(f"{type(hf).__name__}: logits differ from the fine-tuned model's by "
                             f"{(ours - theirs).abs().max().item():.2e}")
    return hf
