"""The figures of notebooks 03 and 04, from the cached results alone (:func:`figures`): Table 3 as a figure (per
task, SimCSE and ConCSE beside the paper's values) and the τ, λ, α sweeps of Tables 5–7 as line plots."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from ..core import reported as _reported
from ..core.experiment import Results
from ..core.models import backbone_label
from ..core.profiles import Profile
from ..core.provenance import records_inputs
from ..core.report import save_figure, seaborn_style, summarise
from .config import Config, load
from .plan import AVG, METHOD_LABELS, STSB, TASK_LABELS, setting_label
from .tables import SWEEPS, ablation_scores, study_summary, table3_scores

__all__ = ["figures", "table3_figure", "sweep_plot", "MIN_SPAN"]

MIN_SPAN = 5.0  # sweep plots: the y axis spans at least this many Spearman points

@records_inputs
def figures(results: Results, profile: Profile) -> dict[str, dict]:
    """Write the figures of the studies in ``results`` (Table 3 as a figure; the τ, λ, α sweeps); ``{name: paths}``."""
    c = load(profile)
    studies = {s.study for s in results.specs}
    out = {}
    if "table3" in studies:
        out["concse_table3_figure"] = table3_figure(table3_scores(results), c, profile)
    abl = ablation_scores(results)
    for t in ("table5", "table6", "table7"):
        if t in studies:
            out[f"concse_{t}_plot"] = sweep_plot(abl, c, profile, t)
    return out



def table3_figure(scores: pd.DataFrame, c: Config, profile: Profile) -> dict[str, Path]:
    """Per task, SimCSE and ConCSE mean ± std (filled) beside the paper's values (open), one panel per backbone."""
    import matplotlib.pyplot as plt

    seaborn_style()
    backbones = list(dict.fromkeys(scores["backbone"]))
    columns = [TASK_LABELS[t] for t in c.sts_tests] + [AVG]  # the sets scored (concse.sts_tests)
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
        ax.set_title(backbone_label(b, c.backbone(b).model))
        ax.set_ylabel("Spearman × 100")
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, fontsize=8, loc="lower center", ncol=len(labels), frameon=False)  # below the panels: covers no data
    fig.suptitle("ConCSE Table 3: SimCSE vs ConCSE on the Koglish-STS test sets")
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    paths = save_figure(
        fig, "concse_table3_figure", profile,
        caption="Table 3 as a figure: SimCSE vs ConCSE per Koglish-STS task, mean ± std over seeds (filled) and the paper's values (open)",
    )
    plt.close(fig)
    return paths



def sweep_plot(scores: pd.DataFrame, c: Config, profile: Profile, table: str) -> dict[str, Path]:
    """The sweep of :func:`~codeswitch.concse.tables.sweep_table` as a line plot, the paper's curve overlaid where it is known."""
    import matplotlib.pyplot as plt

    what, attr = SWEEPS[table]
    seaborn_style()
    labels = [setting_label(v) for v in getattr(c, attr)]
    s = study_summary(scores, table, c)
    s = s[s["column"] == TASK_LABELS["stsb"]].set_index("label").reindex(labels)
    x = np.arange(len(labels))
    # a categorical setting (λ = N/A: no triplet term) is a point of its own, not joined by a line to the numeric ones
    apart = np.array([v is None for v in getattr(c, attr)])
    fig, ax = plt.subplots(figsize=(4.8, 3.4))
    mean, std = s["mean"].to_numpy(dtype=float), s["std"].to_numpy(dtype=float)
    ax.errorbar(x[~apart], mean[~apart], yerr=std[~apart], fmt="o-", capsize=3, color="#DD8452", label="ours")
    if apart.any():
        ax.errorbar(x[apart], mean[apart], yerr=std[apart], fmt="D", capsize=3, color="#DD8452")
        ax.axvline(x[apart].max() + 0.5, color="0.7", ls=":", lw=1)
    paper = [(_reported.lookup("concse", table, STSB, lab) or _reported.Reported("", "", "", "", None)).value for lab in labels]
    if any(v is not None for v in paper):
        known = np.array([np.nan if v is None else v for v in paper], dtype=float)
        ax.plot(x[~apart], known[~apart], "s--", color="0.35", mfc="none", label="paper")
        if apart.any():
            ax.plot(x[apart], known[apart], "s", color="0.35", mfc="none")
    if table == "table6":
        printed = " ".join(f"{e.value:g}" for e in _reported.table("concse", "table6_printed"))
        ax.annotate(f"the paper's row as printed, 6 values for 5 settings\n(which belongs to which λ is unknown): {printed}",
                    xy=(0, -0.22), xycoords="axes fraction", fontsize=7, va="top")  # below the axes: it covers no point
    lo, hi = np.nanmin(np.r_[s["mean"] - s["std"].fillna(0), [v for v in paper if v is not None]]), np.nanmax(np.r_[s["mean"] + s["std"].fillna(0), [v for v in paper if v is not None]])
    if hi - lo < MIN_SPAN:  # a spread of half a point must not fill the axis
        mid = (hi + lo) / 2
        ax.set_ylim(mid - MIN_SPAN / 2, mid + MIN_SPAN / 2)
    ax.set_xticks(x, labels)
    ax.set_xlabel(what)
    ax.set_ylabel("Koglish-STS-B, Spearman × 100")
    ax.set_title(f"ConCSE Table {table[5:]}: the {what}\nConCSE on {backbone_label(c.ablation_backbone, c.backbone(c.ablation_backbone).model)}", fontsize=10)
    ax.legend(fontsize=8)
    fig.tight_layout()
    paths = save_figure(fig, f"concse_{table}_plot", profile, caption=f"ConCSE on Koglish-STS-B vs the {what}: ours (mean ± std) and the paper's")
    plt.close(fig)
    return paths
