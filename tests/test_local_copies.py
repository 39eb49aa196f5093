"""A local copy of a hub dataset (what `hf download` / `--prepare DIR` leaves) loads like the hub id."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def iitb_copy(tmp_path) -> Path:
    """The IIT Bombay corpus's hub layout in miniature: data/<split>-*.parquet with a translation column."""
    from datasets import Dataset

    rows = {
        "train": [{"en": "The boy drinks water.", "hi": "लड़का पानी पीता है।"}, {"en": "A big house.", "hi": "एक बड़ा घर।"}],
        "validation": [{"en": "The book.", "hi": "किताब।"}],
    }
    for split, pairs in rows.items():
        (tmp_path / "data").mkdir(exist_ok=True)
        Dataset.from_dict({"translation": pairs}).to_parquet(str(tmp_path / "data" / f"{split}-00000-of-00001.parquet"))
    return tmp_path


def test_alignment_reads_a_local_copy_of_the_hub_corpus(iitb_copy):
    from codeswitch.alignment.data import load_parallel

    train = load_parallel(str(iitb_copy), "train")
    assert train.pairs == (("The boy drinks water.", "लड़का पानी पीता है।"), ("A big house.", "एक बड़ा घर।"))
    assert load_parallel(str(iitb_copy), "validation").pairs == (("The book.", "किताब।"),)
    roman = load_parallel(str(iitb_copy), "train", script="roman")
    assert roman.pairs[0][0] == "The boy drinks water." and roman.pairs[0][1] != train.pairs[0][1]


def test_calbert_reads_a_local_copy_of_the_hub_corpus(iitb_copy):
    from codeswitch.calbert.data import load_pairs

    pairs = load_pairs(str(iitb_copy))
    assert len(pairs) == 2 and all(p for p in pairs)


def test_calbert_draws_a_sample_of_the_hub_corpus_by_the_one_sampling_rule(tmp_path):
    """load_pairs(sample=n) on the IITB layout keeps the rows core.sampling's random rule picks, in file order."""
    from datasets import Dataset

    from codeswitch.calbert.data import load_pairs
    from codeswitch.core.sampling import sample_indices

    en = [f"sentence number {i}" for i in range(40)]
    (tmp_path / "data").mkdir()
    Dataset.from_dict({"translation": [{"en": e, "hi": "नमस्ते"} for e in en]}).to_parquet(
        str(tmp_path / "data" / "train-00000-of-00001.parquet"))
    picked = [p.english for p in load_pairs(str(tmp_path), sample=7)]
    assert picked == [en[i] for i in sample_indices(40, 7, "random")] and picked != en[:7]
    assert len(load_pairs(str(tmp_path), sample=100)) == 40  # a sample larger than the corpus: every row
