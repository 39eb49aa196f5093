"""ConCSE vs SimCSE on Koglish-NLI → Koglish-STS (ConCSE §4, §5.2, §5.3; notebooks 03 and 04).

Every run trains one encoder (one backbone, one method, one seed, one setting),
picks its best epoch on Koglish STS-B dev and scores it on all seven Koglish-STS
test sets.  A run is keyed by its complete config (:func:`run_config`), so a run
that two tables need is trained once: ConCSE v6 of Table 4 *is* the τ = 0.05
point of Table 5, the λ = 1.2 point of Table 6, the α = 1 point of Table 7 and
Table 3's ConCSE-mBERT row; λ = "N/A" (no triplet term) *is* v3.

Tables and figures are built from the run cache alone.

Conventions (the released code's, where the paper is ambiguous; the other
reading is a named option):

* loss: ``variant="official"`` (H5 negatives anchored on c0, Euclidean distance);
  ``"paper"`` is Eq. 5/7 read literally — compared in ``concse_ablation_variant``;
* SimCSE: Table 9's batch sizes and the maximum length 64 (``"matched"``); the
  released code trained it with batch 64 and maximum length 32
  (``"released_code"``) — compared in ``concse_ablation_simcse_settings``;
* model selection: the best epoch on Koglish STS-B dev (code-switched pairs); one
  model per run, scored on all seven test sets (the released code retrains per
  test set: the same procedure, seven times the cost);
* ± is the population standard deviation over seeds (``std_ddof = 0``), which is
  what reproduces the paper's p-values from its own means and ±; p-values are
  Student's two-sided t-test between SimCSE's and ConCSE's per-seed scores.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from ..core import reported as _reported
from ..common.fastpath import DEFAULT_BUCKET_COST
from .loss import TERMS, VARIANTS
from ..core.profiles import Profile
from ..core.report import comparison, save_figure, save_table, seaborn_style, summarise
from ..core.runs import RunCache, run_grid
from ..core.utils import frozen_gc

__all__ = [
    "Backbone",
    "ConCSEConfig",
    "TASK_LABELS",
    "LOSS_VARIANTS",
    "load_config",
    "data_preview",
    "run_config",
    "table3_configs",
    "ablation_cells",
    "run_table3",
    "run_ablations",
    "table3",
    "table3_figure",
    "table4",
    "sweep_table",
    "sweep_plot",
    "variant_table",
    "simcse_settings_table",
]

EXPERIMENT = "concse"
RESULT_VERSION = 1  # bump when a change of method code (loss, training, evaluation) changes results: old records are not reused
TASK_LABELS = {"stsb": "STS-B", "sts12": "STS12", "sts13": "STS13", "sts14": "STS14", "sts15": "STS15", "sts16": "STS16", "sick": "SICK"}
AVG = "Avg."
STSB = "Koglish-STS-B"
METHOD_LABELS = {"simcse": "SimCSE", "concse": "ConCSE"}

# Table 4: which loss terms each variant uses (§5.3).
LOSS_VARIANTS: dict[str, tuple[str, ...]] = {
    "v1": ("contrastive",),
    "v2": ("triplet",),
    "v3": ("contrastive", "align"),
    "v4": ("triplet", "align"),
    "v5": ("contrastive", "triplet"),
    "v6": ("contrastive", "triplet", "align"),
}


# --------------------------------------------------------------------------- config
@dataclass(frozen=True)
class Backbone:
    """One encoder backbone with its Table 9 settings."""

    name: str  # the label in tables: "mBERT-base", "XLM-R-base", "XLM-R-large"
    model: str  # hub id, local folder, or a tiny-* name
    simcse_batch_size: int
    concse_batch_size: int
    learning_rate: float


PAPER_BACKBONES = (
    # The released code uses the *uncased* mBERT.
    Backbone("mBERT-base", "bert-base-multilingual-uncased", simcse_batch_size=512, concse_batch_size=128, learning_rate=5e-5),
    Backbone("XLM-R-base", "xlm-roberta-base", simcse_batch_size=512, concse_batch_size=128, learning_rate=5e-5),
    Backbone("XLM-R-large", "xlm-roberta-large", simcse_batch_size=128, concse_batch_size=48, learning_rate=1e-5),
)


@dataclass(frozen=True)
class ConCSEConfig:
    """The ``concse`` section of a profile.  Defaults are the paper's settings (§A.2, Table 9)."""

    backbones: tuple[Backbone, ...] = PAPER_BACKBONES
    epochs: int = 5
    max_length: int = 64
    warmup_ratio: float = 0.1  # linear schedule, 10 % warm-up
    max_grad_norm: float = 1.0
    weight_decay: float = 0.0  # AdamW; the HF default, as in SimCSE
    temperature: float = 0.05  # τ (Table 5)
    margin: float = 1.0  # α (Table 7)
    triplet_weight: float = 1.2  # λ (Table 6)
    variant: str = "official"  # "official" (released code) | "paper" (equations read literally)
    released_simcse_batch_size: int = 64  # SimCSE as the released code trained it ...
    released_simcse_max_length: int = 32  # ... batch 64, maximum length 32
    # Ablations (Tables 4–7, ConCSE-mBERT on Koglish-STS-B)
    ablation_backbone: str = "mBERT-base"
    ablation_seeds: int | None = None  # how many of the profile's seeds the ablations use (None: all)
    temperatures: tuple[float, ...] = (0.001, 0.01, 0.05, 0.1, 1.0)
    triplet_weights: tuple[float | None, ...] = (None, 1.0, 1.2, 1.4, 1.5)  # None = "N/A": no triplet term
    margins: tuple[float, ...] = (0.5, 1.0, 1.2, 1.4, 1.5, 2.0)
    # Data sizes (None: everything; the smoke profile shrinks them)
    max_train_rows: int | None = None
    max_eval_rows: int | None = None
    eval_batch_size: int = 128
    std_ddof: int = 0  # ± over seeds: 0 = population std, as the paper's ± (see module doc)
    # ConCSE steps are encoded in length buckets where that saves more padded tokens than
    # this per extra forward (None: one forward per step); see codeswitch.concse.train.
    # Speed only, but dropout masks fall differently, so it is part of a run's key.
    bucket_cost: int | None = DEFAULT_BUCKET_COST

    def __post_init__(self):
        if self.variant not in VARIANTS:
            raise ValueError(f"variant must be one of {list(VARIANTS)}, got {self.variant!r}")
        names = [b.name for b in self.backbones]
        if len(set(names)) != len(names):
            raise ValueError(f"backbone names must be unique, got {names}")
        if self.ablation_backbone not in names:
            raise ValueError(f"ablation_backbone {self.ablation_backbone!r} is not one of the backbones {names}")

    def backbone(self, name: str) -> Backbone:
        return next(b for b in self.backbones if b.name == name)


