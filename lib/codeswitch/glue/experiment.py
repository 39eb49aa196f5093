"""Koglish-GLUE: EN2EN / EN2CS / CS2CS fine-tuning of multilingual backbones (ConCSE §5.1, Table 2).

The experiment, top to bottom:

1. :class:`GlueConfig` — the ``glue`` section of a profile (defaults = the
   paper: four backbones with Table 8's batch sizes and learning rates, 5 epochs,
   10 % warm-up, maximum lengths 115/230, six tasks, five seeds).
2. :func:`grid` — one training run per (task, backbone, seed, training language).
   EN2EN and EN2CS share the English run, evaluated on both test sets
   (:func:`codeswitch.glue.train.training_runs`).
3. :func:`run` — every run through the run cache (``runs/<profile>/glue/``):
   a finished run is never redone; a killed grid resumes.  Returns the long table
   of scores, one row per (task, backbone, seed, scenario).
4. :func:`table2`, :func:`gain_figure`, :func:`hypotheses` — Table 2 beside the
   paper's numbers, the EN2CS → CS2CS gain, and the paper's two hypotheses checked
   on the numbers just produced.  They read only the cached results.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from ..common.glue_metrics import TASK_LABEL
from ..core.models import backbone_id, resolve_model
from ..core.profiles import Profile, build_dataclass
from ..core.report import comparison, save_figure, save_table, seaborn_style, summarise
from ..core.runs import RunCache, run_grid
from .train import SCENARIOS, TASKS, FineTuneSettings, fine_tune, scenario_of, training_runs

EXPERIMENT = "glue"
TABLE = "concse_table2"
FIGURE = "concse_table2_gain"
AVG = "Avg"


# --------------------------------------------------------------------------- config
@dataclass(frozen=True)
class Backbone:
    """One backbone of Table 2 with its Table 8 hyperparameters."""

    model: str  # hub id, local folder, or a tiny-* name (smoke)
    batch_size: int  # total batch (Table 8)
    learning_rate: float  # peak learning rate (Table 8)


# Table 8 (Appendix A.1).  The paper says "mBERT"; its released ConCSE code loads
# bert-base-multilingual-uncased — set glue.backbones.mBERT-base.model to use it.
PAPER_BACKBONES: Mapping[str, Backbone] = {
    "mBERT-base": Backbone("bert-base-multilingual-cased", 128, 5e-5),
    "XLM-R-base": Backbone("xlm-roberta-base", 128, 5e-5),
    "XLM-R-large": Backbone("xlm-roberta-large", 64, 1e-5),
    "mBART-large": Backbone("facebook/mbart-large-50", 64, 1e-5),
}


@dataclass(frozen=True)
class GlueConfig:
    """The ``glue`` section of a profile; defaults are the paper's settings (§5.1, A.1)."""

    tasks: tuple[str, ...] = ("cola", "sst2", "mrpc", "stsb", "qnli", "rte")
    scenarios: tuple[str, ...] = ("EN2EN", "EN2CS", "CS2CS")
    # label (the row name in Table 2) -> model and Table 8 hyperparameters
    backbones: Mapping[str, Backbone] = field(default_factory=lambda: dict(PAPER_BACKBONES))
    seeds: tuple[int, ...] | None = None  # None: the profile's seeds
    epochs: int = 5
    warmup_ratio: float = 0.1  # linear warm-up over the first 10 % of the steps, then linear decay
    weight_decay: float = 0.0  # the paper does not say; the Trainer's default
    max_length_single: int = 115  # CoLA, SST-2
    max_length_pair: int = 230  # MRPC, STS-B, QNLI, RTE
    eval_batch_size: int = 256
    max_train_samples: int | None = None  # first N training rows (None: all), as run_glue.py
    max_eval_samples: int | None = None  # first N validation and test rows (None: all)
    group_by_length: bool = True  # length-grouped training batches (train.glue's fast path; changes the batch order)
    log_epochs: bool = True  # one line per epoch of every run

    def __post_init__(self):
        unknown = [t for t in self.tasks if t not in TASKS]
        if unknown:
            raise ValueError(f"tasks: unknown {unknown} (known: {', '.join(TASKS)})")
        bad = [s for s in self.scenarios if s not in SCENARIOS]
        if bad:
            raise ValueError(f"scenarios: unknown {bad} (known: {', '.join(SCENARIOS)})")
        if not self.backbones:
            raise ValueError("backbones: at least one is needed")
        backbones = {}
        for label, spec in self.backbones.items():
            if not isinstance(spec, Backbone):
                if not isinstance(spec, Mapping):
                    raise ValueError(f"backbones.{label}: expected a mapping with model, batch_size, learning_rate; got {spec!r}")
                spec = build_dataclass(Backbone, spec, where=f"backbones.{label}")
            backbones[str(label)] = spec
        object.__setattr__(self, "backbones", backbones)
        if self.epochs < 1:
            raise ValueError(f"epochs must be >= 1, got {self.epochs}")
        if not 0 <= self.warmup_ratio < 1:
            raise ValueError(f"warmup_ratio must be in [0, 1), got {self.warmup_ratio}")

    def seeds_for(self, cfg: Profile) -> tuple[int, ...]:
        return tuple(self.seeds) if self.seeds else tuple(cfg.seeds)


