"""SAIL 2017 in the CalBERT authors' CSV layout (issue 26 item 3): read first where both layouts are present, labels as
ids in LABELS' order, bad rows named by file, row and field; the preflight knows the CSV names."""

from __future__ import annotations

import pytest

from codeswitch.common.sentiment import FORMATS, LABELS, SentimentFormatError, load_sentiment_splits, read_sentence_label_csv


def _write(folder, name, text):
    (folder / name).write_text(text, encoding="utf-8")


def test_csv_layout_read_first(tmp_path):
    _write(tmp_path, "train.csv", 'sentence,label\nHan wo bhi baat hai,1\n"kapde, ghar sab mehenga",0\nbahut accha,2\n')
    _write(tmp_path, "validation.csv", "sentence,label\nthik hai,1\n")
    _write(tmp_path, "train.txt", "only in txt\tneutral\n")
    _write(tmp_path, "validation.txt", "only in txt\tneutral\n")
    splits = load_sentiment_splits(tmp_path, "sail")
    assert [(e.text, LABELS[e.label]) for e in splits["train"]] == [
        ("Han wo bhi baat hai", "neutral"), ("kapde, ghar sab mehenga", "negative"), ("bahut accha", "positive")]
    assert len(splits["validation"]) == 1 and "test" not in splits


def test_txt_layout_still_read(tmp_path):
    _write(tmp_path, "train.txt", "a\tpositive\n")
    _write(tmp_path, "validation.txt", "b\tnegative\n")
    assert LABELS[load_sentiment_splits(tmp_path, "sail")["train"][0].label] == "positive"


@pytest.mark.parametrize("text,match", [
    ("sentence,label\nok,3\n", r"row 2, field 'label': id 3"),
    ("sentence,label\n,1\n", r"row 2, field 'text': empty"),
    ("text,label\nok,1\n", r"row 1 \(header\): no column 'sentence'"),
    ("sentence,label\nok,1,extra\n", r"row 2: expected 2 fields"),
    ("sentence,label\nok,happy\n", r"row 2, field 'label': 'happy'"),
])
def test_bad_rows_name_file_row_field(tmp_path, text, match):
    _write(tmp_path, "train.csv", text)
    with pytest.raises(SentimentFormatError, match=match) as err:
        read_sentence_label_csv(tmp_path / "train.csv")
    assert "train.csv" in str(err.value)


def test_preflight_knows_the_csv_names():
    from codeswitch.calbert.resources import resources
    from codeswitch.core.profiles import load_profile

    sail = next(r for r in resources(load_profile("paper")) if r.key == ("calbert", "sail", "source"))
    assert "train.csv" in sail.files[0] and "validation.csv" in sail.files[1] and "train.txt" in sail.files[0]
    assert FORMATS["sail"].files["train"][0] == "train.csv"


@pytest.mark.parametrize("table,task", [("table4", "sail"), ("table10", "iitp")])
def test_split_tables_are_artifacts_with_the_sizes_read(tmp_path, table, task):
    """Tables 4 and 10 are written as files; their numbers are the sizes of the splits the fine-tuning reads."""
    import pandas as pd

    from codeswitch.calbert.config import load
    from codeswitch.calbert.experiment import task_splits
    from codeswitch.calbert.tables import SPLIT_ROWS, split_table
    from codeswitch.core import reported
    from codeswitch.pipeline import cli as pipeline
    from codeswitch.core.profiles import load_profile

    prof = load_profile("smoke", output_root=tmp_path)
    paths = split_table(prof, load(prof), table)
    csv = pd.read_csv(paths["csv"])
    seen = task_splits(prof, load(prof), task)
    assert dict(zip(csv["row"], csv["mean"])) == {SPLIT_ROWS[s]: len(v) for s, v in seen.items()}
    assert {r: v for r, v in zip(csv["row"], csv["paper"])} == {
        e.row: e.value for e in reported.table("calbert", table) if e.row in set(csv["row"])}
    assert "Claim" in paths["md"].read_text() and f"calbert_{table}" in next(s for s in pipeline.NOTEBOOKS if s.number == "07").artifacts


def test_examples_tables_show_the_best_runs_predictions(tmp_path):
    """Tables 9 and 14: each CalBERT row's best run on validation, its recorded predictions on the paper's sentences."""
    import pandas as pd

    from codeswitch import calbert as C
    from codeswitch.calbert.experiment import example_texts
    from codeswitch.calbert.tables import examples_table
    from codeswitch.core.profiles import load_profile
    from codeswitch.core.reported.calbert import EXAMPLES

    prof = load_profile("smoke", output_root=tmp_path)
    _, fine = C.stages(prof)
    results = []
    for i, spec in enumerate(s for s in fine if s.task == "sail"):
        texts = example_texts("sail", spec.romanise, True)
        results.append((spec, {"validation": {"f1": 0.1 * i, "accuracy": 0.5, "precision": 0.5, "recall": 0.5, "n": 3},
                               "examples": {"texts": texts, "predicted": [i % 3] * len(texts)}}))
    best = max((r for r in results if r[0].variant == "cosine"), key=lambda r: r[1]["validation"]["f1"])
    paths = examples_table(results, prof, "table9")
    csv = pd.read_csv(paths["csv"])
    assert sorted(csv["row"]) == sorted(s for s, _, _ in EXAMPLES["table9"])
    assert set(csv["mean"]) == {float(best[1]["examples"]["predicted"][0])}
    md = paths["md"].read_text()
    assert "True Label (paper)" in md and "CalBERT-XLM-RoBERTa (paper)" in md and "qualitative" in md
