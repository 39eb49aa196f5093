"""Did a run learn?  Every training run records its score beside a baseline it must beat.

The smoke profile is the only profile most readers run, so it has to show each method
*learning*, and CI has to notice when a trainer stops learning.  A paper's own claim
(ConCSE > SimCSE, CalBERT > its backbone) is never the target: the target is a
baseline the paper does not report, measured on the run's own evaluation:

=====================  =================================================================
baseline               meaning
=====================  =================================================================
``majority class``     a classifier that always predicts the most frequent training label
``chance``             the expected score of random predictions (uniform, or drawn at the
                       training label frequencies: :func:`chance_weighted_f1`)
``untrained encoder``  the same evaluation, on the encoder before this run trained it
``random ranking``     the expected score of a ranking drawn uniformly at random
=====================  =================================================================

A run returns its entry under ``result["learning"]`` (:func:`learning`), so the entry is
stored in the run's record and a check reads the run cache alone
(:func:`learning_records`, :func:`failures`)::

    result["learning"] = learning("macro-F1 (dev)", f1, majority_f1, baseline_name="majority class", margin=0.10)

``margin`` is in the metric's own units: the run passes when
``score - baseline >= margin`` (or ``baseline - score >= margin`` for a metric where
lower is better, such as a loss or a distance).  ``tests/test_learning.py`` fails, naming
the run, when any smoke run misses its margin.

Two checks read an entry, with two thresholds:

* CI (``tests/test_learning*.py``) asks for the **margin** (:attr:`Learning.passed`): the
  margins (10 / 20 / 5 points) were set for the smoke profile's tiny models, which start
  from nothing, so that a trainer that stops learning is noticed;
* a table's claim verdict asks that every run behind it **beat its baseline**
  (:attr:`Learning.beat_baseline`: a gain above 0, both scores finite): a pretrained
  encoder that gains 3 points over its untrained self learned, under a 5-point margin.
  Where a run did not, the verdict reads "not checked: k of n runs did not learn"
  (:func:`codeswitch.core.claims.learned`, the runs' entries read by :func:`of_results`).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Iterable, Iterator, Mapping

from .runs import read_record

__all__ = ["KEY", "BASELINES", "Learning", "learning", "chance_weighted_f1", "entries", "of_results", "not_learned", "learning_records",
           "failures", "summary"]

#: the key of the entry in a run's result
KEY = "learning"
#: the baselines a run may state (see the module docstring)
BASELINES = ("majority class", "chance", "untrained encoder", "random ranking")


@dataclass(frozen=True)
class Learning:
    """One run's score beside its baseline, and the margin it must beat it by."""

    metric: str  # what was measured, on which split ("Spearman x100, STS-B dev")
    score: float  # the trained model's value
    baseline: float  # the baseline's value on the same evaluation
    baseline_name: str  # one of BASELINES
    margin: float  # required improvement, in the metric's units (> 0)
    higher_is_better: bool = True

    def __post_init__(self):
        if self.baseline_name not in BASELINES:
            raise ValueError(f"learning: baseline {self.baseline_name!r} is not one of {BASELINES}")
        if not (self.margin > 0 and math.isfinite(self.margin)):
            raise ValueError(f"learning: the margin must be a finite number > 0, not {self.margin!r}")

    @property
    def gain(self) -> float:
        """The improvement over the baseline, in the metric's units (positive: better)."""
        return (self.score - self.baseline) if self.higher_is_better else (self.baseline - self.score)

    @property
    def passed(self) -> bool:
        """CI's check: the gain reaches the margin (both scores finite)."""
        return math.isfinite(self.score) and math.isfinite(self.baseline) and self.gain >= self.margin

    @property
    def beat_baseline(self) -> bool:
        """A claim verdict's check: the run beat its baseline at all (a gain above 0, both scores finite)."""
        return math.isfinite(self.score) and math.isfinite(self.baseline) and self.gain > 0

    def describe(self) -> str:
        verdict = "learned" if self.passed else "DID NOT LEARN"
        return (
            f"{verdict}: {self.metric} {self.score:.4g} vs {self.baseline_name} {self.baseline:.4g} "
            f"(gain {self.gain:+.4g}, needs >= {self.margin:g})"
        )

    @classmethod
    def from_record(cls, entry: Mapping) -> "Learning":
        return cls(**{k: entry[k] for k in ("metric", "score", "baseline", "baseline_name", "margin", "higher_is_better")})


def learning(metric: str, score: float, baseline: float, *, baseline_name: str, margin: float, higher_is_better: bool = True) -> dict:
    """The ``result["learning"]`` entry of a run (plain JSON; see the module docstring)."""
    entry = Learning(metric, float(score), float(baseline), baseline_name, float(margin), higher_is_better)
    return {**asdict(entry), "passed": entry.passed}