def load_config(profile: Profile) -> ConCSEConfig:
    return profile.section(EXPERIMENT, ConCSEConfig)


# --------------------------------------------------------------------------- run configs
def _label(value: float | None) -> str:
    """A swept value as the paper prints it: 1.0 -> "1", 0.05 -> "0.05", None -> "N/A"."""
    return "N/A" if value is None else f"{value:g}"


def _koglish_ref(profile: Profile, koglish_source: str | None) -> dict[str, Any]:
    """The data identity that goes into run keys: the setting and the content it names, not a machine-specific path.

    A local folder (the ``"synthetic"`` build included) is keyed by the SHA-256 of its
    files, a hub namespace by the commits of its four datasets
    (:mod:`codeswitch.core.identity`): changing one label re-runs the runs that read it.
    """
    from ..core.identity import source_identity
    from ..koglish.data import _REPO, is_local, resolve_source

    ref = str(koglish_source or profile.koglish_source)
    src = resolve_source(profile, ref)
    if is_local(src):
        return {"ref": ref if ref == "synthetic" else Path(src).name, "sha256": source_identity(ref, src)["sha256"]}
    return {"ref": ref, "revisions": {r: source_identity(f"{ref}/{r}").get("revision") for r in sorted(_REPO.values())}}


def run_config(
    c: ConCSEConfig,
    profile: Profile,
    backbone: Backbone,
    method: str,
    seed: int,
    *,
    koglish: Mapping[str, Any] | str,
    terms: Iterable[str] = TERMS,
    temperature: float | None = None,
    margin: float | None = None,
    triplet_weight: float | None = None,
    variant: str | None = None,
    simcse_settings: str = "matched",
) -> dict[str, Any]:
    """The complete, canonical config of one run: its cache key.

    Settings a run does not use are ``None`` (e.g. the margin when the triplet
    term is off), so e.g. λ = "N/A" and v3 hash identically.
    """
    from ..core.identity import precision_name
    from ..core.models import backbone_id

    key: dict[str, Any] = {
        "experiment": EXPERIMENT,
        "result_version": RESULT_VERSION,
        "backbone": backbone.name,
        "model": backbone.model,
        "koglish": koglish,
        "method": method,
        "seed": int(seed),
        "learning_rate": backbone.learning_rate,
        "epochs": c.epochs,
        "warmup_ratio": c.warmup_ratio,
        "max_grad_norm": c.max_grad_norm,
        "weight_decay": c.weight_decay,
        "max_train_rows": c.max_train_rows,
        "max_eval_rows": c.max_eval_rows,
        "device": profile.device,
        "precision": precision_name(profile),  # resolved: CPU fp32 and GPU bf16 never share a key
        # a tiny backbone's recipe, a local folder's content, a hub id's commit (core.identity)
        "backbone_id": backbone_id(backbone.model),
    }
    tau = c.temperature if temperature is None else temperature
    if method == "simcse":
        if simcse_settings not in ("matched", "released_code"):
            raise ValueError(f"simcse_settings must be 'matched' or 'released_code', got {simcse_settings!r}")
        released = simcse_settings == "released_code"
        key.update(
            temperature=tau,
            batch_size=c.released_simcse_batch_size if released else backbone.simcse_batch_size,
            max_length=c.released_simcse_max_length if released else c.max_length,
            simcse_settings=simcse_settings,
        )
        return key
    if method != "concse":
        raise ValueError(f"method must be 'simcse' or 'concse', got {method!r}")
    terms = tuple(t for t in TERMS if t in set(terms))  # canonical order
    uses_sim = "contrastive" in terms or "align" in terms
    uses_tri = "triplet" in terms
    key.update(
        terms=list(terms),
        temperature=tau if uses_sim else None,
        margin=(c.margin if margin is None else margin) if uses_tri else None,
        triplet_weight=(c.triplet_weight if triplet_weight is None else triplet_weight) if uses_tri else None,
        variant=(variant or c.variant) if ("contrastive" in terms or uses_tri) else None,
        batch_size=backbone.concse_batch_size,
        max_length=c.max_length,
        bucket_cost=c.bucket_cost,
    )
    return key


