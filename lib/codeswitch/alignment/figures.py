"""Figure 3.1 of the alignment paper (notebook 06): the t-SNE of six word pairs before and after alignment, drawn from
the cached record of its :class:`~codeswitch.alignment.config.FigureRun`."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from ..core.experiment import Results
from ..core.profiles import Profile
from ..core.provenance import records_inputs
from ..core.report import save_figure, seaborn_style
from .config import Config, FigureRun, load

__all__ = ["figures", "figure3_1"]


@records_inputs
def figures(results: Results, profile: Profile) -> dict:
    """Write Figure 3.1; return ``{name: paths}``."""
    return {"alignment_figure3_1": figure3_1(results, profile, load(profile))}


def figure3_1(results: Results, profile: Profile, c: Config) -> dict[str, Path]:
    """Figure 3.1: t-SNE of the 6 word pairs' contextual vectors before and after alignment (from the cached record)."""
    import matplotlib.pyplot as plt
    import seaborn as sns

    r = next((rec for spec, rec in results if isinstance(spec, FigureRun)), None)
    if r is None:
        raise RuntimeError("alignment_figure3_1: no Figure 3.1 record among the results: run alignment.run(profile) first")
    seaborn_style()
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.8))
    order = list(dict.fromkeys(r["pair"]))
    # the legend spells the Hindi words in ITRANS (the figure's font has no Devanagari); say so when the model reads Devanagari
    pair_title = "word pair (Hindi in ITRANS)" if "Devanagari" in c.figure_system else "word pair"
    for ax, name, title in zip(axes, ("before", "after"), ("(a) baseline", f"(b) aligned: {c.figure_system}")):
        xy = np.asarray(r[name])
        frame = pd.DataFrame({"x": xy[:, 0], "y": xy[:, 1], pair_title: r["pair"], "language": r["language"]})
        sns.scatterplot(
            data=frame, x="x", y="y", hue=pair_title, hue_order=order, style="language",
            markers={"English": "o", "Hindi": "X"}, s=55, ax=ax, legend=name == "after",
        )
        ax.set_title(f"{title}\ncross-lingual word retrieval P@1 = {r[f'retrieval_at_1_{name}']:.2f}", fontsize=10)
        ax.set_xlabel("")
        ax.set_ylabel("")
        ax.set_xticks([])
        ax.set_yticks([])
    axes[1].legend(loc="center left", bbox_to_anchor=(1.02, 0.5), frameon=False, fontsize=8)
    fig.tight_layout()
    paths = save_figure(
        fig, "alignment_figure3_1", profile,
        caption=(
            "t-SNE of 48 occurrences per language of 6 Hindi–English word pairs, before and after alignment "
            f"({c.figure_system}); colour = word pair, marker = language (Figure 3.1)"
        ),
    )
    plt.close(fig)
    return paths
