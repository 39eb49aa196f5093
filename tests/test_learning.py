"""Every smoke run learns: each training run's record holds its score beside a baseline, and beats it.

The contract is :mod:`codeswitch.core.learning`.  The per-trainer "broken on purpose"
cases (shuffled labels, a detached loss, a frozen encoder), which show that this check
can fail, live beside each package's tests (``tests/test_learning_<package>.py``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from codeswitch.core.learning import BASELINES, Learning, failures, learning, learning_records, summary

#: the run caches (below runs/<profile>/) whose training runs must each record a learning entry
TRAINING_CACHES = ("glue", "concse", "contrastivemix", "alignment", "calbert")


def test_entry_passes_only_by_its_margin():
    assert learning("acc", 0.9, 0.5, baseline_name="chance", margin=0.2)["passed"] is True
    assert learning("acc", 0.6, 0.5, baseline_name="chance", margin=0.2)["passed"] is False
    # lower is better (a loss, a distance)
    assert learning("loss", 0.2, 1.1, baseline_name="untrained encoder", margin=0.5, higher_is_better=False)["passed"] is True
    assert learning("loss", 1.0, 1.1, baseline_name="untrained encoder", margin=0.5, higher_is_better=False)["passed"] is False
    # a NaN never passes
    assert learning("acc", float("nan"), 0.5, baseline_name="chance", margin=0.1)["passed"] is False


def test_entry_is_validated():
    with pytest.raises(ValueError, match="baseline"):
        learning("acc", 0.9, 0.5, baseline_name="the paper", margin=0.1)
    with pytest.raises(ValueError, match="margin"):
        learning("acc", 0.9, 0.5, baseline_name="chance", margin=0.0)
    assert "random ranking" in BASELINES


def test_records_are_read_from_a_run_cache(tmp_path):
    good = {"result": {"score": 1, "learning": learning("acc", 0.9, 0.5, baseline_name="chance", margin=0.2)}}
    bad = {"result": {"learning": {"seed 1": learning("mrr", 0.11, 0.10, baseline_name="random ranking", margin=0.05)}}}
    none = {"result": {"score": 3}}
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "good.json").write_text(json.dumps(good))
    (tmp_path / "a" / "bad.json").write_text(json.dumps(bad))
    (tmp_path / "none.json").write_text(json.dumps(none))
    entries = list(learning_records(tmp_path))
    assert [p.name for p, _ in entries] == ["bad.json#seed 1", "good.json"]
    lines = failures(entries)
    assert len(lines) == 1 and "bad.json#seed 1" in lines[0] and "DID NOT LEARN" in lines[0]
    assert "learned" in summary(entries)


@pytest.mark.slow
def test_every_smoke_run_learns(smoke_run):
    """Fails, naming the run, when any smoke training run does not beat its baseline by its margin."""
    root = smoke_run.ensure_all().root / "runs" / "smoke"
    entries = list(learning_records(root))
    print(summary(entries))
    by_cache = {c: [e for p, e in entries if p.relative_to(root).parts[0] == c] for c in TRAINING_CACHES}
    missing = [c for c, es in by_cache.items() if not es]
    assert not missing, f"no learning entry in the smoke run caches of {missing}: every training run must record one"
    assert not failures(entries), "smoke runs that did not learn:\n" + "\n".join(failures(entries))
