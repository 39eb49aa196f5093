"""The one registry of the paper packages: the six of them, in notebook order, imported by name in code.

The orchestration layer (this package: the CLI behind ``./reproduce.sh``, the executors, the
preflight, the stand-ins, the book) is the only place that knows every paper package; the
packages know nothing of it and ``codeswitch.core`` knows none of them.  Each package
declares its side of the contract at package level (``SECTION``, ``NOTEBOOKS``, ``load``,
``plan``, ``stages``, ``run_one``, ``run``, ``tables``, ``figures``, ``resources``,
``build_standins``, the kept-model functions: :mod:`codeswitch.core.experiment`), so
nothing here builds a module name at run time: every import below is a plain import that
a reader, a drawing of the structure and ``tests/test_architecture.py`` all see.

The imports sit inside :func:`packages` so that ``./reproduce.sh --help`` and ``--list``
start without importing the packages (and torch with them).
"""

from __future__ import annotations

import functools
from types import ModuleType
from typing import Mapping

__all__ = ["packages", "experiments", "package"]


@functools.cache
def packages() -> tuple[ModuleType, ...]:
    """The six paper packages, in notebook order (01 koglish … 07 calbert)."""
    from .. import alignment, calbert, concse, contrastivemix, glue, koglish

    return (koglish, glue, concse, contrastivemix, alignment, calbert)


def experiments() -> Mapping[str, tuple[str, ...]]:
    """``{section: notebooks}``: each package's profile section and the notebooks it serves, in order."""
    return {p.SECTION: p.NOTEBOOKS for p in packages()}


def package(section: str) -> ModuleType:
    """The paper package of a profile section."""
    for p in packages():
        if p.SECTION == section:
            return p
    raise KeyError(f"no experiment {section!r} (known: {', '.join(p.SECTION for p in packages())})")