def load_config(cfg: Profile) -> GlueConfig:
    """The profile's ``glue`` section as a :class:`GlueConfig` (errors name the YAML file and key)."""
    return cfg.section(EXPERIMENT, GlueConfig)


# --------------------------------------------------------------------------- data
def load_data(source: str, tasks: Sequence[str], glue: GlueConfig, *, invalid_rows: str = "error") -> dict[str, dict[str, pd.DataFrame]]:
    """Every split of every task, validated by the Koglish loader, cut to ``max_*_samples``."""
    from ..koglish.data import load_glue

    data = {}
    for task in tasks:
        splits = {}
        for split in ("train", "valid", "test"):
            df = load_glue(source, task, split, invalid_rows=invalid_rows)
            limit = glue.max_train_samples if split == "train" else glue.max_eval_samples
            splits[split] = df.head(limit).reset_index(drop=True) if limit else df
        data[task] = splits
    return data


def fingerprint(splits: Mapping[str, pd.DataFrame]) -> str:
    """A short hash of the exact rows a run sees, so a changed dataset never reuses a stale result."""
    h = hashlib.sha256()
    for name in sorted(splits):
        h.update(name.encode())
        h.update(pd.util.hash_pandas_object(splits[name], index=False).to_numpy().tobytes())
    return h.hexdigest()[:16]


# --------------------------------------------------------------------------- the grid
def grid(cfg: Profile, glue: GlueConfig, *, koglish_source: str, data_fingerprints: Mapping[str, str]) -> list[dict]:
    """The complete config of every training run (what the cache key is computed from)."""
    precision = _precision(cfg)
    configs = []
    for task in glue.tasks:
        for label, bb in glue.backbones.items():
            for seed in glue.seeds_for(cfg):
                for (train, select), tests in training_runs(glue.scenarios).items():
                    config = {
                        "experiment": TABLE,
                        "task": task,
                        "backbone": label,
                        "model": bb.model,
                        "train": train,
                        "select": select,
                        "test": list(tests),
                        "seed": seed,
                        "koglish_source": koglish_source,
                        "data": data_fingerprints[task],
                        "epochs": glue.epochs,
                        "batch_size": bb.batch_size,
                        "learning_rate": bb.learning_rate,
                        "warmup_ratio": glue.warmup_ratio,
                        "weight_decay": glue.weight_decay,
                        "max_length": glue.max_length_pair if TASKS[task].pair else glue.max_length_single,
                        "eval_batch_size": glue.eval_batch_size,
                        "precision": precision,
                        "group_by_length": glue.group_by_length,  # another batch order: another run
                    }
                    # a tiny backbone changes with its recipe, a local folder with its content, a hub id with its commit
                    config["backbone_id"] = backbone_id(bb.model)
                    configs.append(config)
    return configs


def _precision(cfg: Profile) -> str:
    from ..core.identity import precision_name

    return precision_name(cfg)


