"""The one reading of the ``contrastivemix.muse`` setting: which dictionary file a language reads.

The run (:func:`codeswitch.contrastivemix.codemix.muse_path`), its inputs (:func:`codeswitch.contrastivemix.data.muse_input`)
and the check (``resources.py``) all call :func:`muse_file`, so ``--check`` reports the file the run opens.  No import
of the package's other modules: they all import this one.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["muse_file"]


def muse_file(muse: str, language: str) -> str:
    """The one reading of the ``contrastivemix.muse`` setting for ``language`` (other than ``synthetic``: the shipped
    glossary, :func:`codeswitch.contrastivemix.data.muse_input`), which the run (:func:`muse_path`, ``muse_input``) and
    the check (``resources.py``) share: a path or URL with ``{lang}``: filled in; a URL without it: that file; a ``.txt`` file: itself,
    if it is ``en-<language>.txt`` (else a :class:`~codeswitch.core.hub.MissingResourceError`: one file cannot serve
    several languages); anything else: a folder holding ``en-<language>.txt``."""
    if "{lang}" in muse:
        return muse.format(lang=language)
    if muse.startswith(("http://", "https://")):
        return muse
    path = Path(os.path.expanduser(muse))
    if path.suffix == ".txt" and not path.is_dir():
        if path.name != f"en-{language}.txt":
            from ..core.hub import MissingResourceError

            raise MissingResourceError(f"contrastivemix.muse names one file, {path}, but the run needs en-{language}.txt: "
                                       f"point it at the folder holding en-<xx>.txt, or write the path with {{lang}}")
        return str(path)
    return str(path / f"en-{language}.txt")
