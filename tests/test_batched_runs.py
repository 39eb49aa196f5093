"""Many small fine-tunes at once (issue 40 item 1, ``codeswitch.core.batched``): K runs trained as one stacked model
equal the same K runs trained one after another, run by run, to 1e-5 in fp32.

What is compared (tiny BERT classifiers, fp32, CPU): per-step training losses, per-epoch validation accuracy, the
selected epoch, the validation logits at that epoch and every final parameter; **with dropout on** (the backbone's
0.1 everywhere), since both paths draw each run's masks from that run's own counter-based dropout
(:func:`codeswitch.core.batched.run_dropout`), and with gradient clipping active (each run clipped by its own norm)."""

from __future__ import annotations

import pytest
import torch

from codeswitch.core.batched import (RunSettings, check_routable, dropout_keep, run_dropout, stack_groups,
                                     train_runs)

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def _config(attn: str = "eager"):
    from transformers import BertConfig

    return BertConfig(vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
                      num_labels=3, attn_implementation=attn)


def _make(seed: int):
    from transformers import BertForSequenceClassification

    torch.manual_seed(seed)
    return BertForSequenceClassification(_config())


def _data(n: int = 20, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    rows = [torch.randint(1, 100, (int(torch.randint(3, 12, (1,), generator=g)),), generator=g).tolist() for _ in range(n)]
    return rows, torch.randint(0, 3, (n,), generator=g).tolist()


SETTINGS = RunSettings(learning_rate=1e-3, weight_decay=0.01, num_train_epochs=3, batch_size=8, warmup_steps=2,
                       max_grad_norm=0.1, selection="best")


def _close(a, b, what):
    a, b = torch.as_tensor(a), torch.as_tensor(b)
    tol = 1e-5 * max(1.0, float(a.abs().max()))
    err = float((a - b).abs().max())
    assert err <= tol, f"{what}: max |difference| {err:.3g} > {tol:.3g}"


@pytest.fixture(scope="module")
def both():
    train, val = _data(20, 0), _data(10, 1)
    seeds = [11, 22, 33]
    # run 2 trains on other data of the same size: a stack's runs need not share their training set
    sets = [train, train, _data(20, 2)]
    separate = train_runs(_make, seeds, sets, val, SETTINGS, batched=False)
    batched = train_runs(_make, seeds, sets, val, SETTINGS, batched=True)
    return separate, batched


def test_batched_runs_equal_separate_runs(both):
    separate, batched = both
    for s, b in zip(separate, batched):
        assert s.seed == b.seed
        assert len(s.losses) == len(b.losses) == 9  # 3 epochs x ceil(20 / 8) steps
        _close(s.losses, b.losses, f"run {s.seed}: losses per step")
        assert s.scores == b.scores, f"run {s.seed}: validation accuracy per epoch"
        assert s.selected_epoch == b.selected_epoch
        _close(s.logits, b.logits, f"run {s.seed}: validation logits at the selected epoch")
        assert s.state.keys() == b.state.keys()
        for name in s.state:
            _close(s.state[name], b.state[name], f"run {s.seed}: final {name}")


def test_runs_are_their_own(both):
    """The runs differ from each other (seed: weights, data order, dropout): a batched run compared with another
    run's separate record fails, so the equality above is not vacuous."""
    separate, batched = both
    assert max(abs(a - b) for a, b in zip(separate[1].losses, batched[0].losses)) > 1e-3
    assert float((separate[1].state["classifier.weight"] - batched[0].state["classifier.weight"]).abs().max()) > 1e-3
    # the training moved the weights (a run that did not train would also "equal" itself)
    assert float((_make(11).classifier.weight - batched[0].state["classifier.weight"]).abs().max()) > 1e-3


def test_without_validation_the_runs_train_the_same(both):
    """No validation split (selection "last"): nothing is scored while training, the runs train exactly as above."""
    import dataclasses

    separate, _ = both
    last = dataclasses.replace(SETTINGS, selection="last")
    seeds, sets = [11, 22, 33], [_data(20, 0), _data(20, 0), _data(20, 2)]
    for b, s in zip(train_runs(_make, seeds, sets, None, last, batched=True), separate):
        assert b.scores == [] and b.logits is None and b.selected_epoch == SETTINGS.num_train_epochs - 1
        _close(s.losses, b.losses, f"run {s.seed}: losses per step")
        for name in s.state:
            _close(s.state[name], b.state[name], f"run {s.seed}: final {name}")
    with pytest.raises(ValueError, match="needs a validation split"):
        train_runs(_make, seeds, sets, None, SETTINGS, batched=True)


def test_dropout_masks_per_run_reproducible_and_fair():
    shape, p = (8, 16, 64), 0.1
    a = dropout_keep(shape, p, seed=11, step=3, call=2)
    assert torch.equal(a, dropout_keep(shape, p, seed=11, step=3, call=2))  # reproducible
    for other in (dict(seed=22, step=3, call=2), dict(seed=11, step=4, call=2), dict(seed=11, step=3, call=3)):
        b = dropout_keep(shape, p, **other)
        differ = float((a != b).float().mean())  # independent masks differ on 2p(1-p) = 18% of the elements
        assert abs(differ - 2 * p * (1 - p)) < 5 * (2 * p * (1 - p) / a.numel()) ** 0.5, (other, differ)
    n = a.numel()
    kept = float(a.float().mean())
    assert abs(kept - (1 - p)) < 5 * (p * (1 - p) / n) ** 0.5, kept  # Bernoulli(1 - p), 5 sigma
    # a row's mask does not depend on how wide the batch is padded
    assert torch.equal(dropout_keep((8, 10, 64), p, 11, 3, 2), a[:, :10])
    # under vmap each run draws its own seed's mask, the one it draws alone
    x = torch.ones(shape)
    seeds = torch.tensor([11, 22, 33])

    def drop(seed):
        with run_dropout(seed, 3):
            return torch.nn.functional.dropout(x, p, training=True)

    stacked = torch.vmap(drop, randomness="error")(seeds)
    for k, s in enumerate(seeds.tolist()):
        with run_dropout(s, 3):
            alone = torch.nn.functional.dropout(x, p, training=True)
        assert torch.equal(stacked[k], alone)
    assert not torch.equal(stacked[0], stacked[1])
    assert torch.nn.functional.dropout is not None and torch.nn.functional.dropout.__name__ == "dropout"  # restored


def test_bad_stacks_are_refused():
    from transformers import BertForSequenceClassification

    rows, labels = _data(20)
    with pytest.raises(ValueError, match="one size"):
        train_runs(_make, [1, 2], [(rows, labels), (rows[:10], labels[:10])], (rows, labels), SETTINGS, batched=True)
    with pytest.raises(ValueError, match="2 seeds but 1"):
        train_runs(_make, [1, 2], [(rows, labels)], (rows, labels), SETTINGS, batched=True)
    with pytest.raises(ValueError, match="eager"):
        check_routable(BertForSequenceClassification(_config("sdpa")))
    check_routable(_make(1))  # eager: accepted
    with pytest.raises(ValueError, match="selection"):
        RunSettings(learning_rate=1e-3, weight_decay=0.0, num_train_epochs=1, batch_size=8, selection="mean")


def test_stack_groups():
    specs = [("a", 1), ("b", 1), ("a", 2), ("a", 3), ("b", 2)]
    assert stack_groups(specs, 2, key=lambda s: s[0]) == [[("a", 1), ("a", 2)], [("a", 3)], [("b", 1), ("b", 2)]]
    assert stack_groups(specs, 1, key=lambda s: s[0]) == [[s] for s in [("a", 1), ("a", 2), ("a", 3), ("b", 1), ("b", 2)]]
    with pytest.raises(ValueError, match="batch_runs"):
        stack_groups(specs, 0, key=lambda s: s[0])


def test_the_batched_benchmark_command_writes_its_report(tmp_path):
    """``python -m benchmarks batched`` end to end at its smallest (it raised NameError: ``code_commit`` was not
    imported, and no test ran the command)."""
    import json

    from benchmarks.batched_runs import main

    out = tmp_path / "batched.json"
    assert main(["--sizes", "smoke", "--ks", "2", "--repeats", "1", "--warmup", "1", "--steps", "2", "--out", str(out)]) == 0
    report = json.loads(out.read_text())
    assert len(report["commit"]) >= 7 and report["command"].startswith("python -m benchmarks batched --sizes smoke")
    assert "| " in report["table_markdown"] and report["seconds"] > 0
