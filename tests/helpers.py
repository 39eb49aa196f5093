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
