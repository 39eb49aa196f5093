"""Tables beside the papers' numbers; files written; reported-number registry."""

from __future__ import annotations

import pandas as pd
import pytest

from codeswitch.core import reported
from codeswitch.core.profiles import load_profile
from codeswitch.core.report import comparison, fmt_mean_std, save_figure, save_table, spread_note, summarise

from .conftest import REPO


def test_summarise_mean_std_over_seeds():
    df = pd.DataFrame({"row": ["a"] * 3 + ["b"], "column": ["x"] * 4, "score": [1.0, 2.0, 3.0, 5.0]})
    s = summarise(df, by=["row", "column"])
    a = s[s.row == "a"].iloc[0]
    assert a["mean"] == 2.0 and a["std"] == pytest.approx(1.0) and a["n"] == 3
    assert s[s.row == "b"].iloc[0]["std"] == 0.0
    assert fmt_mean_std(74.356, 0.521) == "74.36 ± 0.52"


def test_comparison_puts_reported_beside_measured(monkeypatch):
    fake = [
        reported.Reported("p", "t1", "m", "A", 80.0, 0.2),
        reported.Reported("p", "t1", "m", "B", None, note="lost in conversion"),
    ]
    monkeypatch.setattr(reported, "all_entries", lambda: fake)
    measured = pd.DataFrame({"row": ["m", "m", "m"], "column": ["A", "B", "C"], "mean": [81.5, 70.0, 1.0], "std": [0.5, 0.1, 0.0], "n": [5, 5, 5]})
    wide, long = comparison(measured, paper="p", table="t1")
    assert (wide.loc["m", "A"].ours, wide.loc["m", "A"].paper, wide.loc["m", "A"].delta) == ("81.50 ± 0.50", "80.00", "+1.50")
    assert str(wide.loc["m", "A"]) == "81.50 ± 0.50 · paper 80.00 (Δ +1.50)"
    assert str(wide.loc["m", "B"]) == "70.00 ± 0.10 · paper ?"
    assert wide.loc["m", "C"].ours == "1.00 ± 0.00" and wide.loc["m", "C"].paper is None
    assert long["diff"].tolist()[0] == pytest.approx(1.5)
    assert pd.isna(long["paper"].tolist()[1]) and long["paper_note"].tolist()[1] == "unknown (lost in conversion)"


def test_save_table_and_figure_write_every_format(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cfg = load_profile("smoke", root=REPO, output_root=tmp_path)
    measured = pd.DataFrame({"row": ["m"], "column": ["A"], "mean": [0.123456789], "std": [0.0], "n": [1]})
    wide, long = comparison(measured, paper=None, table=None)
    paths = save_table(wide, "demo_table", cfg, caption="A & B_1", long=long)
    assert set(paths) == {"md", "tex", "csv"}
    assert "0.1235" in paths["csv"].read_text()
    assert r"A \& B\_1" in paths["tex"].read_text()
    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, 1])
    fpaths = save_figure(fig, "demo_fig", cfg, caption="line")
    assert fpaths["png"].read_bytes()[:4] == b"\x89PNG" and fpaths["pdf"].read_bytes()[:4] == b"%PDF"
    assert {p.name for p in (cfg.figures_dir / ".index").iterdir()} == {"demo_table.json", "demo_fig.json"}


def test_reported_registry_is_unique_and_typed():
    entries = reported.all_entries()
    keys = [(e.paper, e.table, e.row, e.column) for e in entries]
    assert len(keys) == len(set(keys))
    for e in entries:
        assert e.paper in reported.PAPERS, e.source
        assert e.value is None or isinstance(e.value, float), e.source


def test_figures_warn_naming_the_font_package_when_a_script_has_no_glyphs(monkeypatch, tmp_path):
    """Issue 27: Devanagari showed as empty boxes without a word. A figure drawing a script no font covers warns,
    naming the Debian package; Latin text never does."""
    import warnings

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from codeswitch.core import report

    fig, ax = plt.subplots()
    ax.set_title("plain Latin title")
    assert report.missing_glyphs(fig) == {}
    ax.set_xlabel("नमस्ते")
    found = report.missing_glyphs(fig)
    assert set(found) <= {"Devanagari"}  # empty where a Devanagari font is installed (.ci/run: fonts-lohit-deva)
    monkeypatch.setattr(report, "missing_glyphs", lambda f: {"Devanagari": "नम"})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        report.check_fonts(fig, "demo_figure")
    assert [w for w in caught if issubclass(w.category, report.FontWarning) and "fonts-noto-core" in str(w.message)
            and "demo_figure" in str(w.message)]
    plt.close(fig)


def test_plan_table_shows_what_differs_between_runs_and_each_key():
    """Issue 27: notebooks showed plans as every key field of every run ("8 rows × 23 columns")."""
    from codeswitch import concse as C
    from codeswitch.core.experiment import plan_table
    from codeswitch.core.profiles import load_profile

    from .conftest import REPO

    specs = C.plan(load_profile("smoke", root=REPO), ["table3"])
    t = plan_table(specs, show=("backbone", "method", "seed"))
    assert list(t["key"]) == [s.key_hash() for s in specs]
    assert list(t.columns[:3]) == ["backbone", "method", "seed"] and "experiment" not in t
    constant = [k for k, v in specs[0].key().items() if all(s.key().get(k) == v for s in specs) and k not in ("backbone", "method", "seed")]
    assert constant and not set(constant) & set(t.columns)


def test_a_note_promises_a_plus_minus_only_where_the_cells_show_one():
    """Issue 42: notes read "mean ± std over 1 seed(s)" above cells without ±.  ``spread_note`` names a ± exactly when
    :func:`comparison` prints one (more than one seed), and says why there is none otherwise."""
    one = pd.DataFrame({"row": ["a"], "column": ["x"], "mean": [71.25], "std": [0.0], "n": [1]})
    for frame, n in ((one, 1), (one.assign(std=[0.5], n=[3]), 3)):
        wide, _ = comparison(frame, paper=None, table=None)
        assert ("±" in str(wide.iloc[0, 0])) == ("mean ±" in spread_note(n)) == (n > 1), (n, str(wide.iloc[0, 0]), spread_note(n))
    assert spread_note(3, std="population std") == "mean ± population std over 3 seeds"
    assert spread_note(1, over="run") == "one run, so no ± (a single run has no spread)"
