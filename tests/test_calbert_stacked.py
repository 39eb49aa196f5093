"""``calbert.batched_runs`` (issue 40 item 1): CalBERT's fine-tunings K at a time as one stacked model
(:mod:`codeswitch.calbert.stacked` over :mod:`codeswitch.core.batched`).

On tiny-bert, the smoke tasks, 3 seeds: ``batched_runs: 3`` (one stack of 3 per cell) gives the same records as
``batched_runs: 1`` (the same loop, run by run) to 1e-5 relative, under the same run keys; the keys say
``loop: stacked`` (another loop than the Trainer's: not the default's keys) and never K; a cached run is not redone,
and a stack with cached members trains only the missing ones."""

from __future__ import annotations

import math

import pytest

from codeswitch.core.profiles import load_profile
from codeswitch.core.sections import ConfigError

from .helpers import calbert_stages

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore::UserWarning")]

SEEDS = [1, 2, 3]
TINY = {
    "seeds": SEEDS,
    "calbert.backbones": [{"name": "tiny", "model": "tiny-bert"}],
    "calbert.scratch.architectures": [],
    "calbert.sail.variants": ["none"],
    "calbert.iitp.variants": ["none"],
    "calbert.sail.max_seq_length": 16,
    "calbert.iitp.max_seq_length": 16,
}


def _run(root, k):
    """``(profile, results)`` of the tiny grid with ``batched_runs: k``; asserts the stacks it trained (each cell's
    3 seeds: 3 stacks of 1, or 1 of 3)."""
    from codeswitch import calbert as CB
    from codeswitch.calbert import experiment as E

    profile = load_profile("smoke", {**TINY, "calbert.batched_runs": k}, output_root=root)
    trained, real = [], E.finetune_stack
    E.finetune_stack = lambda specs, *a, **kw: trained.append(([s.seed for s in specs], kw["batched"])) or real(specs, *a, **kw)
    try:
        results = CB.run(profile)
    finally:
        E.finetune_stack = real
    per_cell = [([s], False) for s in SEEDS] if k == 1 else [(SEEDS, True)]
    assert trained == per_cell * 2, trained  # sail, then iitp
    return profile, results


def _close(a, b, where: str) -> None:
    """Two records equal: numbers to 1e-5 relative to their size, everything else exactly."""
    if isinstance(a, dict):
        assert a.keys() == b.keys(), where
        for key in a:
            _close(a[key], b[key], f"{where}.{key}")
    elif isinstance(a, list):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            _close(x, y, f"{where}[{i}]")
    elif isinstance(a, float):
        assert math.isclose(a, b, rel_tol=1e-5, abs_tol=1e-5), f"{where}: {a} != {b}"
    else:
        assert a == b, f"{where}: {a!r} != {b!r}"


@pytest.fixture(scope="module")
def one_and_three(tmp_path_factory, backbones_dir):
    return _run(tmp_path_factory.mktemp("k1"), 1), _run(tmp_path_factory.mktemp("k3"), 3)


def test_three_stacked_equal_one_by_one_under_the_same_keys(one_and_three):
    (_, one), (_, three) = one_and_three
    fine = [(s, r) for s, r in one if s.experiment == "calbert/finetune"]
    assert len(fine) == 2 * len(SEEDS)  # sail and iitp, one variant each
    assert [s.key_hash() for s, _ in one] == [s.key_hash() for s, _ in three]  # K is not in a key
    for (s, a), (_, b) in zip(one, three):
        _close(a, b, f"{s.task if hasattr(s, 'task') else 'pretrain'} seed {s.seed}")
    for s, r in fine:
        assert s.loop == "stacked" and s.key()["loop"] == "stacked"
        assert set(r) >= {"validation", "test", "examples", "learning", "train_loss"}
    # not vacuous: the seeds' runs differ (head, data order, dropout), and they trained
    losses = {s.seed: r["train_loss"] for s, r in fine if s.task == "sail"}
    assert min(abs(losses[a] - losses[b]) for a in SEEDS for b in SEEDS if a < b) > 1e-4, losses


