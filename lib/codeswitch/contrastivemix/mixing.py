"""The texts of one training step (ContrastiveMix §3, §4.3): each row's query, first positive and hard negative, code-mixed
as the method asks (:class:`_Batcher`; NaiveMix: a query or its passages with probability r_s; ContrastiveMix: a mixed
copy of every query, and of the passages on the passage side), mixing seeded per (seed, epoch, query id); the hard
negative a seeded shuffle of the query's negatives, advanced by one each epoch (:func:`negative_index`, as Tevatron).
"""

from __future__ import annotations

import random
from typing import Mapping, Sequence

from .codemix import code_mix
from .config import TrainRun
from .data import passage_text

__all__ = ["negative_index"]


class _Batcher:
    """Turns training rows into one step's texts, mixing as the method asks."""

    def __init__(self, spec: TrainRun, dictionary: Mapping[str, Sequence[str]] | None):
        if spec.mixes and not dictionary:
            raise ValueError(f"{spec.method} needs a bilingual dictionary")
        self.spec, self.dictionary = spec, dictionary or {}

    def _mix(self, text: str, rng: random.Random) -> str:
        return code_mix(text, self.dictionary, self.spec.word_rate, rng, case_sensitive=self.spec.case_sensitive)

    def texts(self, rows: Mapping[str, list], epoch: int) -> dict[str, tuple[list[str], list[bool]]]:
        """``{group: (texts, special)}`` for ``rows``: each group's texts, row for row, and whether each gets [CLS]/[SEP]."""
        s = self.spec
        groups: dict[str, tuple[list[str], list[bool]]] = {"query": ([], []), "pos": ([], []), "neg": ([], [])}
        if s.method == "contrastivemix":
            if s.mix_query:
                groups["query_mixed"] = ([], [])
            if s.mix_passage:
                groups["pos_mixed"] = ([], [])
                if s.passage_align == "all":
                    groups["neg_mixed"] = ([], [])
        for qid, query, positives, negatives in zip(rows["query_id"], rows["query"], rows["positive_passages"], rows["negative_passages"]):
            _check_texts(qid, query, positives, negatives)
            rng = random.Random(f"{s.seed}|{epoch}|{qid}")
            pos = passage_text(positives[0].get("title"), positives[0]["text"])  # the first positive, as Tevatron
            n = negatives[negative_index(s.seed, qid, len(negatives), epoch)]
            neg = passage_text(n.get("title"), n["text"])
            q_mixed = p_mixed = False
            if s.method == "naivemix":
                # Draw both decisions always, so the query side's randomness does not depend on the passage side's setting.
                u_q, u_p = rng.random(), rng.random()
                if s.mix_query and u_q < s.sentence_rate:
                    query, q_mixed = self._mix(query, rng), True
                if s.mix_passage and u_p < s.sentence_rate:
                    pos, neg, p_mixed = self._mix(pos, rng), self._mix(neg, rng), True
            self._add(groups["query"], query, q_mixed)
            self._add(groups["pos"], pos, p_mixed)
            self._add(groups["neg"], neg, p_mixed)
            if "query_mixed" in groups:
                self._add(groups["query_mixed"], self._mix(query, rng), True)
            if "pos_mixed" in groups:
                self._add(groups["pos_mixed"], self._mix(pos, rng), True)
            if "neg_mixed" in groups:
                self._add(groups["neg_mixed"], self._mix(neg, rng), True)
        return groups

    def _add(self, group, text: str, mixed: bool) -> None:
        group[0].append(text)
        group[1].append(not (mixed and not self.spec.mixed_special_tokens))


def negative_index(seed: int, qid, n_negatives: int, epoch: int) -> int:
    """Which of a query's hard negatives ``epoch`` uses: a seeded shuffle of them, advanced by one each epoch (Tevatron)."""
    order = list(range(n_negatives))
    random.Random(f"{seed}|negatives|{qid}").shuffle(order)
    return order[epoch % n_negatives]


def _check_texts(qid, query, positives, negatives) -> None:
    """A clear error (query id and field) instead of a tokenizer failing on None or NaN deep inside a step."""
    from .data import TrainDataError

    if not isinstance(query, str) or not query.strip():
        raise TrainDataError(f"training query {qid!r}: field 'query' is {query!r}, not text")
    for field_name, passages in (("positive_passages", positives), ("negative_passages", negatives)):
        if not passages:
            raise TrainDataError(f"training query {qid!r}: '{field_name}' is empty")
        for j, p in enumerate(passages):
            if not isinstance(p.get("text"), str):
                raise TrainDataError(f"training query {qid!r}: {field_name}[{j}].text is {p.get('text')!r}, not text")
