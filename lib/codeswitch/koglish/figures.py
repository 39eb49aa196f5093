"""Notebook 01's Figure 1: a parse tree with the switched NP highlighted, beside its code-switched
sentence (the paper's Fig. 1-(a)); :func:`figures` writes it to ``figures/<profile>/``."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from .config import load
from .walkthrough import walkthrough
from ..core.experiment import Results
from ..core.profiles import Profile
from ..core.provenance import records_inputs

__all__ = ["figures", "figure1", "pick_example", "hangul_font"]


@records_inputs
def figures(results: Results, profile: Profile) -> dict[str, dict]:
    """Write Figure 1: the walk-through example that shows most of the NP rule, as a parse tree (:func:`figure1`).

    The example comes from the walk-through (parsing a few sentences, seconds), not
    from ``results``: the construction statistics hold no trees.
    """
    import matplotlib.pyplot as plt

    from ..core.report import save_figure

    c = load(profile)
    _, examples = walkthrough(profile, c)
    fig = figure1(pick_example(examples))
    paths = save_figure(fig, "concse_figure1", profile,
                        caption="Parse tree with the switched noun phrase highlighted, and the code-switched sentence (cf. ConCSE Fig. 1-(a))")
    plt.close(fig)
    return {"concse_figure1": paths}


def hangul_font():
    """A font with Hangul glyphs for matplotlib (NanumGothic from the ``koreanize-matplotlib`` wheel, or a system one)."""
    import importlib.util

    from matplotlib import font_manager

    spec = importlib.util.find_spec("koreanize_matplotlib")
    if spec and spec.submodule_search_locations:
        path = Path(list(spec.submodule_search_locations)[0]) / "fonts" / "NanumGothic.ttf"
        if path.is_file():
            font_manager.fontManager.addfont(str(path))
            return font_manager.FontProperties(fname=str(path))
    for f in font_manager.fontManager.ttflist:
        if any(k in f.name for k in ("Nanum", "Noto Sans CJK", "Noto Sans KR", "Malgun", "AppleGothic", "Unifont")):
            return font_manager.FontProperties(fname=f.fname)
    import warnings

    warnings.warn("no font with Hangul glyphs found: Korean text in figures will show as boxes (pip install koreanize-matplotlib)", stacklevel=2)
    return font_manager.FontProperties()


def pick_example(examples: Sequence) -> tuple:
    """The walk-through example that shows the most of the rule: switched, with a rejected NP before the chosen one.

    Where no sentence was switched but an NP was chosen (the translator failed or returned the NP unchanged: a
    random-weight stand-in translator, say), the first such sentence: the figure shows the chosen NP and why the
    sentence was dropped.  A ValueError only where no sentence of the walk-through had an NP chosen at all."""
    switched = [(o, t) for o, t in examples if o.ok and t is not None]
    for o, t in switched:
        if len(o.selection.trace) > 1:
            return o, t
    if switched:
        return switched[0]
    chosen = [(o, t) for o, t in examples if t is not None and o.selection is not None and o.selection.ok]
    if not chosen:
        raise ValueError(f"no sentence of the walk-through had a noun phrase chosen ({len(examples)} sentences): nothing to draw")
    return chosen[0]


def _layout(tree) -> tuple[dict, dict, int]:
    """x, y of every node (tree positions): leaves evenly spaced on the bottom row, parents centred over children."""
    leaves = tree.treepositions("leaves")
    depth = max(len(p) for p in leaves)
    x = {p: float(i) for i, p in enumerate(leaves)}
    for p in sorted(tree.treepositions(), key=len, reverse=True):
        if p not in x:
            kids = [p + (i,) for i in range(len(tree[p]))]
            x[p] = (x[kids[0]] + x[kids[-1]]) / 2
    y = {p: -float(len(p)) if p not in set(leaves) else -float(depth) for p in tree.treepositions()}
    return x, y, depth


def _pieces(text: str, part: str, colour: str) -> list[tuple[str, str]]:
    """``text`` cut around the first occurrence of ``part`` (the switched NP), which gets ``colour``."""
    i = text.find(part)
    if i < 0:
        return [(text, "black")]
    return [(t, c) for t, c in ((text[:i], "black"), (part, colour), (text[i + len(part):], "black")) if t]


def _rich_text(ax, x: float, y: float, pieces: Sequence[tuple[str, str]], font) -> None:
    """Several coloured strings on one line, each placed right after the previous one (matplotlib's rainbow-text recipe)."""
    prev = None
    for text, colour in pieces:
        kw = dict(fontproperties=font, fontsize=11, color=colour, va="center")
        if prev is None:
            prev = ax.text(x, y, text.replace(" ", "\u00a0"), transform=ax.transAxes, **kw)
        else:
            prev = ax.annotate(text.replace(" ", "\u00a0"), xycoords=prev, xy=(1, 0.5), **kw)


def figure1(example: tuple, *, title: str = ""):
    """Draw a parse tree with the switched NP highlighted, and the sentence before and after switching."""
    import matplotlib.pyplot as plt

    outcome, tree = example
    from .construct import _unwrap

    tree = _unwrap(tree)
    x, y, depth = _layout(tree)
    sel = outcome.selection
    start, end = sel.span
    leaves = tree.treepositions("leaves")
    leaf_index = {p: i for i, p in enumerate(leaves)}
    np_pos = next(
        p
        for p in tree.treepositions()
        if not isinstance(tree[p], str)
        and tree[p].label().split("-")[0] == "NP"
        and [leaf_index[p + q] for q in tree[p].treepositions("leaves")] == list(range(start, end))
    )
    rejected = {(c.start, c.end) for c in sel.trace if c.verdict != "selected"}
    font = hangul_font()
    hi, grey = "#c0392b", "#7f8c8d"
    width = max(7.0, 0.85 * len(leaves) + 1.5)
    fig, (ax, ax_txt) = plt.subplots(2, 1, figsize=(width, 0.55 * depth + 3.2), gridspec_kw={"height_ratios": [depth + 1, 2.2]})
    for p in tree.treepositions():
        inside = p[: len(np_pos)] == np_pos
        if not isinstance(tree[p], str):
            for i in range(len(tree[p])):
                c = p + (i,)
                ax.plot([x[p], x[c]], [y[p] - 0.12, y[c] + 0.12], color=hi if inside and c[: len(np_pos)] == np_pos else "#bdc3c7", lw=1.6 if inside else 1.0, zorder=1)
        if isinstance(tree[p], str):
            label, colour, weight = tree[p], (hi if inside else "black"), ("bold" if inside else "normal")
        else:
            label = tree[p].label()
            span = [leaf_index[p + q] for q in tree[p].treepositions("leaves")]
            is_rejected = label.split("-")[0] == "NP" and (min(span), max(span) + 1) in rejected
            colour = hi if inside else (grey if is_rejected else "#2c3e50")
            weight = "bold" if p == np_pos else "normal"
            if is_rejected:
                label += " ✗"
        ax.text(x[p], y[p], label, ha="center", va="center", color=colour, fontweight=weight, fontsize=10,
                bbox=dict(boxstyle="round,pad=0.2", fc="#fdecea" if p == np_pos else "white", ec=hi if p == np_pos else "none"), zorder=2)
    ax.set_xlim(-0.8, len(leaves) - 0.2)
    ax.set_ylim(-depth - 0.6, 0.6)
    ax.axis("off")
    if title:
        ax.set_title(title, fontsize=11)
    ax_txt.axis("off")
    source_np = outcome.source_np0  # set whenever an NP was chosen, switched or not
    if outcome.ok:
        translated = [(f"{source_np}  →  {outcome.target_np0}", hi)]
        switched = _pieces(outcome.cross, outcome.target_np0, hi)
    else:  # chosen but not switched (pick_example's fallback): say why
        got = f" ({outcome.target_np0!r})" if outcome.target_np0 is not None else ""
        translated = [(f"{source_np}  →  ", hi), (f"{outcome.reason}{got}", grey)]
        switched = [(f"sentence dropped: {outcome.reason}", grey)]
    rows = [
        ("English", _pieces(outcome.sentence, source_np, hi)),
        ("NP₀ → Korean", translated),
        ("Code-switched", switched),
    ]
    for k, (head, pieces) in enumerate(rows):
        yy = 0.85 - 0.36 * k
        ax_txt.text(0.0, yy, head, fontweight="bold", fontsize=10, va="center", transform=ax_txt.transAxes)
        _rich_text(ax_txt, 0.2, yy, pieces, font)
    fig.tight_layout()
    return fig
