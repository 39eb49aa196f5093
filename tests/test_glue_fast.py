"""The Koglish-GLUE fast path (train.glue): length-grouped batches, SDPA, bf16 within noise, no per-step sync."""

from __future__ import annotations

import random

import numpy as np
import pandas as pd
import pytest
import torch

from codeswitch.core.training import BestEpoch
from codeswitch.glue import train as tg

from .helpers import TOY_ADJ as _ADJ, glue_fine_tune, glue_spec, glue_trainer

_FILLER = "the a movie film song was shown really very quite long short story at home today".split()


def _varied(n: int, seed: int, max_words: int = 40) -> pd.DataFrame:
    """SST-2-like rows whose lengths vary a lot (1 to ``max_words`` filler words before the labelled phrase)."""
    rng = random.Random(seed)
    rows = []
    for _ in range(n):
        adj = rng.choice(sorted(_ADJ))
        pre = " ".join(rng.choice(_FILLER) for _ in range(rng.randint(1, max_words)))
        rows.append({"sentence": f"{pre} the {adj} movie", "cross": f"{pre} {_ADJ[adj][0]} 영화", "label": _ADJ[adj][1]})
    return pd.DataFrame(rows)


@pytest.fixture(scope="module")
def tiny_bert(backbones_dir) -> str:
    from codeswitch.core.models import resolve_model

    return resolve_model("tiny-bert")


# --------------------------------------------------------------------------- the length column
def test_length_column_is_the_attention_mask_sum(tiny_bert):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_bert)
    pairs = pd.DataFrame({"sentence1": ["a good movie", "the long long long film was shown"], "sentence2": ["bad", "a song"],
                          "cross1": ["좋은 영화", "x"], "cross2": ["y", "z"], "label": [1.0, 4.5]})
    for task, df, max_len in (("stsb", pairs, 230), ("stsb", pairs, 6), ("sst2", _varied(12, 0), 115), ("sst2", _varied(12, 1), 9)):
        ds = tg.encode(df, tg.TASKS[task], "en", tok, max_len)
        lengths = ds[tg.LENGTH][:]
        assert lengths == [sum(m) for m in ds["attention_mask"][:]]
        assert lengths == [len(ids) for ids in ds["input_ids"][:]]  # no padding stored: every token is real
        assert max(lengths) <= max_len
        if max_len == 115:
            assert len(set(lengths)) > 5  # varied lengths, nothing cut
        if max_len == 9:
            assert set(lengths) == {9}  # these seeded rows are all longer: every one cut to max_length


# --------------------------------------------------------------------------- SDPA
@pytest.mark.parametrize("name", ["tiny-bert", "tiny-xlmr", "tiny-mbart"])
def test_models_use_sdpa(name, backbones_dir, tmp_path):
    trainer = glue_trainer(name, _varied(8, 0), glue_spec(), str(tmp_path))
    assert trainer.model.config._attn_implementation == "sdpa"


# --------------------------------------------------------------------------- length-grouped batches
def _padding(trainer) -> tuple[int, int, list[int]]:
    """Padded positions, real tokens and batch sizes of one epoch of the Trainer's own training batches."""
    padded = real = 0
    sizes = []
    for batch in trainer.get_train_dataloader():
        assert tg.LENGTH not in batch  # the collator drops it: not a model input
        mask = batch["attention_mask"]
        real += int(mask.sum())
        padded += mask.numel() - int(mask.sum())
        sizes.append(len(mask))
    return padded, real, sizes


