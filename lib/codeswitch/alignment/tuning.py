"""``alignment.tune``: τ and η chosen on validation, as the paper says it did (§3.1), instead of the released values.

"For the contrastive objective Lc, we used a validation set to tune the scaling factor for the regularization term η
and the temperature values.  For the multilingual alignment Lm, we only tuned the scaling factor η."  The paper gives
neither the grid nor the score.  Here: each of the mode's released values times ``tune_factors`` (default 1, 0.1, 10:
a decade either side, the released value first), τ × η for Lc and η alone for Lm (τ stays the released one); every
point is its own :class:`~.config.AlignRun` (the align stage trains them all, each cached and kept on disk), scored by
:data:`METRIC` on the validation pairs its record already holds; ties keep the earlier point (the released values).
:func:`choose` writes the choice as the record of the :class:`~.config.AlignTuneRun` the fine-tunes and the figure
hold, and they start from the chosen run's weights.
"""

from __future__ import annotations

import dataclasses
import math

from .config import AlignRun, AlignTuneRun, Config

__all__ = ["METRIC", "candidates", "tuned", "score", "choose"]

METRIC = ("held-out retrieval P@1 on the validation pairs after alignment (Lc: sentence retrieval, Lm: word translation; "
          "the alignment record's sentence_p1_after / word_p1_after); ties: the earlier grid point (the released values)")


def _scaled(value: float, factor: float) -> float:
    return float(f"{value * factor:.12g}")  # 0.1 × 0.1 is 0.01 in a key, not 0.010000000000000002


def candidates(c: Config, base: AlignRun) -> list[AlignRun]:
    """The grid of ``base`` (the released values first): τ × η for Lc, η alone for Lm."""
    taus = [_scaled(base.temperature, f) for f in c.tune_factors] if base.objective == "sentence" else [base.temperature]
    return [dataclasses.replace(base, temperature=t, reg_weight=_scaled(base.reg_weight, f)) for t in taus for f in c.tune_factors]


def tuned(c: Config, base: AlignRun | None) -> AlignRun | AlignTuneRun | None:
    """What a fine-tune or the figure starts from: ``base`` itself, or under ``tune`` the choice over its grid."""
    if base is None or not c.tune:
        return base
    runs = tuple(candidates(c, base))
    return AlignTuneRun(experiment=base.experiment, stage="tune", candidates=tuple(r.key_hash() for r in runs),
                        metric=METRIC, runs=runs)


def score(run: AlignRun, record: dict) -> float:
    """:data:`METRIC` of one alignment record (NaN where no validation pair has an aligned word pair)."""
    value = record.get("sentence_p1_after" if run.objective == "sentence" else "word_p1_after")
    return math.nan if value is None else float(value)


def choose(spec: AlignTuneRun, records: list[dict]) -> dict:
    """The record of ``spec`` from its runs' records (in ``spec.runs`` order): each point's score and the one kept."""
    scores = [score(r, rec) for r, rec in zip(spec.runs, records)]
    known = [(s, i) for i, s in enumerate(scores) if not math.isnan(s)]
    best = max(known, key=lambda t: (t[0], -t[1]))[1] if known else 0  # ties: the earlier point; none scored: released
    chosen = spec.runs[best]
    return {"grid": [[r.temperature, r.reg_weight] for r in spec.runs], "score": scores, "selected": chosen.key_hash(),
            "temperature": chosen.temperature, "reg_weight": chosen.reg_weight, "metric": spec.metric}