def run(cfg: Profile, *, koglish_source: str | None = None, glue: GlueConfig | None = None) -> pd.DataFrame:
    """Run (or read from the cache) every training of the grid; return one row per (task, backbone, seed, scenario).

    Columns: ``task, backbone, seed, scenario, score, metric, best_epoch, train,
    test``.  The backbones that still have runs to do are resolved before any
    training, so a missing model stops the grid within seconds with
    :class:`~codeswitch.core.hub.MissingResourceError`; a fully cached grid needs the
    data (its fingerprint is part of every run's key) but no model.
    """
    from ..koglish.data import resolve_source

    glue = glue or load_config(cfg)
    source_ref = koglish_source or cfg.koglish_source
    source = resolve_source(cfg, koglish_source)
    data = load_data(source, glue.tasks, glue, invalid_rows=cfg.koglish_invalid_rows)
    configs = grid(cfg, glue, koglish_source=source_ref, data_fingerprints={t: fingerprint(d) for t, d in data.items()})
    cache = RunCache(cfg.runs_dir / EXPERIMENT)
    needed = dict.fromkeys(c["backbone"] for c in configs if c not in cache)
    paths = {label: resolve_model(glue.backbones[label].model, cfg, what=f"glue.backbones.{label}.model") for label in needed}
    device = cfg.torch_device().type

    def one(config: Mapping) -> dict:
        task, splits = config["task"], data[config["task"]]
        settings = FineTuneSettings(
            epochs=config["epochs"],
            batch_size=config["batch_size"],
            learning_rate=config["learning_rate"],
            warmup_ratio=config["warmup_ratio"],
            weight_decay=config["weight_decay"],
            max_length_single=config["max_length"],
            max_length_pair=config["max_length"],
            eval_batch_size=config["eval_batch_size"],
            seed=config["seed"],
            device=device,
            cpu_threads=cfg.cpu_threads,  # the profile's one thread setting (the trainer restores the count after)
            precision=config["precision"],
            group_by_length=config["group_by_length"],
            log_epochs=glue.log_epochs,
        )
        result = fine_tune(
            paths[config["backbone"]],
            task,
            splits["train"],
            splits["valid"],
            {lang: splits["test"] for lang in config["test"]},
            train_lang=config["train"],
            select_lang=config["select"],
            settings=settings,
            desc=f"{task} {config['backbone']} seed {config['seed']} train={config['train']}",
        )
        result["scenarios"] = {scenario_of(config["train"], config["select"], lang): result["test"][lang] for lang in config["test"]}
        return result

    results = run_grid(cache, configs, one, desc="Koglish-GLUE")
    return results_frame(configs, results, glue.scenarios)


def results_frame(configs: Sequence[Mapping], results: Sequence[Mapping], scenarios: Sequence[str]) -> pd.DataFrame:
    """One row per (task, backbone, seed, scenario) from the runs' configs and cached results."""
    rows = []
    for config, result in zip(configs, results):
        for lang in config["test"]:
            scenario = scenario_of(config["train"], config["select"], lang)
            if scenario not in scenarios:
                continue
            rows.append(
                {
                    "task": config["task"],
                    "backbone": config["backbone"],
                    "seed": config["seed"],
                    "scenario": scenario,
                    "score": float(result["test"][lang]),
                    "metric": result["metric"],
                    "best_epoch": int(result["best_epoch"]),
                    "train": config["train"],
                    "test": lang,
                }
            )
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- Table 2
def _row_label(scenario: str, backbone: str) -> str:
    return f"{scenario} · {backbone}"


def with_average(results: pd.DataFrame) -> pd.DataFrame:
    """Add the Avg column: per (scenario, backbone, seed), the mean of that seed's task scores."""
    avg = results.groupby(["scenario", "backbone", "seed"], sort=False, as_index=False)["score"].mean()
    avg["task"] = AVG
    return pd.concat([results[["scenario", "backbone", "seed", "task", "score"]], avg], ignore_index=True)


def table2_long(results: pd.DataFrame) -> tuple[pd.DataFrame, list[str], list[str]]:
    """Mean ± std over seeds per (scenario · backbone, task), with the row and column order of Table 2."""
    df = with_average(results)
    scenarios = [s for s in SCENARIOS if s in set(df["scenario"])]
    backbones = list(dict.fromkeys(df["backbone"]))
    tasks = [t for t in TASKS if t in set(df["task"])]
    df["row"] = [_row_label(s, b) for s, b in zip(df["scenario"], df["backbone"])]
    df["column"] = [TASK_LABEL.get(t, t) for t in df["task"]]
    rows = [_row_label(s, b) for s in scenarios for b in backbones]
    columns = [TASK_LABEL[t] for t in tasks] + [AVG]
    df["row"] = pd.Categorical(df["row"], categories=rows, ordered=True)
    df["column"] = pd.Categorical(df["column"], categories=columns, ordered=True)
    df = df.sort_values(["row", "column", "seed"]).astype({"row": str, "column": str})
    summary = summarise(df, by=["row", "column"], value="score")
    summary.insert(0, "scenario", [r.split(" · ")[0] for r in summary["row"]])
    return summary, rows, columns


