"""ContrastiveMix's Figures 1–3 (notebook 05): UMAP of English and target-language embeddings.

The 2-D coordinates are runs of the plan (:class:`~codeswitch.contrastivemix.config.UmapRun`,
cached), so restyling a figure never refits UMAP: :func:`figures` reads them from the
results of :func:`codeswitch.contrastivemix.experiment.run` alone.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from ..core.experiment import Results
from ..core.profiles import Profile
from ..core.provenance import records_inputs
from .config import Config, UmapRun, load
from .search import is_selected, selection

__all__ = ["cache_umap_jit", "umap_fit", "umap_coordinates", "figures", "figure1", "figure2", "figure3"]


@records_inputs
def figures(results: Results, profile: Profile) -> dict[str, dict[str, Path]]:
    """Write Figures 1–3; return ``{name: paths}``."""
    coords, c = umap_coordinates(results), load(profile)
    return {name: fn(coords, profile, c) for name, fn in (("contrastivemix_figure1", figure1), ("contrastivemix_figure2", figure2),
                                                       ("contrastivemix_figure3", figure3))}


# --------------------------------------------------------------------------- UMAP figures
def _umap_jit_modules() -> tuple:
    """umap-learn's modules whose numba functions a fit compiles (umap-learn 0.5.12)."""
    import umap.distances
    import umap.layouts
    import umap.sparse
    import umap.spectral
    import umap.umap_
    import umap.utils

    return umap.umap_, umap.layouts, umap.spectral, umap.utils, umap.distances, umap.sparse


def cache_umap_jit() -> list[str]:
    """Keep umap-learn's compiled functions on disk, so that only the first process on a machine compiles them.

    umap-learn compiles its layout optimiser and graph code with numba on a process's first fit, without numba's
    on-disk cache (pynndescent, which it imports, caches its own).  That compilation was 19-21 s of every first fit
    (200 points, 2 cores), in every kernel of notebook 05, against 0.25 s for the fit itself; with the cache, a later
    process's first fit took 0.44 s (measured).  numba keys its cache on each function's source file and the CPU, so
    an upgrade or another machine compiles afresh (numba's rule; the files go to ``__pycache__`` beside umap's, else
    to a user cache folder, or to ``$NUMBA_CACHE_DIR``; where nothing is writable a function compiles as before).  The
    coordinates are unchanged: the same machine code runs.  Call it before the process's first fit (a function
    compiled before it is not written); returns the qualified names of the functions it switched on."""
    from numba.core.caching import NullCache
    from numba.core.registry import CPUDispatcher

    switched = []
    for module in _umap_jit_modules():
        name = module.__name__
        for attr, fn in vars(module).items():
            # a dispatcher defined in this module (not one it imported) whose cache is numba's no-op one
            if isinstance(fn, CPUDispatcher) and fn.__module__ == name and isinstance(fn._cache, NullCache):
                try:
                    fn.enable_caching()  # numba's @njit(cache=True), switched on after the decorator ran
                except RuntimeError:  # "no locator available": nowhere writable for a cache; compile as before
                    continue
                switched.append(f"{name}.{attr}")
    return switched


def umap_fit(x: np.ndarray, n_neighbors: int, min_dist: float, random_state: int) -> np.ndarray:
    """2-D UMAP of ``x`` (n, H); the k-nearest-neighbour graph is computed exactly (scikit-learn) and handed to UMAP."""
    import warnings

    import umap
    from sklearn.neighbors import NearestNeighbors

    cache_umap_jit()

    k = max(2, min(n_neighbors, len(x) - 1))
    dist, idx = NearestNeighbors(n_neighbors=k).fit(x).kneighbors(x)  # (n, k), self first
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "n_jobs overridden by random_state": intended, for reproducibility
        reducer = umap.UMAP(n_neighbors=k, min_dist=min_dist, random_state=random_state, precomputed_knn=(idx.astype(np.int32), dist.astype(np.float32)))
        return reducer.fit_transform(x)  # (n, 2)


