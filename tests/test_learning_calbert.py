"""CalBERT's learning entries can fail: each trainer, broken on purpose, misses its baseline (issue 23).

Tiny runs with the smoke profile's settings (the real all-MiniLM-L6-v2, the shipped
sets).  Broken on purpose, in the test only:

* fine-tuning with **wrong training labels**, each shifted to the next class (an
  off-by-one label mapping): validation F1 no longer beats the majority class by the
  margin.  (A random shuffle is not used: on 18 validation sentences a classifier
  trained on shuffled labels scores at chance, weighted F1 about 0.33 ± 0.1, which
  clears the majority class's 0.17 + 0.15 about half the time — measured once at 0.44.
  The majority-class margin catches a model that learned nothing or the wrong thing,
  not a lucky guesser; ``tests/test_learning_alignment.py`` shuffles GLUECoS labels.)
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
from codeswitch.calbert.train import finetune_classifier, majority_f1, siamese_pretrain
from codeswitch.common.sentiment import SentimentExample
from codeswitch.core.profiles import load_profile


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    cfg = load_profile("smoke", {"calbert.scratch.architectures": []}, output_root=tmp_path_factory.mktemp("calbert-learning"))
    pre, fine = CB.stages(cfg)
    return cfg, pre.specs, fine.specs


def _off_by_one(examples, n_labels=3):
    return [SentimentExample(e.text, (e.label + 1) % n_labels) for e in examples]


def test_majority_f1_is_the_one_class_predictor():
    train = [SentimentExample("a", 0)] * 3 + [SentimentExample("b", 2)] * 2
    valid = [SentimentExample("x", 0), SentimentExample("y", 1), SentimentExample("z", 2)]
    # always 0: F1 of class 0 = 2·(1/3·1)/(1/3+1) = 0.5, others 0; weighted by support 1/3 each
    assert majority_f1(train, valid) == pytest.approx(0.5 / 3)


def test_finetune_learns_and_wrong_labels_do_not(smoke):
    cfg, _, fine = smoke
    spec = next(s for s in fine if s.task == "sail" and s.variant == "none" and s.seed == fine[0].seed)
    splits = CB.task_splits(cfg, "sail")
    path = CB.resolve_backbone(spec.model, cfg)
    with cfg.torch_threads():
        good = finetune_classifier(spec, path, splits, desc="unbroken")["learning"]
        broken = finetune_classifier(spec, path, {**splits, "train": _off_by_one(splits["train"])}, desc="labels off by one")["learning"]
    assert good["passed"], good
    assert not broken["passed"], f"fine-tuning on wrong labels still 'learned': {broken}"
    assert broken["baseline"] == good["baseline"]  # the same majority class (the label counts do not change)


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
