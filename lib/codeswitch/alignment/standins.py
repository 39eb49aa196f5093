"""Notebook 06's stand-in data in the released layouts: the IIT Bombay corpus as the hub repository
(``data/{train,validation,test}-*.parquet`` with a ``translation`` column), GLUECoS's processed folders and
the MUSE en-hi lexicon, from the project's shipped synthetic sets."""

from __future__ import annotations

import shutil
from pathlib import Path


def build(root: Path) -> dict[str, Path]:
    from datasets import Dataset

    from .data import load_parallel
    from .experiment import ASSETS, SYNTHETIC_GLUECOS

    iitb = root / "iitb-english-hindi" / "data"
    iitb.mkdir(parents=True, exist_ok=True)
    for split, name in (("train", "train"), ("validation", "validation"), ("validation", "test")):
        pairs = load_parallel("synthetic", split).pairs
        Dataset.from_dict({"translation": [{"en": en, "hi": hi} for en, hi in pairs]}).to_parquet(
            str(iitb / f"{name}-00000-of-00001.parquet"))
    gluecos = root / "GLUECoS" / "Data" / "Processed_Data"
    shutil.copytree(SYNTHETIC_GLUECOS, gluecos, dirs_exist_ok=True)
    lexicon = root / "muse-en-hi" / "en-hi.txt"
    lexicon.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(ASSETS / "lexicon_en_hi.txt", lexicon)
    return {"iitb-english-hindi": iitb.parent, "gluecos": gluecos, "lexicon": lexicon}
