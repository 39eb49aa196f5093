"""The GLUE trainer's learning check can fail: trained on shuffled labels, a run's entry says it did not learn.

The check is :func:`codeswitch.glue.experiment.learning_entry` (the entry every Koglish-GLUE
run stores, read by ``tests/test_learning.py``): the run's test score in its training
language beside a predictor that always says the majority class (STS-B: a constant).
"""

from __future__ import annotations

import pandas as pd
import pytest

from codeswitch.glue import experiment as eg

from .helpers import glue_fine_tune, glue_spec, toy_sentiment_splits


def _run(train: pd.DataFrame, valid: pd.DataFrame, test: pd.DataFrame) -> dict:
    spec = glue_spec(train="cs", select="cs", test=("cs",), num_train_epochs=3, seed=11111)
    result = glue_fine_tune(spec, "tiny-bert", train, valid, {"cs": test})
    return eg.learning_entry(spec, train, test, result)


@pytest.fixture(scope="module")
def data():
    return toy_sentiment_splits(64)


def test_a_trained_classifier_beats_the_majority_class(backbones_dir, data):
    train, valid, test = data
    entry = _run(train, valid, test)
    assert entry["baseline_name"] == "majority class" and entry["metric"].startswith("accuracy")
    assert entry["baseline"] == pytest.approx(100.0 * (test["label"] == train["label"].mode().min()).mean())
    assert entry["passed"], entry


def test_shuffled_training_labels_fail_the_check(backbones_dir, data):
    train, valid, test = data
    shuffled = train.assign(label=train["label"].sample(frac=1.0, random_state=0).to_numpy())  # the text no longer tells the label
    entry = _run(shuffled, valid, test)
    assert not entry["passed"], entry


def test_regression_baseline_is_a_constant_prediction():
    test = pd.DataFrame({"label": [0.0, 1.0, 2.5, 4.0, 5.0]})
    spec = glue_spec(task="stsb", train="en", select="en", test=("en", "cs"))
    entry = eg.learning_entry(spec, test, test, {"metric": "spearman", "test": {"en": 31.0, "cs": 80.0}})
    # a constant ranks nothing (0); the English test is the run's own language (EN2CS is the paper's finding)
    assert (entry["baseline"], entry["baseline_name"], entry["score"]) == (0.0, "chance", 31.0)
    assert entry["passed"] is (31.0 >= eg.LEARNING_MARGINS["regression"])


def test_label_noise_flips_labels_only():
    from codeswitch.koglish.synthetic import generate_raw

    clean, _ = generate_raw("cola", 400, 7)
    noisy, _ = generate_raw("cola", 400, 7, label_noise=0.1)
    assert clean["sentence"].tolist() == noisy["sentence"].tolist()  # the same sentences, at any noise
    flipped = (clean["label"] != noisy["label"]).mean()
    assert 0.05 < flipped < 0.15
    stsb, _ = generate_raw("stsb", 50, 7, label_noise=0.1)
    assert stsb["label"].tolist() == generate_raw("stsb", 50, 7)[0]["label"].tolist()  # regression scores untouched


def test_label_noise_setting_is_checked(tmp_path):
    from codeswitch.core.profiles import load_profile
    from codeswitch.core.sections import ConfigError
    from codeswitch.koglish.synthetic import synthetic_config

    assert synthetic_config(load_profile("smoke", output_root=tmp_path)).glue_label_noise == 0.05
    with pytest.raises(ConfigError, match="koglish.synthetic.*glue_label_noise"):
        synthetic_config(load_profile("smoke", {"koglish.synthetic.glue_label_noise": 0.5}, output_root=tmp_path))
