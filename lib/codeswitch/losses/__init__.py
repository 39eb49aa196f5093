"""Losses: pure tensor functions of embeddings, plus thin sentence-transformers wrappers.

One file per method: ``concse`` (ConCSE and the SimCSE baseline), ``contrastivemix``
(mDPR in-batch IR loss + ContrastiveMix alignment), ``alignment`` (sentence- and
word-level alignment for code-switching).  Every public name is importable from
here, e.g. ``from codeswitch.losses import concse_loss``.
"""

from __future__ import annotations

import importlib
import pkgutil


def __getattr__(name: str):
    for info in pkgutil.iter_modules(__path__):
        mod = importlib.import_module(f"{__name__}.{info.name}")
        if name in getattr(mod, "__all__", ()):
            return getattr(mod, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    names = []
    for info in pkgutil.iter_modules(__path__):
        names.extend(getattr(importlib.import_module(f"{__name__}.{info.name}"), "__all__", ()))
    return sorted(names)
