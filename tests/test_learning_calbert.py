"""CalBERT's learning entries can fail: each trainer, broken on purpose, misses its baseline (issue 23).

Tiny runs with the smoke profile's settings (the real all-MiniLM-L6-v2, the shipped
sets).  Broken on purpose, in the test only:

* fine-tuning with **wrong training labels**, each shifted to the next class (an
  off-by-one label mapping), and with **shuffled training labels**: validation F1 no
  longer beats random guessing at the training label frequencies (weighted F1 1/3 on
  the balanced sets) by the margin.  (Against the majority class, 1/6, a classifier
  trained on shuffled labels passed about half the time on the former 18 validation
  sentences; on 90, a guesser's F1 spreads about 0.05, a third of the margin.)
* Siamese pre-training on **shuffled pairs** (each English sentence beside another
  sentence's code-mixed version): the held-out gap cos(parallel) − cos(other) no
  longer widens over the untrained encoder's.

The unbroken runs, on the same data and settings, pass.  ``tests/test_learning.py``
reads the same entries from the smoke run caches.
"""

from __future__ import annotations

import random

import pytest

from codeswitch.calbert import experiment as CB
from codeswitch.calbert.config import load
from codeswitch.calbert.data import ASSETS
from codeswitch.calbert.train import finetune_classifier, siamese_pretrain
from codeswitch.common.sentiment import SentimentExample
from codeswitch.core.learning import chance_weighted_f1

from .helpers import calbert_stages


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    return calbert_stages(tmp_path_factory.mktemp("calbert-learning"))


def _off_by_one(examples, n_labels=3):
    return [SentimentExample(e.text, (e.label + 1) % n_labels) for e in examples]


def test_chance_weighted_f1_is_a_guesser_at_the_training_frequencies():
    # balanced: each class F1 = 2·(1/3·1/3)/(2/3) = 1/3
    assert chance_weighted_f1([0, 1, 2], [0, 1, 2] * 5) == pytest.approx(1 / 3)
    # p = (2/3, 1/3, 0), q = (1/4, 1/2, 1/4): 1/4 · 2·(2/3·1/4)/(11/12) + 1/2 · 2·(1/3·1/2)/(5/6) + 0
    assert chance_weighted_f1([0, 0, 1], [0, 1, 1, 2]) == pytest.approx(1 / 4 * 4 / 11 + 1 / 2 * 2 / 5)
    # an empirical guesser agrees (weighted F1 averaged over many random draws at the training frequencies)
    rng = random.Random(0)
    train, valid = [0] * 50 + [1] * 30 + [2] * 20, [0] * 300 + [1] * 400 + [2] * 300
    from codeswitch.calbert.train import classification_metrics

    draws = [classification_metrics(valid, rng.choices(train, k=len(valid)))["f1"] for _ in range(20)]
    assert sum(draws) / len(draws) == pytest.approx(chance_weighted_f1(train, valid), abs=0.01)
    with pytest.raises(ValueError, match="no training"):
        chance_weighted_f1([], [0])


def _shuffled(examples, seed=0):
    labels = [e.label for e in examples]
    random.Random(seed).shuffle(labels)
    return [SentimentExample(e.text, lab) for e, lab in zip(examples, labels)]


def test_finetune_learns_and_wrong_or_shuffled_labels_do_not(smoke):
    cfg, _, fine = smoke
    spec = next(s for s in fine if s.task == "sail" and s.variant == "none" and s.seed == fine[0].seed)
    splits = CB.task_splits(cfg, load(cfg), "sail")
    path = CB.resolve_backbone(spec.model, cfg)
    with cfg.torch_threads():
        good = finetune_classifier(spec, path, splits, desc="unbroken")["learning"]
        broken = finetune_classifier(spec, path, {**splits, "train": _off_by_one(splits["train"])}, desc="labels off by one")["learning"]
        shuffled = finetune_classifier(spec, path, {**splits, "train": _shuffled(splits["train"])}, desc="labels shuffled")["learning"]
    assert good["passed"], good
    assert not broken["passed"], f"fine-tuning on wrong labels still 'learned': {broken}"
    assert not shuffled["passed"], f"fine-tuning on shuffled labels still 'learned': {shuffled}"
    assert broken["baseline"] == good["baseline"] == shuffled["baseline"]  # the same label counts


def test_siamese_pretraining_learns_and_shuffled_pairs_do_not(smoke, tmp_path):
    from codeswitch.calbert.data import Pair

    cfg, pre, _ = smoke
    spec = next(s for s in pre if s.objective == "cosine")
    train, heldout = CB.pretraining_pairs(spec, cfg)
    codemixed = [p.codemixed for p in train]
    random.Random(0).shuffle(codemixed)
    shuffled = [Pair(p.english, c) for p, c in zip(train, codemixed)]
    path = CB.resolve_backbone(spec.model, cfg)
    with cfg.torch_threads():
        good = siamese_pretrain(spec, path, train, output_dir=tmp_path / "good", heldout=heldout)["learning"]
        broken = siamese_pretrain(spec, path, shuffled, output_dir=tmp_path / "broken", heldout=heldout)["learning"]
    assert good["passed"], good
    assert not broken["passed"], f"Siamese pre-training on shuffled pairs still 'learned': {broken}"
    assert broken["baseline"] == pytest.approx(good["baseline"])  # the same untrained encoder


def test_shipped_sentiment_sets_are_the_generators(tmp_path):
    """The shipped SAIL and IITP look-alikes are their hand-written lines and then what ``codeswitch.calbert.standins``
    writes (``python -m codeswitch.calbert.standins`` rewrites them): large enough, balanced, no sentence twice."""
    import shutil

    from codeswitch.calbert.standins import FILES, SIZES, write_shipped
    from codeswitch.common.sentiment import load_sentiment_splits

    for task in FILES:
        shutil.copytree(ASSETS / task, tmp_path / task)
    write_shipped(tmp_path)
    for task, files in FILES.items():
        for name in files.values():
            assert (tmp_path / task / name).read_bytes() == (ASSETS / task / name).read_bytes(), (task, name)
        splits = load_sentiment_splits(ASSETS / task, task)
        assert {s: len(v) for s, v in splits.items()} == SIZES
        assert all(sorted(e.label for e in v) == sorted(list(range(3)) * (len(v) // 3)) for v in splits.values())
        texts = [e.text for v in splits.values() for e in v]
        assert len(set(texts)) == len(texts)