def mark_best(wide: pd.DataFrame, long: pd.DataFrame, blocks: Sequence[str] = ("EN2CS", "CS2CS")) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Bold the best backbone(s) of each column within the EN2CS and CS2CS blocks (as the paper highlights them)."""
    wide, long = wide.copy(), long.copy()
    long["best"] = False
    for block in blocks:
        in_block = long["scenario"] == block
        if not in_block.any():
            continue
        for column, group in long[in_block].groupby("column", sort=False):
            top = group["mean"].max()
            for idx in group.index[np.isclose(group["mean"], top, rtol=0.0, atol=5e-5)]:  # ties: all of them
                long.loc[idx, "best"] = True
                row = long.loc[idx, "row"]
                wide.loc[row, column] = f"**{wide.loc[row, column]}**"
    return wide, long


def table2(results: pd.DataFrame, cfg: Profile) -> dict:
    """Write ``concse_table2`` (md/csv/tex): mean ± std over seeds beside the paper's numbers."""
    summary, rows, columns = table2_long(results)
    wide, long = comparison(summary, paper="concse", table="table2", row_order=rows, column_order=columns)
    wide, long = mark_best(wide, long)
    seeds = sorted(set(results["seed"]))
    caption = (
        "Koglish-GLUE under EN2EN / EN2CS / CS2CS (test split, best epoch on the validation split); "
        f"mean ± std over {len(seeds)} seed(s); MRPC F1, STS-B Spearman, accuracy elsewhere (×100); "
        "best EN2CS and CS2CS backbone per column in bold"
    )
    notes = [
        "EN2EN and EN2CS share one training run per seed (English train and validation), evaluated on the English and the code-switched test set.",
        "Avg: per seed, the mean of the task scores; then mean ± std over seeds.",
        "Paper values: only the mBART-large CS2CS row survived in our copy of the paper (without its column header: only its Avg is placed; its six numbers in printed order are in codeswitch.core.reported.concse_glue as table2_printed); '?' = lost in conversion.",
    ]
    return save_table(wide, TABLE, cfg, caption=caption, long=long, notes=notes)


# --------------------------------------------------------------------------- EN2CS -> CS2CS gain
def gains(results: pd.DataFrame) -> pd.DataFrame:
    """CS2CS − EN2CS on the code-switched test set, per (task incl. Avg, backbone, seed)."""
    df = with_average(results)
    wide = df.pivot_table(index=["task", "backbone", "seed"], columns="scenario", values="score", sort=False)
    if not {"EN2CS", "CS2CS"} <= set(wide.columns):
        raise ValueError("the gain needs both EN2CS and CS2CS results")
    out = (wide["CS2CS"] - wide["EN2CS"]).rename("gain").reset_index()
    out["column"] = [TASK_LABEL.get(t, t) for t in out["task"]]
    return out


def gain_figure(results: pd.DataFrame, cfg: Profile) -> dict:
    """Write ``concse_table2_gain``: bars of the CS2CS − EN2CS gain per task and backbone (± sd over seeds)."""
    import matplotlib.pyplot as plt
    import seaborn as sns

    seaborn_style()
    g = gains(results)
    order = [TASK_LABEL[t] for t in TASKS if t in set(g["task"])] + [AVG]
    fig, ax = plt.subplots(figsize=(1.1 * len(order) + 2.5, 3.4))
    sns.barplot(data=g, x="column", y="gain", hue="backbone", order=order, errorbar="sd", ax=ax, palette="deep")
    ax.axhline(0, color="black", linewidth=0.8)
    ax.set_xlabel("")
    ax.set_ylabel("CS2CS − EN2CS (points)")
    ax.set_title("Training on code-switched data: gain on the code-switched test set")
    ax.legend(title="backbone", frameon=False, fontsize="small")
    paths = save_figure(fig, FIGURE, cfg, caption="EN2CS → CS2CS gain per task and backbone (mean ± sd over seeds)")
    plt.close(fig)
    return paths