def test_group_by_length_cuts_padding(tiny_bert, tmp_path, monkeypatch):
    import transformers.trainer as hf_trainer
    from transformers.trainer_pt_utils import LengthGroupedSampler

    handed = []

    class Spy(LengthGroupedSampler):
        def __init__(self, *args, lengths=None, **kw):
            handed.append(lengths)
            super().__init__(*args, lengths=lengths, **kw)

    monkeypatch.setattr(hf_trainer, "LengthGroupedSampler", Spy)
    df = _varied(256, 0)
    grouped = glue_trainer(tiny_bert, df, glue_spec(), str(tmp_path))
    assert grouped.args.train_sampling_strategy == "group_by_length"  # the profiles' default
    g_pad, g_real, g_sizes = _padding(grouped)
    # the Trainer read the precomputed column (None would mean re-scanning every row)
    assert handed and handed[0] is not None and list(handed[0][:]) == grouped.train_dataset[tg.LENGTH][:]
    sampler = grouped._get_train_sampler()
    assert isinstance(sampler, LengthGroupedSampler) and isinstance(sampler.lengths, list)

    random_ = glue_trainer(tiny_bert, df, glue_spec(group_by_length=False), str(tmp_path))
    r_pad, r_real, r_sizes = _padding(random_)
    assert g_real == r_real == sum(grouped.train_dataset[tg.LENGTH][:])  # every row once per epoch
    assert g_sizes == r_sizes == [8] * 32
    assert g_pad < 0.3 * r_pad, (g_pad, r_pad)  # measured: 813 vs 4965 padded positions


def test_grouped_order_is_a_function_of_the_data_seed(tiny_bert, tmp_path):
    df = _varied(64, 1)

    def order(seed: int, epochs: int = 2) -> list[list[int]]:
        trainer = glue_trainer(tiny_bert, df, glue_spec(seed=seed), str(tmp_path))
        torch.manual_seed(999)  # the global stream must not matter (it differs between processes)
        sampler = trainer._get_train_sampler()
        return [list(sampler) for _ in range(epochs)]

    a, b, c = order(3), order(3), order(4)
    assert a == b  # same seed: same batches, whatever torch's global stream holds
    assert a != c  # another seed: another order
    assert a[0] != a[1]  # a new shuffle every epoch
    assert all(sorted(epoch) == list(range(64)) for epoch in a + c)  # a permutation: each row once


# --------------------------------------------------------------------------- mixed precision
def _losses(path: str, df: pd.DataFrame, precision: str, tmp: str, dropout_seed: int | None = None):
    """Per-epoch training losses of the real trainer, and the dtypes its first Linear produced while training.

    ``dropout_seed``: reseed torch's global stream after the Trainer's own
    seeding — the head's initialisation and the batch order (seeded by
    ``data_seed``) stay, only the dropout masks are drawn anew.
    """
    rec = BestEpoch("accuracy", ["valid", "test_en"])
    trainer = glue_trainer(path, df, glue_spec(precision=precision), tmp, callbacks=[rec])
    dtypes = set()
    first_linear = next(m for m in trainer.model.modules() if isinstance(m, torch.nn.Linear))
    first_linear.register_forward_hook(lambda m, i, out: dtypes.add(out.dtype) if m.training else None)
    if dropout_seed is not None:
        torch.manual_seed(dropout_seed)
    trainer.train()
    return np.array([e["loss"] for e in rec.rows()]), dtypes


def test_bf16_matches_fp32_within_dropout_noise(tiny_bert, tmp_path):
    """A few steps (2 epochs x 4 steps, tiny BERT, CPU autocast): bf16 moves the loss less than a new dropout draw."""
    df = _varied(32, 2, max_words=20)
    fp32, fp32_dtypes = _losses(tiny_bert, df, "fp32", str(tmp_path))
    bf16, bf16_dtypes = _losses(tiny_bert, df, "bf16", str(tmp_path))
    other_dropout, _ = _losses(tiny_bert, df, "fp32", str(tmp_path), dropout_seed=123)
    assert fp32_dtypes == {torch.float32} and bf16_dtypes == {torch.bfloat16}  # autocast did run
    noise = np.abs(other_dropout - fp32).max()  # measured ~1e-3 (loss ~0.67)
    gap = np.abs(bf16 - fp32).max()  # measured ~4e-5
    assert noise > 0 and 0 < gap < noise, (fp32, bf16, other_dropout)
    assert gap < 0.02 * np.abs(fp32).max()
    # the same run through fine_tune (what the experiment calls): the same losses
    s = glue_spec(precision="bf16")
    r = glue_fine_tune(s, tiny_bert, df)
    assert [e["loss"] for e in r["epochs"]] == pytest.approx(bf16.tolist(), rel=1e-6)