def umap_coordinates(results: Results) -> pd.DataFrame:
    """The 2-D UMAP coordinates of the figure models (the :class:`~.config.UmapRun` records of ``results``).

    Columns ``model`` (variant key), ``side`` ("query" | "passage"), ``language``, ``x``, ``y``.
    """
    chosen = selection(results)  # under align_weight: search, the kept weight's model only
    frames = [pd.DataFrame({"model": spec.embed.model.variant, "side": spec.side, **rec})
              for spec, rec in results if isinstance(spec, UmapRun) and is_selected(spec.embed.model, chosen)]
    if not frames:
        raise RuntimeError("contrastivemix: the results hold no UMAP fit (is figure_language evaluated?)")
    return pd.concat(frames, ignore_index=True)


_LANG_NAMES = {"en": "English", "ko": "Korean", "ar": "Arabic", "ja": "Japanese", "th": "Thai", "id": "Indonesian", "fi": "Finnish",
               "ru": "Russian", "bn": "Bengali", "zh": "Chinese", "fa": "Persian", "es": "Spanish", "fr": "French", "hi": "Hindi"}


def _umap_figure(coords: pd.DataFrame, key: str, sides: Sequence[str], title: str):
    import matplotlib.pyplot as plt

    from ..core.report import seaborn_style

    seaborn_style()
    fig, axes = plt.subplots(1, len(sides), figsize=(4.2 * len(sides), 4.0), squeeze=False)
    palette = {"en": "tab:green"}
    for ax, side in zip(axes[0], sides):
        sub = coords[(coords["model"] == key) & (coords["side"] == side)]
        for lang in dict.fromkeys(sub["language"]):
            pts = sub[sub["language"] == lang]
            ax.scatter(pts["x"], pts["y"], s=8, alpha=0.6, color=palette.get(lang, "tab:red"), label=_LANG_NAMES.get(lang, lang), edgecolors="none")
        ax.set_title(f"{side} encoder")
        ax.set_xticks([])
        ax.set_yticks([])
        ax.legend(loc="best", fontsize=8, markerscale=2)
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def _figure(profile: Profile, coords, key, sides, name, title, caption):
    import matplotlib.pyplot as plt

    from ..core.report import save_figure

    fig = _umap_figure(coords, key, sides, title)
    paths = save_figure(fig, name, profile, caption=caption)
    plt.close(fig)
    return paths


def figure1(coords: pd.DataFrame, profile: Profile, c: Config) -> dict[str, Path]:
    """Figure 1: ContrastiveMix's query encoder, English vs the target language."""
    lang = _LANG_NAMES.get(c.figure_language, c.figure_language)
    return _figure(profile, coords, "contrastivemix", ("query",), "contrastivemix_figure1", f"ContrastiveMix (target: {lang})",
                   f"UMAP of English and {lang} validation queries from ContrastiveMix's query encoder (ContrastiveMix Figure 1)")


def figure2(coords: pd.DataFrame, profile: Profile, c: Config) -> dict[str, Path]:
    """Figure 2: mDPR's query and passage encoders."""
    lang = _LANG_NAMES.get(c.figure_language, c.figure_language)
    return _figure(profile, coords, "mdpr", ("query", "passage"), "contrastivemix_figure2", f"mDPR (target: {lang})",
                   f"UMAP of English and {lang} validation queries / passages from mDPR's encoders (ContrastiveMix Figure 2)")


def figure3(coords: pd.DataFrame, profile: Profile, c: Config) -> dict[str, Path]:
    """Figure 3: NaiveMix's query and passage encoders."""
    lang = _LANG_NAMES.get(c.figure_language, c.figure_language)
    return _figure(profile, coords, "naivemix", ("query", "passage"), "contrastivemix_figure3", f"NaiveMix (target: {lang})",
                   f"UMAP of English and {lang} validation queries / passages from NaiveMix's encoders (ContrastiveMix Figure 3)")
