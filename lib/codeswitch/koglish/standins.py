"""Koglish stand-in data in the *hub* layout (``Koglish_GLUE/COLA/{en,cs}_<split>.csv``, ...) and the
original GLUE sentences in ``nyu-mll/glue``'s parquet layout, made from the mini Koglish
(:mod:`codeswitch.koglish.synthetic`).  Used by the ``paper-ci`` profile (:mod:`codeswitch.pipeline.standins`)."""

from __future__ import annotations

import shutil
from pathlib import Path

from . import data as K


def build(root: Path) -> dict[str, Path]:
    from ..core.profiles import load_profile
    from .synthetic import ensure_mini_koglish, generate_raw

    repo = ensure_mini_koglish(load_profile("smoke", output_root=root / "_mini"))
    dest = root / "koglish"
    pairs = []
    for t in K.GLUE_TASKS:
        for s in K.GLUE_SPLITS:
            pairs.append((f"Koglish_GLUE/{t}/parsed_{s}.csv", f"Koglish_GLUE/{K._HUB_GLUE[t]}/en_{s}.csv"))
            pairs.append((f"Koglish_GLUE/{t}/cross_{s}.csv", f"Koglish_GLUE/{K._HUB_GLUE[t]}/cs_{s}.csv"))
    pairs += [("Koglish_NLI/parsed_train.csv", "Koglish_NLI/en_train.csv"), ("Koglish_NLI/cross_train.csv", "Koglish_NLI/cs_train.csv")]
    for s in ("valid", "test"):
        pairs += [(f"Koglish_STS/stsb_for_Koglish/en_{s}.csv", f"Koglish_STS/STS_B/en_{s}.csv"),
                  (f"Koglish_STS/stsb_for_Koglish/cross_{s}.csv", f"Koglish_STS/STS_B/cs_{s}.csv")]
    for t in ("sts12", "sts13", "sts14", "sts15", "sts16"):
        pairs += [(f"Koglish_STS/sts_12_16/{t}/parsed_test.csv", f"Koglish_STS/{K._HUB_STS[t]}/en_test.csv"),
                  (f"Koglish_STS/sts_12_16/{t}/cross_test.csv", f"Koglish_STS/{K._HUB_STS[t]}/cs_test.csv")]
    pairs += [("Koglish_STS/sick/parsed_test.csv", "Koglish_SICK/en_test.csv"), ("Koglish_STS/sick/cross_test.csv", "Koglish_SICK/cs_test.csv")]
    for a, b in pairs:
        (dest / b).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(Path(repo) / a, dest / b)
    glue = root / "glue"  # nyu-mll/glue: <task>/train-00000-of-00001.parquet, the original columns
    originals = {"sentence1": "question", "sentence2": "sentence"}
    for t in K.GLUE_TASKS:
        raw, _ = generate_raw(t, 40, 7)
        if t == "qnli":
            raw = raw.rename(columns=originals)
        (glue / t).mkdir(parents=True, exist_ok=True)
        raw.to_parquet(glue / t / "train-00000-of-00001.parquet", index=False)
    # the dataset card's configs, as nyu-mll/glue's README.md declares them: load_dataset(folder, "cola") needs them
    card = "".join(f"- config_name: {t}\n  data_files:\n  - split: train\n    path: {t}/train-*\n" for t in K.GLUE_TASKS)
    (glue / "README.md").write_text(f"---\nconfigs:\n{card}---\n", encoding="utf-8")
    return {"koglish": dest, "glue": glue}