# --------------------------------------------------------------------------- no host synchronisation
def test_no_host_sync_in_the_trainer_step(tiny_bert, tmp_path, monkeypatch):
    """Between on_step_begin and on_step_end, outside the model's forward, no tensor is read on the host.

    The forward is left out: transformers' SDPA mask check syncs there (known,
    documented in docs/performance.md).  The Trainer's NaN filter would count
    one per step — the second run shows the test can see it.
    """
    from transformers import TrainerCallback

    state = {"on": False, "in_forward": False, "syncs": 0}

    def counting(name):
        original = getattr(torch.Tensor, name)

        def wrapper(self, *a, **k):
            if state["on"] and not state["in_forward"]:
                state["syncs"] += 1
            return original(self, *a, **k)

        return wrapper

    for name in ("item", "tolist", "__bool__", "__float__", "__int__"):
        monkeypatch.setattr(torch.Tensor, name, counting(name))

    class StepWindow(TrainerCallback):
        def on_step_begin(self, args, st, control, **kw):
            state["on"] = True

        def on_step_end(self, args, st, control, **kw):
            state["on"] = False

    def run(nan_filter: bool) -> int:
        state["syncs"] = 0
        trainer = glue_trainer(tiny_bert, _varied(32, 3), glue_spec(num_train_epochs=1), str(tmp_path), callbacks=[StepWindow()])
        trainer.args.logging_nan_inf_filter = nan_filter
        trainer.model.register_forward_pre_hook(lambda m, i: state.update(in_forward=True))
        trainer.model.register_forward_hook(lambda m, i, o: state.update(in_forward=False))
        trainer.train()
        assert trainer.state.global_step == 4
        return state["syncs"]

    assert run(nan_filter=False) == 0
    assert run(nan_filter=True) >= 4  # the Trainer's default reads every step's loss


def test_smoke_check_asserts_only_on_the_smoke_profile_as_shipped():
    """Issue 27: ``--set seeds=[11111] --set glue.num_train_epochs=1`` (the README's override example) stopped
    notebook 02 on its smoke-only assert. With any override the H2 outcome is printed, not asserted."""
    import pandas as pd
    import pytest

    from codeswitch.core.profiles import load_profile
    from codeswitch.glue.tables import smoke_check

    from .conftest import REPO

    miss = pd.DataFrame({"backbone": ["tiny-bert"], "H2 holds": [False]})
    hit = pd.DataFrame({"backbone": ["tiny-bert"], "H2 holds": [True]})
    readme = load_profile("smoke", {"seeds": [11111], "glue.num_train_epochs": 1}, root=REPO)
    assert "not asserted" in smoke_check(miss, readme) and "does not hold" in smoke_check(miss, readme)
    assert "not asserted" in smoke_check(hit, load_profile("paper", root=REPO))
    shipped = load_profile("smoke", root=REPO)
    with pytest.raises(AssertionError, match="CS2CS should beat EN2CS"):
        smoke_check(miss, shipped)
    assert smoke_check(hit, shipped).startswith("smoke check passed (a check of the pipeline, not evidence")
    assert "as built into the smoke data: each task's label is set by words inside a noun phrase" in smoke_check(hit, shipped)
    nb = (REPO / "notebooks" / "02_koglish_glue.ipynb").read_text(encoding="utf-8")
    assert "smoke_check(h, cfg)" in nb and "assert h[" not in nb  # the notebook asks the library, never asserts itself
