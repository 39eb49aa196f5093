"""Labels follow a run's recorded inputs, not its profile's name (issue 42, items 3 and 6).

* A smoke run on real data (``--set koglish_source=<a real copy>``) and a real pretrained model says so under its
  tables (and its claim line reads "this smoke run's real data"), instead of "small (mostly synthetic) data … says
  nothing about the paper"; a run on the synthetic stand-ins keeps that note and names its models.
* A figure's "profile: …" stamp sits below everything the figure draws: its bounding box overlaps no legend and no
  axes (with their tick labels and titles), even with a legend under the panels (concse_table3_figure).
"""

from __future__ import annotations

import pandas as pd
import pytest

from codeswitch.core import claims
from codeswitch.core.profiles import load_profile
from codeswitch.core.provenance import input_kinds
from codeswitch.core.report import comparison, save_figure, save_table

from .conftest import REPO


def _table(tmp_path, inputs):
    cfg = load_profile("smoke", root=REPO, output_root=tmp_path)
    measured = pd.DataFrame({"row": ["ConCSE", "SimCSE"], "column": ["Avg."] * 2, "mean": [2.0, 1.0], "std": [0.0, 0.0], "n": [1, 1]})
    wide, long = comparison(measured, paper=None, table=None)
    claim = claims.greater(long, "ConCSE > SimCSE", pairs=[("ConCSE", "SimCSE")], columns=["Avg."])
    return save_table(wide, "demo_inputs", cfg, caption="demo", long=long, claim=claim, inputs=inputs)["md"].read_text(encoding="utf-8")


def test_smoke_note_on_synthetic_inputs_names_the_models(tmp_path):
    md = _table(tmp_path, {"koglish": ["synthetic"], "model": ["tiny-bert-mlm", "tiny-xlmr-mlm"]})
    assert md.count(claims.SMOKE_NOTE) == 1 and "holds on the smoke data" in md
    assert "Inputs: synthetic data (the project's stand-ins); tiny models built here (tiny-bert-mlm, tiny-xlmr-mlm)." in md
    kinds = input_kinds({"pairs": ["shipped"], "data": ["lib/codeswitch/assets/calbert/iitp @ 1a2b"],
                         "model": ["sentence-transformers/all-MiniLM-L6-v2 @ abc", "minilm-l1l6"]})
    assert (kinds["data"], kinds["model"]) == ("synthetic", "mixed"), kinds
    assert kinds["pretrained_models"] == ["sentence-transformers/all-MiniLM-L6-v2"] and kinds["tiny_models"] == ["minilm-l1l6"]


def test_smoke_run_on_a_real_koglish_copy_says_real(tmp_path, shared_data):
    """What a concse run records with ``--set koglish_source=../shared/data/koglish_sample`` and a hub backbone."""
    from codeswitch.koglish.data import input_refs

    source = shared_data / "koglish_sample"
    refs = input_refs(str(source), ("nli", "sts", "sick"))
    assert refs and all(k.startswith("koglish") for k in refs), refs
    inputs = {k: [f"{v} @ 0123abcd"] for k, v in refs.items()} | {"model": ["bert-base-multilingual-uncased @ 5546055f"]}
    md = _table(tmp_path, inputs)
    assert claims.SMOKE_NOTE not in md and "mostly synthetic" not in md and "says nothing about the paper" not in md
    assert "Smoke profile settings (a few steps, small grids) on real data: real data (koglish" in md
    assert "Koglish_STS" in md and "real pretrained models (bert-base-multilingual-uncased)" in md
    assert "holds on this smoke run's real data" in md and "holds on the smoke data" not in md
    # the same inputs with the synthetic source: the smoke note again (the label reads the inputs, nothing else)
    assert claims.SMOKE_NOTE in _table(tmp_path / "b", {"koglish": ["synthetic"], "model": ["bert-base-multilingual-uncased"]})


def _overlaps(a, b) -> bool:
    return a.x0 < b.x1 and b.x0 < a.x1 and a.y0 < b.y1 and b.y0 < a.y1


@pytest.mark.parametrize("layout", ["legend below the panels", "legend in the axes", "note at the bottom"])
def test_profile_stamp_overlaps_no_legend_or_axes(tmp_path, layout):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cfg = load_profile("smoke", root=REPO, output_root=tmp_path)
    fig, axes = plt.subplots(1, 2, figsize=(9.2, 3.6))
    for ax in axes:
        ax.errorbar([0, 1, 2], [1, 2, 3], yerr=[0.1] * 3, fmt="o", label="ConCSE (ours)")
        ax.plot([0, 1, 2], [1.5, 2.5, 2], "o", mfc="none", label="ConCSE (paper)")
        ax.set_xticks([0, 1, 2], ["STS12", "STS-B", "Avg."], rotation=45, ha="right")
        ax.set_title("mBERT-base")
    if layout == "legend below the panels":  # as concse_table3_figure
        handles, labels = axes[0].get_legend_handles_labels()
        fig.legend(handles, labels, fontsize=8, loc="lower center", ncol=2, frameon=False)
        fig.tight_layout(rect=(0, 0.07, 1, 1))
    elif layout == "legend in the axes":
        axes[1].legend(fontsize=8, loc="lower right")
        fig.tight_layout()
    else:
        fig.text(0.99, 0.0, "a long note at the figure's bottom right corner", ha="right", va="bottom", fontsize=7)
        fig.tight_layout()
    save_figure(fig, "demo_stamp", cfg, caption="demo")
    stamps = [t for t in fig.texts if t.get_text().startswith("profile: smoke")]
    assert len(stamps) == 1
    renderer = fig.canvas.get_renderer()
    box = stamps[0].get_window_extent(renderer)
    others = [*(lg.get_window_extent(renderer) for lg in fig.legends), *(ax.get_tightbbox(renderer) for ax in fig.axes),
              *(t.get_window_extent(renderer) for t in fig.texts if t is not stamps[0])]
    others += [ax.get_legend().get_window_extent(renderer) for ax in fig.axes if ax.get_legend()]
    hit = [o for o in others if _overlaps(box, o)]
    assert not hit, f"the stamp {box} overlaps {hit}"
    # the check can fail: at its former place (just under the figure's bottom edge, right-aligned) a legend drawn at the
    # figure's bottom right covers it; placed by stamp() it clears that legend too
    from codeswitch.core.report import stamp

    handles, labels = fig.axes[0].get_legend_handles_labels()
    low = fig.legend(handles, labels, loc="lower right", bbox_to_anchor=(1.0, -0.03), ncol=2, fontsize=8)
    old = fig.text(0.995, -0.005, stamps[0].get_text(), ha="right", va="top", fontsize=6)
    assert _overlaps(old.get_window_extent(renderer), low.get_window_extent(renderer))
    old.remove()
    assert not _overlaps(stamp(fig, "profile: x").get_window_extent(renderer), low.get_window_extent(renderer))
    plt.close(fig)
