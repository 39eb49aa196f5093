"""Notebook 07's stand-in data in the released layouts: SAIL 2017 as GLUECoS processes it
(``train.txt``/``validation.txt``/``test.txt``) and IndicGLUE's IITP reviews (``hi-{train,valid,test}.csv``),
copied from the project's shipped sets."""

from __future__ import annotations

import shutil
from pathlib import Path


def build(root: Path) -> dict[str, Path]:
    from .experiment import ASSETS

    out = {}
    for task, name in (("sail", "sail2017"), ("iitp", "iitp-product-reviews")):
        shutil.copytree(ASSETS / task, root / name, dirs_exist_ok=True)
        out[name] = root / name
    return out