def table3_configs(c: ConCSEConfig, profile: Profile, koglish: str) -> list[dict]:
    """SimCSE and ConCSE × every backbone × every seed."""
    return [
        run_config(c, profile, b, method, seed, koglish=koglish)
        for b in c.backbones
        for method in ("simcse", "concse")
        for seed in profile.seeds
    ]


@dataclass(frozen=True)
class Cell:
    """One run's place in an ablation table."""

    study: str  # "table4" | "table5" | "table6" | "table7" | "variant" | "simcse_settings"
    label: str  # the row (table4, variant, simcse_settings) or column (sweeps) label
    seed: int
    config: Mapping[str, Any] = field(compare=False)


def ablation_seeds(c: ConCSEConfig, profile: Profile) -> tuple[int, ...]:
    return tuple(profile.seeds[: c.ablation_seeds] if c.ablation_seeds else profile.seeds)


def ablation_cells(c: ConCSEConfig, profile: Profile, koglish: str) -> list[Cell]:
    """Every ablation run, placed in its table(s); the same config may sit in several tables."""
    b = c.backbone(c.ablation_backbone)
    cells: list[Cell] = []
    for seed in ablation_seeds(c, profile):
        def concse(**kw):
            return run_config(c, profile, b, "concse", seed, koglish=koglish, **kw)

        def simcse(settings="matched"):
            return run_config(c, profile, b, "simcse", seed, koglish=koglish, simcse_settings=settings)

        cells += [Cell("table4", v, seed, concse(terms=terms)) for v, terms in LOSS_VARIANTS.items()]
        cells.append(Cell("table4", "SimCSE", seed, simcse()))
        cells += [Cell("table5", _label(t), seed, concse(temperature=t)) for t in c.temperatures]
        cells += [
            Cell("table6", _label(w), seed, concse(terms=LOSS_VARIANTS["v3"]) if w is None else concse(triplet_weight=w))
            for w in c.triplet_weights
        ]
        cells += [Cell("table7", _label(m), seed, concse(margin=m)) for m in c.margins]
        cells += [Cell("variant", v, seed, concse(variant=v)) for v in VARIANTS]
        cells += [
            Cell("simcse_settings", "ConCSE (v6)", seed, concse()),
            Cell("simcse_settings", "SimCSE matched", seed, simcse("matched")),
            Cell("simcse_settings", "SimCSE released_code", seed, simcse("released_code")),
        ]
    return cells


