"""The ContrastiveMix learning check can fail: a trainer broken on purpose does not pass it.

Each case trains the smoke profile's mDPR (its real backbone and settings) through the
experiment's own runs (:func:`codeswitch.contrastivemix.experiment.run_one`), evaluates it
on the synthetic Korean target (1,104 passages), and reads the evaluation's learning entries
(:mod:`codeswitch.core.learning`): dense MRR@100 against the untrained encoder, dense
Recall@100 against a random ranking.  The breakages are test-only monkeypatches of the
trainer, never a profile option:

* a **detached loss**: the loss the optimiser steps on never reaches the encoders;
* **a retriever that ignores its queries**: every query of a batch is replaced by the
  batch's first, so training never sees what a query asks.
"""

from __future__ import annotations

import shutil

import pytest

MARGINS = ("MRR vs untrained encoder", "Recall vs random ranking")


@pytest.fixture(scope="module")
def tiny(tmp_path_factory, backbones_dir):
    """(profile, evaluation spec) of mDPR on the smoke profile's Korean target alone, BM25 cached."""
    from codeswitch.contrastivemix.config import EvalRun, TrainRun

    from .helpers import contrastivemix_tiny_run

    profile, specs = contrastivemix_tiny_run(tmp_path_factory.mktemp("cmix-learning"), {
        "contrastivemix.low_similarity": ["ko"], "contrastivemix.high_similarity": [], "contrastivemix.miracl_target": [],
        "contrastivemix.miracl_high_similarity": [], "contrastivemix.figure_language": "ko",
    })
    ev = next(s for s in specs if isinstance(s, EvalRun) and isinstance(s.model, TrainRun) and s.model.method == "mdpr")
    return profile, ev


def _run(tiny) -> dict:
    """Train from scratch (no checkpoint is kept between cases) and evaluate; the evaluation's result."""
    from codeswitch.contrastivemix.experiment import run_one
    from codeswitch.contrastivemix.inputs import checkpoint_dir

    profile, ev = tiny
    shutil.rmtree(checkpoint_dir(profile, ev.model), ignore_errors=True)
    return run_one(ev, profile)


def _evaluate(tiny) -> dict:
    """The learning entries of a training from scratch and its evaluation."""
    entries = _run(tiny)["learning"]
    assert set(entries) == set(MARGINS)
    return entries


@pytest.fixture(scope="module")
def unbroken(tiny) -> dict:
    return _run(tiny)


def test_training_is_deterministic(tiny, unbroken):
    """The same training from scratch, twice, gives the same evaluation to the last digit.  The suite's determinism test
    (tests/test_notebooks.py) reruns notebooks 02 and 07 only from an empty cache: notebook 05's second run would cost
    ~4 minutes of the suite's 15; its trainer's determinism is checked here, on one of its own runs."""
    import json

    again = _run(tiny)
    assert json.dumps(again, sort_keys=True) == json.dumps(unbroken, sort_keys=True)


def test_unbroken_trainer_learns(unbroken):
    entries = unbroken["learning"]
    assert set(entries) == set(MARGINS)
    mrr = entries["MRR vs untrained encoder"]
    assert mrr["baseline_name"] == "untrained encoder" and mrr["margin"] == 3.0
    assert mrr["passed"], mrr
    recall = entries["Recall vs random ranking"]
    assert recall["baseline"] == pytest.approx(100 * 100 / 1104)  # 100 of 1,104 passages
    assert recall["passed"], recall


def test_detached_loss_fails_the_check(tiny, monkeypatch):
    """The loss is computed but cut from the encoders: the optimiser has no gradient, the model stays untrained."""
    from codeswitch.contrastivemix import train

    real = train.ir_loss

    def detached(q, p_pos, p_neg=None):
        loss = real(q.detach(), p_pos.detach(), None if p_neg is None else p_neg.detach())
        return loss + 0.0 * q.sum()  # still "requires grad", but every gradient is zero

    monkeypatch.setattr(train, "ir_loss", detached)
    entries = _evaluate(tiny)
    assert not entries["MRR vs untrained encoder"]["passed"], entries
    assert entries["MRR vs untrained encoder"]["score"] == pytest.approx(entries["MRR vs untrained encoder"]["baseline"], abs=0.5)


def test_a_trainer_that_ignores_the_queries_fails_the_check(tiny, monkeypatch):
    """Every query of a batch is replaced by the batch's first: the model is trained without seeing what its queries ask."""
    from codeswitch.contrastivemix import train

    real = train._Batcher.texts

    def one_query(self, rows, epoch):
        groups = real(self, rows, epoch)
        texts, flags = groups["query"]
        groups["query"] = ([texts[0]] * len(texts), flags)
        return groups

    monkeypatch.setattr(train._Batcher, "texts", one_query)
    entries = _evaluate(tiny)
    assert not entries["MRR vs untrained encoder"]["passed"], entries
