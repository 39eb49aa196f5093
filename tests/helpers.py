"""Small stand-ins shared by several test modules."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import torch


class BagEncoder(torch.nn.Module):
    """A small sentence encoder: masked mean of token embeddings, then a linear layer (no dropout: exact comparisons)."""

    def __init__(self, vocab=60, dim=8):
        super().__init__()
        self.emb = torch.nn.Embedding(vocab, dim)
        self.out = torch.nn.Linear(dim, dim)

    def forward(self, features):
        mask = features["attention_mask"].unsqueeze(-1).to(self.emb.weight.dtype)  # (n, L, 1)
        pooled = (self.emb(features["input_ids"]) * mask).sum(1) / mask.sum(1)  # (n, dim)
        return {"sentence_embedding": self.out(pooled)}


def glue_spec(**fields):
    """A :class:`codeswitch.glue.config.GlueRun` for trainer tests: one SST-2 run on English, fp32, with ``fields`` changed."""
    from codeswitch.glue.config import GlueRun

    base = dict(
        experiment="test", task="sst2", backbone="tiny", model="tiny-bert", train="en", select="en", test=("en",), seed=3,
        koglish_source="test", data="test", num_train_epochs=2, batch_size=8, learning_rate=3e-3, warmup_ratio=0.1,
        weight_decay=0.0, max_length=115, per_device_eval_batch_size=64, precision="fp32", group_by_length=True, log_epochs=False,
        keep_models="none",
    )
    return GlueRun(**(base | fields))


def token_columns(lengths_per_column, rng, vocab: int) -> list[dict]:
    """Right-padded token columns as the sentence-transformers collator makes them (``input_ids``, ``attention_mask``,
    ``token_type_ids``), one per entry of ``lengths_per_column`` (the sentences' lengths), ids drawn from ``rng`` in
    ``[5, vocab)``.  ``lengths_per_column`` is read one column at a time: a generator drawing the lengths from the same
    ``rng`` interleaves its draws with the ids'."""
    cols = []
    for lengths in lengths_per_column:
        ids = torch.zeros(len(lengths), int(max(lengths)), dtype=torch.long)
        mask = torch.zeros_like(ids)
        for r, n in enumerate(lengths):
            ids[r, :n] = torch.from_numpy(rng.integers(5, vocab, size=n))
            mask[r, :n] = 1
        cols.append({"input_ids": ids, "attention_mask": mask, "token_type_ids": torch.zeros_like(ids)})
    return cols


#: a toy sentiment task (tests of the GLUE trainer): the label lives in the adjective of the noun phrase that is switched
#: to Korean, as in the mini Koglish
TOY_ADJ = {"good": ("좋은", 1), "great": ("훌륭한", 1), "nice": ("멋진", 1), "bad": ("나쁜", 0), "awful": ("끔찍한", 0), "dull": ("따분한", 0)}
TOY_NOUN = {"movie": "영화", "book": "책", "song": "노래"}


def toy_sentiment(n: int, seed: int) -> pd.DataFrame:
    """``n`` rows of the toy sentiment task (``sentence``, its code-switched ``cross``, ``label``), drawn with ``seed``."""
    import random

    rng = random.Random(seed)
    rows = []
    for _ in range(n):
        adj, noun = rng.choice(sorted(TOY_ADJ)), rng.choice(sorted(TOY_NOUN))
        en, ko = f"the {adj} {noun}", f"{TOY_ADJ[adj][0]} {TOY_NOUN[noun]}"
        s = f"{en} {rng.choice(['came out', 'was shown', 'sold well'])} ."
        rows.append({"sentence": s, "cross": s.replace(en, ko, 1), "label": TOY_ADJ[adj][1]})
    return pd.DataFrame(rows)


def tiny_concse_profile(output_root, *, seed: int = 11111, batch_sizes: tuple[int, int] = (16, 16), learning_rate: float = 2e-3,
                        epochs: int = 1, train_rows: int = 32, eval_rows: int = 32):
    """The smoke profile with ConCSE's one backbone tiny-bert (as "mBERT-base"), one seed, a few rows and epochs, writing
    below ``output_root`` (``batch_sizes``: SimCSE's, ConCSE's)."""
    from codeswitch.core.profiles import load_profile

    return load_profile("smoke", {
        "seeds": [seed],
        "concse.backbones": [dict(name="mBERT-base", model="tiny-bert", simcse_batch_size=batch_sizes[0],
                                  concse_batch_size=batch_sizes[1], learning_rate=learning_rate)],
        "concse.num_train_epochs": epochs,
        "concse.max_train_rows": train_rows,
        "concse.max_eval_rows": eval_rows,
    }, output_root=output_root)


def check_artifacts(fig_dir: Path, spec) -> None:
    """Every artifact a notebook registers exists in ``fig_dir``: tables non-empty with finite numbers, figures drawn."""
    index = {json.loads(p.read_text())["name"]: json.loads(p.read_text()) for p in (fig_dir / ".index").glob("*.json")}
    for name in spec.artifacts:
        assert name in index, f"{spec.file} did not write {name}"
        assert index[name]["notebook"] == spec.stem
        if index[name]["kind"] == "table":
            for ext in ("md", "csv", "tex"):
                assert (fig_dir / f"{name}.{ext}").stat().st_size > 0
            df = pd.read_csv(fig_dir / f"{name}.csv")
            assert len(df) > 0, f"{name}.csv is empty"
            numeric = df.select_dtypes("number")
            value_cols = [c for c in ("mean", "value") if c in numeric] or list(numeric.columns)
            assert value_cols, f"{name}.csv has no numeric column"
            values = numeric[value_cols].to_numpy().ravel()
            assert all(math.isfinite(v) for v in values), f"{name}.csv holds non-finite numbers"
        else:
            for ext in ("png", "pdf"):
                assert (fig_dir / f"{name}.{ext}").stat().st_size > 1000
    assert (fig_dir / "INDEX.md").is_file()


def assert_compiles_whole(step, inputs, *more) -> None:
    """``step(inputs)`` (model + loss) traces as one graph, 0 graph breaks (``torch._dynamo.explain``); with ``more``
    steps' inputs, all of them compiled (``torch.compile(fullgraph=True, dynamic=False)``, the eager backend: tracing
    only) make at most one graph per distinct input shape, and at least one (issue 24's compile guard)."""
    import torch._dynamo
    from torch._dynamo.utils import counters

    explained = torch._dynamo.explain(step)(inputs)
    torch._dynamo.reset()
    assert explained.graph_break_count == 0 and explained.graph_count == 1, explained.break_reasons
    if more:
        counters.clear()
        compiled = torch.compile(step, backend="eager", fullgraph=True, dynamic=False)
        try:
            for x in (inputs, *more):
                compiled(x).backward()
            shapes = {x["input_ids"].shape for x in (inputs, *more)}
            assert 1 <= counters["stats"]["unique_graphs"] <= len(shapes), (counters["stats"]["unique_graphs"], shapes)
        finally:
            torch._dynamo.reset()


# --- glue
# The tiny Koglish-GLUE runs of tests/test_glue*.py, test_learning_glue.py and test_perf_guards_glue.py: on the CPU,
# one torch thread, a tiny-* backbone; a spec from glue_spec (above).
def glue_trainer(model: str, df: pd.DataFrame, spec, output_dir: str, callbacks=()):
    """``glue.train.build_trainer`` of ``spec`` on the CPU, ``model`` a tiny-* name (or a folder), trained on ``df``;
    its first 8 rows are the validation split and the English test split."""
    from codeswitch.core.models import resolve_model
    from codeswitch.glue.train import build_trainer

    return build_trainer(spec, resolve_model(model), df, df.head(8), {"en": df.head(8)}, device="cpu", output_dir=output_dir,
                         callbacks=callbacks)


def glue_fine_tune(spec, model: str, train: pd.DataFrame, valid: pd.DataFrame | None = None, tests=None) -> dict:
    """``glue.train.fine_tune`` of ``spec`` on the CPU with one thread, ``model`` a tiny-* name (or a folder); ``valid``
    and ``tests`` (``{lang: split}``) default to the first 8 rows of ``train`` (the English test split)."""
    from codeswitch.core.models import resolve_model
    from codeswitch.glue.train import fine_tune

    valid = train.head(8) if valid is None else valid
    return fine_tune(spec, resolve_model(model), train, valid, {"en": train.head(8)} if tests is None else tests, device="cpu",
                     cpu_threads=1)


def toy_sentiment_splits(test_rows: int) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Train (96 rows), validation (32) and test (``test_rows``) splits of the toy sentiment task, each its own draw."""
    return toy_sentiment(96, 0), toy_sentiment(32, 1), toy_sentiment(test_rows, 2)


# --- calbert
def calbert_stages(output_root, overrides: dict | None = None):
    """``(profile, pre-training specs, fine-tuning specs)`` of a tiny CalBERT run: the smoke profile without the
    from-scratch baselines (Tables 8/13: test_calbert_protocol), ``overrides`` on top, writing below ``output_root``."""
    from codeswitch import calbert as CB
    from codeswitch.core.profiles import load_profile

    profile = load_profile("smoke", {"calbert.scratch.architectures": [], **(overrides or {})}, output_root=output_root)
    pre, fine = CB.stages(profile)
    return profile, list(pre), list(fine)


# --- concse
def concse_settings(**changes) -> dict:
    """The ``concse`` section's loss as keyword arguments of ``concse_loss`` / ``ConCSELoss`` (its defaults: the paper's
    τ, α, λ, every term, the released variant; :meth:`codeswitch.concse.config.Config.loss_settings`), ``changes`` replacing."""
    from codeswitch.concse.config import Config

    return Config().loss_settings() | changes


def tiny_concse_spec(output_root, method: str = "concse", **config):
    """One run (seed 3) of a tiny ``concse`` section — tiny-bert as the backbone ``t`` (batch 8, learning rate 1e-3),
    maximum length 16, buckets of cost 16, ``config`` changing it — on the smoke profile writing below ``output_root``.
    Returns ``(spec, profile)``."""
    from codeswitch.concse.config import Backbone, Config
    from codeswitch.concse.plan import spec
    from codeswitch.core.profiles import load_profile

    base = dict(backbones=(Backbone("t", "tiny-bert", 8, 8, 1e-3),), ablation_backbone="t", max_length=16, bucket_cost=16)
    c = Config(**(base | config))
    profile = load_profile("smoke", output_root=output_root)
    return spec(c, profile, c.backbones[0], method, 3, koglish="test"), profile


def tiny_nli(n: int = 32, seed: int = 0, words_per_sentence: tuple[int, int] = (2, 12)) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``n`` Koglish-NLI rows and 12 STS dev pairs of random sentences (``words_per_sentence``: numpy's integers range)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    words = ["the", "small", "pig", "rested", "at", "park", "작은", "돼지", "공원", "a", "dog", "ran", "home", "집"]
    sent = lambda: " ".join(rng.choice(words, size=int(rng.integers(*words_per_sentence))))  # noqa: E731
    cols = ("sentence1", "sentence2", "hard_neg", "cross1", "cross2", "cross_hard_neg")
    nli = pd.DataFrame([{c: sent() for c in cols} for _ in range(n)])
    dev = pd.DataFrame({"cross1": [sent() for _ in range(12)], "cross2": [sent() for _ in range(12)], "label": rng.uniform(0, 5, 12)})
    return nli, dev


# --- alignment
def tiny_bert() -> tuple[str, object]:
    """``(path, tokenizer)`` of the tiny BERT backbone (the session builds it: ask for conftest's ``backbones_dir``)."""
    from transformers import AutoTokenizer

    from codeswitch.core.models import resolve_model

    path = resolve_model("tiny-bert")
    return path, AutoTokenizer.from_pretrained(path)


def alignment_smoke(overrides=None, *, output_root=None):
    """A tiny alignment run's set-up: ``(profile, aligns, fine, figure)``, the smoke profile (with ``overrides``) and the
    specs of its three stages (tests change a few fields with ``dataclasses.replace``)."""
    from codeswitch import alignment as A
    from codeswitch.core.profiles import load_profile

    profile = load_profile("smoke", overrides, output_root=output_root)
    aligns, fine, figure = A.stages(profile)
    return profile, list(aligns), list(fine), list(figure)


# --- contrastivemix
def contrastivemix_tiny_run(root, overrides: dict):
    """A small ContrastiveMix run: the smoke profile under ``root`` with ``overrides`` (``contrastivemix.*`` keys) and
    BM25 with bm25s, no Table 3 ablations; its plan, with every BM25 run computed and cached.  ``(profile, specs)``."""
    from codeswitch.contrastivemix.config import Bm25Run
    from codeswitch.contrastivemix.experiment import run_one
    from codeswitch.contrastivemix.plan import KINDS, plan, root as runs_root
    from codeswitch.core.profiles import load_profile
    from codeswitch.core.runs import RunCache

    profile = load_profile("smoke", {"contrastivemix.ablations": False, "contrastivemix.bm25_implementation": "bm25s",
                                     **overrides}, output_root=root)
    specs = plan(profile)
    for b in (s for s in specs if isinstance(s, Bm25Run)):
        RunCache(runs_root(profile) / KINDS[Bm25Run]).put(b.key(), run_one(b, profile))
    return profile, specs


# --- identity (tests/test_faults_*.py)
def fresh_identity(tmp_path, monkeypatch):
    """A generator for an autouse fixture: the digest cache in ``tmp_path``, no verify or warnings variables from the
    caller's environment, and the identity memos empty before and after the test."""
    from codeswitch.core import identity, runs

    monkeypatch.setenv("CODESWITCH_DIGESTS", str(tmp_path / "_digests" / "sha256.json"))
    for var in (identity.VERIFY_VAR, identity.PROFILE_VERIFY_VAR, runs.WARNINGS_FILE_VAR):
        monkeypatch.delenv(var, raising=False)
    identity._MEMO.clear()
    identity._VERIFIED.clear()
    yield
    identity._MEMO.clear()
    identity._VERIFIED.clear()


def touch_r_edit(path: Path, data: bytes) -> None:
    """Replace a file's bytes (same size) and restore its time stamps, as ``touch -r`` after an edit does."""
    import os

    st = path.stat()
    assert len(data) == st.st_size
    path.write_bytes(data)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


def swapped_checkpoint(tmp_path: Path) -> Path:
    """A verified checkpoint folder (``tmp_path/ckpt``) whose weight file was then swapped for other bytes of the same
    size, its time stamps restored: the case a size-and-time check cannot see."""
    from codeswitch.core.checkpoints import checkpoint_directory, checkpoint_ok

    folder = tmp_path / "ckpt"
    with checkpoint_directory(folder) as tmp:
        (tmp / "config.json").write_text("{}")
        (tmp / "model.safetensors").write_bytes(b"\x01" * 64)
    assert checkpoint_ok(folder)
    touch_r_edit(folder / "model.safetensors", b"\x02" * 64)
    return folder


# --- Slurm without Slurm (tests/test_faults_slurm.py, test_faults_executors.py)
def fake_submitit_executor(make_job):
    """A stand-in for ``submitit.AutoExecutor`` whose ``submit`` returns ``make_job(i, folder)`` for the i-th job."""
    import contextlib

    class FakeExecutor:
        def __init__(self, folder, cluster):
            self.folder, self.n = Path(str(folder).replace("%j", "")), 0

        def update_parameters(self, **kw):
            pass

        @contextlib.contextmanager
        def batch(self):
            yield

        def submit(self, fn, task):
            self.n += 1
            return make_job(self.n - 1, self.folder)

    return FakeExecutor
