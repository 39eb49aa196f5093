"""CalBERT's figure (notebook 07): Table 7 as bars — SAIL 2017 F1 per backbone with and without Siamese
pre-training, from the cached records alone (:mod:`codeswitch.calbert.results`); plotting reads cached numbers, so
the figure can be restyled without retraining."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..core import report, reported
from ..core.experiment import Results
from ..core.profiles import Profile
from ..core.provenance import records_inputs
from .config import VARIANTS, Config, load
from .plan import row_order
from .results import frame, task_table


@records_inputs
def figures(results: Results, profile: Profile) -> dict:
    """Write Table 7 as a figure; return ``{name: paths}``."""
    return {"calbert_table7_figure": table7_figure(profile, load(profile), frame(results))}


def table7_figure(profile: Profile, c: Config, df: pd.DataFrame) -> dict:
    """Table 7 as a figure: SAIL 2017 F1 per backbone, with and without Siamese pre-training (val and test,
    mean ± std over seeds), the paper's best-of-runs validation F1 as open markers where it has the row."""
    import matplotlib.pyplot as plt

    variants = tuple(v for v in VARIANTS if v in c.sail.variants)
    measured = task_table(df, "sail", ("f1",), select_by="f1", variants=variants)
    rows = [r for r in row_order(c, variants) if r in set(measured["row"])]
    report.seaborn_style()
    fig, ax = plt.subplots(figsize=(1.2 + 1.3 * len(rows), 3.6))
    x = np.arange(len(rows))
    for k, (col, color) in enumerate((("F1 (val)", "#4C72B0"), ("F1 (test)", "#DD8452"))):
        s = measured[measured["column"] == col].set_index("row").reindex(rows)
        ax.bar(x + (k - 0.5) * 0.38, s["mean"], 0.38, yerr=s["std"].fillna(0), capsize=3, color=color, label=f"ours, {col.split(' ')[1][1:-1]}")
    paper = [(reported.lookup("calbert", "table7", r, "F1 (val)") or reported.Reported("", "", "", "", None)).value for r in rows]
    if any(v is not None for v in paper):
        ax.plot(x - 0.19, [np.nan if v is None else v for v in paper], "o", mfc="none", color="0.2", label="paper, val (best of 10)")
    ax.set_xticks(x, rows, rotation=20, ha="right")
    ax.set_ylabel("weighted F1")
    ax.set_ylim(0, 1)
    ax.set_title("CalBERT Table 7: does Siamese pre-training help? (SAIL 2017)", fontsize=10)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    fig.tight_layout()
    paths = report.save_figure(
        fig, "calbert_table7_figure", profile,
        caption="SAIL 2017 weighted F1 with (CalBERT-) and without Siamese pre-training, mean ± std over seeds (CalBERT Table 7)",
    )
    plt.close(fig)
    return paths
