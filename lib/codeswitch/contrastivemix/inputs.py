"""What ContrastiveMix's runs read, read once per process: the training set, queries, corpora, MUSE dictionaries and
the backbone (each behind an LRU cache, so a grid of runs in one process reads each once), and where a run's files
live (``runs/<profile>/contrastivemix/``: checkpoints, dictionaries, embeddings).
"""

from __future__ import annotations

import functools
from pathlib import Path

from ..core.experiment import RunSpec
from ..core.profiles import Profile
from .config import Bm25Run, TrainRun
from .plan import root

__all__ = ["train_set", "query_set", "collection", "backbone", "dictionary", "backbone_path", "checkpoint_dir", "queries_of", "query_sample", "require"]


@functools.lru_cache(maxsize=2)
def train_set(ref: str, max_queries: int | None, rule: str = "head"):
    from .data import load_train_set

    return load_train_set(ref, max_queries=max_queries, rule=rule)


@functools.lru_cache(maxsize=64)
def query_set(benchmark: str, ref: str, language: str, split: str):
    from .data import load_queries

    return load_queries(benchmark, ref, language, split, what=f"contrastivemix.{benchmark}")


@functools.lru_cache(maxsize=2)
def collection(benchmark: str, ref: str, language: str):
    from .data import load_collection

    return load_collection(benchmark, ref, language, what=f"contrastivemix.{benchmark}_corpus")


@functools.lru_cache(maxsize=16)
def _dictionary(muse: str, language: str, download_dir: Path) -> dict[str, list[str]]:
    from .codemix import load_muse, muse_path
    from .synthetic import SYNTHETIC, synthetic_glossary_path

    if muse == SYNTHETIC:
        return load_muse(synthetic_glossary_path(language))
    return load_muse(muse_path(muse, language, download_dir=download_dir))


@functools.lru_cache(maxsize=1)
def backbone(path: str):
    """The backbone read from disk once (training copies it, never modifies it)."""
    from ..core.encoders import load_dual_encoder

    return load_dual_encoder(path)


def dictionary(profile: Profile, muse: str, language: str) -> dict[str, list[str]]:
    """The en-``language`` MUSE dictionary named by ``muse`` (downloads land in ``runs/<profile>/contrastivemix/muse``)."""
    return _dictionary(muse, language, root(profile) / "muse")


def backbone_path(profile: Profile, model: str) -> str:
    from ..core.models import resolve_model

    return resolve_model(model, profile, what="contrastivemix.backbones[0].model")


def checkpoint_dir(profile: Profile, spec: TrainRun) -> Path:
    return root(profile) / "checkpoints" / spec.key_hash()


def queries_of(spec: Bm25Run, split: str, *, sample: int | None = None):
    """``split``'s queries of ``spec``'s target that every evaluation reads: ``spec.eval_max_queries`` of them (a seeded
    sample, :meth:`~.data.QuerySet.take`; None: all), then ``sample`` of those (``tune_max_queries``, drawn the same
    way)."""
    return query_set(spec.benchmark, spec.queries, spec.language, split).take(spec.eval_max_queries).take(sample)


def query_sample(spec: Bm25Run) -> dict:
    """How many queries of each split ``spec``'s evaluations read, of how many (``{"report"|"tune": {"split", "n",
    "of"}}``): what a table's note states under ``eval_max_queries``."""
    out = {}
    for name, split, cap in (("report", spec.report_split, None), ("tune", spec.tune_split, spec.tune_max_queries)):
        whole = query_set(spec.benchmark, spec.queries, spec.language, split)
        out[name] = {"split": split, "n": len(queries_of(spec, split, sample=cap)), "of": len(whole)}
    return out


def require(spec: RunSpec):
    raise RuntimeError(f"contrastivemix: {spec.label()} is not in the run cache; run contrastivemix.run (it runs the grids in order)")
