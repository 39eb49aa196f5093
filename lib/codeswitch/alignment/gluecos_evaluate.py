"""GLUECoS metrics as the alignment paper reports them (all F1, in percent).

==========  ====================================================================
task        metric
==========  ====================================================================
sentiment   weighted F1 over the three classes (scikit-learn; GLUECoS's
            ``BertSequence.py``)
NER         entity-level F1 (seqeval, default CoNLL mode; GLUECoS's ``BertToken.py``)
QA          SQuAD v2 F1: token overlap with the best-matching gold answer, an
            unanswerable question scoring 1 only for an empty prediction (the
            official ``evaluate-v2.0.py``)
==========  ====================================================================

:func:`qa_predictions` turns span logits into answer strings (the ``run_squad`` /
``run_qa`` post-processing: n-best start/end pairs within the context, null answer
when its score beats the best span).  :func:`learning_baseline` scores the baseline a fine-tune must beat (its
learning entry, :mod:`codeswitch.core.learning`) with the same metrics.
"""

from __future__ import annotations

import collections
import re
import string
from typing import Mapping, Sequence

import numpy as np

from ..core.learning import chance_weighted_f1

__all__ = [
    "weighted_f1",
    "entity_f1",
    "normalize_answer",
    "squad_token_f1",
    "squad_v2_f1",
    "qa_predictions",
    "LEARNING_MARGIN",
    "learning_baseline",
]


def weighted_f1(y_true: Sequence[int], y_pred: Sequence[int]) -> float:
    """Class-frequency-weighted F1, in percent."""
    from sklearn.metrics import f1_score

    return 100.0 * float(f1_score(list(y_true), list(y_pred), average="weighted", zero_division=0))


def entity_f1(true_tags: Sequence[Sequence[str]], pred_tags: Sequence[Sequence[str]]) -> float:
    """Entity-level F1 of IOB tag sequences (seqeval), in percent.

    GLUECoS's Hindi–English NER writes the outside tag as ``Other``; it is read as
    ``O`` (seqeval treats it as outside anyway, with a warning per occurrence).
    """
    from seqeval.metrics import f1_score

    if len(true_tags) != len(pred_tags) or any(len(t) != len(p) for t, p in zip(true_tags, pred_tags)):
        raise ValueError("entity_f1: gold and predicted tag sequences differ in number or length")

    def norm(seqs):
        return [["O" if t == "Other" else t for t in s] for s in seqs]

    return 100.0 * float(f1_score(norm(true_tags), norm(pred_tags), zero_division=0))


# --------------------------------------------------------------------------- SQuAD v2
_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)
_PUNCT = set(string.punctuation)


def normalize_answer(s: str) -> str:
    """Lower-case, strip punctuation and English articles, squeeze whitespace (official SQuAD)."""
    s = s.lower()
    s = "".join(ch for ch in s if ch not in _PUNCT)
    s = _ARTICLES.sub(" ", s)
    return " ".join(s.split())


def squad_token_f1(gold: str, pred: str) -> float:
    """Token-overlap F1 of one prediction against one gold answer (0..1)."""
    g, p = normalize_answer(gold).split(), normalize_answer(pred).split()
    if not g or not p:
        return float(g == p)  # no-answer: right only when both are empty
    common = collections.Counter(g) & collections.Counter(p)
    same = sum(common.values())
    if same == 0:
        return 0.0
    precision, recall = same / len(p), same / len(g)
    return 2 * precision * recall / (precision + recall)


def squad_v2_f1(predictions: Mapping[str, str], gold: Mapping[str, Sequence[str]]) -> float:
    """Mean over questions of the best F1 against any gold answer, in percent.

    ``gold[id]`` lists the answer texts; an empty list marks an unanswerable
    question (gold answer ``""``).  A question without a prediction counts as "".
    """
    if not gold:
        raise ValueError("squad_v2_f1: no gold questions")
    scores = []
    for qid, answers in gold.items():
        answers = [a for a in answers if normalize_answer(a)] or [""]
        pred = predictions.get(qid, "")
        scores.append(max(squad_token_f1(a, pred) for a in answers))
    return 100.0 * float(np.mean(scores))


def qa_predictions(
    features: Sequence[Mapping],
    start_logits: np.ndarray,
    end_logits: np.ndarray,
    contexts: Mapping[str, str],
    *,
    max_answer_length: int = 30,
) -> dict[str, str]:
    """Answer strings from span logits.

    ``features[k]`` has ``example_id`` and ``offset_mapping`` (character span of every
    token, ``None`` outside the context); ``start_logits``/``end_logits`` are
    (n_features, T).  For each example the best span over its features (score =
    start + end logit, end ≥ start, at most ``max_answer_length`` tokens, both ends
    in the context) wins unless the null score (start + end logit of token 0,
    [CLS]; the minimum over features) is at least as high, in which case the
    answer is "" (SQuAD v2, threshold 0).  The search is exhaustive over valid
    spans: ``run_squad``'s n-best search with n = ∞.
    """
    by_example: dict[str, list[int]] = collections.defaultdict(list)
    for k, f in enumerate(features):
        by_example[f["example_id"]].append(k)
    out = {}
    for qid, ks in by_example.items():
        null_score, best_score, best_text = None, None, ""
        for k in ks:
            offsets = features[k]["offset_mapping"]
            null = float(start_logits[k][0] + end_logits[k][0])
            null_score = null if null_score is None else min(null_score, null)
            ctx = np.array([t for t, o in enumerate(offsets) if o is not None], dtype=int)
            if len(ctx) == 0:
                continue
            s, e = start_logits[k][ctx], end_logits[k][ctx]  # (n,), (n,)
            scores = s[:, None] + e[None, :]  # (n, n): start i, end j
            length = ctx[None, :] - ctx[:, None] + 1  # tokens in span (i, j)
            scores = np.where((length >= 1) & (length <= max_answer_length), scores, -np.inf)
            i, j = np.unravel_index(int(np.argmax(scores)), scores.shape)
            if np.isfinite(scores[i, j]) and (best_score is None or scores[i, j] > best_score):
                best_score = float(scores[i, j])
                best_text = contexts[qid][offsets[ctx[i]][0] : offsets[ctx[j]][1]]
        out[qid] = best_text if best_score is not None and best_score > null_score else ""
    return out


#: how many F1 points (0-100) the selected epoch's score must beat its baseline by
LEARNING_MARGIN = 10.0


def learning_baseline(task: str, data: dict, split: str = "validation") -> tuple[float, str]:
    """``(F1 on data[split], baseline name)`` of the baseline a fine-tune must beat, scored as the task scores a model.

    Sentiment: guessing each label at its training frequency (*chance*, :func:`~codeswitch.core.learning.chance_weighted_f1`;
    the majority class scores less than a guesser); NER: every word the most frequent training tag (the outside
    tag: entity F1 0); QA: every question the most frequent training answer kind, no answer ("", SQuAD v2's null answer).
    """
    def most_common(values):
        values = list(values)
        return max(sorted(set(values)), key=values.count)  # ties: the smallest

    valid = data[split]
    if task == "sentiment":
        return 100.0 * chance_weighted_f1([lab for _, lab in data["train"]], [lab for _, lab in valid]), "chance"
    if task == "ner":
        tag = most_common(t for s in data["train"] for t in s.tags)
        return entity_f1([list(s.tags) for s in valid], [[tag] * len(s.tags) for s in valid]), "majority class"
    return squad_v2_f1({e.id: "" for e in valid}, {e.id: [a for a, _ in e.answers] for e in valid}), "majority class"
