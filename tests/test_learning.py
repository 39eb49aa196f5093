"""Every smoke run learns: each training run's record holds its score beside a baseline, and beats it.

The contract is :mod:`codeswitch.core.learning`.  The per-trainer "broken on purpose"
cases (shuffled labels, a detached loss, a frozen encoder), which show that this check
can fail, live beside each package's tests (``tests/test_learning_<package>.py``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Sequence

import pytest

from codeswitch.core.learning import BASELINES, failures, learning, learning_records, summary

#: the run caches (below runs/<profile>/) whose training runs must each record a learning entry
TRAINING_CACHES = ("glue", "concse", "contrastivemix", "alignment", "calbert")

#: Smoke runs that are known not to beat their baseline: (cache, fields of the run's config, why).  Each is open
#: work of issue 23, listed here so that CI still fails on any *other* run that stops learning; a listed run that
#: does learn fails the test too (remove it from the list), so the list cannot go stale.  A record holding several
#: named entries ({"learning": {"name": {...}}}) is matched by the entry's own name, exactly, under the field "#"
#: (without it, only a record's single unnamed entry matches).
KNOWN_NOT_LEARNING: tuple[tuple[str, dict, str], ...] = ()  # none: every smoke run learns (session 10)


def _config(path: Path) -> dict:
    return json.loads(Path(str(path).split("#")[0]).read_text(encoding="utf-8"))["config"]


def _known(path: Path, cache: str, known: Sequence[tuple[str, dict, str]] = KNOWN_NOT_LEARNING) -> str | None:
    config = _config(path)
    def get(key: str):  # "model.method": a field of the run this one evaluates
        value = config
        for part in key.split("."):
            value = value.get(part) if isinstance(value, dict) else None
        return value

    name = Path(path).name.partition("#")[2] or None  # "<key>.json#<entry name>" (learning_records)
    for c, fields, why in known:
        if c == cache and fields.get("#") == name and all(get(k) == v for k, v in fields.items() if k != "#"):
            return why
    return None


def test_known_runs_match_by_the_entry_name(tmp_path):
    """A listed record's named entry is known; its other entry, in the same record, is not."""
    example = ("contrastivemix", {"#": "MRR vs untrained encoder", "model.method": "naivemix", "model.language": "ko"},
               "an example entry of the list's form")
    cache, fields, why = example
    config: dict = {}
    for key, value in fields.items():
        if key != "#":
            *parents, last = key.split(".")
            node = config
            for part in parents:
                node = node.setdefault(part, {})
            node[last] = value
    entries = {fields["#"]: learning("mrr", 0.1, 0.1, baseline_name="untrained encoder", margin=3),
               "another entry": learning("recall", 0.1, 0.1, baseline_name="random ranking", margin=3)}
    record = tmp_path / cache / "k.json"
    record.parent.mkdir()
    record.write_text(json.dumps({"config": config, "result": {"learning": entries}}))
    found = {p.name: _known(p, cache, [example]) for p, _ in learning_records(tmp_path)}
    assert found == {f"k.json#{fields['#']}": why, "k.json#another entry": None}


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
    """Fails, naming the run, when any smoke training run does not beat its baseline by its margin
    (except the runs listed, with their reason, in KNOWN_NOT_LEARNING; a listed run that learns fails too)."""
    root = smoke_run.ensure_all().root / "runs" / "smoke"
    entries = list(learning_records(root))
    print(summary(entries))
    cache_of = {p: p.relative_to(root).parts[0] for p, _ in entries}
    by_cache = {c: [e for p, e in entries if cache_of[p] == c] for c in TRAINING_CACHES}
    missing = [c for c, es in by_cache.items() if not es]
    assert not missing, f"no learning entry in the smoke run caches of {missing}: every training run must record one"
    failed = [(p, e) for p, e in entries if not e.passed]
    unexpected = [(p, e) for p, e in failed if _known(p, cache_of[p]) is None]
    assert not unexpected, "smoke runs that did not learn:\n" + "\n".join(failures(unexpected))
    known_hit = {why for p, e in failed for why in [_known(p, cache_of[p])]}
    stale = [why for _, _, why in KNOWN_NOT_LEARNING if why not in known_hit]
    assert not stale, "runs listed in KNOWN_NOT_LEARNING now learn (remove them from the list):\n" + "\n".join(stale)