def test_the_default_trains_with_the_trainer_under_its_own_keys(one_and_three, tmp_path):
    """The default (null) keeps today's keys: no ``loop`` in them, so the stacked records never stand in for them."""
    (_, one), _ = one_and_three
    _, _, fine = calbert_stages(tmp_path, TINY)
    assert all(s.loop is None and "loop" not in s.key() for s in fine)
    stacked = {s.key_hash() for s, _ in one}
    assert not stacked & {s.key_hash() for s in fine}


def test_cached_runs_are_not_redone_and_a_stack_trains_only_the_missing(one_and_three, monkeypatch):
    from codeswitch import calbert as CB
    from codeswitch.calbert import experiment as E

    _, (profile, three) = one_and_three
    trained = []
    real = E.finetune_stack

    def spy(specs, *a, **k):
        trained.append([s.seed for s in specs])
        return real(specs, *a, **k)

    monkeypatch.setattr(E, "finetune_stack", spy)
    CB.run(profile)
    assert trained == []  # every run cached
    sail = [s for s, _ in three if getattr(s, "task", None) == "sail"]
    E._cache(profile, "finetune").path(sail[1].key()).unlink()
    again = CB.run(profile)
    assert trained == [[SEEDS[1]]]
    for (s, a), (_, b) in zip(three, again):
        _close(a, b, f"seed {s.seed}")


@pytest.mark.parametrize("value, message", [
    (0, "must be null .* or an integer >= 1.*got 0"),
    (-2, "integer >= 1.*got -2"),
    (2.5, "batched_runs"),
    ("3", "batched_runs"),
])
def test_bad_values_name_the_file_and_key(tmp_path, value, message):
    mine = tmp_path / "mine.yaml"
    mine.write_text(f"extends: smoke\ncalbert:\n  batched_runs: {value!r}\n")
    with pytest.raises(ConfigError, match=message) as err:
        CB_load(load_profile(str(mine)))
    assert "mine.yaml" in str(err.value) and "batched_runs" in str(err.value)


def test_the_stacked_loop_refuses_packing_and_compile():
    for other in ("packing", "torch_compile"):
        with pytest.raises(ConfigError, match=f"does not take calbert.{other}"):
            CB_load(load_profile("smoke", {"calbert.batched_runs": 2, f"calbert.{other}": True}))



def test_the_stacked_loop_refuses_other_precisions_before_training(tmp_path):
    from codeswitch import calbert as CB

    profile = load_profile("smoke", {**TINY, "calbert.batched_runs": 2, "precision": "bf16"}, output_root=tmp_path)
    with pytest.raises(ValueError, match="fp32 only.*precision is bf16"):
        CB.run(profile)
    assert not (profile.runs_dir / "calbert").exists()  # nothing trained, nothing cached


def CB_load(profile):
    from codeswitch.calbert.config import load

    return load(profile)


def test_a_stack_keeps_each_runs_classifier(tmp_path, backbones_dir):
    """keep_models: all with a stack of 3: each run's own classifier is kept, and it predicts what its record says."""
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    from codeswitch import calbert as CB
    from codeswitch.calbert import experiment as E

    profile = load_profile("smoke", {**TINY, "calbert.batched_runs": 3, "calbert.keep_models": "all"}, output_root=tmp_path)
    sail = [(s, r) for s, r in CB.run(profile) if s.task == "sail"]
    assert len(sail) == len(SEEDS)
    heads = []
    for spec, record in sail:
        folder = E.kept_dir(profile, spec)
        model = AutoModelForSequenceClassification.from_pretrained(folder).eval()
        tok = AutoTokenizer.from_pretrained(folder)
        enc = tok(record["examples"]["texts"], padding=True, truncation=True, max_length=spec.max_seq_length, return_tensors="pt")
        assert model(**enc).logits.argmax(-1).tolist() == record["examples"]["predicted"]
        heads.append(model.classifier.weight.detach())
    assert float((heads[0] - heads[1]).abs().max()) > 1e-4  # each run's own model, not one model three times