# --------------------------------------------------------------------------- data
def data_preview(profile: Profile, koglish_source: str | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """One Koglish-NLI row as the loss sees it (e0 … c2), and the size of every set a run reads."""
    from ..koglish.data import STS_TASKS, load_nli, load_sts, resolve_source
    from .train import NLI_TO_COLUMNS

    c = load_config(profile)
    src = resolve_source(profile, koglish_source)
    nli = load_nli(src, invalid_rows=profile.koglish_invalid_rows)
    symbols = ("e0", "e1", "e2", "c0", "c1", "c2")
    row = pd.DataFrame(
        {"embedding": symbols, "column": list(NLI_TO_COLUMNS.values()), "text": [nli.iloc[0][k] for k in NLI_TO_COLUMNS]}
    ).set_index("embedding")
    sizes = [("Koglish-NLI (train)", len(nli), min(len(nli), c.max_train_rows or len(nli)))]
    for task, split in [("stsb", "valid")] + [(t, "test") for t in STS_TASKS]:
        n = len(load_sts(src, task, split, invalid_rows=profile.koglish_invalid_rows))
        sizes.append((f"Koglish-STS {TASK_LABELS[task]} ({split})", n, min(n, c.max_eval_rows or n)))
    return row, pd.DataFrame(sizes, columns=["set", "rows", "rows used"]).set_index("set")


# --------------------------------------------------------------------------- running
class _Koglish:
    """The data, loaded on first use only (a fully cached grid needs none of it)."""

    def __init__(self, profile: Profile, koglish_source: str | None, c: ConCSEConfig):
        self.profile, self.source, self.c = profile, koglish_source, c
        self._loaded = None

    def get(self):
        if self._loaded is None:
            from ..koglish.data import STS_TASKS, load_nli, load_sts, resolve_source

            src = resolve_source(self.profile, self.source)
            n_train, n_eval = self.c.max_train_rows, self.c.max_eval_rows
            rule = self.profile.koglish_invalid_rows  # "error" | "drop": rows whose cross breaks the switch rule
            nli = load_nli(src, invalid_rows=rule)
            dev = load_sts(src, "stsb", "valid", invalid_rows=rule)
            tests = {t: load_sts(src, t, "test", invalid_rows=rule) for t in STS_TASKS}
            self._loaded = (
                nli.iloc[:n_train] if n_train else nli,
                dev.iloc[:n_eval] if n_eval else dev,
                {t: (df.iloc[:n_eval] if n_eval else df) for t, df in tests.items()},
            )
        return self._loaded


def _runner(c: ConCSEConfig, profile: Profile, data: _Koglish):
    from ..core.models import resolve_model
    from .train import TrainSpec, evaluate_encoder, train_encoder

    def run(key: Mapping[str, Any]) -> dict:
        nli, dev, tests = data.get()
        spec = TrainSpec(
            method=key["method"],
            batch_size=key["batch_size"],
            learning_rate=key["learning_rate"],
            epochs=key["epochs"],
            max_length=key["max_length"],
            seed=key["seed"],
            warmup_ratio=key["warmup_ratio"],
            max_grad_norm=key["max_grad_norm"],
            weight_decay=key["weight_decay"],
            temperature=key["temperature"] if key["temperature"] is not None else c.temperature,
            margin=key.get("margin") if key.get("margin") is not None else c.margin,
            triplet_weight=key.get("triplet_weight") if key.get("triplet_weight") is not None else c.triplet_weight,
            terms=tuple(key.get("terms") or TERMS),
            variant=key.get("variant") or c.variant,
            eval_batch_size=c.eval_batch_size,
            bucket_cost=key.get("bucket_cost"),
        )
        path = resolve_model(key["model"], profile, what=f"{EXPERIMENT}.backbones")
        with profile.torch_threads():  # the profile's cpu_threads on CPU, restored after
            desc = f"{METHOD_LABELS[key['method']]}-{key['backbone']} seed {key['seed']}"
            model, info = train_encoder(spec, path, nli, dev, profile=profile, desc=desc)
            info["test"] = evaluate_encoder(model, tests, batch_size=c.eval_batch_size)
        return info

    return run


def _cache(profile: Profile) -> RunCache:
    return RunCache(profile.runs_dir / EXPERIMENT)


def _unique(configs: Iterable[Mapping]) -> list[Mapping]:
    from ..core.runs import config_hash

    seen, out = set(), []
    for conf in configs:
        h = config_hash(conf)
        if h not in seen:
            seen.add(h)
            out.append(conf)
    return out


def _scores(result: Mapping) -> dict[str, float]:
    """A run's seven test scores plus their average, by table label."""
    tests = result["test"]
    out = {TASK_LABELS[t]: float(tests[t]) for t in TASK_LABELS}
    out[AVG] = float(np.mean([out[TASK_LABELS[t]] for t in TASK_LABELS]))
    return out


def run_table3(profile: Profile, koglish_source: str | None = None) -> pd.DataFrame:
    """Train (or find cached) every Table 3 run; scores long: backbone, method, seed, column, score, best_epoch."""
    c = load_config(profile)
    koglish = _koglish_ref(profile, koglish_source)
    configs = table3_configs(c, profile, koglish)
    cache = _cache(profile)
    with frozen_gc():
        run_grid(cache, _unique(configs), _runner(c, profile, _Koglish(profile, koglish_source, c)), desc="ConCSE Table 3")
    # the scores are read back from the cache, exactly as a redraw without training would
    rows = []
    for conf in configs:
        res = cache.get(conf)
        for col, score in _scores(res).items():
            rows.append(dict(backbone=conf["backbone"], method=conf["method"], seed=conf["seed"], column=col, score=score, best_epoch=res["best_epoch"]))
    return pd.DataFrame(rows)


def run_ablations(profile: Profile, koglish_source: str | None = None) -> pd.DataFrame:
    """Train (or find cached) every ablation run; scores long: study, label, seed, column, score."""
    c = load_config(profile)
    koglish = _koglish_ref(profile, koglish_source)
    cells = ablation_cells(c, profile, koglish)
    cache = _cache(profile)
    with frozen_gc():
        run_grid(cache, _unique(cell.config for cell in cells), _runner(c, profile, _Koglish(profile, koglish_source, c)), desc="ConCSE ablations")
    rows = []
    for cell in cells:
        res = cache.get(cell.config)
        for col, score in _scores(res).items():
            rows.append(dict(study=cell.study, label=cell.label, seed=cell.seed, column=col, score=score))
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- tables
def _ddof_note(c: ConCSEConfig, n: int) -> str:
    kind = "population" if c.std_ddof == 0 else f"ddof={c.std_ddof}"
    return f"mean ± {kind} std over {n} seed(s)"


def table3(scores: pd.DataFrame, profile: Profile) -> dict[str, Path]:
    """Table 3: SimCSE vs ConCSE × backbone on the seven Koglish-STS tests, with the paper's values and the t-test."""
    from ..common.sts import ttest_pvalue

    c = load_config(profile)
    df = scores.assign(row=scores["method"].map(METHOD_LABELS) + "-" + scores["backbone"])
    summary = summarise(df, ["row", "column"], ddof=c.std_ddof)
    backbones = list(dict.fromkeys(df["backbone"]))
    rows = [f"{METHOD_LABELS[m]}-{b}" for m in ("simcse", "concse") for b in backbones]
    columns = list(TASK_LABELS.values()) + [AVG]
    wide, long = comparison(summary, paper="concse", table="table3", row_order=rows, column_order=columns)

    # p-value rows: Student's t-test between the two methods' per-seed scores of each task
    prow, plong = {}, []
    for b in backbones:
        label = f"p-value {b}"
        cells = {}
        for col in TASK_LABELS.values():
            sub = df[(df["backbone"] == b) & (df["column"] == col)]
            p = ttest_pvalue(sub.loc[sub["method"] == "simcse", "score"], sub.loc[sub["method"] == "concse", "score"])
            rep = _reported.lookup("concse", "table3", label, col)
            paper_p = rep.value if rep is not None else None
            cells[col] = ("–" if p is None else f"{p:.1e}") + (f" · paper {paper_p:.1e}" if paper_p is not None else "")
            if p is not None:
                plong.append(dict(row=label, column=col, mean=p, std=np.nan, n=int(sub["seed"].nunique()), paper=paper_p,
                                  diff=None if paper_p is None else p - paper_p, paper_note="" if rep is None else rep.note))
        cells[AVG] = ""
        prow[label] = cells
    wide = pd.concat([wide, pd.DataFrame.from_dict(prow, orient="index")[wide.columns]])
    if plong:
        p_df = pd.DataFrame(plong)
        for col in ("paper", "diff"):
            p_df[col] = pd.array(p_df[col], dtype="Float64")
        long = pd.concat([long, p_df], ignore_index=True)
    n = int(df["seed"].nunique())
    return save_table(
        wide,
        "concse_table3",
        profile,
        caption=f"SimCSE vs ConCSE on Koglish-STS (Spearman × 100, 'all' setting, code-switched pairs); {_ddof_note(c, n)}; "
        "p-value rows: Student's two-sided t-test between SimCSE and ConCSE over the seeds",
        long=long,
        notes=[
            "One model per (backbone, method, seed), best epoch on Koglish STS-B dev, scored on all seven test sets.",
            "The paper's ± reproduce its p-values only as population std (ddof=0); ours follow the same convention.",
        ],
    )


def table3_figure(scores: pd.DataFrame, profile: Profile) -> dict[str, Path]:
    """Per task, SimCSE and ConCSE mean ± std (filled) beside the paper's values (open), one panel per backbone."""
    import matplotlib.pyplot as plt

    c = load_config(profile)
    seaborn_style()
    backbones = list(dict.fromkeys(scores["backbone"]))
    columns = list(TASK_LABELS.values()) + [AVG]
    colors = {"simcse": "#4C72B0", "concse": "#DD8452"}
    fig, axes = plt.subplots(1, len(backbones), figsize=(4.6 * len(backbones), 3.6), squeeze=False, sharey=False)
    x = np.arange(len(columns))
    for ax, b in zip(axes[0], backbones):
        for k, m in enumerate(("simcse", "concse")):
            sub = scores[(scores["backbone"] == b) & (scores["method"] == m)]
            s = summarise(sub, ["column"], ddof=c.std_ddof).set_index("column").reindex(columns)
            off = (k - 0.5) * 0.28
            row = f"{METHOD_LABELS[m]}-{b}"
            ax.errorbar(x + off, s["mean"], yerr=s["std"], fmt="o", color=colors[m], capsize=3, label=f"{METHOD_LABELS[m]} (ours)")
            paper = [(_reported.lookup("concse", "table3", row, col) or _reported.Reported("", "", "", "", None)).value for col in columns]
            if any(v is not None for v in paper):
                ax.plot(x + off, [np.nan if v is None else v for v in paper], "o", mfc="none", color=colors[m], alpha=0.8, label=f"{METHOD_LABELS[m]} (paper)")
        ax.set_xticks(x, columns, rotation=45, ha="right")
        ax.set_title(b)
        ax.set_ylabel("Spearman × 100")
    axes[0][0].legend(fontsize=8, loc="best")
    fig.tight_layout()
    paths = save_figure(
        fig, "concse_table3_figure", profile,
        caption="Table 3 as a figure: SimCSE vs ConCSE per Koglish-STS task, mean ± std over seeds (filled) and the paper's values (open)",
    )
    plt.close(fig)
    return paths


def _study(scores: pd.DataFrame, study: str, c: ConCSEConfig) -> pd.DataFrame:
    return summarise(scores[scores["study"] == study], ["label", "column"], ddof=c.std_ddof)


def table4(scores: pd.DataFrame, profile: Profile) -> dict[str, Path]:
    """Table 4: the loss variants v1–v6 and SimCSE, ConCSE-mBERT on Koglish-STS-B."""
    c = load_config(profile)
    s = _study(scores, "table4", c)
    s = s[s["column"] == TASK_LABELS["stsb"]].assign(row=lambda d: d["label"], column=STSB)
    order = list(LOSS_VARIANTS) + ["SimCSE"]
    wide, long = comparison(s[["row", "column", "mean", "std", "n"]], paper="concse", table="table4", row_order=order, column_order=[STSB])
    for t, sym in (("contrastive", "L_con"), ("triplet", "L_tri"), ("align", "L_align")):
        wide.insert(len(wide.columns) - 1, sym, ["✓" if t in LOSS_VARIANTS.get(r, ()) else "" for r in wide.index])
    n = int(scores.loc[scores["study"] == "table4", "seed"].nunique())
    return save_table(
        wide, "concse_table4", profile,
        caption=f"Loss variants, {c.ablation_backbone} on Koglish-STS-B (Spearman × 100); {_ddof_note(c, n)}",
        long=long,
        notes=["The paper's check marks were lost in conversion; the variants follow §5.3's text (v6 = ConCSE)."],
    )


_SWEEPS = {
    "table5": ("temperature τ", "temperatures"),
    "table6": ("triplet weight λ", "triplet_weights"),
    "table7": ("margin α", "margins"),
}


def sweep_table(scores: pd.DataFrame, profile: Profile, table: str) -> dict[str, Path]:
    """Table 5 (τ), 6 (λ) or 7 (α): ConCSE on Koglish-STS-B as one setting is swept."""
    c = load_config(profile)
    what, attr = _SWEEPS[table]
    s = _study(scores, table, c)
    s = s[s["column"] == TASK_LABELS["stsb"]].assign(row=STSB, column=lambda d: d["label"])
    order = [_label(v) for v in getattr(c, attr)]
    wide, long = comparison(s[["row", "column", "mean", "std", "n"]], paper="concse", table=table, column_order=order)
    notes = []
    if table == "table6":
        printed = " ".join(f"{e.value:g}" for e in _reported.table("concse", "table6_printed"))
        notes.append(f"The paper prints six numbers ({printed}) under five headers; the mapping is unknown, so every paper cell reads '?'.")
        notes.append("λ = N/A is the run without the triplet term (= Table 4's v3).")
    n = int(scores.loc[scores["study"] == table, "seed"].nunique())
    return save_table(
        wide, f"concse_{table}", profile,
        caption=f"ConCSE-{c.ablation_backbone} on Koglish-STS-B vs the {what} (Spearman × 100); {_ddof_note(c, n)}",
        long=long, notes=notes,
    )


def sweep_plot(scores: pd.DataFrame, profile: Profile, table: str) -> dict[str, Path]:
    """The sweep of :func:`sweep_table` as a line plot, the paper's curve overlaid where it is known."""
    import matplotlib.pyplot as plt

    c = load_config(profile)
    what, attr = _SWEEPS[table]
    seaborn_style()
    labels = [_label(v) for v in getattr(c, attr)]
    s = _study(scores, table, c)
    s = s[s["column"] == TASK_LABELS["stsb"]].set_index("label").reindex(labels)
    x = np.arange(len(labels))
    fig, ax = plt.subplots(figsize=(4.8, 3.4))
    ax.errorbar(x, s["mean"], yerr=s["std"], fmt="o-", capsize=3, color="#DD8452", label="ours")
    paper = [(_reported.lookup("concse", table, STSB, lab) or _reported.Reported("", "", "", "", None)).value for lab in labels]
    if any(v is not None for v in paper):
        ax.plot(x, [np.nan if v is None else v for v in paper], "s--", color="0.35", mfc="none", label="paper")
    if table == "table6":
        printed = " ".join(f"{e.value:g}" for e in _reported.table("concse", "table6_printed"))
        ax.text(0.02, 0.02, f"paper row (6 numbers, 5 headers,\nmapping unknown): {printed}", transform=ax.transAxes, fontsize=7, va="bottom")
    ax.set_xticks(x, labels)
    ax.set_xlabel(what)
    ax.set_ylabel("Koglish-STS-B, Spearman × 100")
    ax.legend(fontsize=8)
    fig.tight_layout()
    paths = save_figure(fig, f"concse_{table}_plot", profile, caption=f"ConCSE on Koglish-STS-B vs the {what}: ours (mean ± std) and the paper's")
    plt.close(fig)
    return paths


def _all_tasks_table(scores: pd.DataFrame, profile: Profile, study: str, name: str, caption: str, notes: Sequence[str]) -> dict[str, Path]:
    c = load_config(profile)
    s = _study(scores, study, c).rename(columns={"label": "row"})
    columns = list(TASK_LABELS.values()) + [AVG]
    wide, long = comparison(s[["row", "column", "mean", "std", "n"]], paper=None, table=None, column_order=columns)
    n = int(scores.loc[scores["study"] == study, "seed"].nunique())
    return save_table(wide, name, profile, caption=f"{caption}; {_ddof_note(c, n)}", long=long, notes=notes)


def variant_table(scores: pd.DataFrame, profile: Profile) -> dict[str, Path]:
    """ConCSE with the released code's loss vs the paper's equations read literally (no paper reports this)."""
    return _all_tasks_table(
        scores, profile, "variant", "concse_ablation_variant",
        caption=f"ConCSE-{load_config(profile).ablation_backbone}: loss as released ('official') vs as the equations read ('paper'), Spearman × 100",
        notes=["official: H5 negatives S(c0, e2), Euclidean distance in the triplet term (the released code).",
               "paper: H5 negatives S(e0, e2), squared Euclidean distance (Eq. 5 and 7 read literally)."],
    )


def simcse_settings_table(scores: pd.DataFrame, profile: Profile) -> dict[str, Path]:
    """SimCSE with Table 9's settings vs the released code's (batch 64, max length 32), ConCSE for reference."""
    c = load_config(profile)
    b = c.backbone(c.ablation_backbone)
    return _all_tasks_table(
        scores, profile, "simcse_settings", "concse_ablation_simcse_settings",
        caption=f"SimCSE-{b.name}: matched settings vs the released code's, beside ConCSE, Spearman × 100",
        notes=[f"SimCSE matched: batch {b.simcse_batch_size}, max length {c.max_length} (Table 9).",
               f"SimCSE released_code: batch {c.released_simcse_batch_size}, max length {c.released_simcse_max_length}: "
               "code-switched inputs are longer, so the shorter limit truncates more of them.",
               f"ConCSE (v6): batch {b.concse_batch_size}, max length {c.max_length}."],
    )