def chance_weighted_f1(train_labels: Iterable, evaluated_labels: Iterable) -> float:
    """Weighted F1 (0-1) of a classifier that guesses each label at random, at its training frequency ``p``.

    On an evaluation set with label frequencies ``q``, class ``c``'s expected precision is ``q_c`` and its
    recall ``p_c``, so its F1 is ``2 p_c q_c / (p_c + q_c)``; weighted by support, ``sum_c q_c F1_c`` (1/3 on three
    balanced classes).  A stronger baseline than the majority class (1/6 there): a model that learned nothing
    but the label frequencies, or guesses, scores about this, not zero gain above the majority class.
    """
    from collections import Counter

    train, evaluated = Counter(train_labels), Counter(evaluated_labels)
    if not train or not evaluated:
        raise ValueError("chance_weighted_f1: no training or no evaluated labels")
    n_train, n_eval = sum(train.values()), sum(evaluated.values())
    return sum((q := evaluated[c] / n_eval) * 2 * (p := train[c] / n_train) * q / (p + q)
               for c in evaluated if train[c])


def entries(value) -> list[tuple[str, Learning]]:
    """The entries of a result's ``result["learning"]`` value: ``[("", entry)]`` for one entry (a record's dict, or a
    :class:`Learning`), ``[(name, entry), ...]`` (by name) for a mapping of named entries, ``[]`` for none (``None``,
    or a value holding no entry)."""
    if isinstance(value, Learning):
        return [("", value)]
    if not isinstance(value, Mapping):
        return []
    if "metric" in value:
        return [("", Learning.from_record(value))]
    return [(str(name), Learning.from_record(sub)) for name, sub in sorted(value.items())
            if isinstance(sub, Mapping) and "metric" in sub]


def of_results(pairs: Iterable[tuple[object, Mapping]], label) -> list[tuple[str, object]]:
    """``(label(spec), result["learning"])`` of each ``(spec, result)`` pair (a table's runs) that records a learning
    entry (one, or a mapping of named entries: :func:`entries`), for :func:`codeswitch.core.claims.learned`;
    ``label`` names the run in a verdict ("CoLA · MiniLM (trained en) seed 1").  Runs without an entry are left out."""
    return [(label(spec), result[KEY]) for spec, result in pairs
            if isinstance(result, Mapping) and entries(result.get(KEY))]


#: how many of the runs that did not learn a verdict names (the others are counted)
UNLEARNED_NAMED = 3


def not_learned(runs: Iterable[tuple[str, object]]) -> str:
    """"k of n runs did not learn (label: metric score vs baseline value; …)" for the runs among ``runs`` (``(label,
    result["learning"])``, :func:`of_results`) that did not beat their baseline (:attr:`Learning.beat_baseline`); ""
    when every run did, or none records an entry.  The first :data:`UNLEARNED_NAMED` are named, the others counted.
    What a claim (:func:`codeswitch.core.claims.learned`) or a notebook's verdict line says instead of a verdict."""
    counted = [(label, found) for label, value in runs if (found := entries(value))]
    missed = [(label, bad) for label, found in counted if (bad := [(n, e) for n, e in found if not e.beat_baseline])]
    if not missed:
        return ""
    named = "; ".join(f"{label}{' · ' + name if name else ''}: {e.metric} {e.score:.4g} vs {e.baseline_name} {e.baseline:.4g}"
                      for label, bad in missed[:UNLEARNED_NAMED] for name, e in bad)
    more = f"; {len(missed) - UNLEARNED_NAMED} more" if len(missed) > UNLEARNED_NAMED else ""
    return f"{len(missed)} of {len(counted)} runs did not learn ({named}{more})"


def learning_records(root: str | Path) -> Iterator[tuple[Path, Learning]]:
    """``(record path, Learning)`` for every run record below ``root`` that holds a learning entry.

    ``root`` is a run cache folder or any folder above several (``runs/smoke``).  Records
    are read as written by :class:`codeswitch.core.runs.RunCache` (``{"result": {...}}``).
    A result may hold one entry, or a mapping of named entries (a run that trains several
    models, e.g. one per seed or variant): ``{"learning": {"name": {...}, ...}}``.
    """
    for p in sorted(Path(root).rglob("*.json")):
        try:
            record = read_record(p)  # a non-finite score reads back as a float, in every record schema
        except (OSError, UnicodeDecodeError, ValueError):
            continue
        result = record.get("result") if isinstance(record, dict) else None
        for name, entry in entries(result.get(KEY) if isinstance(result, dict) else None):
            yield (p.with_name(f"{p.name}#{name}") if name else p), entry


def failures(entries: Iterable[tuple[Path, Learning]]) -> list[str]:
    """One line per run that missed its margin, naming the record (empty: every run learned)."""
    return [f"{p}: {e.describe()}" for p, e in entries if not e.passed]


def summary(entries: Iterable[tuple[Path, Learning]]) -> str:
    """A line per run: what it measured, against which baseline, and whether it learned."""
    return "\n".join(f"{p.parent.name}/{p.name}: {e.describe()}" for p, e in entries)