# --------------------------------------------------------------------------- the paper's two hypotheses
def hypotheses(results: pd.DataFrame, alpha: float = 0.05) -> pd.DataFrame:
    """Check §5.1's two hypotheses per backbone, pairing scores by (task, seed).

    The paired unit is one (task, seed) cell: both scenarios were scored on the
    same test examples, from models trained with the same seed.  With one seed
    that still leaves six pairs (one per task).

    * **H1** EN2EN ≈ CS2CS ("the performance difference ... should be
      insignificant"): Δ = EN2EN − CS2CS; paired two-sided t-test; *consistent*
      when p ≥ ``alpha``.  (A non-significant difference is not proof of
      equivalence; with few pairs the test is weak — read Δ too.)
    * **H2** CS2CS > EN2CS on the code-switched test set: gain = CS2CS − EN2CS;
      paired one-sided t-test; holds when the mean gain is positive and p < ``alpha``.
    """
    from scipy import stats

    rows = []
    for backbone in dict.fromkeys(results["backbone"]):
        cells = results[results["backbone"] == backbone].pivot_table(index=["task", "seed"], columns="scenario", values="score")
        row: dict = {"backbone": backbone, "pairs": len(cells)}
        if {"EN2EN", "CS2CS"} <= set(cells.columns):
            p = _paired_p(cells["EN2EN"], cells["CS2CS"], "two-sided", stats)
            row |= {"H1 Δ (EN2EN−CS2CS)": float((cells["EN2EN"] - cells["CS2CS"]).mean()), "H1 p": p, "H1 holds": bool(p >= alpha)}
        if {"EN2CS", "CS2CS"} <= set(cells.columns):
            gain = cells["CS2CS"] - cells["EN2CS"]
            per_task = gain.groupby(level="task").mean()
            p = _paired_p(cells["CS2CS"], cells["EN2CS"], "greater", stats)
            row |= {
                "H2 gain (CS2CS−EN2CS)": float(gain.mean()),
                "H2 tasks won": f"{int((per_task > 0).sum())}/{len(per_task)}",
                "H2 p (one-sided)": p,
                "H2 holds": bool(gain.mean() > 0 and p < alpha),
            }
        rows.append(row)
    return pd.DataFrame(rows)


def _paired_p(a: pd.Series, b: pd.Series, alternative: str, stats) -> float:
    """Paired t-test p-value; when every seed shows the same difference the t statistic is undefined,
    and the evidence is taken at face value (p = 0 for a consistent difference in the tested direction, else 1)."""
    diff = (a - b).to_numpy()
    if np.allclose(diff, diff[0]):
        d = diff[0]
        if alternative == "greater":
            return 0.0 if d > 0 else 1.0
        return 1.0 if np.isclose(d, 0.0) else 0.0
    return float(stats.ttest_rel(a, b, alternative=alternative).pvalue)


def verdicts(h: pd.DataFrame) -> list[str]:
    """Plain-language verdicts, one line per backbone and hypothesis."""
    lines = []
    for _, r in h.iterrows():
        if "H1 holds" in r:
            verdict = "consistent" if r["H1 holds"] else "NOT supported"
            lines.append(f"{r['backbone']}: H1 EN2EN ≈ CS2CS {verdict} (mean Δ = {r['H1 Δ (EN2EN−CS2CS)']:+.2f} points, paired p = {r['H1 p']:.3f}, {r['pairs']} pairs)")
        if "H2 holds" in r:
            verdict = "holds" if r["H2 holds"] else "does NOT hold"
            lines.append(
                f"{r['backbone']}: H2 CS2CS > EN2CS {verdict} (mean gain = {r['H2 gain (CS2CS−EN2CS)']:+.2f} points, "
                f"CS2CS wins {r['H2 tasks won']} tasks, one-sided p = {r['H2 p (one-sided)']:.3g})"
            )
    return lines


def scenario_table(scenarios: Sequence[str] = tuple(SCENARIOS)) -> pd.DataFrame:
    """The scenario → (train, select, test) mapping and which training run serves it, for display."""
    runs = training_runs(scenarios)
    rows = []
    for name in scenarios:
        s = SCENARIOS[name]
        rows.append(
            {
                "scenario": name,
                "train": s.train,
                "select (valid)": s.select,
                "test": s.test,
                "training run": f"train={s.train}, select={s.select} (tests: {', '.join(runs[(s.train, s.select)])})",
            }
        )
    return pd.DataFrame(rows).set_index("scenario")


__all__ = [
    "Backbone",
    "GlueConfig",
    "PAPER_BACKBONES",
    "load_config",
    "load_data",
    "grid",
    "run",
    "results_frame",
    "table2",
    "table2_long",
    "gains",
    "gain_figure",
    "hypotheses",
    "verdicts",
    "scenario_table",
]
