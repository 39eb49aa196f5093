"""Koglish-GLUE's figure (notebook 02): the EN2CS → CS2CS gain per task and backbone, from the results of
:func:`codeswitch.glue.experiment.run` alone (through :func:`codeswitch.glue.tables.frame`)."""

from __future__ import annotations

import pandas as pd

from ..common.glue_metrics import TASK_LABEL
from ..core.experiment import Results
from ..core.profiles import Profile
from ..core.provenance import records_inputs
from ..core.report import save_figure, seaborn_style
from .tables import AVG, frame, with_average
from .train import TASKS

__all__ = ["FIGURE", "figures", "gains", "gain_figure"]

FIGURE = "concse_table2_gain"


@records_inputs
def figures(results: Results, profile: Profile) -> dict:
    """Write the EN2CS → CS2CS gain figure (:func:`gain_figure`); return its paths."""
    return gain_figure(frame(results), profile)


def gains(results: pd.DataFrame) -> pd.DataFrame:
    """CS2CS − EN2CS on the code-switched test set, per (task incl. Avg, backbone, seed)."""
    df = with_average(results)
    wide = df.pivot_table(index=["task", "backbone", "seed"], columns="scenario", values="score", sort=False)
    if not {"EN2CS", "CS2CS"} <= set(wide.columns):
        raise ValueError("the gain needs both EN2CS and CS2CS results")
    out = (wide["CS2CS"] - wide["EN2CS"]).rename("gain").reset_index()
    out["column"] = [TASK_LABEL.get(t, t) for t in out["task"]]
    return out


def gain_figure(results: pd.DataFrame, profile: Profile) -> dict:
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
    paths = save_figure(fig, FIGURE, profile, caption="EN2CS → CS2CS gain per task and backbone (mean ± sd over seeds)")
    plt.close(fig)
    return paths
